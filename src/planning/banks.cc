// banks.cc — planning into ordered memory banks (banks.h): the validator,
// greedy spill, the priority strategy, and the report of what spilled.
#include "memplan/banks.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/range_add_max.h"
#include "core/sweep.h"
#include "io/csv_fields.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/exact.h"
#include "memplan/planning.h"
#include "memplan/units.h"
#include "memplan/validate.h"
#include "planners/occupancy_index.h"
#include "planners/offset_placement.h"

namespace memplan {
namespace {

std::string buffer_name(const Problem& p, size_t i) {
  return "buffer '" + p.buffers[i].id + "' (#" + std::to_string(i) + ")";
}

// A field of a file for an error message: quoted, at most 40 bytes, bytes
// that do not print as '?'.
std::string field_text(std::string_view field) {
  std::string out = "'";
  for (size_t j = 0; j < field.size() && j < 40; ++j) {
    const unsigned char c = static_cast<unsigned char>(field[j]);
    out.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?');
  }
  return out + (field.size() > 40 ? "...'" : "'");
}

// Each buffer's bank index from its pin, or nullopt; kNotFound for a pin
// that names no bank.
StatusOr<std::vector<std::optional<size_t>>> resolve_pins(const Problem& problem, std::span<const Bank> banks) {
  std::vector<std::optional<size_t>> pins(problem.size());
  for (size_t i = 0; i < problem.size(); ++i) {
    const std::string& name = problem.buffers[i].bank;
    if (name.empty()) continue;
    pins[i] = find_bank(banks, name);
    if (!pins[i]) {
      std::string names;
      for (const Bank& b : banks) names += (names.empty() ? "" : ", ") + b.name;
      return NotFound(buffer_name(problem, i) + " is pinned to bank '" + name + "', which is not one of: " + names);
    }
  }
  return pins;
}

int64_t alignment_in(const Problem& problem, size_t i, const Bank& bank) {
  return std::max(problem.alignment_of(i), bank.alignment);
}

// Whether buffer i may go to `bank` at all: within its capacity by size (and
// fixed offset), and a fixed offset aligned for it.
bool may_fit(const Problem& problem, size_t i, const Bank& bank) {
  const Buffer& b = problem.buffers[i];
  const int64_t top = (b.offset ? *b.offset : 0) + b.size;
  if (bank.capacity && top > *bank.capacity) return false;
  return !b.offset || *b.offset % alignment_in(problem, i, bank) == 0;
}

// The bytes live in each time slot of a set of buffers being chosen.
class SlotLoad {
 public:
  explicit SlotLoad(size_t slots) : tree_(slots) {}
  int64_t peak(SlotRange r) const { return tree_.max(r.first, r.last); }
  void add(SlotRange r, int64_t bytes) { tree_.add(r.first, r.last, bytes); }

 private:
  RangeAddMax<int64_t> tree_;
};

// Buffer i's first-fit offset in a bank beside the buffers `taken` holds
// (its fixed offset when it has one and that is clear), or nothing when it
// would end above `capacity` (default: the bank's) or clash. `ranges` is scratch.
std::optional<int64_t> first_fit_in(const Problem& problem, size_t i, const Bank& bank, const TimeSlots& slots,
                                    OccupancyIndex& taken, std::vector<ByteRange>* ranges,
                                    std::optional<int64_t> capacity = std::nullopt) {
  if (!capacity) capacity = bank.capacity;
  const Buffer& b = problem.buffers[i];
  taken.taken_during(slots.of(i), ranges);
  int64_t offset = 0;
  if (b.offset) {
    offset = *b.offset;
    const bool clash = b.size > 0 && std::any_of(ranges->begin(), ranges->end(), [&](const ByteRange& r) {
                         return r.begin < offset + b.size && offset < r.end;
                       });
    if (clash) return std::nullopt;
  } else if (b.size > 0) {
    offset = choose_offset(*ranges, b.size, alignment_in(problem, i, bank), FitPolicy::kFirstFit, 0);
  }
  if (capacity && offset + b.size > *capacity) return std::nullopt;
  return offset;
}

// (a) Greedy spill. Fails (kCapacityExceeded) when a buffer finds no bank.
StatusOr<BankedPlan> greedy_spill(const Problem& problem, std::span<const Bank> banks,
                                  const std::vector<std::optional<size_t>>& pins) {
  const size_t n = problem.size();
  const TimeSlots slots(problem);
  std::vector<OccupancyIndex> taken;
  for (size_t k = 0; k < banks.size(); ++k) taken.emplace_back(slots.size());
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const Buffer& a = problem.buffers[x];
    const Buffer& b = problem.buffers[y];
    if (a.offset.has_value() != b.offset.has_value()) return a.offset.has_value();
    if (a.size != b.size) return a.size > b.size;
    return a.lower < b.lower;
  });
  std::vector<int32_t> bank_of(n, -1);
  std::vector<int64_t> offsets(n, 0);
  std::vector<ByteRange> ranges;
  for (const size_t i : order) {
    const Buffer& b = problem.buffers[i];
    for (size_t k = 0; k < banks.size(); ++k) {
      if (pins[i] && *pins[i] != k) continue;
      if (!may_fit(problem, i, banks[k])) continue;
      const std::optional<int64_t> at = first_fit_in(problem, i, banks[k], slots, taken[k], &ranges);
      if (!at) continue;
      const int64_t offset = *at;
      bank_of[i] = static_cast<int32_t>(k);
      offsets[i] = offset;
      taken[k].occupy(slots.of(i), {offset, offset + b.size});
      break;
    }
    if (bank_of[i] < 0) {
      return CapacityExceeded("greedy spill: " + buffer_name(problem, i) + " (" + format_bytes(b.size) +
                              ") fits in no bank it may go to");
    }
  }
  return make_banked_plan(problem, banks.size(), std::move(bank_of), std::move(offsets));
}

// Buffers `members` of `problem` as one arena's problem for `bank` (no
// capacity, pins cleared), in the order of `members`.
Problem subproblem(const Problem& problem, const std::vector<size_t>& members, const Bank& bank) {
  Problem sub{.alignment = std::max(problem.alignment, bank.alignment)};
  sub.buffers.reserve(members.size());
  for (const size_t i : members) {
    sub.buffers.push_back(problem.buffers[i]);
    sub.buffers.back().bank.clear();
  }
  return sub;
}

