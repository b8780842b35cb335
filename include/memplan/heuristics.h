// heuristics.h — plan_heuristics: the best valid plan of every fast
// heuristic planner, with no exact search.
//
// This is the lowest planning layer that combines strategies: the exact
// solvers start from its plan, and the registered default planner
// (`portfolio`, see planning.h) runs it before deciding a capacity or spending
// a time limit on the exact solver. It never calls either of them.
//
//   plan_heuristics(problem, options)
//       runs every heuristic of the registry's heuristic section, then
//       best-fit placement over several buffer orders, then (on problems of at
//       most 5,000 buffers) a deterministic improvement of the best order;
//       stops early when a plan reaches the load. Returns the smallest plan
//       the validator accepts (the naive plan if every heuristic failed).
//       options.time_limit_seconds (default 2 s) bounds the improvement; an
//       explicit limit also ends the earlier stages once a plan is known.
//       On cancel it returns soon with the best plan found so far (the naive
//       plan when none is known yet). The problem's capacity is not checked.
#pragma once

#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

StatusOr<Plan> plan_heuristics(const Problem& problem, const PlanOptions& options = {});

}  // namespace memplan
