// planners.h — entry points of the heuristic planners (internal header).
// Each is defined in its own file in this folder and listed in heuristics.cc;
// the registry (src/planners/registry.cc) lists them beside the exact solvers.
// Callers other than the registry and the portfolio go through
// memplan::plan_with / memplan::planners(), or memplan::plan_heuristics.
#pragma once

#include <span>

#include "memplan/heuristics.h"
#include "memplan/planner.h"

namespace memplan {

// The fast heuristics, in the order the portfolio runs them (heuristics.cc).
std::span<const PlannerInfo> heuristic_planners();

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

}  // namespace memplan
