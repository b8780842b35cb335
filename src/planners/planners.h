// planners.h — entry points of the registered planners (internal header).
// Each is defined in its own file in this folder and listed in registry.cc.
// Callers other than the registry and the portfolio go through
// memplan::plan_with / memplan::planners().
#pragma once

#include "memplan/planner.h"

namespace memplan {

StatusOr<Plan> plan_portfolio(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_naive(const Problem& problem, const PlanOptions& options);
// --- offsets planners ---
StatusOr<Plan> plan_greedy_by_size(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_greedy_by_size_first_fit(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_best_fit_spatial(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_best_fit_temporal(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_gergov(const Problem& problem, const PlanOptions& options);
// --- shared-objects planners ---
StatusOr<Plan> plan_equality(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_greedy_in_order(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_greedy_by_breadth(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_greedy_by_size_objects(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_greedy_best(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_min_cost_flow(const Problem& problem, const PlanOptions& options);
// --- exact solvers (src/solver/) ---
StatusOr<Plan> plan_exact(const Problem& problem, const PlanOptions& options);
// Defined only when built with CBC (MEMPLAN_WITH_CBC), in src/solver/cbc/.
StatusOr<Plan> plan_mip(const Problem& problem, const PlanOptions& options);

}  // namespace memplan
