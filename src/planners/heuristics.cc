// heuristics.cc — the table of fast heuristic planners, in the order the
// portfolio runs them and the registry lists them. The portfolio, which
// iterates this table, lives in this layer too; the exact solvers (src/solver)
// and the registry (src/planning) sit above it and nothing here calls them.
#include "planners/planners.h"

namespace memplan {
namespace {

constexpr PlannerInfo kHeuristics[] = {
    // name, description, form, function, fast
    {"naive", "no reuse: bump allocation of every buffer in input order (baseline)", PlanForm::kOffsets, &plan_naive,
     true},
    // --- offsets planners ---
    {"greedy_by_size",
     "TFLite greedy by size: largest first, each at the smallest gap that fits among buffers live with it",
     PlanForm::kOffsets, &plan_greedy_by_size, true},
    {"greedy_by_size_first_fit", "TFLite Micro greedy planner: largest first, each at the lowest gap that fits",
     PlanForm::kOffsets, &plan_greedy_by_size_first_fit, true},
    {"best_fit_spatial",
     "XLA global decreasing-size best-fit heap: largest first, smallest fitting chunk under the arena",
     PlanForm::kOffsets, &plan_best_fit_spatial, true},
    {"best_fit_temporal",
     "XLA best-fit heap, temporal order: longest-lived first, smallest fitting chunk under the arena",
     PlanForm::kOffsets, &plan_best_fit_temporal, true},
    {"gergov", "Gergov's peeling of the load profile into levels (SODA 1999), realised by first fit",
     PlanForm::kOffsets, &plan_gergov, true},
    // --- shared-objects planners ---
    {"equality", "TFLite EQUALITY: in start order, reuse a free shared object of exactly equal size",
     PlanForm::kObjects, &plan_equality, true},
    {"greedy_in_order",
     "TFLite GREEDY_IN_ORDER: in start order, smallest free object that fits, else grow the largest free",
     PlanForm::kObjects, &plan_greedy_in_order, true},
    {"greedy_by_breadth",
     "TFLite GREEDY_BY_BREADTH: widest ticks first, biggest buffers first, best-fitting free object",
     PlanForm::kObjects, &plan_greedy_by_breadth, true},
    {"greedy_by_size_objects", "TFLite GREEDY_BY_SIZE (objects): by positional maximum, then nearest object in time",
     PlanForm::kObjects, &plan_greedy_by_size_objects, true},
    {"greedy_best", "TFLite GREEDY_BEST: the better of greedy_by_breadth and greedy_by_size_objects",
     PlanForm::kObjects, &plan_greedy_best, true},
#if MEMPLAN_WITH_LEMON  // a build with no LEMON (MEMPLAN_MINIMAL) leaves min_cost_flow.cc out
    {"min_cost_flow", "TFLite MINCOSTFLOW: objects as chains of buffers from a min-cost flow (LEMON network simplex)",
     PlanForm::kObjects, &plan_min_cost_flow, true},
#endif
};

}  // namespace

std::span<const PlannerInfo> heuristic_planners() { return kHeuristics; }

}  // namespace memplan