// Whether buffer i has a fixed offset that shares a byte with one of the
// fixed buffers `fixed` while both live: they cannot share a bank.
bool clashes_with_fixed(const Problem& problem, size_t i, const std::vector<size_t>& fixed) {
  const Buffer& a = problem.buffers[i];
  if (!a.offset || a.size == 0) return false;
  return std::any_of(fixed.begin(), fixed.end(), [&](size_t j) {
    const Buffer& b = problem.buffers[j];
    return b.size > 0 && a.lower < b.upper && b.lower < a.upper && *a.offset < *b.offset + b.size &&
           *b.offset < *a.offset + a.size;
  });
}

// Plans buffers `members` of `problem` as one arena for `bank` with the
// named planner (no capacity): their offsets, in the order of `members`.
StatusOr<Plan> plan_subset(const Problem& problem, const std::vector<size_t>& members, const Bank& bank,
                           const BankOptions& options) {
  const Problem sub = subproblem(problem, members, bank);
  MEMPLAN_ASSIGN_OR_RETURN(PlanningResult run, run_planner(options.planner, sub, options.plan));
  if (!run.plan) return Internal("planner '" + options.planner + "' returned no plan for bank '" + bank.name + "'");
  return std::move(*run.plan);
}

// (b) By priority.
StatusOr<BankedPlan> by_priority(const Problem& problem, std::span<const Bank> banks,
                                 const std::vector<std::optional<size_t>>& pins, const BankOptions& options) {
  const size_t n = problem.size();
  const TimeSlots slots(problem);
  std::vector<int32_t> bank_of(n, -1);
  std::vector<int64_t> offsets(n, 0);
  std::vector<double> density(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t size = problem.buffers[i].size;
    density[i] = size == 0 ? std::numeric_limits<double>::infinity() : priority_of(problem.buffers[i]) / size;
  }
  auto place = [&](const std::vector<size_t>& members, const Plan& plan, size_t k) {
    for (size_t j = 0; j < members.size(); ++j) {
      bank_of[members[j]] = static_cast<int32_t>(k);
      offsets[members[j]] = plan.offsets[j];
    }
  };
  for (size_t k = 0; k < banks.size(); ++k) {
    const Bank& bank = banks[k];
    const bool last = k + 1 == banks.size();
    std::vector<size_t> pinned, candidates;
    for (size_t i = 0; i < n; ++i) {
      if (bank_of[i] >= 0) continue;
      if (pins[i] == k) {
        pinned.push_back(i);
      } else if (!pins[i] && (last || may_fit(problem, i, bank))) {
        candidates.push_back(i);
      }
    }
    if (last || !bank.capacity) {
      std::vector<size_t> members = pinned;
      std::vector<size_t> fixed;
      for (const size_t i : pinned) {
        if (problem.buffers[i].offset) fixed.push_back(i);
      }
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
      place(members, plan, k);
      continue;
    }
    const int64_t capacity = *bank.capacity;
    std::stable_sort(candidates.begin(), candidates.end(), [&](size_t x, size_t y) {
      if (density[x] != density[y]) return density[x] > density[y];
      return problem.buffers[x].size > problem.buffers[y].size;
    });
    int64_t target = capacity;
    std::optional<Plan> fitted;
    std::vector<size_t> members;
    for (int32_t round = 0; round <= options.max_rounds && !fitted; ++round) {
      const bool pinned_only = round == options.max_rounds;
      SlotLoad loads(slots.size());
      members = pinned;
      std::vector<size_t> fixed;
      for (const size_t i : pinned) {
        loads.add(slots.of(i), problem.buffers[i].size);
        if (problem.buffers[i].offset) fixed.push_back(i);
      }
      if (!pinned_only) {
        for (const size_t i : candidates) {
          const int64_t size = problem.buffers[i].size;
          if (loads.peak(slots.of(i)) + size > target) continue;
          if (clashes_with_fixed(problem, i, fixed)) continue;
          loads.add(slots.of(i), size);
          members.push_back(i);
          if (problem.buffers[i].offset) fixed.push_back(i);
        }
      }
      std::sort(members.begin(), members.end());
      MEMPLAN_ASSIGN_OR_RETURN(Plan plan, plan_subset(problem, members, bank, options));
      if (plan.arena <= capacity) {
        fitted = std::move(plan);
      } else if (pinned_only || members.size() == pinned.size()) {
        return CapacityExceeded("the buffers pinned to bank '" + bank.name + "' need " + format_bytes(plan.arena) +
                                " in the plan found, and it holds " + format_bytes(capacity));
      } else {
        target -= std::max(plan.arena - capacity, capacity / 32 + 1);
      }
    }
    place(members, *fitted, k);
    // Fill: the plan leaves gaps below the capacity (the load target is
    // conservative, and the planner packs tighter than the target); the
    // candidates left out go, densest first, to the first gap that fits.
    if (options.fill) {
      OccupancyIndex taken(slots.size());
      for (const size_t i : members) taken.occupy(slots.of(i), {offsets[i], offsets[i] + problem.buffers[i].size});
      std::vector<ByteRange> ranges;
      for (const size_t i : candidates) {
        if (bank_of[i] >= 0) continue;
        const Buffer& b = problem.buffers[i];
        const std::optional<int64_t> at = first_fit_in(problem, i, bank, slots, taken, &ranges, capacity);
        if (!at) continue;
        const int64_t offset = *at;
        bank_of[i] = static_cast<int32_t>(k);
        offsets[i] = offset;
        taken.occupy(slots.of(i), {offset, offset + b.size});
      }
    }
  }
  return make_banked_plan(problem, banks.size(), std::move(bank_of), std::move(offsets));
}

