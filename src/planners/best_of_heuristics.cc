// best_of_heuristics.cc — plan_heuristics: the best valid plan of many
// heuristics. The registered default planner, `portfolio` (run_planner in
// src/planning/planning.cc), runs it first.
//
// No single heuristic wins everywhere: greedy by size is best on most
// inference graphs, lifetime-first orders on training graphs with long-lived
// activations, the shared-objects strategies on chains of equal tensors. The
// plan_heuristics runs them all and keeps the smallest plan the validator accepts.
//
//   1. Bound: compute the load (the lower bound every plan must respect).
//   2. Heuristics: run every planner of heuristics.cc except naive and
//      greedy_best (the better of two planners that run anyway), in table
//      order; min_cost_flow only on problems of at most 2,000 buffers (above
//      that it never won and dominated time and memory; its network simplex
//      grows faster than n log n and cannot be interrupted).
//      Some members cost more than n log n where many buffers are live at
//      once: gap placement (the offsets planners, gergov, step 3: one
//      occupancy query per buffer, as long as the free gaps around it, all of
//      which best fit must see), greedy_by_breadth (its class walk passes the
//      placed buffers that overlap) and greedy_by_size_objects (stale queue
//      entries, one per free object around a placed buffer). On random
//      lifetimes of 10^6 buffers (~1,100 live, 10^9 overlapping pairs) each
//      takes 30-50 s. Above kMaxPairsForHeavyMembers overlapping pairs
//      (counted first, O(n log n)) the light members (greedy_in_order, then
//      equality: cheapest first) run first, and the heavy ones and the orderings only
//      under a time limit, which stops them; without one they are skipped.
//   3. Orderings: run best-fit gap placement (offset_placement.h) with each
//      ordering below (the first one also with the two other fit policies).
//      A buffer's contention is the largest live bytes over its lifetime:
//      high-contention buffers belong to the peak region and go first.
//        - contention, then size; contention, then lifetime;
//        - size x contention; size x lifetime;
//        - increasing start (allocation order, as a bump allocator sees it).
//   4. Improvement (problems of at most 5,000 buffers): starting from the
//      best ordering found, repeatedly perturb
//      it (move a random block of buffers that touch the arena's top towards
//      the front, or swap two random buffers of similar contention) and keep
//      the new order when its plan is no larger (RepeatedPlacement,
//      offset_placement.h: the same plan as place_in_order, re-placing only
//      what follows the unchanged prefix). The number of rounds is set
//      by a work budget (buffer placements), not by the clock, so the result
//      is deterministic; the clock (options.time_limit_seconds, default 2 s)
//      only cuts the improvement short on very slow machines.
//   5. Stop as soon as a plan's arena equals the load: it is optimal.
//   6. Validate candidates best-first and return the first valid one (a
//      heuristic bug can never leak an invalid plan; naive is the last resort).
//
// Time limit and cancel (stop_condition.h). Every planner plan_heuristics runs
// gets the cancel flag and the time left of options.time_limit_seconds and
// stops when either says so. When the time runs out or the work is cancelled
// plan_heuristics returns the best valid plan found so far (naive's if none:
// O(n), never cut): a caller that cancelled knows it did and may still want a
// plan (`memplan plan` on SIGINT, minimisation's start). Without a time limit the improvement phase alone is
// bounded, by kDefaultTimeLimitSeconds.
//
// Cost: (number of heuristics + rounds) x one placement, each O(n log n) plus
// the occupancy queries; validation once per returned plan.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "core/saturating.h"
#include "core/splitmix.h"
#include "core/sweep.h"
#include "memplan/bounds.h"
#include "memplan/validate.h"
#include "planners/occupancy_index.h"
#include "planners/offset_placement.h"
#include "planners/planners.h"
#include "planners/stop_condition.h"

