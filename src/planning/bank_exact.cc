// bank_exact.cc — exact mode of banks.h: starting from a valid banked plan,
// the exact decision solver moves more priority into each bounded bank,
// fastest first, within the budget (resolve_exact_budget). One bank's work
// is a BankImprover, its steps the numbered steps of banks.h.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "memplan/exact.h"
#include "planning/bank_strategies.h"

namespace memplan::banks {
namespace {

using Clock = std::chrono::steady_clock;

double elapsed_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// What every bank's improvement reads: the problem, the banks and pins, the
// buffers' priority densities, the time slots and the options.
struct ExactContext {
  const Problem& problem;
  std::span<const Bank> banks;
  const Pins& pins;
  const std::vector<double>& density;
  const TimeSlots& slots;
  const BankOptions& options;
  int64_t node_limit = 0;  // per decision; 0 = unlimited
};

// Exact mode on bank k (steps 1-4 of banks.h): moves buffers from slower
// banks into it within `seconds` (infinite: the node limit alone), changing
// `plan` only to other valid plans.
class BankImprover {
 public:
  BankImprover(const ExactContext& context, size_t k, double seconds, ExactCounts* counts, Assignment* plan)
      : c_(context),
        problem_(context.problem),
        k_(k),
        bank_(context.banks[k]),
        capacity_(*bank_.capacity),
        seconds_(seconds),
        start_(Clock::now()),
        counts_(counts),
        plan_(plan),
        taken_(context.slots.size()),
        loads_(context.slots.size()) {}

  void run() {
    // 1. S, the bank's buffers, and the candidates, densest first.
    for (size_t i = 0; i < problem_.size(); ++i) {
      const int32_t bank = plan_->bank_of[i];
      if (bank == static_cast<int32_t>(k_)) {
        set_.push_back(i);
      } else if (bank > static_cast<int32_t>(k_) && !c_.pins[i] && may_fit(problem_, i, bank_)) {
        candidates_.push_back(i);
      }
    }
    if (candidates_.empty()) return;
    sort_densest_first(problem_, c_.density, &candidates_);
    choose_afresh();
    add_in_bulk();
    add_one_by_one();
    try_swaps();
  }

 private:
  struct Fit {
    size_t count = 0;              // the prefix's length
    std::vector<int64_t> offsets;  // its members' offsets
  };

  bool timed() const { return !std::isinf(seconds_); }
  double left() const { return seconds_ - elapsed_since(start_); }
  bool out_of_time() const { return timed() && left() <= 0; }
  // A decision gets an eighth of the bank's time, or what is left of it.
  double slice() const { return timed() ? std::max(1e-3, std::min(seconds_ / 8, left())) : 0.0; }
  bool may_decide() const { return decisions_ < c_.options.exact_max_decisions && !out_of_time(); }
  bool in_bank(size_t i) const { return plan_->bank_of[i] == static_cast<int32_t>(k_); }

  // Whether `members` fit in the bank's capacity: their offsets in the order
  // of `members`, or nothing when refuted or out of budget.
  std::optional<std::vector<int64_t>> decide(const std::vector<size_t>& members) {
    ++decisions_;
    ExactOptions options;
    options.time_limit_seconds = slice();
    options.node_limit = c_.node_limit;
    options.threads = 1;
    const Problem sub = subproblem(problem_, members, bank_);
    ++counts_->decisions;
    const StatusOr<ExactResult> r = solve_decision(sub, capacity_, options);
    if (!r.ok() || !r->plan || r->plan->arena > capacity_) return std::nullopt;
    if (r->outcome != ExactOutcome::kFeasible && r->outcome != ExactOutcome::kOptimal) return std::nullopt;
    ++counts_->fits;
    return r->plan->offsets;
  }

  // The longest prefix of a list that fits, its length at most `hi`: the
  // whole list first, then a bisection above lowest() (a subset of a set
  // that fits fits too), while decisions are allowed.
  std::optional<Fit> longest_prefix_that_fits(size_t hi, const std::function<size_t()>& lowest,
                                              const std::function<std::vector<size_t>(size_t)>& prefix) {
    if (std::optional<std::vector<int64_t>> at = decide(prefix(hi))) return Fit{hi, std::move(*at)};
    size_t lo = lowest();
    std::optional<Fit> best;
    while (hi - lo > 1 && may_decide()) {
      const size_t mid = lo + (hi - lo) / 2;
      if (std::optional<std::vector<int64_t>> at = decide(prefix(mid))) {
        lo = mid;
        best = Fit{mid, std::move(*at)};
      } else {
        hi = mid;
      }
    }
    return best;
  }

