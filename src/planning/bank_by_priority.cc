// bank_by_priority.cc — strategy (b) of banks.h: for each bank but the last,
// the densest buffers within a target load, planned with the named planner
// (the target drops while the plan overshoots the capacity), then the gaps
// filled; the last bank takes the rest.
#include <algorithm>
#include <string>
#include <vector>

#include "core/buffer_name.h"
#include "memplan/units.h"
#include "planning/bank_strategies.h"

namespace memplan::banks {
namespace {

// An unbounded or last bank: its pinned buffers and every candidate whose
// fixed offset clashes with none there (the last bank must take them all).
Status fill_unbounded_bank(const Problem& problem, const Bank& bank, size_t k, bool last,
                           const std::vector<size_t>& pinned, const std::vector<size_t>& candidates,
                           const BankOptions& options, Assignment* out) {
  std::vector<size_t> members = pinned;
  std::vector<size_t> fixed = fixed_of(problem, pinned);
  for (const size_t i : candidates) {
    if (clashes_with_fixed(problem, i, fixed)) {
      if (last) {
        return CapacityExceeded("bank '" + bank.name + "' (the last) must take " + buffer_name(problem, i) +
                                ", whose fixed offset clashes with another buffer's there");
      }
      continue;  // a slower bank takes it
    }
    members.push_back(i);
    if (problem.buffers[i].offset) fixed.push_back(i);
  }
  std::sort(members.begin(), members.end());
  MEMPLAN_ASSIGN_OR_RETURN(Plan plan, plan_subset(problem, members, bank, options));
  if (bank.capacity && plan.arena > *bank.capacity) {
    return CapacityExceeded("bank '" + bank.name + "' (the last) must take the " + std::to_string(members.size()) +
                            " buffers left, and the plan found needs " + format_bytes(plan.arena) + " of its " +
                            format_bytes(*bank.capacity));
  }
  out->place(members, plan.offsets, k);
  return Status::Ok();
}

// A bounded bank: the pinned buffers and the densest candidates within a
// target load, planned; while the plan overshoots the capacity the target
// drops by the overshoot (at least 1/32 of the capacity), and the last round
// keeps the pinned buffers only.
Status fill_bounded_bank(const Problem& problem, const TimeSlots& slots, const Bank& bank, size_t k,
                         const std::vector<size_t>& pinned, const std::vector<size_t>& candidates,
                         const BankOptions& options, Assignment* out) {
  const int64_t capacity = *bank.capacity;
  int64_t target = capacity;
  for (int32_t round = 0; round <= options.max_rounds; ++round) {
    const bool pinned_only = round == options.max_rounds;
    std::vector<size_t> members = pinned;
    if (!pinned_only) {
      const std::vector<size_t> chosen = choose_within_load(problem, slots, pinned, candidates, target);
      members.insert(members.end(), chosen.begin(), chosen.end());
    }
    std::sort(members.begin(), members.end());
    MEMPLAN_ASSIGN_OR_RETURN(Plan plan, plan_subset(problem, members, bank, options));
    if (plan.arena <= capacity) {
      out->place(members, plan.offsets, k);
      return Status::Ok();
    }
    if (pinned_only || members.size() == pinned.size()) {
      return CapacityExceeded("the buffers pinned to bank '" + bank.name + "' need " + format_bytes(plan.arena) +
                              " in the plan found, and it holds " + format_bytes(capacity));
    }
    target -= std::max(plan.arena - capacity, capacity / 32 + 1);
  }
  return Internal("bank '" + bank.name + "': no round planned it");  // the last round returns
}

// Fill: the plan leaves gaps below the capacity (the load target is
// conservative, and the planner packs tighter than the target); the
// candidates left out go, densest first, to the first gap that fits.
void fill_gaps(const Problem& problem, const TimeSlots& slots, const Bank& bank, size_t k,
               const std::vector<size_t>& candidates, Assignment* out) {
  OccupancyIndex taken = occupancy_of_bank(problem, slots, out->bank_of, out->offsets, k);
  std::vector<ByteRange> ranges;
  for (const size_t i : candidates) {
    if (out->bank_of[i] >= 0) continue;
    const std::optional<int64_t> at = first_fit_in(problem, i, bank, slots, taken, &ranges, bank.capacity);
    if (!at) continue;
    out->bank_of[i] = static_cast<int32_t>(k);
    out->offsets[i] = *at;
    taken.occupy(slots.of(i), {*at, *at + problem.buffers[i].size});
  }
}

}  // namespace

StatusOr<BankedPlan> by_priority(const Problem& problem, std::span<const Bank> banks, const Pins& pins,
                                 const BankOptions& options) {
  const size_t n = problem.size();
  const TimeSlots slots(problem);
  Assignment out{.bank_of = std::vector<int32_t>(n, -1), .offsets = std::vector<int64_t>(n, 0)};
  const std::vector<double> density = priority_densities(problem);
  for (size_t k = 0; k < banks.size(); ++k) {
    const Bank& bank = banks[k];
    const bool last = k + 1 == banks.size();
    std::vector<size_t> pinned, candidates;
    for (size_t i = 0; i < n; ++i) {
      if (out.bank_of[i] >= 0) continue;
      if (pins[i] == k) {
        pinned.push_back(i);
      } else if (!pins[i] && (last || may_fit(problem, i, bank))) {
        candidates.push_back(i);
      }
    }
    if (last || !bank.capacity) {
      MEMPLAN_RETURN_IF_ERROR(fill_unbounded_bank(problem, bank, k, last, pinned, candidates, options, &out));
      continue;
    }
    sort_densest_first(problem, density, &candidates);
    MEMPLAN_RETURN_IF_ERROR(fill_bounded_bank(problem, slots, bank, k, pinned, candidates, options, &out));
    if (options.fill) fill_gaps(problem, slots, bank, k, candidates, &out);
  }
  return make_banked_plan(problem, banks.size(), std::move(out.bank_of), std::move(out.offsets));
}

}  // namespace memplan::banks
