// exact.h — exact planning: decide whether a problem fits in a capacity, or
// find the smallest arena, with a proof.
//
// Both entry points run a branch-and-bound search over canonical plans (see
// src/solver/canonical_search.h for the algorithm): every buffer sits at the
// lowest offset the buffers placed before it leave free, and buffers are
// placed in order of non-decreasing offset. Every feasible problem has such a
// plan, so exhausting the search proves infeasibility.
//
//   solve_decision(problem, C)  does every buffer fit below C bytes?
//       kFeasible / kOptimal  plan has arena <= C (kOptimal when it also
//                             reaches the load, so no plan can be smaller)
//       kInfeasible           proven: no plan fits in C; lower_bound > C
//       kTimedOut             neither found nor refuted in time; no plan
//   solve_minimize(problem)     smallest arena. Starts from the heuristics'
//       plan (or options.start_plan; upper bound) and the load (lower bound),
//       and raises the lower bound by refuting capacities (of the problem,
//       and of relaxed sub-problems: options.subproblem_bounds) while lowering
//       the upper bound with plans that fit tighter capacities: bounded
//       decisions at several capacities per round (the lower bound, just
//       below the best plan, bisection, a sweep across the gap), since a
//       search that fails at one capacity may succeed at a lower one; with a
//       time limit, options.repair_share of it then repairs the best plan by
//       re-deciding the buffers at its top with the rest fixed. Large problems
//       (options.window_threshold) are improved by windows around the peak
//       instead (improve_by_windows). Anytime: a plan is returned whenever
//       one is known, and the bounds it reaches are proven.
//       kOptimal      plan.arena == lower_bound
//       kInfeasible   only with a capacity cap (options.capacity or the
//                     problem's capacity) that no plan fits
//       kTimedOut     time or cancellation stopped it; plan is the best found
//                     and lower_bound the best proven
//
// Thread-safety: the functions are thread-compatible; solve_minimize starts
// options.threads - 1 threads of its own, solve_decision at most one (the SAT
// helper, see sat_helper), and both join them before they return.
// The caller may set *options.cancel from another thread at any time (the
// search polls it every few thousand nodes).
//
// Example: three buffers that fit exactly in their load (12 bytes):
//     Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8},
//                           {.id = "b", .lower = 1, .upper = 3, .size = 4},
//                           {.id = "c", .lower = 2, .upper = 4, .size = 8}}};
//     auto r = solve_minimize(p, {});   // r->outcome == kOptimal, arena 12
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "memplan/plan.h"
#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