  // Puts `members` in the bank at offsets `at`: they are S now.
  void accept(const std::vector<size_t>& members, std::span<const int64_t> at) {
    plan_->place(members, at, k_);
    set_ = members;
  }

  // Moves `left_out` to slower banks, each to the first with a first-fit gap
  // for it (an unbounded one stacks them above its arena, no index built):
  // false when one finds none.
  bool move_to_slower_banks(std::vector<size_t> left_out, Assignment* moved) const {
    std::vector<ByteRange> ranges;
    for (size_t j = k_ + 1; j < c_.banks.size() && !left_out.empty(); ++j) {
      const Bank& slower = c_.banks[j];
      const bool movable = std::none_of(left_out.begin(), left_out.end(),
                                        [&](size_t i) { return problem_.buffers[i].offset.has_value(); });
      if (!slower.capacity && movable) {
        int64_t top = 0;
        for (size_t i = 0; i < problem_.size(); ++i) {
          if (moved->bank_of[i] == static_cast<int32_t>(j)) {
            top = std::max(top, moved->offsets[i] + problem_.buffers[i].size);
          }
        }
        for (const size_t i : left_out) {
          moved->bank_of[i] = static_cast<int32_t>(j);
          moved->offsets[i] = align_up(top, alignment_in(problem_, i, slower));
          top = moved->offsets[i] + problem_.buffers[i].size;
        }
        return true;
      }
      OccupancyIndex there = occupancy_of_bank(problem_, c_.slots, moved->bank_of, moved->offsets, j);
      std::vector<size_t> still;
      for (const size_t i : left_out) {
        const std::optional<int64_t> o =
            may_fit(problem_, i, slower) ? first_fit_in(problem_, i, slower, c_.slots, there, &ranges) : std::nullopt;
        if (!o) {
          still.push_back(i);
          continue;
        }
        moved->bank_of[i] = static_cast<int32_t>(j);
        moved->offsets[i] = *o;
        there.occupy(c_.slots.of(i), {*o, *o + problem_.buffers[i].size});
      }
      left_out = std::move(still);
    }
    return left_out.empty();
  }

  // Tries `members` with offsets `at` as S: the buffers of S left out move
  // to slower banks; false (nothing changed) when one finds no gap.
  bool take(const std::vector<size_t>& members, std::span<const int64_t> at) {
    std::vector<bool> in(problem_.size(), false);
    for (const size_t i : members) in[i] = true;
    std::vector<size_t> left_out;
    for (const size_t i : set_) {
      if (!in[i]) left_out.push_back(i);
    }
    Assignment moved = *plan_;
    if (!move_to_slower_banks(std::move(left_out), &moved)) return false;
    *plan_ = std::move(moved);
    accept(members, at);
    return true;
  }

  // 2a. Afresh: the densest set of S's unpinned buffers and the candidates
  // whose load stays within the capacity (S's pinned buffers kept), or its
  // longest prefix that fits, when it serves more priority than S; taken
  // when the buffers of S it leaves out find gaps in slower banks.
  void choose_afresh() {
    std::vector<size_t> pool;  // unpinned, densest first; the pinned stay
    std::vector<size_t> kept;
    for (const size_t i : set_) (c_.pins[i] ? kept : pool).push_back(i);
    pool.insert(pool.end(), candidates_.begin(), candidates_.end());
    sort_densest_first(problem_, c_.density, &pool);
    const std::vector<size_t> chosen = choose_within_load(problem_, c_.slots, kept, pool, capacity_);
    const double current = priority_in(problem_, set_);
    auto prefix = [&](size_t count) {
      std::vector<size_t> members = kept;
      members.insert(members.end(), chosen.begin(), chosen.begin() + static_cast<std::ptrdiff_t>(count));
      return members;
    };
    // The bisection looks only among the prefixes that serve more than S.
    auto lowest = [&] {
      size_t lo = 0;
      while (lo < chosen.size() && priority_in(problem_, prefix(lo + 1)) <= current) ++lo;
      return lo;
    };
    if (priority_in(problem_, prefix(chosen.size())) > current && may_decide()) {
      if (const std::optional<Fit> fit = longest_prefix_that_fits(chosen.size(), lowest, prefix)) {
        take(prefix(fit->count), fit->offsets);
      }
    }
    // The candidates are the buffers in slower banks again.
    candidates_.clear();
    for (const size_t i : pool) {
      if (plan_->bank_of[i] > static_cast<int32_t>(k_)) candidates_.push_back(i);
    }
  }

