// greedy_best.cc — the better of greedy_by_breadth and greedy_by_size_objects
// (TFLite GPU delegate's GREEDY_BEST strategy).
//
// Algorithm:
//   1. Run greedy_by_size_objects and greedy_by_breadth.
//   2. Stack both; keep the one with the smaller arena (equal to the total
//      object size unless alignment pads between objects). Ties keep
//      greedy_by_size_objects, as TFLite does.
// Neither heuristic dominates: breadth-first wins where one wide tick decides
// the arena, size/distance where many mid-sized buffers chain well.
//
// Complexity: the sum of the two (see their files), plus O(n) to stack.
#include "planners/planners.h"
#include "planners/shared_objects.h"
#include "planners/stop_condition.h"

namespace memplan {
namespace {

struct Candidate {
  ObjectAssignment objects;
  Plan plan;
};

StatusOr<Candidate> best_candidate(const Problem& problem, const PlanOptions& options) {
  // One clock for both strategies: the second gets what the first left.
  const StopCondition stop(options, "greedy_best");
  MEMPLAN_ASSIGN_OR_RETURN(ObjectAssignment by_size, assign_greedy_by_size_objects(problem, options));
  MEMPLAN_ASSIGN_OR_RETURN(Plan by_size_plan, plan_from_objects(problem, by_size));
  MEMPLAN_ASSIGN_OR_RETURN(ObjectAssignment by_breadth, assign_greedy_by_breadth(problem, stop.options_for_nested()));
  MEMPLAN_ASSIGN_OR_RETURN(Plan by_breadth_plan, plan_from_objects(problem, by_breadth));
  if (by_breadth_plan.arena < by_size_plan.arena) {
    return Candidate{std::move(by_breadth), std::move(by_breadth_plan)};
  }
  return Candidate{std::move(by_size), std::move(by_size_plan)};
}

}  // namespace

StatusOr<ObjectAssignment> assign_greedy_best(const Problem& problem, const PlanOptions& options) {
  MEMPLAN_ASSIGN_OR_RETURN(Candidate best, best_candidate(problem, options));
  return std::move(best.objects);
}

StatusOr<Plan> plan_greedy_best(const Problem& problem, const PlanOptions& options) {
  MEMPLAN_ASSIGN_OR_RETURN(Candidate best, best_candidate(problem, options));
  return std::move(best.plan);
}

}  // namespace memplan