// Exact mode (banks.h): the decisions' budget and counts.
class ExactBudget {
 public:
  explicit ExactBudget(const BankOptions& options)
      : options_(options), start_(std::chrono::steady_clock::now()) {}
  // Seconds left of the whole budget (infinite without one).
  double left() const {
    if (options_.exact_seconds <= 0) return std::numeric_limits<double>::infinity();
    return options_.exact_seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  int64_t node_limit() const {
    return options_.exact_node_limit > 0 ? options_.exact_node_limit : options_.exact_seconds > 0 ? 0 : 100'000;
  }
  int64_t decisions = 0;
  int64_t fits = 0;

 private:
  const BankOptions& options_;
  std::chrono::steady_clock::time_point start_;
};

// Decides whether `members` fit in `bank`'s capacity within `seconds` (0: the
// node limit alone): their offsets in the order of `members`, or nothing when
// refuted or out of budget.
std::optional<std::vector<int64_t>> decide_fit(const Problem& problem, const std::vector<size_t>& members,
                                               const Bank& bank, double seconds, ExactBudget& budget) {
  const Problem sub = subproblem(problem, members, bank);
  ExactOptions options;
  options.time_limit_seconds = seconds;
  options.node_limit = budget.node_limit();
  options.threads = 1;
  ++budget.decisions;
  const StatusOr<ExactResult> r = solve_decision(sub, *bank.capacity, options);
  if (!r.ok() || !r->plan || r->plan->arena > *bank.capacity) return std::nullopt;
  if (r->outcome != ExactOutcome::kFeasible && r->outcome != ExactOutcome::kOptimal) return std::nullopt;
  ++budget.fits;
  return r->plan->offsets;
}

// Exact mode, one bank: moves buffers from slower banks into bank k (steps
// 1-4 of banks.h) within `seconds` (infinite: the node limit alone).
void improve_bank(const Problem& problem, std::span<const Bank> banks, size_t k,
                  const std::vector<std::optional<size_t>>& pins, const std::vector<double>& density,
                  const TimeSlots& slots, const BankOptions& options, double seconds, ExactBudget& budget,
                  std::vector<int32_t>* bank_of, std::vector<int64_t>* offsets) {
  const Bank& bank = banks[k];
  const int64_t capacity = *bank.capacity;
  const auto start = std::chrono::steady_clock::now();
  auto left = [&] {
    return seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // A decision gets an eighth of the bank's time, or what is left of it.
  auto slice = [&] { return std::isinf(seconds) ? 0.0 : std::max(1e-3, std::min(seconds / 8, left())); };
  int32_t decisions = 0;
  auto may_decide = [&] { return decisions < options.exact_max_decisions && (std::isinf(seconds) || left() > 0); };

  std::vector<size_t> set, candidates;
  for (size_t i = 0; i < problem.size(); ++i) {
    if ((*bank_of)[i] == static_cast<int32_t>(k)) {
      set.push_back(i);
    } else if ((*bank_of)[i] > static_cast<int32_t>(k) && !pins[i] && may_fit(problem, i, bank)) {
      candidates.push_back(i);
    }
  }
  if (candidates.empty()) return;
  std::stable_sort(candidates.begin(), candidates.end(), [&](size_t x, size_t y) {
    if (density[x] != density[y]) return density[x] > density[y];
    return problem.buffers[x].size > problem.buffers[y].size;
  });
  auto accept = [&](const std::vector<size_t>& members, const std::vector<int64_t>& at) {
    for (size_t j = 0; j < members.size(); ++j) {
      (*bank_of)[members[j]] = static_cast<int32_t>(k);
      (*offsets)[members[j]] = at[j];
    }
    set = members;
  };
  auto fixed_of = [&](const std::vector<size_t>& members) {
    std::vector<size_t> fixed;
    for (const size_t i : members) {
      if (problem.buffers[i].offset) fixed.push_back(i);
    }
    return fixed;
  };

  auto priority_in = [&](const std::vector<size_t>& members) {
    double sum = 0;
    for (const size_t i : members) sum += priority_of(problem.buffers[i]);
    return sum;
  };
  // Tries `members` with offsets `at`: the buffers of S left out move to
  // slower banks; false (nothing changed) when one finds no gap.
  auto take = [&](const std::vector<size_t>& members, const std::vector<int64_t>& at) {
    std::vector<bool> in(problem.size(), false);
    for (const size_t i : members) in[i] = true;
    std::vector<int32_t> moved_bank = *bank_of;
    std::vector<int64_t> moved_offsets = *offsets;
    std::vector<ByteRange> ranges;
    std::vector<size_t> left_out;
    for (const size_t i : set) {
      if (!in[i]) left_out.push_back(i);
    }
    for (size_t j = k + 1; j < banks.size() && !left_out.empty(); ++j) {
      const bool movable = std::none_of(left_out.begin(), left_out.end(),
                                        [&](size_t i) { return problem.buffers[i].offset.has_value(); });
      if (!banks[j].capacity && movable) {
        // An unbounded bank takes them above its arena (no index to build);
        // the banks that changed are planned again at the end.
        int64_t top = 0;
        for (size_t i = 0; i < problem.size(); ++i) {
          if (moved_bank[i] == static_cast<int32_t>(j)) top = std::max(top, moved_offsets[i] + problem.buffers[i].size);
        }
        for (const size_t i : left_out) {
          moved_bank[i] = static_cast<int32_t>(j);
          moved_offsets[i] = align_up(top, alignment_in(problem, i, banks[j]));
          top = moved_offsets[i] + problem.buffers[i].size;
        }
        left_out.clear();
        break;
      }
      OccupancyIndex there(slots.size());
      for (size_t i = 0; i < problem.size(); ++i) {
        if (moved_bank[i] == static_cast<int32_t>(j)) {
          there.occupy(slots.of(i), {moved_offsets[i], moved_offsets[i] + problem.buffers[i].size});
        }
      }
      std::vector<size_t> still;
      for (const size_t i : left_out) {
        const std::optional<int64_t> o =
            may_fit(problem, i, banks[j]) ? first_fit_in(problem, i, banks[j], slots, there, &ranges) : std::nullopt;
        if (!o) {
          still.push_back(i);
          continue;
        }
        moved_bank[i] = static_cast<int32_t>(j);
        moved_offsets[i] = *o;
        there.occupy(slots.of(i), {*o, *o + problem.buffers[i].size});
      }
      left_out = std::move(still);
    }
    if (!left_out.empty()) return false;
    *bank_of = std::move(moved_bank);
    *offsets = std::move(moved_offsets);
    accept(members, at);
    return true;
  };
  // 2a. Afresh: the densest set of the bank's buffers and candidates whose
  // load stays within the capacity (or its longest prefix that fits), when it
  // serves more priority than S; the buffers of S it leaves out go to the
  // first slower bank with a gap for them, or it is not taken.
  {
    std::vector<size_t> pool;  // unpinned, densest first; the pinned stay
    std::vector<size_t> kept;
    for (const size_t i : set) (pins[i] ? kept : pool).push_back(i);
    pool.insert(pool.end(), candidates.begin(), candidates.end());
    std::stable_sort(pool.begin(), pool.end(), [&](size_t x, size_t y) {
      if (density[x] != density[y]) return density[x] > density[y];
      return problem.buffers[x].size > problem.buffers[y].size;
    });
    SlotLoad loads(slots.size());
    for (const size_t i : kept) loads.add(slots.of(i), problem.buffers[i].size);
    std::vector<size_t> fixed = fixed_of(kept), chosen;
    for (const size_t i : pool) {
      if (loads.peak(slots.of(i)) + problem.buffers[i].size > capacity) continue;
      if (clashes_with_fixed(problem, i, fixed)) continue;
      loads.add(slots.of(i), problem.buffers[i].size);
      chosen.push_back(i);
      if (problem.buffers[i].offset) fixed.push_back(i);
    }
    const double current = priority_in(set);
    auto trial = [&](size_t count) {
      std::vector<size_t> members = kept;
      members.insert(members.end(), chosen.begin(), chosen.begin() + static_cast<std::ptrdiff_t>(count));
      return members;
    };
    if (priority_in(trial(chosen.size())) > current && may_decide()) {
      ++decisions;
      std::vector<size_t> members = trial(chosen.size());
      if (std::optional<std::vector<int64_t>> at = decide_fit(problem, members, bank, slice(), budget)) {
        take(members, *at);
      } else {
        // Bisection on the prefix, among those that would serve more than S.
        size_t lo = 0, hi = chosen.size();
        while (lo < hi && priority_in(trial(lo + 1)) <= current) ++lo;
        std::optional<std::vector<int64_t>> best;
        size_t best_count = 0;
        while (hi - lo > 1 && may_decide()) {
          ++decisions;
          const size_t mid = lo + (hi - lo) / 2;
          std::vector<size_t> tried = trial(mid);
          if (std::optional<std::vector<int64_t>> fit = decide_fit(problem, tried, bank, slice(), budget)) {
            lo = mid;
            best = std::move(fit);
            best_count = mid;
          } else {
            hi = mid;
          }
        }
        if (best) take(trial(best_count), *best);
      }
    }
    // The candidates are the buffers in slower banks again.
    candidates.clear();
    for (const size_t i : pool) {
      if ((*bank_of)[i] > static_cast<int32_t>(k)) candidates.push_back(i);
    }
  }

  // 2b. Bulk: every candidate that keeps the load within the capacity.
  std::vector<size_t> added;
  {
    SlotLoad loads(slots.size());
    for (const size_t i : set) loads.add(slots.of(i), problem.buffers[i].size);
    std::vector<size_t> fixed = fixed_of(set);
    for (const size_t i : candidates) {
      if (loads.peak(slots.of(i)) + problem.buffers[i].size > capacity) continue;
      if (clashes_with_fixed(problem, i, fixed)) continue;
      loads.add(slots.of(i), problem.buffers[i].size);
      added.push_back(i);
      if (problem.buffers[i].offset) fixed.push_back(i);
    }
  }
  auto with_prefix = [&](size_t count) {
    std::vector<size_t> members = set;
    members.insert(members.end(), added.begin(), added.begin() + static_cast<std::ptrdiff_t>(count));
    return members;
  };
  if (!added.empty() && may_decide()) {
    ++decisions;
    std::vector<size_t> members = with_prefix(added.size());
    if (std::optional<std::vector<int64_t>> at = decide_fit(problem, members, bank, slice(), budget)) {
      accept(members, *at);
    } else {
      // Bisection on the prefix: `lo` fits (0 does: S's own plan), `hi` did not.
      size_t lo = 0, hi = added.size();
      std::optional<std::vector<int64_t>> best;
      while (hi - lo > 1 && may_decide()) {
        ++decisions;
        const size_t mid = lo + (hi - lo) / 2;
        std::vector<size_t> trial = with_prefix(mid);
        if (std::optional<std::vector<int64_t>> fit = decide_fit(problem, trial, bank, slice(), budget)) {
          lo = mid;
          best = std::move(fit);
        } else {
          hi = mid;
        }
      }
      if (best) accept(with_prefix(lo), *best);
    }
  }

  // 3. One by one: a gap of S's plan, else a decision of S plus the buffer.
  OccupancyIndex taken(slots.size());
  SlotLoad loads(slots.size());
  auto rebuild = [&] {
    taken = OccupancyIndex(slots.size());
    loads = SlotLoad(slots.size());
    for (const size_t i : set) {
      taken.occupy(slots.of(i), {(*offsets)[i], (*offsets)[i] + problem.buffers[i].size});
      loads.add(slots.of(i), problem.buffers[i].size);
    }
  };
  rebuild();
  std::vector<size_t> fixed = fixed_of(set);
  std::vector<ByteRange> ranges;
  for (const size_t i : candidates) {
    if (!std::isinf(seconds) && left() <= 0) break;
    if ((*bank_of)[i] == static_cast<int32_t>(k)) continue;
    const Buffer& b = problem.buffers[i];
    if (loads.peak(slots.of(i)) + b.size > capacity) continue;
    if (clashes_with_fixed(problem, i, fixed)) continue;
    if (const std::optional<int64_t> at = first_fit_in(problem, i, bank, slots, taken, &ranges, capacity)) {
      (*bank_of)[i] = static_cast<int32_t>(k);
      (*offsets)[i] = *at;
      set.push_back(i);
      taken.occupy(slots.of(i), {*at, *at + b.size});
      loads.add(slots.of(i), b.size);
      if (b.offset) fixed.push_back(i);
      continue;
    }
    if (!may_decide()) continue;  // gaps only from here on
    ++decisions;
    std::vector<size_t> members = set;
    members.push_back(i);
    if (std::optional<std::vector<int64_t>> at = decide_fit(problem, members, bank, slice(), budget)) {
      accept(members, *at);
      if (b.offset) fixed.push_back(i);
      rebuild();
    }
  }

  // 4. Swaps, the most priority first: a candidate takes the place of the
  // least dense unpinned buffers of S live beside it, when they are worth
  // less than it and move to gaps in slower banks: it goes to the first gap
  // they leave, else S without them plus it is decided.
  std::vector<size_t> by_priority = candidates;
  std::stable_sort(by_priority.begin(), by_priority.end(), [&](size_t x, size_t y) {
    return priority_of(problem.buffers[x]) > priority_of(problem.buffers[y]);
  });
  int32_t swaps_tried = 0;
  for (const size_t c : by_priority) {
    if (swaps_tried >= 4 * options.exact_max_decisions || (!std::isinf(seconds) && left() <= 0)) break;
    if ((*bank_of)[c] == static_cast<int32_t>(k)) continue;
    const Buffer& b = problem.buffers[c];
    const SlotRange life = slots.of(c);
    std::vector<size_t> beside;
    for (const size_t i : set) {
      const SlotRange r = slots.of(i);
      if (!pins[i] && r.first < life.last && life.first < r.last) beside.push_back(i);
    }
    std::stable_sort(beside.begin(), beside.end(), [&](size_t x, size_t y) { return density[x] < density[y]; });
    // Remove the least dense until the load beside c leaves room for it.
    SlotLoad after = loads;
    std::vector<size_t> removed;
    double removed_priority = 0;
    for (const size_t i : beside) {
      if (after.peak(life) + b.size <= capacity) break;
      if (density[i] >= density[c] && removed_priority + priority_of(problem.buffers[i]) >= priority_of(b)) break;
      after.add(slots.of(i), -problem.buffers[i].size);
      removed.push_back(i);
      removed_priority += priority_of(problem.buffers[i]);
    }
    if (removed.empty() || after.peak(life) + b.size > capacity) continue;
    if (removed_priority >= priority_of(b)) continue;
    ++swaps_tried;
    std::vector<bool> out(problem.size(), false);
    for (const size_t i : removed) out[i] = true;
    std::vector<size_t> members;
    for (const size_t i : set) {
      if (!out[i]) members.push_back(i);
    }
    if (clashes_with_fixed(problem, c, fixed_of(members))) continue;
    // The bytes the buffers kept hold beside c (a scan: cheaper than an index
    // built for one query).
    ranges.clear();
    for (const size_t i : members) {
      const SlotRange r = slots.of(i);
      const int64_t size = problem.buffers[i].size;
      if (size > 0 && r.first < life.last && life.first < r.last) ranges.push_back({(*offsets)[i], (*offsets)[i] + size});
    }
    std::sort(ranges.begin(), ranges.end(), [](const ByteRange& x, const ByteRange& y) { return x.begin < y.begin; });
    std::optional<int64_t> o;
    if (b.offset) {
      const bool clash = b.size > 0 && std::any_of(ranges.begin(), ranges.end(), [&](const ByteRange& r) {
                           return r.begin < *b.offset + b.size && *b.offset < r.end;
                         });
      if (!clash) o = *b.offset;
    } else {
      o = b.size == 0 ? 0 : choose_offset(ranges, b.size, alignment_in(problem, c, bank), FitPolicy::kFirstFit, 0);
    }
    if (o && *o + b.size > capacity) o.reset();
    std::vector<int64_t> at;
    for (const size_t i : members) at.push_back((*offsets)[i]);
    members.push_back(c);
    if (o) {
      at.push_back(*o);
      if (take(members, at)) rebuild();
      continue;
    }
    if (!may_decide()) continue;
    ++decisions;
    if (std::optional<std::vector<int64_t>> fit = decide_fit(problem, members, bank, slice(), budget)) {
      if (take(members, *fit)) rebuild();
    }
  }
}

// Exact mode over every bank with a capacity but the last, starting from a
// valid banked plan; the banks whose buffers changed are planned again when
// the named planner packs what they hold tighter.
StatusOr<BankedPlan> improve_exactly(const Problem& problem, std::span<const Bank> banks,
                                     const std::vector<std::optional<size_t>>& pins, const BankOptions& options,
                                     const BankedPlan& start, ExactBudget& budget) {
  const size_t n = problem.size();
  const TimeSlots slots(problem);
  std::vector<int32_t> bank_of = start.bank_of;
  std::vector<int64_t> offsets = start.offsets;
  std::vector<double> density(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t size = problem.buffers[i].size;
    density[i] = size == 0 ? std::numeric_limits<double>::infinity() : priority_of(problem.buffers[i]) / size;
  }
  std::vector<size_t> bounded;
  for (size_t k = 0; k + 1 < banks.size(); ++k) {
    if (banks[k].capacity) bounded.push_back(k);
  }
  for (size_t j = 0; j < bounded.size(); ++j) {
    const double left = budget.left();
    if (left <= 0) break;
    const double seconds = std::isinf(left) ? left : left / static_cast<double>(bounded.size() - j);
    improve_bank(problem, banks, bounded[j], pins, density, slots, options, seconds, budget, &bank_of, &offsets);
  }
  for (size_t k = 0; k < banks.size(); ++k) {
    std::vector<size_t> members;
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (bank_of[i] == static_cast<int32_t>(k)) members.push_back(i);
      changed |= (start.bank_of[i] == static_cast<int32_t>(k)) != (bank_of[i] == static_cast<int32_t>(k));
    }
    if (!changed || members.empty()) continue;
    int64_t arena = 0;
    for (const size_t i : members) arena = std::max(arena, offsets[i] + problem.buffers[i].size);
    const StatusOr<Plan> again = plan_subset(problem, members, banks[k], options);
    if (!again.ok() || again->arena >= arena) continue;
    for (size_t j = 0; j < members.size(); ++j) offsets[members[j]] = again->offsets[j];
  }
  return make_banked_plan(problem, banks.size(), std::move(bank_of), std::move(offsets));
}

// The bytes live at the busiest tick among the buffers pinned to each bank.
Status check_pins_fit(const Problem& problem, std::span<const Bank> banks,
                      const std::vector<std::optional<size_t>>& pins) {
  for (size_t k = 0; k < banks.size(); ++k) {
    if (!banks[k].capacity) continue;
    std::vector<int64_t> lower, upper, sizes;
    for (size_t i = 0; i < problem.size(); ++i) {
      if (pins[i] != k) continue;
      if (!may_fit(problem, i, banks[k])) {
        return Infeasible(buffer_name(problem, i) + " is pinned to bank '" + banks[k].name + "' but needs " +
                          format_bytes((problem.buffers[i].offset.value_or(0)) + problem.buffers[i].size) +
                          (problem.buffers[i].offset ? " at its fixed offset" : "") + ", and the bank holds " +
                          format_bytes(*banks[k].capacity) +
                          (problem.buffers[i].offset ? " (or its fixed offset is misaligned for it)" : ""));
      }
      lower.push_back(problem.buffers[i].lower);
      upper.push_back(problem.buffers[i].upper);
      sizes.push_back(problem.buffers[i].size);
    }
    const int64_t needed = load(lower, upper, sizes);
    if (needed > *banks[k].capacity) {
      return Infeasible("the " + std::to_string(sizes.size()) + " buffers pinned to bank '" + banks[k].name +
                        "' need at least " + format_bytes(needed) + " (the most live at once), and it holds " +
                        format_bytes(*banks[k].capacity));
    }
  }
  for (size_t i = 0; i < problem.size(); ++i) {
    if (pins[i]) continue;
    const bool fits_somewhere = std::any_of(banks.begin(), banks.end(), [&](const Bank& b) {
      return !b.capacity || problem.buffers[i].size <= *b.capacity;
    });
    if (!fits_somewhere) {
      return Infeasible(buffer_name(problem, i) + " (" + format_bytes(problem.buffers[i].size) +
                        ") is larger than every bank");
    }
  }
  return Status::Ok();
}

// Whether plan x beats plan y: more priority in bank 0, then 1, ...; then the
// smaller total arena.
bool better(const BankedPlanningResult& x, const BankedPlanningResult& y) {
  for (size_t k = 0; k < x.banks.size(); ++k) {
    if (x.banks[k].priority != y.banks[k].priority) return x.banks[k].priority > y.banks[k].priority;
  }
  int64_t ax = 0, ay = 0;
  for (size_t k = 0; k < x.banks.size(); ++k) {
    ax += x.banks[k].arena;
    ay += y.banks[k].arena;
  }
  return ax < ay;
}

// Strategies (a) and (b), as options.strategy says (kBest: the better).
StatusOr<BankedPlanningResult> plan_heuristically(const Problem& problem, std::span<const Bank> banks,
                                                  const std::vector<std::optional<size_t>>& pins,
                                                  const BankOptions& options);

}  // namespace

