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
    // --- shared-objects planners ---
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
  return planner->plan(problem, options);
}

}  // namespace memplan
