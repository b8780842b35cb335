// portfolio.cc — placeholder until the heuristics land: runs naive.
#include "planners/planners.h"

namespace memplan {

StatusOr<Plan> plan_portfolio(const Problem& problem, const PlanOptions& options) {
  return plan_naive(problem, options);
}

}  // namespace memplan