StatusOr<std::vector<Bank>> parse_banks_csv(std::string_view text, std::string_view source) {
  auto where = [&](size_t line) { return std::string(source) + ":" + std::to_string(line) + ": "; };
  std::vector<Bank> banks;
  size_t name_col = SIZE_MAX, capacity_col = SIZE_MAX, alignment_col = SIZE_MAX, columns = 0;
  bool header = false;
  const Status read = csv_fields::for_each_record(
      text, csv_fields::HashComments::kSkipped,
      [&](size_t line_number, const std::vector<std::string_view>& fields) -> Status {
        if (!header) {
          header = true;
          columns = fields.size();
          for (size_t c = 0; c < fields.size(); ++c) {
            size_t* slot = fields[c] == "name"        ? &name_col
                           : fields[c] == "capacity"  ? &capacity_col
                           : fields[c] == "alignment" ? &alignment_col
                                                      : nullptr;
            if (!slot)
              return InvalidArgument(where(line_number) + "unknown column '" + std::string(fields[c]) +
                                     "' (expected name, capacity, alignment)");
            if (*slot != SIZE_MAX)
              return InvalidArgument(where(line_number) + "column '" + std::string(fields[c]) + "' given twice");
            *slot = c;
          }
          if (name_col == SIZE_MAX) return InvalidArgument(where(line_number) + "header lacks column 'name'");
          return Status::Ok();
        }
        if (fields.size() != columns) {
          return InvalidArgument(where(line_number) + "expected " + std::to_string(columns) +
                                 " fields as in the header, found " + std::to_string(fields.size()));
        }
        Bank bank{.name = std::string(fields[name_col])};
        if (bank.name.empty()) return InvalidArgument(where(line_number) + "field 'name' is empty");
        if (capacity_col != SIZE_MAX && !fields[capacity_col].empty()) {
          StatusOr<int64_t> bytes = parse_bytes(fields[capacity_col]);
          if (!bytes.ok()) return InvalidArgument(where(line_number) + "field 'capacity': " + bytes.status().message());
          bank.capacity = *bytes;
        }
        if (alignment_col != SIZE_MAX && !fields[alignment_col].empty()) {
          StatusOr<int64_t> bytes = parse_bytes(fields[alignment_col]);
          if (!bytes.ok())
            return InvalidArgument(where(line_number) + "field 'alignment': " + bytes.status().message());
          if (!is_power_of_two(*bytes)) {
            return InvalidArgument(where(line_number) + "field 'alignment': " + std::to_string(*bytes) +
                                   " is not a power of two");
          }
          bank.alignment = *bytes;
        }
        banks.push_back(std::move(bank));
        return Status::Ok();
      });
  if (!read.ok()) return read;
  if (!header) return InvalidArgument(std::string(source) + ": no header row (expected e.g. \"name,capacity,alignment\")");
  if (Status checked = check_banks(banks); !checked.ok()) {
    return InvalidArgument(std::string(source) + ": " + checked.message());
  }
  return banks;
}