  // 2b. Bulk: S plus every candidate that keeps the load within the
  // capacity, or its longest prefix that fits.
  void add_in_bulk() {
    const std::vector<size_t> added = choose_within_load(problem_, c_.slots, set_, candidates_, capacity_);
    if (added.empty() || !may_decide()) return;
    auto prefix = [&](size_t count) {
      std::vector<size_t> members = set_;
      members.insert(members.end(), added.begin(), added.begin() + static_cast<std::ptrdiff_t>(count));
      return members;
    };
    // 0 fits: S's own plan.
    if (const std::optional<Fit> fit = longest_prefix_that_fits(
            added.size(), [] { return size_t{0}; }, prefix)) {
      accept(prefix(fit->count), fit->offsets);
    }
  }

  // S's bytes and load, for gaps and load checks.
  void rebuild() {
    taken_ = OccupancyIndex(c_.slots.size());
    loads_ = SlotLoad(c_.slots.size());
    for (const size_t i : set_) {
      const int64_t size = problem_.buffers[i].size;
      taken_.occupy(c_.slots.of(i), {plan_->offsets[i], plan_->offsets[i] + size});
      loads_.add(c_.slots.of(i), size);
    }
  }

  // 3. One by one: each candidate left that keeps the load within the
  // capacity goes to the first gap of S's plan where it fits, else S plus it
  // is decided; a plan found replaces S's.
  void add_one_by_one() {
    rebuild();
    std::vector<size_t> fixed = fixed_of(problem_, set_);
    std::vector<ByteRange> ranges;
    for (const size_t i : candidates_) {
      if (out_of_time()) break;
      if (in_bank(i)) continue;
      const Buffer& b = problem_.buffers[i];
      if (loads_.peak(c_.slots.of(i)) + b.size > capacity_) continue;
      if (clashes_with_fixed(problem_, i, fixed)) continue;
      if (const std::optional<int64_t> at = first_fit_in(problem_, i, bank_, c_.slots, taken_, &ranges, capacity_)) {
        plan_->bank_of[i] = static_cast<int32_t>(k_);
        plan_->offsets[i] = *at;
        set_.push_back(i);
        taken_.occupy(c_.slots.of(i), {*at, *at + b.size});
        loads_.add(c_.slots.of(i), b.size);
        if (b.offset) fixed.push_back(i);
        continue;
      }
      if (!may_decide()) continue;  // gaps only from here on
      std::vector<size_t> members = set_;
      members.push_back(i);
      if (std::optional<std::vector<int64_t>> at = decide(members)) {
        accept(members, *at);
        if (b.offset) fixed.push_back(i);
        rebuild();
      }
    }
  }

  // The least dense unpinned buffers of S live beside candidate c whose
  // removal leaves room for it, when together they are worth less than it;
  // empty when there are none.
  std::vector<size_t> make_room_for(size_t c) const {
    const Buffer& b = problem_.buffers[c];
    const SlotRange life = c_.slots.of(c);
    std::vector<size_t> beside;
    for (const size_t i : set_) {
      const SlotRange r = c_.slots.of(i);
      if (!c_.pins[i] && r.first < life.last && life.first < r.last) beside.push_back(i);
    }
    std::stable_sort(beside.begin(), beside.end(), [&](size_t x, size_t y) { return c_.density[x] < c_.density[y]; });
    // Remove the least dense until the load beside c leaves room for it.
    SlotLoad after = loads_;
    std::vector<size_t> removed;
    double removed_priority = 0;
    for (const size_t i : beside) {
      if (after.peak(life) + b.size <= capacity_) break;
      const double priority = priority_of(problem_.buffers[i]);
      if (c_.density[i] >= c_.density[c] && removed_priority + priority >= priority_of(b)) break;
      after.add(c_.slots.of(i), -problem_.buffers[i].size);
      removed.push_back(i);
      removed_priority += priority;
    }
    if (removed.empty() || after.peak(life) + b.size > capacity_) return {};
    if (removed_priority >= priority_of(b)) return {};
    return removed;
  }

  // Candidate c in the place of `removed`: the first gap they leave, else S
  // without them plus c decided; taken when they find gaps in slower banks.
  void swap_in(size_t c, const std::vector<size_t>& removed) {
    std::vector<bool> out(problem_.size(), false);
    for (const size_t i : removed) out[i] = true;
    std::vector<size_t> members;
    for (const size_t i : set_) {
      if (!out[i]) members.push_back(i);
    }
    if (clashes_with_fixed(problem_, c, fixed_of(problem_, members))) return;
    // The bytes the buffers kept hold beside c (a scan: cheaper than an index
    // built for one query).
    const SlotRange life = c_.slots.of(c);
    std::vector<ByteRange> ranges;
    std::vector<int64_t> at;
    for (const size_t i : members) {
      const SlotRange r = c_.slots.of(i);
      const int64_t size = problem_.buffers[i].size;
      if (size > 0 && r.first < life.last && life.first < r.last) {
        ranges.push_back({plan_->offsets[i], plan_->offsets[i] + size});
      }
      at.push_back(plan_->offsets[i]);
    }
    std::sort(ranges.begin(), ranges.end(), [](const ByteRange& x, const ByteRange& y) { return x.begin < y.begin; });
    const std::optional<int64_t> o = first_fit_beside(problem_, c, bank_, ranges, capacity_);
    members.push_back(c);
    if (o) {
      at.push_back(*o);
      if (take(members, at)) rebuild();
      return;
    }
    if (!may_decide()) return;
    if (std::optional<std::vector<int64_t>> fit = decide(members)) {
      if (take(members, *fit)) rebuild();
    }
  }

