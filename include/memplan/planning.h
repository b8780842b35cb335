// planning.h — the one path from a problem to a checked plan: run a registered
// planner, answer the problem's capacity, honour the time limit and cancel,
// validate, and say what was proven.
//
// Every caller that plans takes this path (memplan plan, memplan bench, the
// runtime's learners through plan_with, the C++ API), so they behave alike.
//
//   run_planner(name, problem, options)
//     1. Checks the problem (check_problem) and finds the planner by name.
//        A capacity below the lower bound that needs no search (the load, or
//        the top of a fixed buffer) is refuted here, before any planner runs.
//     2. Runs it. The default planner, `portfolio`, is itself a path:
//          a. the heuristics (plan_heuristics, heuristics.h);
//          b. with a capacity the heuristic plan does not fit: the exact
//             solver decides the capacity with the time that is left (10 s
//             when no limit is set);
//          c. without a capacity, with an explicit time limit and a gap left:
//             the exact solver improves the heuristic plan with the time left
//             (windows on large problems), keeping the better plan;
//          d. without a capacity or a time limit, with a gap left, on a
//             problem of at most kDefaultSearchMaxBuffers buffers: the same,
//             for options.default_search_seconds (0, the library's default:
//             skipped; the front ends give kDefaultSearchSeconds).
//        `exact` runs the decision (with a capacity) or the minimisation, and
//        reports its statistics; any other planner runs alone.
//     3. Validates the plan (capacity included). A planner that produced an
//        invalid plan is a bug: kInternal, naming the planner and the reason.
//   The verdict says what the plan means:
//     kPlanned     no capacity: the plan is the best found
//     kFits        the plan fits the capacity
//     kDoesNotFit  proven: no plan fits the capacity; `reason` gives the proof
//                  (no plan)
//     kUnknown     no plan within the capacity was found and none was proven
//                  impossible; `plan` is the best plan found (above the
//                  capacity), `reason` says what ran and for how long
//   lower_bound is proven in every case (at least the load).
//   The ending refines the verdict into what the run ended in:
//     kOptimal               the plan reaches the proven lower bound
//     kFits                  the plan fits the capacity (not proven smallest)
//     kDoesNotFit            proven: no plan fits the capacity
//     kBestAtTimeLimit       the exact search improved the plan until the time
//                            limit (or its node limit) stopped it
//     kBestAtSearchBudget    the default search (2d) improved the plan or
//                            tried to, until its budget ran out
//     kBestWindowsExhausted  the windowed improvement (large problems) tried
//                            every window of every pass; more time would not
//                            have lowered the plan
//     kBestHeuristic         a heuristic plan; no search ran (no time limit
//                            with the default planner, or a heuristic planner)
//     kCancelled             cancelled; the plan, if any, is the best so far
//     kUnknown               no plan within the capacity, none proven impossible
//
// Good enough (options.good_enough, a named planner other than
// greedy_by_size): for a caller that plans often and pays for every
// millisecond (the runtime plans at iteration boundaries), before step 2:
//     a. greedy_by_size plans (no time limit, no cancel; milliseconds) and
//        its plan is validated;
//     b. that plan is the result, and the named planner does not run, when
//        it is good enough (GoodEnough: within a tolerance of the load, in
//        whole units) or when less than GoodEnough::shortest_run_seconds of
//        a set time limit is left;
//     c. else the named planner runs (steps 1-3) and its plan is the result
//        only when its run ended with a plan, not cancelled, and smaller
//        than the quick one; otherwise — an error, a cancel, no plan, a plan
//        no smaller — the quick plan is, with the quick run's verdict.
//   made_by says "greedy_by_size" when the quick plan is the result.
//
// Budget (options.budget): the time limit is budget.allowance(time limit,
// options.budget_share), and the whole call's wall time is charged to the
// budget; see PlanningBudget.
//
// Cancel (options.cancel set from another thread or a signal handler): the
// call returns soon with cancelled = true and the best valid plan found so far,
// if any (none when the first heuristic had not finished).
//
// Errors (status): unknown planner (kNotFound), invalid problem
// (kInvalidArgument), a planner's own error, an invalid plan (kInternal).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "memplan/exact.h"
#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

enum class PlanVerdict { kPlanned, kFits, kDoesNotFit, kUnknown };

std::string_view plan_verdict_name(PlanVerdict verdict);  // "planned", "fits", "does not fit", "unknown"

enum class PlanEnding {
  kOptimal,
  kFits,
  kDoesNotFit,
  kBestAtTimeLimit,
  kBestAtSearchBudget,
  kBestWindowsExhausted,
  kBestHeuristic,
  kCancelled,
  kUnknown,
};

// "optimal", "fits", "does not fit", "best found (time limit)",
// "best found (default search budget)", "best found (search exhausted its windows)", "best found (heuristics)",
// "cancelled", "unknown".
std::string_view plan_ending_name(PlanEnding ending);

struct PlanningResult {
  PlanVerdict verdict = PlanVerdict::kUnknown;
  PlanEnding ending = PlanEnding::kUnknown;  // what the run ended in (see above)
  std::optional<Plan> plan;                  // valid for the problem; within the capacity unless kUnknown
  std::string planner;                       // the registered planner that ran
  std::string made_by;                       // what produced the plan: "heuristics", "exact", or the planner's name
  int64_t load = 0;                          // bytes
  int64_t lower_bound = 0;                   // bytes; proven: every plan's arena is at least this
  std::string reason;                        // kDoesNotFit: the proof; kUnknown: what was tried
  std::optional<ExactResult> exact;          // when the exact solver ran (its plan is moved into `plan`)
  bool cancelled = false;                    // options.cancel stopped the work early
  double planning_seconds = 0;               // wall time of planning (step 2)
  double validation_seconds = 0;             // wall time of validation (step 3)
  // The default search's budget when it ran (step 2d), else 0.
  double default_search_seconds = 0;
};

// The planning time that many runs share and may still spend: one full
// run (the time limit), plus a share of the wall time elapsed since the
// budget's first run. A run gets its full limit while the budget has it,
// what is left of it otherwise (never below 0). For a caller whose plans
// keep coming (a new variant every few iterations) it bounds planning to a
// share of a core. Thread-safe.
class PlanningBudget {
 public:
  // Seconds the next run may take under `limit_seconds`: the full limit
  // while the budget has it, what is left otherwise. The first call starts
  // the budget's clock. A limit of 0 (the planner's own default) or a share
  // of 1 or more has no budget: the limit is returned as it is.
  double allowance(double limit_seconds, double share);
  void spend(int64_t ns);

 private:
  std::atomic<int64_t> first_ns_{0};
  std::atomic<int64_t> spent_ns_{0};
};

StatusOr<PlanningResult> run_planner(std::string_view name, const Problem& problem, const PlanOptions& options = {});

// A finished run as plan_with answers it: the plan when planned or it fits;
// else kCancelled, kInfeasible (the proof), kDeadlineExceeded (no capacity) or
// kCapacityExceeded (what was tried). For callers that also read the run's
// ending (memplan bench).
StatusOr<Plan> plan_or_status(std::string_view name, const Problem& problem, PlanningResult result);

}  // namespace memplan