std::string format_banked_plan_csv(const Problem& problem, std::span<const Bank> banks, const BankedPlan& plan) {
  // The problem's own writer, each buffer pinned where it went and fixed
  // where it sits.
  if (problem.buffers.empty()) return "id,lower,upper,size,offset,bank\n";  // the columns even with no row
  Problem rows = problem;
  for (size_t i = 0; i < rows.size() && i < plan.bank_of.size() && i < plan.offsets.size(); ++i) {
    const int32_t k = plan.bank_of[i];
    rows.buffers[i].bank = k >= 0 && static_cast<size_t>(k) < banks.size() ? banks[k].name : std::string();
    rows.buffers[i].offset = plan.offsets[i];
  }
  return format_problem_csv(rows);
}

StatusOr<BankedPlan> parse_banked_plan_csv(const Problem& problem, std::span<const Bank> banks, std::string_view text,
                                           std::string_view source) {
  auto where = [&](size_t line) { return std::string(source) + ":" + std::to_string(line) + ": "; };
  std::unordered_map<std::string_view, size_t> index_of;
  index_of.reserve(problem.size());
  for (size_t i = 0; i < problem.size(); ++i) index_of.emplace(problem.buffers[i].id, i);
  std::vector<int32_t> bank_of(problem.size(), -1);
  std::vector<int64_t> offsets(problem.size(), 0);
  std::vector<size_t> line_of(problem.size(), 0);
  size_t id_col = SIZE_MAX, bank_col = SIZE_MAX, offset_col = SIZE_MAX, columns = 0;
  bool header = false;
  const Status read = csv_fields::for_each_record(
      text, csv_fields::HashComments::kRecords,
      [&](size_t line_number, const std::vector<std::string_view>& fields) -> Status {
        if (!header) {
          header = true;
          columns = fields.size();
          for (size_t c = 0; c < fields.size(); ++c) {
            size_t* slot = fields[c] == "id"       ? &id_col
                           : fields[c] == "bank"   ? &bank_col
                           : fields[c] == "offset" ? &offset_col
                                                   : nullptr;
            if (slot == nullptr) continue;
            if (*slot != SIZE_MAX)
              return InvalidArgument(where(line_number) + "column '" + std::string(fields[c]) + "' given twice");
            *slot = c;
          }
          for (const auto& [col, name] : {std::pair{id_col, "id"}, {bank_col, "bank"}, {offset_col, "offset"}}) {
            if (col == SIZE_MAX) return InvalidArgument(where(line_number) + "header lacks column '" + name + "'");
          }
          return Status::Ok();
        }
        if (fields.size() != columns) {
          return InvalidArgument(where(line_number) + "expected " + std::to_string(columns) +
                                 " fields as in the header, found " + std::to_string(fields.size()));
        }
        const auto found = index_of.find(fields[id_col]);
        if (found == index_of.end()) {
          return InvalidArgument(where(line_number) + "field 'id': " + field_text(fields[id_col]) +
                                 " is not a buffer of the problem");
        }
        const size_t i = found->second;
        if (line_of[i] != 0) {
          return InvalidArgument(where(line_number) + "field 'id': " + field_text(fields[id_col]) +
                                 " is given twice (first on line " + std::to_string(line_of[i]) + ")");
        }
        line_of[i] = line_number;
        const std::optional<size_t> k = find_bank(banks, fields[bank_col]);
        if (!k) {
          return InvalidArgument(where(line_number) + "field 'bank': " + field_text(fields[bank_col]) +
                                 " is not one of the banks");
        }
        bank_of[i] = static_cast<int32_t>(*k);
        const std::string_view o = fields[offset_col];
        int64_t offset = 0;
        const auto [ptr, ec] = std::from_chars(o.data(), o.data() + o.size(), offset);
        if (o.empty() || ec != std::errc() || ptr != o.data() + o.size()) {
          return InvalidArgument(where(line_number) + "field 'offset': " + field_text(o) + " is not a 64-bit integer");
        }
        offsets[i] = offset;
        return Status::Ok();
      });
  if (!read.ok()) return read;
  if (!header) return InvalidArgument(std::string(source) + ": no header row (expected id, bank and offset columns)");
  for (size_t i = 0; i < problem.size(); ++i) {
    if (line_of[i] == 0) {
      return InvalidArgument(std::string(source) + ": " + buffer_name(problem, i) + " has no row");
    }
  }
  return make_banked_plan(problem, banks.size(), std::move(bank_of), std::move(offsets));
}