namespace memplan {
namespace {

constexpr size_t kMinCostFlowMaxBuffers = 2000;

// Overlapping pairs above which the members whose cost grows with them are
// skipped (step 2). Measured on the reference machine, one greedy_by_size
// placement: DNN-like 10^6 buffers, 2.5·10^6 pairs, 0.9 s; random lifetimes of
// 10^5, 3.2·10^7 pairs, 1.0 s; of 10^6, 10^9 pairs, 31 s. iopddl Y_1 (62k
// buffers, 1.8·10^8 pairs, but packed into few gaps) stays below, as do all
// the shipped instances.
constexpr int64_t kMaxPairsForHeavyMembers = int64_t{1} << 28;

// Time kept out of a time limit for what cannot be interrupted once the
// members stop: the final validation (~0.6 s for 10^6 buffers on the
// reference machine), and the stopped member's clean-up (freeing an occupancy
// index of millions of nodes) — 2 µs per buffer, a quarter of the limit at most.
constexpr double kValidationShare = 0.25;
constexpr double kValidationSecondsPerBuffer = 2e-6;

// Pairs of buffers live at the same time: at each start, the buffers live.
int64_t overlapping_pairs(const Problem& problem) {
  int64_t live = 0, pairs = 0;
  for (const LifetimeEvent& e : sorted_events(problem)) {
    if (e.start)
      pairs += live++;
    else
      --live;
  }
  return pairs;
}

// Members whose cost grows with the overlapping pairs (see step 2): gap
// placement with the occupancy index, greedy_by_breadth and
// greedy_by_size_objects.
bool cost_grows_with_pairs(const PlannerInfo& info) {
  return (info.form == PlanForm::kOffsets && info.plan != &plan_naive) || info.plan == &plan_greedy_by_breadth ||
         info.plan == &plan_greedy_by_size_objects;
}

using Clock = std::chrono::steady_clock;

// Total buffer placements the improvement phase may spend (rounds x buffers,
// though a round re-places only the buffers after the prefix its order shares
// with the current one): 0.05-0.25 CPU s on MiniMalloc's A-K and about 0.8 s
// on SOMAS resnet50 (1,042 buffers) on this project's 2-core machine, so the
// 2 s clock practically never decides the result, and thousands of rounds on
// the few-hundred-buffer problems where ordering matters most.
constexpr int64_t kImprovementPlacementBudget = 1'000'000;
constexpr int kMaxImprovementRounds = 1500;
// Perturbing one buffer at a time barely moves a plan of tens of thousands of
// buffers; there the orderings do the work and the improvement
// phase is skipped.
constexpr size_t kMaxBuffersForImprovement = 5000;
constexpr double kDefaultTimeLimitSeconds = 2.0;

// Tiny and deterministic, good enough for choosing perturbations.
struct Rng {
  SplitMix64 stream;
  uint64_t next() { return stream.next(); }
  size_t below(size_t n) { return static_cast<size_t>(stream.below(n)); }
};

// Max over a buffer's lifetime of the live bytes: its "contention".
std::vector<int64_t> contention_of(const Problem& problem) {
  const TimeSlots slots(problem);
  const size_t m = slots.size();
  std::vector<int64_t> delta(m + 1, 0);
  for (size_t i = 0; i < problem.size(); ++i) {
    const SlotRange r = slots.of(i);
    delta[r.first] += problem.buffers[i].size;
    delta[r.last] -= problem.buffers[i].size;
  }
  // Segment tree (iterative, size 2 * leaves) of the per-slot live bytes for range-max queries.
  size_t leaves = 1;
  while (leaves < std::max<size_t>(m, 1)) leaves <<= 1;
  std::vector<int64_t> tree(2 * leaves, 0);
  int64_t live = 0;
  for (size_t s = 0; s < m; ++s) {
    live += delta[s];
    tree[leaves + s] = live;
  }
  for (size_t v = leaves - 1; v >= 1; --v) tree[v] = std::max(tree[2 * v], tree[2 * v + 1]);
  std::vector<int64_t> contention(problem.size(), 0);
  for (size_t i = 0; i < problem.size(); ++i) {
    const SlotRange r = slots.of(i);
    int64_t best = 0;
    for (size_t lo = r.first + leaves, hi = r.last + leaves; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) best = std::max(best, tree[lo++]);
      if (hi & 1) best = std::max(best, tree[--hi]);
    }
    contention[i] = best;
  }
  return contention;
}

template <typename Less>
std::vector<size_t> sorted_indices(size_t n, Less less) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  return order;
}