// Users should keep the defaults; the switches exist so that tests and
// benchmarks can measure what each technique contributes.
struct ExactOptions {
  // Wall-clock budget in seconds for the whole call; 0 = no limit.
  double time_limit_seconds = 0;
  // Arena cap for solve_minimize (plans above it are not accepted); when unset
  // the problem's capacity, if any, is the cap. solve_decision ignores it.
  std::optional<int64_t> capacity;
  // Polled during the search; when it reads true the call stops as on a time-out.
  const std::atomic<bool>* cancel = nullptr;
  // Node budget per decision search (0 = unlimited); reaching it ends the call
  // like a time-out. For tests and benchmarks.
  int64_t node_limit = 0;
  // solve_decision: 0 ranks buffers by their keys; any other value jitters
  // the keys (each by a factor in [0.95, 1.05], new for every restart), so
  // each seed searches other trees. solve_minimize: picks the seeds of its
  // seeded restarts (seeded_share), which it runs with any value.
  uint64_t seed = 0;
  // Largest index (overlap graph and section memberships, 4 bytes an entry)
  // the search may build. Larger problems are answered from the heuristics'
  // plan alone (stats.too_large); about 16 bytes per overlapping pair.
  int64_t memory_limit_bytes = int64_t{512} << 20;
  // solve_minimize: a valid plan to start from instead of running the heuristics
  // (the caller's heuristic plan; must outlive the call). Ignored when invalid.
  const Plan* start_plan = nullptr;
  // solve_minimize on problems with more buffers than this (or too large to
  // index) improves the start plan by windows (improve_by_windows) after a
  // short search at the lower bound, instead of searching the whole problem.
  int64_t window_threshold = 4000;
  // Movable buffers in the smallest window; larger levels double it (4 times).
  int64_t window_buffers = 128;
  // solve_minimize: when the lower bound resists, also refute relaxed
  // sub-problems (sets of sections with compressed lifetimes: the tightest
  // sections, and time windows around the peak; src/solver/subproblem_bounds.h)
  // at the lower bound. A sub-problem's optimum never exceeds the problem's,
  // so each refutation raises the proven bound, often above the load.
  bool subproblem_bounds = true;
  // solve_minimize on problems below window_threshold, with a time limit:
  // the share of the time limit (0..1) kept for repairing the best plan after
  // the capacity rounds have had the rest: the buffers at the top of the
  // plan (an offset band) are freed and decided under arena - 1 with every
  // other buffer fixed (src/solver/window.h). 0 = off. A quarter, with
  // seeded_share at three quarters: on MiniMalloc's D and J (16 seeds at
  // 60 s) that pair ends at or below the best 60 s decision in 15 of 16 runs
  // each, against 13 and 14 of 16 with half and half (docs/history/exact.md,
  // "Choosing the default shares").
  double repair_share = 0.25;
  // Buffers in the smallest repair band; bands grow by half of it per try.
  int64_t repair_band_buffers = 8;
  // Share of the capacity rounds' time given to seeded restarts: short
  // decisions with jittered keys just below the best plan (0: off).
  double seeded_share = 0.75;
  // solve_minimize: threads in all. Beyond the caller's, threads - 1 helpers
  // run seeded restarts back to back beside the search and share its bounds
  // (src/solver/seeded_helpers.h); each builds its own index. With more than
  // one thread the plan found can differ from run to run. Problems above
  // window_threshold, and indexes that would not fit memory_limit_bytes once
  // per thread, run on the caller's thread alone.
  int32_t threads = 1;
  // With threads > 1 in a build with CaDiCaL (MEMPLAN_WITH_CADICAL): one of
  // the helpers is a SAT solver on the order encoding of the problem
  // (src/solver/sat/sat_helper.h) when no buffer has a fixed offset, every
  // alignment divides the gcd of the sizes, and the encoding is small (at
  // most 4 million clauses, and 128 bytes a clause within memory_limit_bytes:
  // about 2 clauses per pair of buffers live together and offset unit, in
  // units of the sizes' gcd). Its refutations raise the
  // lower bound. In solve_decision (threads > 1, same conditions) it races
  // the search on the capacity, and the first answer wins.
  bool sat_helper = true;

  // --- pruning and search switches (all on by default) ---
  // Place buffers in non-decreasing (offset, rank) order only, so that each
  // canonical plan is reached once; also enables the monotone-floor bound and
  // stops trying siblings after a buffer that no unplaced buffer can rest on.
  bool canonical_only = true;
  // Prune when some section cannot hold its unplaced buffers: the lowest offset
  // any of them can still take, plus their total size, exceeds the capacity.
  bool section_inference = true;
  // Stronger section check (needs section_inference): for every offset x that
  // an unplaced member of a section can still take (at least its min offset
  // and the last placed offset), the members that cannot go below x, plus the
  // bytes placed members hold at or above x, must fit in [x, capacity).
  // It costs more per node than the floor check, so a decision uses it only
  // after its first overload_after_nodes nodes (0: from the start).
  bool section_overload = true;
  int64_t overload_after_nodes = int64_t{1} << 17;
  // Skip placing a buffer at an offset at or above the top that another
  // unplaced buffer would have at its lowest offset (that buffer could always
  // be moved below, so such plans are dominated).
  bool dominance = true;
  // Twins (movable buffers with the same size and alignment that overlap the
  // same buffers in time, e.g. with the same lifetime) are interchangeable:
  // swapping two in a plan gives a plan. So each group is
  // placed in input order, and the search never tries the orders that only
  // swap twins (a plan with twins in another order is the same plan relabelled).
  bool twins = true;
  // Split the search into independent time partitions whenever every buffer
  // crossing a section boundary has been placed.
  bool decomposition = true;
  // Round robin over several static buffer orders with doubling node budgets,
  // instead of one search with the first order.
  bool restarts = true;
};

enum class ExactOutcome {
  kOptimal,     // plan found and proven smallest (arena == lower_bound)
  kFeasible,    // plan found that fits the capacity; not proven smallest
  kInfeasible,  // proven: no plan fits the capacity
  kTimedOut,    // stopped by the time limit, node limit or cancel, or (windowed
                // minimisation) with every window tried: stats.windows_exhausted
};

std::string_view exact_outcome_name(ExactOutcome outcome);  // "optimal", ...

