// registered.h — the solvers' entry points in the planner registry (internal
// header; src/planners/registry.cc lists them). Callers go through
// memplan::plan_with. The `exact` planner is src/planning/planning.cc over
// solve_decision / solve_minimize (exact.h).
#pragma once

#include "memplan/planner.h"

namespace memplan {

// `mip`: CoinOR CBC. Defined only when built with CBC (MEMPLAN_WITH_CBC), in cbc/.
StatusOr<Plan> plan_mip(const Problem& problem, const PlanOptions& options);

}  // namespace memplan