// Orders the registry's planners do not already cover (they run decreasing
// size and decreasing lifetime). The contention orders matter most on real
// graphs: on the SOMAS Pangu-2.6B instance size-first placement is 3.3% above
// the load and contention-then-size 0.76%; on IOPDDL S_1 size-first is 2.5%
// and contention-then-lifetime 0.26%.
// Ordering k (0 <= k < kOrderCount) of the list above, built one at a time so
// that the caller can stop between two sorts.
constexpr size_t kOrderCount = 5;
std::vector<size_t> ordering_of(const Problem& problem, const std::vector<int64_t>& contention, size_t k) {
  const auto& b = problem.buffers;
  auto length = [&](size_t i) { return saturating_sub(b[i].upper, b[i].lower); };  // lifetimes may span more than int64
  // Products can overflow int64: compare them as long double.
  auto product = [](int64_t x, int64_t y) { return static_cast<long double>(x) * static_cast<long double>(y); };
  switch (k) {
    case 0:
      return sorted_indices(problem.size(), [&](size_t x, size_t y) {
        if (contention[x] != contention[y]) return contention[x] > contention[y];
        if (b[x].size != b[y].size) return b[x].size > b[y].size;
        return length(x) > length(y);
      });
    case 1:
      return sorted_indices(problem.size(), [&](size_t x, size_t y) {
        if (contention[x] != contention[y]) return contention[x] > contention[y];
        if (length(x) != length(y)) return length(x) > length(y);
        return b[x].size > b[y].size;
      });
    case 2:
      return sorted_indices(problem.size(), [&](size_t x, size_t y) {
        return product(b[x].size, contention[x]) > product(b[y].size, contention[y]);
      });
    case 3:
      return sorted_indices(problem.size(), [&](size_t x, size_t y) {
        return product(b[x].size, length(x)) > product(b[y].size, length(y));
      });
    default:
      return sorted_indices(problem.size(), [&](size_t x, size_t y) {
        return b[x].lower != b[y].lower ? b[x].lower < b[y].lower : b[x].size > b[y].size;
      });
  }
}

// One perturbation of `order`: either move a block of buffers that end at the
// arena's top (the ones that define it) to the front, or swap two buffers.
void perturb(const Problem& problem, const Plan& plan, std::vector<size_t>* order, Rng* rng) {
  const size_t n = order->size();
  if (n < 2) return;
  if (rng->next() % 2 == 0) {
    // Buffers whose end is within the top 10% of the arena define the peak:
    // placing one of them earlier lets the rest settle around it.
    std::vector<size_t> top;
    const int64_t threshold = plan.arena - plan.arena / 10;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (*order)[k];
      if (plan.offsets[i] + problem.buffers[i].size >= threshold && k > 0) top.push_back(k);
    }
    if (!top.empty()) {
      const size_t k = top[rng->below(top.size())];
      const size_t to = rng->below(k);
      std::rotate(order->begin() + to, order->begin() + k, order->begin() + k + 1);
      return;
    }
  }
  // Swap two buffers that are near each other in the order (small, local moves
  // keep most of a good order intact).
  const size_t k = rng->below(n);
  const size_t span = std::max<size_t>(2, n / 16);
  const size_t j = std::min(n - 1, k + 1 + rng->below(span));
  std::swap((*order)[k], (*order)[j]);
}

bool time_left(Clock::time_point deadline) { return Clock::now() < deadline; }

}  // namespace