Status check_banks(std::span<const Bank> banks) {
  if (banks.empty()) return InvalidArgument("no banks: give at least one");
  for (size_t k = 0; k < banks.size(); ++k) {
    const Bank& b = banks[k];
    if (b.name.empty()) return InvalidArgument("bank #" + std::to_string(k) + " has no name");
    for (size_t j = 0; j < k; ++j) {
      if (banks[j].name == b.name) return InvalidArgument("bank '" + b.name + "' is named twice");
    }
    if (b.capacity && *b.capacity < 0) return InvalidArgument("bank '" + b.name + "' has a negative capacity");
    if (!is_power_of_two(b.alignment)) {
      return InvalidArgument("bank '" + b.name + "': alignment " + std::to_string(b.alignment) +
                             " is not a power of two");
    }
  }
  return Status::Ok();
}

double priority_of(const Buffer& buffer) {
  if (buffer.priority) return static_cast<double>(*buffer.priority);
  return static_cast<double>(buffer.size) * static_cast<double>(buffer.upper - buffer.lower);
}

std::optional<size_t> find_bank(std::span<const Bank> banks, std::string_view name) {
  for (size_t k = 0; k < banks.size(); ++k) {
    if (banks[k].name == name) return k;
  }
  return std::nullopt;
}

BankedPlan make_banked_plan(const Problem& problem, size_t bank_count, std::vector<int32_t> bank_of,
                            std::vector<int64_t> offsets) {
  BankedPlan plan{.bank_of = std::move(bank_of), .offsets = std::move(offsets), .arenas = std::vector<int64_t>(bank_count, 0)};
  for (size_t i = 0; i < problem.size() && i < plan.bank_of.size() && i < plan.offsets.size(); ++i) {
    const int32_t k = plan.bank_of[i];
    if (k < 0 || static_cast<size_t>(k) >= bank_count) continue;
    plan.arenas[k] = std::max(plan.arenas[k], plan.offsets[i] + problem.buffers[i].size);
  }
  return plan;
}

