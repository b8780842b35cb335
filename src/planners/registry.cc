// registry.cc — the table of planners, by name: the default planner, every
// heuristic (heuristics.cc), and the solvers (src/solver).
// Adding a heuristic: one source file in src/planners (declared in
// planners.h) plus one line in heuristics.cc; adding a solver: one line here.
// It lists the solvers and run_planner's own planners, so it is built in the
// top planning layer with src/planning/, not with the heuristics beside it
// (src/CMakeLists.txt).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/planner.h"
#include "planners/planners.h"
#include "solver/registered.h"

namespace memplan {

// src/planning/planning.cc: the planners the top layer runs itself (see planning.h).
StatusOr<Plan> plan_default(const Problem& problem, const PlanOptions& options);
StatusOr<Plan> plan_exact(const Problem& problem, const PlanOptions& options);

namespace {

// Never destroyed: a replay allocator's planner thread may still be planning
// while exit() runs the static destructors (Note [Planning at exit] in
// runtime/learner.cc), and a destroyed table is read as freed memory.
const std::vector<PlannerInfo>& registered() {
  static const std::vector<PlannerInfo>& table = *new std::vector<PlannerInfo>([] {
    std::vector<PlannerInfo> t;
    t.push_back({"portfolio",
                 "best valid plan of every heuristic over several orderings; with a capacity or a time limit, "
                 "then the exact solver (default)",
                 PlanForm::kComposite, &plan_default, true});
    for (const PlannerInfo& h : heuristic_planners()) t.push_back(h);
    t.push_back({"exact",
                 "branch-and-bound over canonical plans: smallest arena with a proof, or fit in the problem's capacity",
                 PlanForm::kComposite, &plan_exact, false});
#if MEMPLAN_WITH_CBC
    t.push_back({"mip",
                 "mixed-integer program (pairwise big-M ordering) solved by CoinOR CBC: reference for small problems",
                 PlanForm::kComposite, &plan_mip, false});
#endif
    return t;
  }());
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

std::string nearest_name(std::string_view word, std::span<const std::string> names) {
  // Levenshtein distance with transpositions counted as one edit (plna -> plan).
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
    return d[a.size()][b.size()];
  };
  std::string best;
  size_t best_distance = std::max<size_t>(1, word.size() / 3) + 1;
  for (const std::string& name : names) {
    const size_t dist = distance(word, name);
    if (dist < best_distance) {
      best_distance = dist;
      best = name;
    }
  }
  return best;
}

std::string unknown_planner_message(std::string_view name) {
  std::vector<std::string> names;
  for (const PlannerInfo& p : registered()) names.emplace_back(p.name);
  const std::string nearest = nearest_name(name, names);
  return "unknown planner '" + std::string(name) + "'" + (nearest.empty() ? "" : "; did you mean '" + nearest + "'?") +
         " (registered: " + planner_names() + ")";
}

std::string_view plan_form_name(PlanForm form) {
  switch (form) {
    case PlanForm::kOffsets:
      return "offsets";
    case PlanForm::kObjects:
      return "objects";
    case PlanForm::kComposite:
      return "composite";
  }
  return "?";
}

}  // namespace memplan