  // 4. Swaps, the most priority first.
  void try_swaps() {
    std::vector<size_t> by_priority = candidates_;
    std::stable_sort(by_priority.begin(), by_priority.end(), [&](size_t x, size_t y) {
      return priority_of(problem_.buffers[x]) > priority_of(problem_.buffers[y]);
    });
    int32_t swaps_tried = 0;
    for (const size_t c : by_priority) {
      if (swaps_tried >= 4 * c_.options.exact_max_decisions || out_of_time()) break;
      if (in_bank(c)) continue;
      const std::vector<size_t> removed = make_room_for(c);
      if (removed.empty()) continue;
      ++swaps_tried;
      swap_in(c, removed);
    }
  }

  const ExactContext& c_;
  const Problem& problem_;
  const size_t k_;
  const Bank& bank_;
  const int64_t capacity_;
  const double seconds_;
  const Clock::time_point start_;
  ExactCounts* counts_;
  Assignment* plan_;
  int32_t decisions_ = 0;           // this bank's
  std::vector<size_t> set_;         // S: the bank's buffers
  std::vector<size_t> candidates_;  // buffers in slower banks that may come here, densest first
  OccupancyIndex taken_;            // S's bytes over time (rebuild)
  SlotLoad loads_;                  // S's load over time (rebuild)
};

// Plans each bank whose buffers changed again, keeping the new offsets when
// the named planner packs them tighter.
void replan_changed_banks(const Problem& problem, std::span<const Bank> banks, const BankOptions& options,
                          const BankedPlan& start, Assignment* plan) {
  for (size_t k = 0; k < banks.size(); ++k) {
    std::vector<size_t> members;
    bool changed = false;
    for (size_t i = 0; i < problem.size(); ++i) {
      if (plan->bank_of[i] == static_cast<int32_t>(k)) members.push_back(i);
      changed |= (start.bank_of[i] == static_cast<int32_t>(k)) != (plan->bank_of[i] == static_cast<int32_t>(k));
    }
    if (!changed || members.empty()) continue;
    int64_t arena = 0;
    for (const size_t i : members) arena = std::max(arena, plan->offsets[i] + problem.buffers[i].size);
    const StatusOr<Plan> again = plan_subset(problem, members, banks[k], options);
    if (!again.ok() || again->arena >= arena) continue;
    plan->place(members, again->offsets, k);
  }
}

}  // namespace

BankedPlan improve_exactly(const Problem& problem, std::span<const Bank> banks, const Pins& pins,
                           const BankOptions& options, const ExactBankBudget& budget, const BankedPlan& start,
                           ExactCounts* counts) {
  const Clock::time_point began = Clock::now();
  const TimeSlots slots(problem);
  const std::vector<double> density = priority_densities(problem);
  const ExactContext context{.problem = problem,
                             .banks = banks,
                             .pins = pins,
                             .density = density,
                             .slots = slots,
                             .options = options,
                             .node_limit = budget.node_limit};
  Assignment plan{.bank_of = start.bank_of, .offsets = start.offsets};
  std::vector<size_t> bounded;
  for (size_t k = 0; k + 1 < banks.size(); ++k) {
    if (banks[k].capacity) bounded.push_back(k);
  }
  // Each bounded bank gets an equal share of the time left.
  for (size_t j = 0; j < bounded.size(); ++j) {
    const double left = std::isinf(budget.seconds) ? budget.seconds : budget.seconds - elapsed_since(began);
    if (left <= 0) break;
    const double seconds = std::isinf(left) ? left : left / static_cast<double>(bounded.size() - j);
    BankImprover(context, bounded[j], seconds, counts, &plan).run();
  }
  replan_changed_banks(problem, banks, options, start, &plan);
  return make_banked_plan(problem, banks.size(), std::move(plan.bank_of), std::move(plan.offsets));
}

}  // namespace memplan::banks