BankArena bank_arena(const Problem& problem, std::span<const Bank> banks, const BankedPlan& plan, size_t k) {
  BankArena out;
  out.problem.capacity = banks[k].capacity;
  out.problem.alignment = std::max(problem.alignment, banks[k].alignment);
  std::vector<int64_t> offsets;
  for (size_t i = 0; i < problem.size(); ++i) {
    if (plan.bank_of[i] != static_cast<int32_t>(k)) continue;
    out.problem.buffers.push_back(problem.buffers[i]);
    out.buffers.push_back(i);
    offsets.push_back(plan.offsets[i]);
  }
  out.plan = make_plan(out.problem, std::move(offsets));
  return out;
}

std::string_view bank_violation_name(BankViolation v) {
  switch (v) {
    case BankViolation::kNone: return "none";
    case BankViolation::kWrongBufferCount: return "wrong buffer count";
    case BankViolation::kNoSuchBank: return "no such bank";
    case BankViolation::kPinIgnored: return "pin ignored";
    case BankViolation::kNegativeOffset: return "negative offset";
    case BankViolation::kMisaligned: return "misaligned";
    case BankViolation::kFixedOffsetMoved: return "fixed offset moved";
    case BankViolation::kExceedsCapacity: return "exceeds capacity";
    case BankViolation::kOverlap: return "overlap";
    case BankViolation::kWrongArena: return "wrong arena";
  }
  return "unknown";
}

std::string_view bank_strategy_name(BankStrategy strategy) {
  switch (strategy) {
    case BankStrategy::kBest: return "best";
    case BankStrategy::kGreedySpill: return "greedy spill";
    case BankStrategy::kByPriority: return "by priority";
    case BankStrategy::kExact: return "exact";
  }
  return "unknown";
}

std::string_view spill_reason_name(SpillReason reason) {
  switch (reason) {
    case SpillReason::kPinned: return "pinned elsewhere";
    case SpillReason::kTooLarge: return "larger than the bank";
    case SpillReason::kNoRoom: return "no room";
  }
  return "unknown";
}