// Which step of solve_minimize found a plan (ExactStats::improvements).
enum class PlanSource {
  kDive,        // the first short search at the lower bound
  kStartPlan,   // options.start_plan
  kHeuristics,  // the heuristics' plan (plan_heuristics)
  kWindows,     // improve_by_windows (large problems)
  kDescending,  // descending probes at the middle of the gap
  kFloor,       // capacity rounds: at the lower bound
  kCeiling,     // capacity rounds: just below the best plan
  kBisection,   // capacity rounds: between the bounds
  kSweep,       // capacity rounds: the sweep across the gap
  kSeeded,      // capacity rounds: a seeded restart
  kHelper,      // a seeded restart on a helper thread (ExactOptions::threads)
  kSat,         // the SAT helper thread (ExactOptions::sat_helper)
  kRepair,      // repair_by_bands
};

std::string_view plan_source_name(PlanSource source);  // "dive", "seeded restart", ...

// One plan better than every plan before it in the call.
struct Improvement {
  double seconds = 0;  // since the call started
  int64_t arena = 0;   // bytes
  PlanSource source = PlanSource::kDive;
};

struct ExactStats {
  int64_t nodes = 0;                   // placements tried, over all searches of the call
  int64_t backtracks = 0;              // nodes whose every child failed
  int64_t restarts = 0;                // searches abandoned at their node budget for another order
  int64_t splits = 0;                  // times the search split into independent partitions
  int64_t decisions = 0;               // decision searches run (solve_minimize runs several)
  int64_t subproblem_refutations = 0;  // relaxed sub-problems refuted at the lower bound
  int32_t partitions = 0;              // independent time partitions of the whole problem
  double seconds = 0;                  // wall-clock time of the call
  bool cancelled = false;              // the cancel flag stopped the call
  bool too_large = false;              // over options.memory_limit_bytes: no whole-problem search ran
  int64_t windows = 0;                 // windows re-solved by improve_by_windows
  int64_t windows_improved = 0;        // of them, windows whose plan was spliced in
  int64_t window_passes = 0;           // passes over the peak with a new window size (improve_by_windows)
  // improve_by_windows stopped because every window of every pass failed to
  // lower the peak (not because time ran out): more time would not help it.
  bool windows_exhausted = false;
  int64_t capacity_probes = 0;  // decisions the capacity rounds ran (solve_minimize)
  int64_t seeded_probes = 0;    // seeded restarts: of the capacity probes, and on helper threads
  int64_t seeded_plans = 0;     // seeded restarts that lowered the best plan
  int64_t helper_probes = 0;    // of seeded_probes, those on helper threads (ExactOptions::threads)
  int64_t sat_decisions = 0;    // SAT helper: solves run (one per time slice and capacity)
  int64_t sat_refutations = 0;  // SAT helper: capacities it proved too small
  double seconds_to_best = 0;   // wall-clock time at which the returned plan was found
  // solve_minimize: every plan that lowered the best arena, in order (the
  // last is the returned plan); the steps that find plans on a problem.
  std::vector<Improvement> improvements;
};

struct ExactResult {
  ExactOutcome outcome = ExactOutcome::kTimedOut;
  std::optional<Plan> plan;  // valid for the problem (and within the capacity)
  int64_t lower_bound = 0;   // proven: every plan has arena >= lower_bound (bytes)
  ExactStats stats;
};

// Decides whether `problem` fits in `capacity` bytes (the problem's own
// capacity is ignored). Errors: invalid problem, capacity < 0.
StatusOr<ExactResult> solve_decision(const Problem& problem, int64_t capacity, const ExactOptions& options = {});

// Minimises the arena (see above). Errors: invalid problem.
StatusOr<ExactResult> solve_minimize(const Problem& problem, const ExactOptions& options = {});

// Windowed improvement for large problems (src/solver/window.cc): starting
// from the valid plan `start`, repeatedly re-solves the time window around a
// buffer at the peak with solve_minimize (buffers crossing the window's edges
// keep their offsets), splices the window's plan back when the validator
// accepts the whole plan and it is better, until time (options.time_limit_seconds,
// 1 s per window without one) or cancel stops it or no window helps. Memory:
// O(n) plus one window's index. The plan is never worse than `start` and
// buffers with a fixed offset never move. outcome: kOptimal when the plan
// reaches the lower bound (max(load, highest fixed top)), else kTimedOut.
// Errors: invalid problem, start plan invalid for the problem.
StatusOr<ExactResult> improve_by_windows(const Problem& problem, const Plan& start, const ExactOptions& options = {});

}  // namespace memplan
