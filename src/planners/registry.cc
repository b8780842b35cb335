// registry.cc — the table of planners, by name. Adding a planner: one source
// file in this folder (declaring its entry point in planners.h) plus one line
// in kPlanners below.
#include <algorithm>

#include "memplan/planner.h"
#include "planners/planners.h"

namespace memplan {
namespace {

constexpr PlannerInfo kPlanners[] = {
    // name, description, form, function, fast
    {"portfolio", "best valid plan of all fast heuristics over several orderings (default)", PlanForm::kComposite, &plan_portfolio, true},
    {"naive", "no reuse: bump allocation of every buffer in input order (baseline)", PlanForm::kOffsets, &plan_naive, true},
    // --- offsets planners ---
    {"greedy_by_size", "TFLite greedy by size: largest first, each at the smallest gap that fits among buffers live with it", PlanForm::kOffsets, &plan_greedy_by_size, true},
    {"greedy_by_size_first_fit", "TFLite Micro greedy planner: largest first, each at the lowest gap that fits", PlanForm::kOffsets, &plan_greedy_by_size_first_fit, true},
    {"best_fit_spatial", "XLA global decreasing-size best-fit heap: largest first, smallest fitting chunk under the arena", PlanForm::kOffsets, &plan_best_fit_spatial, true},
    {"best_fit_temporal", "XLA best-fit heap, temporal order: longest-lived first, smallest fitting chunk under the arena", PlanForm::kOffsets, &plan_best_fit_temporal, true},
    {"gergov", "Gergov's peeling of the load profile into levels (SODA 1999), realised by first fit", PlanForm::kOffsets, &plan_gergov, true},
    // --- shared-objects planners ---
    {"equality", "TFLite EQUALITY: in start order, reuse a free shared object of exactly equal size", PlanForm::kObjects, &plan_equality, true},
    {"greedy_in_order", "TFLite GREEDY_IN_ORDER: in start order, smallest free object that fits, else grow the largest free", PlanForm::kObjects, &plan_greedy_in_order, true},
    {"greedy_by_breadth", "TFLite GREEDY_BY_BREADTH: widest ticks first, biggest buffers first, best-fitting free object", PlanForm::kObjects, &plan_greedy_by_breadth, true},
    {"greedy_by_size_objects", "TFLite GREEDY_BY_SIZE (objects): by positional maximum, then nearest object in time", PlanForm::kObjects, &plan_greedy_by_size_objects, true},
    {"greedy_best", "TFLite GREEDY_BEST: the better of greedy_by_breadth and greedy_by_size_objects", PlanForm::kObjects, &plan_greedy_best, true},
    {"min_cost_flow", "TFLite MINCOSTFLOW: objects as chains of buffers from a min-cost flow (LEMON network simplex)", PlanForm::kObjects, &plan_min_cost_flow, true},
    // --- exact solvers ---
    {"exact", "branch-and-bound over canonical plans: smallest arena with a proof, or fit in the problem's capacity", PlanForm::kComposite, &plan_exact, false},
#if MEMPLAN_WITH_CBC
    {"mip", "mixed-integer program (pairwise big-M ordering) solved by CoinOR CBC: reference for small problems", PlanForm::kComposite, &plan_mip, false},
#endif
};

}  // namespace

std::span<const PlannerInfo> planners() { return kPlanners; }

const PlannerInfo* find_planner(std::string_view name) {
  for (const PlannerInfo& p : kPlanners) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

StatusOr<Plan> plan_with(std::string_view name, const Problem& problem, const PlanOptions& options) {
  const PlannerInfo* planner = find_planner(name);
  if (planner == nullptr) return NotFound("no planner named '" + std::string(name) + "' (see `memplan planners`)");
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem));
  StatusOr<Plan> plan = planner->plan(problem, options);
  if (plan.ok() && problem.capacity && plan->arena > *problem.capacity) {
    return CapacityExceeded(std::string(name) + "'s plan needs " + std::to_string(plan->arena) +
                            " bytes, above the capacity of " + std::to_string(*problem.capacity) +
                            " bytes (a heuristic result, not a proof that no plan fits)");
  }
  return plan;
}

}  // namespace memplan
