// planner.h — the one interface every planning strategy sits behind, and the
// registry that lists them by name.
//
// A planner takes a Problem and returns a Plan (offsets form). Strategies of
// the shared-objects form return an ObjectAssignment internally and stack it
// with plan_from_objects, so every planner yields a Plan.
//
// The registry is a fixed table (src/planners/registry.cc): adding a planner is one
// source file plus one line there. The CLI, the benchmarks and the conformance
// tests iterate over it. Planners are pure functions of (problem, options):
// deterministic, thread-compatible, no globals.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "memplan/plan.h"
#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

class PlanningBudget;

// When a quick plan is good enough (PlanOptions::good_enough). Arena and
// load are counted in whole units of `unit_bytes` (the runtime's: a page,
// since a slab is committed in pages), and a plan is good enough when its
// arena takes at most the load's units plus `tolerance` of them, rounded
// down: with 4 KiB units and 0.01, a load of 8,100 units accepts an arena
// of up to 8,181.
struct GoodEnough {
  int64_t unit_bytes = 1;
  double tolerance = 0;
  // With a time limit set, of which less than this is left (after the
  // budget, PlanOptions::budget), the named planner is not run: the quick
  // plan is kept.
  double shortest_run_seconds = 0.002;
};

struct PlanOptions {
  // Wall-clock budget in seconds; 0 means each planner's own default (none
  // for the heuristics). Every planner honours it: the heuristics return
  // kDeadlineExceeded when it runs out before their plan is complete; the
  // portfolio and exact return the best plan found by then (naive's, O(n), if
  // the portfolio found none). min_cost_flow can only look before and after
  // its network simplex, which cannot be interrupted.
  double time_limit_seconds = 0;
  // If set, every planner polls it (before any work, then every few hundred
  // units of work) and returns kCancelled once it is true; exact's
  // minimisation returns its best plan instead when it has one.
  const std::atomic<bool>* cancel = nullptr;
  // Seed for planners with randomised orderings (results stay deterministic
  // for a given seed).
  uint64_t seed = 0;
  // Threads the exact planner may use in all (ExactOptions::threads, at most
  // kMaxPlanThreads from the CLI and Python); 0: one per hardware thread
  // (plan_threads()). The other planners run on the caller's thread. With
  // more than one, a run cut short by time can end on another plan each time.
  int32_t threads = 1;
  // The default planner's search without a time limit: when no time limit
  // and no capacity are given, the heuristic plan is above the load, and the
  // problem has at most kDefaultSearchMaxBuffers buffers, the exact solver
  // tries to close the gap for at most this many seconds, keeping the better
  // plan (PlanningResult says whether it ran and what ended it). 0: the
  // heuristics alone. The library's default is 0, so that callers that plan
  // in a loop (the runtime, tests) pay nothing unasked; the front ends
  // (memplan plan, memplan bench, memplan.plan) use kDefaultSearchSeconds.
  double default_search_seconds = 0;
  // Stop at a good-enough plan (run_planner only; planning.h, "Good
  // enough"): greedy_by_size runs first, and its plan is kept without
  // running the named planner when it is close enough to the load. Unset:
  // the named planner alone.
  std::optional<GoodEnough> good_enough;
  // A time budget that runs share (run_planner only; planning.h,
  // PlanningBudget): the run's time limit is what the budget allows, at
  // most time_limit_seconds, and the run's wall time is charged to it.
  // nullptr: the time limit as given.
  PlanningBudget* budget = nullptr;
  // The budget's refill: it earns this share of the wall time since its
  // first run (PlanningBudget::allowance); 1 or more: no budget at all.
  double budget_share = 1;
};

// The front ends' default search budget (PlanOptions::default_search_seconds)
// and the largest problem it is spent on. On MiniMalloc's A-K the default
// planner with it ends optimal on 8 of the 11 on one thread, each within
// 0.5 s (docs/benchmarks.md, The default planner). The size limit keeps the
// search to problems where it honours its budget: on a 17,854-buffer
// training step (bench/data/torch/train_resnet18.csv) a 1 s search ran for
// 37 s before its first step, and its gap was 0.00% already.
inline constexpr double kDefaultSearchSeconds = 1.0;
inline constexpr size_t kDefaultSearchMaxBuffers = 2'000;

// The threads a run with these options uses: options.threads (at least 1),
// or for 0 the hardware threads (std::thread::hardware_concurrency(); 1 where
// unknown), at most kMaxPlanThreads.
int32_t plan_threads(const PlanOptions& options);

// The most threads the front ends (memplan plan -j, memplan.plan) accept.
inline constexpr int32_t kMaxPlanThreads = 256;

enum class PlanForm {
  kOffsets,    // places buffers at byte offsets directly
  kObjects,    // groups buffers into shared objects, then stacks them
  kComposite,  // combines other planners (portfolio) or searches (exact)
};
// "offsets", "objects", "composite": as `memplan planners` and Python print it.
std::string_view plan_form_name(PlanForm form);

using PlanFunction = StatusOr<Plan> (*)(const Problem&, const PlanOptions&);

struct PlannerInfo {
  std::string_view name;         // registry key, e.g. "greedy_by_size"
  std::string_view description;  // one line for `memplan planners`
  PlanForm form;
  PlanFunction plan;
  // Fast heuristics are run by the portfolio and by the property tests on
  // thousands of problems; slow ones (exact search, MIP) are not.
  bool fast = true;
};

// All registered planners, in a fixed order.
std::span<const PlannerInfo> planners();

// The planner called `name`, or nullptr.
const PlannerInfo* find_planner(std::string_view name);

// The registered names, in order, joined by ", " (for messages that list them).
std::string planner_names();

// What every caller says about a name that is not registered (the CLI, the
// Python module): the name, the nearest registered one when it looks like a
// typo, and the list, e.g.
//   unknown planner 'greedy_by_siz'; did you mean 'greedy_by_size'? (registered: portfolio, naive, ...)
std::string unknown_planner_message(std::string_view name);

// The name in `names` nearest to `word` by edit distance (a transposition of
// two neighbours counts as one edit), if it is close enough to be a likely
// typo: at most a third of the word's letters off. Else "". For "did you
// mean" hints (planners here; the CLI's subcommands too).
std::string nearest_name(std::string_view word, std::span<const std::string> names);

// The planner used when none is named.
inline constexpr std::string_view kDefaultPlanner = "portfolio";

// Checks the problem, runs the named planner, and returns its plan. A plan is
// returned only if it honours every constraint of the problem: when the
// problem has a capacity and the planner's plan exceeds it, the result is
// kCapacityExceeded (a heuristic's failure, not a proof; the `exact` planner
// answers kInfeasible when it proves that nothing fits).
StatusOr<Plan> plan_with(std::string_view name, const Problem& problem, const PlanOptions& options = {});

}  // namespace memplan
