// registry.cc — the table of planners, by name: the default planner, every
// heuristic (src/planners/heuristics.cc), and the solvers (src/solver).
// Adding a heuristic: one source file in src/planners (declared in
// planners.h) plus one line in heuristics.cc; adding a solver: one line here.
#include <vector>

#include "memplan/planner.h"
#include "planners/planners.h"
#include "solver/registered.h"

namespace memplan {

// planning.cc: the planners this layer runs itself (see planning.h).
StatusOr<Plan> plan_default(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_exact(const Problem& problem, const PlanOptions& options);

namespace {

const std::vector<PlannerInfo>& registered() {
  static const std::vector<PlannerInfo> table = [] {
    std::vector<PlannerInfo> t;
    t.push_back({"portfolio",
                 "best valid plan of every heuristic over several orderings; with a capacity or a time limit, "
                 "then the exact solver (default)",
                 PlanForm::kComposite, &plan_default, true});
    for (const PlannerInfo& h : heuristic_planners()) t.push_back(h);
    t.push_back({"exact", "branch-and-bound over canonical plans: smallest arena with a proof, or fit in the problem's capacity",
                 PlanForm::kComposite, &plan_exact, false});
#if MEMPLAN_WITH_CBC
    t.push_back({"mip", "mixed-integer program (pairwise big-M ordering) solved by CoinOR CBC: reference for small problems",
                 PlanForm::kComposite, &plan_mip, false});
#endif
    return t;
  }();
  return table;
}

}  // namespace

std::span<const PlannerInfo> planners() { return registered(); }

const PlannerInfo* find_planner(std::string_view name) {
  for (const PlannerInfo& p : registered()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string planner_names() {
  std::string names;
  for (const PlannerInfo& p : registered()) {
    if (!names.empty()) names += ", ";
    names += p.name;
  }
  return names;
}

}  // namespace memplan