BankValidationResult validate_banked(const Problem& problem, std::span<const Bank> banks, const BankedPlan& plan) {
  BankValidationResult r;
  auto fail = [&](BankViolation v, size_t i, std::string message) {
    r.violation = v;
    r.first = i;
    r.message = std::move(message);
    return r;
  };
  const size_t n = problem.size();
  if (plan.bank_of.size() != n || plan.offsets.size() != n || plan.arenas.size() != banks.size()) {
    return fail(BankViolation::kWrongBufferCount, 0,
                "the plan has " + std::to_string(plan.bank_of.size()) + " banks and " +
                    std::to_string(plan.offsets.size()) + " offsets for " + std::to_string(n) + " buffers, and " +
                    std::to_string(plan.arenas.size()) + " arenas for " + std::to_string(banks.size()) + " banks");
  }
  std::vector<std::vector<size_t>> members(banks.size());
  for (size_t i = 0; i < n; ++i) {
    const int32_t k = plan.bank_of[i];
    if (k < 0 || static_cast<size_t>(k) >= banks.size()) {
      return fail(BankViolation::kNoSuchBank, i,
                  buffer_name(problem, i) + " is in bank #" + std::to_string(k) + ", and there are " +
                      std::to_string(banks.size()) + " banks");
    }
    const std::string& pin = problem.buffers[i].bank;
    if (!pin.empty() && pin != banks[k].name) {
      r.bank = k;
      return fail(BankViolation::kPinIgnored, i,
                  buffer_name(problem, i) + " is pinned to bank '" + pin + "' but placed in '" + banks[k].name + "'");
    }
    members[k].push_back(i);
  }
  // Each bank's buffers are a single-arena plan of their own: the plan oracle
  // (validate.h) judges it, with the bank's capacity and alignment.
  for (size_t k = 0; k < banks.size(); ++k) {
    Problem sub{.capacity = banks[k].capacity, .alignment = std::max(problem.alignment, banks[k].alignment)};
    std::vector<int64_t> offsets;
    for (const size_t i : members[k]) {
      sub.buffers.push_back(problem.buffers[i]);
      offsets.push_back(plan.offsets[i]);
    }
    const ValidationResult v = validate(sub, make_plan(sub, offsets));
    r.bank = k;
    if (!v.ok()) {
      BankViolation kind = BankViolation::kOverlap;
      switch (v.violation) {
        case Violation::kNegativeOffset: kind = BankViolation::kNegativeOffset; break;
        case Violation::kMisaligned: kind = BankViolation::kMisaligned; break;
        case Violation::kFixedOffsetMoved: kind = BankViolation::kFixedOffsetMoved; break;
        case Violation::kExceedsCapacity: kind = BankViolation::kExceedsCapacity; break;
        case Violation::kOverlap: kind = BankViolation::kOverlap; break;
        default: kind = BankViolation::kWrongBufferCount; break;  // cannot happen: built here
      }
      r.second = v.violation == Violation::kOverlap ? members[k][v.second] : 0;
      r.tick = v.tick;
      // The oracle names buffers by their index in the bank; say the problem's.
      std::string message = v.message;
      for (const size_t j : {v.first, v.second}) {
        if (j >= members[k].size()) continue;
        const std::string id = "'" + sub.buffers[j].id + "' (#";
        const std::string local = id + std::to_string(j) + ")";
        if (const size_t at = message.find(local); at != std::string::npos) {
          message.replace(at, local.size(), id + std::to_string(members[k][j]) + ")");
        }
      }
      return fail(kind, members[k][v.first], "bank '" + banks[k].name + "': " + message);
    }
    const int64_t arena = arena_of(sub, offsets);
    if (plan.arenas[k] != arena) {
      return fail(BankViolation::kWrongArena, 0,
                  "bank '" + banks[k].name + "' has arena " + std::to_string(plan.arenas[k]) +
                      " but its buffers reach " + std::to_string(arena));
    }
  }
  r.bank = 0;
  return r;
}

void describe_banked_plan(const Problem& problem, std::span<const Bank> banks, BankedPlanningResult* result) {
  const BankedPlan& plan = result->plan;
  result->banks.assign(banks.size(), BankStats{});
  result->spills.clear();
  result->total_priority = 0;
  for (size_t k = 0; k < banks.size(); ++k) result->banks[k].arena = plan.arenas[k];
  for (size_t i = 0; i < problem.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    const size_t bank = static_cast<size_t>(plan.bank_of[i]);
    BankStats& s = result->banks[bank];
    ++s.buffers;
    s.bytes += b.size;
    s.priority += priority_of(b);
    result->total_priority += priority_of(b);
    for (size_t k = 0; k < bank; ++k) {
      SpillReason reason = SpillReason::kNoRoom;
      if (!b.bank.empty()) {
        reason = SpillReason::kPinned;
      } else if (!may_fit(problem, i, banks[k])) {
        reason = SpillReason::kTooLarge;
      }
      result->spills.push_back({.buffer = i, .from_bank = k, .reason = reason});
    }
  }
}

StatusOr<BankedPlanningResult> plan_banks(const Problem& problem, std::span<const Bank> banks,
                                          const BankOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem, FixedOffsetScope::kPerBank));
  MEMPLAN_RETURN_IF_ERROR(check_banks(banks));
  MEMPLAN_ASSIGN_OR_RETURN(const std::vector<std::optional<size_t>> pins, resolve_pins(problem, banks));
  MEMPLAN_RETURN_IF_ERROR(check_pins_fit(problem, banks, pins));
  if (options.strategy != BankStrategy::kExact) return plan_heuristically(problem, banks, pins, options);

  BankOptions heuristics = options;
  heuristics.strategy = BankStrategy::kBest;
  MEMPLAN_ASSIGN_OR_RETURN(BankedPlanningResult best, plan_heuristically(problem, banks, pins, heuristics));
  best.heuristic_priority = best.banks[0].priority;
  ExactBudget budget(options);
  StatusOr<BankedPlan> plan = improve_exactly(problem, banks, pins, options, best.plan, budget);
  best.exact_decisions = budget.decisions;
  best.exact_fits = budget.fits;
  if (!plan.ok()) return best;
  BankedPlanningResult result{.plan = std::move(*plan), .strategy = "exact"};
  describe_banked_plan(problem, banks, &result);
  result.greedy_priority = best.greedy_priority;
  result.heuristic_priority = best.heuristic_priority;
  result.exact_decisions = best.exact_decisions;
  result.exact_fits = best.exact_fits;
  if (!better(result, best)) return best;
  return result;
}

namespace {

StatusOr<BankedPlanningResult> plan_heuristically(const Problem& problem, std::span<const Bank> banks,
                                                  const std::vector<std::optional<size_t>>& pins,
                                                  const BankOptions& options) {
  std::optional<BankedPlanningResult> greedy;
  Status greedy_status;
  if (options.strategy != BankStrategy::kByPriority) {
    StatusOr<BankedPlan> plan = greedy_spill(problem, banks, pins);
    if (plan.ok()) {
      greedy = BankedPlanningResult{.plan = std::move(*plan), .strategy = "greedy spill"};
      describe_banked_plan(problem, banks, &*greedy);
      greedy->greedy_priority = greedy->banks[0].priority;
    } else {
      greedy_status = plan.status();
    }
    if (options.strategy == BankStrategy::kGreedySpill) {
      if (!greedy) return greedy_status;
      return std::move(*greedy);
    }
  }
  StatusOr<BankedPlan> plan = by_priority(problem, banks, pins, options);
  if (!plan.ok()) {
    if (greedy) return std::move(*greedy);
    return plan.status();
  }
  BankedPlanningResult result{.plan = std::move(*plan), .strategy = "by priority"};
  describe_banked_plan(problem, banks, &result);
  if (greedy) {
    result.greedy_priority = greedy->greedy_priority;
    if (better(*greedy, result)) return std::move(*greedy);
  }
  return result;
}

}  // namespace

}  // namespace memplan