StatusOr<Plan> plan_heuristics(const Problem& problem, const PlanOptions& options) {
  // The members stop early enough to leave the final validation its time.
  PlanOptions members = options;
  if (options.time_limit_seconds > 0) {
    const double reserve = std::min(kValidationShare * options.time_limit_seconds,
                                    kValidationSecondsPerBuffer * static_cast<double>(problem.size()));
    members.time_limit_seconds = std::max(1e-9, options.time_limit_seconds - reserve);
  }
  StopCondition stop(members, "portfolio");  // the registered planner users call
  const int64_t bound = load(problem);
  const double limit = options.time_limit_seconds > 0 ? options.time_limit_seconds : kDefaultTimeLimitSeconds;
  const Clock::time_point improvement_deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
  // Whether to start another planner: neither cancelled nor out of time.
  auto go_on = [&] { return !stop.should_stop_now(); };

  std::vector<Plan> candidates;
  int64_t best_arena = INT64_MAX;
  // Only plans that improve on the best so far are kept (a short list, so
  // memory stays O(n) times the number of improvements, not of heuristics).
  // A planner stopped by the time limit or the cancel flag adds nothing.
  auto consider = [&](StatusOr<Plan> plan) {
    if (!plan.ok() || plan->arena >= best_arena) return;  // failed, stopped or not better
    best_arena = plan->arena;
    candidates.push_back(std::move(plan).value());
  };
  auto optimal = [&] { return best_arena <= bound; };
  // Above the pair threshold the light members run first, and the heavy ones
  // (with the orderings) only when a time limit bounds them.
  const bool many_pairs = overlapping_pairs(problem) > kMaxPairsForHeavyMembers;
  const bool heavy_members = !many_pairs || stop.has_deadline();

  // 2. Every fast registered planner (min-cost flow only up to 2,000 buffers),
  //    in registry order; above the pair threshold the light ones first.
  auto member = [&](const PlannerInfo& info) {
    // Min-cost flow never won on a large instance of the benchmark set (its
    // shared objects leave 26-74% on the torch traces) but costs the most time
    // and memory of all (36 MB of plan_heuristics' 36 MB peak on mobilenet_v2's
    // 6,857 buffers): only small problems try it.
    return info.fast && info.plan != &plan_naive && info.plan != &plan_greedy_best &&
           !(info.name == "min_cost_flow" && problem.buffers.size() > kMinCostFlowMaxBuffers);
  };
  const std::span<const PlannerInfo> table = heuristic_planners();
  for (int pass = many_pairs ? 0 : 1; pass < 2; ++pass) {
    for (size_t k = 0; k < table.size(); ++k) {
      // Pass 0 walks the table backwards: of the light members, the cheaper
      // greedy_in_order (0.8 s on 10^6 random buffers) then equality (3-7 s),
      // so that a short time limit still ends with a shared-objects plan.
      const PlannerInfo& info = pass == 0 ? table[table.size() - 1 - k] : table[k];
      if (optimal() || !go_on()) break;
      if (!member(info)) continue;
      // Pass 0: the light members; pass 1: the rest (everything when the
      // pairs are few).
      const bool heavy = many_pairs && cost_grows_with_pairs(info);
      if (pass == 0 && heavy) continue;
      if (pass == 1 && many_pairs && !heavy) continue;
      if (heavy && !heavy_members) continue;
      consider(info.plan(problem, stop.options_for_nested()));
    }
  }

  // 3. Gap placement with every ordering and fit policy.
  std::vector<size_t> best_order;
  FitPolicy best_policy = FitPolicy::kBestFit;
  int64_t best_order_arena = INT64_MAX;
  std::vector<int64_t> contention;
  if (heavy_members && !optimal() && go_on()) contention = contention_of(problem);
  // Best fit with every order; the other two policies only where they have
  // been seen to win (keeps plan_heuristics to a dozen placements on big problems).
  constexpr FitPolicy kPolicies[] = {FitPolicy::kBestFit, FitPolicy::kBestFitInArena, FitPolicy::kFirstFit};
  for (size_t o = 0; o < kOrderCount && !contention.empty() && !optimal() && go_on(); ++o) {
    const std::vector<size_t> order = ordering_of(problem, contention, o);
    for (FitPolicy policy : kPolicies) {
      if (policy != FitPolicy::kBestFit && o != 0) continue;
      if (!go_on()) break;
      StatusOr<Plan> plan = place_in_order(problem, order, policy, stop.options_for_nested());
      if (plan.ok() && plan->arena < best_order_arena) {
        best_order_arena = plan->arena;
        best_order = order;
        best_policy = policy;
      }
      consider(std::move(plan));
      if (optimal()) break;
    }
  }

  // 4. Improvement by perturbing the best ordering.
  if (!optimal() && best_order_arena != INT64_MAX && problem.size() > 1 &&
      problem.size() <= kMaxBuffersForImprovement && go_on()) {
    Rng rng{options.seed ^ 0x6d656d706c616eULL};
    std::vector<size_t> current = best_order;
    StatusOr<Plan> current_plan = place_in_order(problem, current, best_policy, stop.options_for_nested());
    const int64_t rounds =
        std::min<int64_t>(kMaxImprovementRounds, kImprovementPlacementBudget / static_cast<int64_t>(problem.size()));
    // Each trial re-places only what follows the prefix it shares with the
    // current order; the plan is place_in_order's (offset_placement.h).
    RepeatedPlacement placement(problem, best_policy);
    std::vector<size_t> trial;
    for (int64_t r = 0; r < rounds && current_plan.ok() && !optimal() && go_on() && time_left(improvement_deadline);
         ++r) {
      trial = current;
      perturb(problem, *current_plan, &trial, &rng);
      StatusOr<Plan> plan = placement.place(trial, current, *current_plan, stop.options_for_nested());
      if (!plan.ok()) break;
      if (plan->arena <= current_plan->arena) {
        current.swap(trial);
        consider(plan);
        current_plan = std::move(plan);
      }
    }
  }
  // Cancelled: the best plan found so far, else the naive one (O(n)): the
  // caller that cancelled knows it did, and may still want a plan (`memplan
  // plan` on SIGINT, minimisation's start).

  // 6. Best valid candidate; the naive plan if every heuristic failed or the
  //    time ran out before any finished.
  for (auto c = candidates.rbegin(); c != candidates.rend(); ++c) {  // smallest last
    if (validate(problem, *c).ok()) return std::move(*c);
  }
  return plan_naive(problem, PlanOptions{});  // O(n); never cut, never cancelled
}

}  // namespace memplan
