// conformance_test.cc — every registered planner on every named scenario.
//
// The planners are read from the registry at start-up, so a planner added to
// registry.cc is covered without touching this file. Test names read
// <planner>_<scenario>, e.g.
//   Registry/PlannerOnScenario.PlansValidlyAndDeterministically/naive_Diamond
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <ostream>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "scenarios/scenarios.h"

namespace memplan {
namespace {

struct Case {
  const PlannerInfo* planner;
  scenarios::Scenario scenario;
};

std::vector<Case> cases_of(const std::vector<scenarios::Scenario>& catalogue) {
  std::vector<Case> cases;
  for (const PlannerInfo& planner : planners()) {
    for (const scenarios::Scenario& scenario : catalogue) cases.push_back({&planner, scenario});
  }
  return cases;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  std::string name = std::string(info.param.planner->name) + "_" + info.param.scenario.name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.planner->name << " on " << c.scenario.name; }

// Slow planners (exact search, MIP) get a short budget here: the scenarios
// check validity, and a search cut short must still return a valid plan (or
// say it ran out of time). Fast planners run with their defaults.
constexpr double kSlowPlannerSeconds = 0.5;

PlanOptions options_for(const PlannerInfo& planner) {
  return planner.fast ? PlanOptions{} : PlanOptions{.time_limit_seconds = kSlowPlannerSeconds};
}

// Planners that may stop on the clock (slow and composite ones) give the same
// answer twice only when they finish before it; the scenarios this small are
// far from any time limit.
constexpr size_t kClockFreeScenarioSize = 64;

class PlannerOnScenario : public testing::TestWithParam<Case> {};

// One test per (planner, scenario) checks validity and determinism together:
// CTest runs every test in its own process, so fewer, fuller tests keep the
// suite fast.
TEST_P(PlannerOnScenario, PlansValidlyAndDeterministically) {
  const PlannerInfo& planner = *GetParam().planner;
  const scenarios::Scenario& scenario = GetParam().scenario;
  const Problem& problem = scenario.problem;
  ASSERT_TRUE(check_problem(problem).ok()) << "scenario " << scenario.name << " is malformed";

  StatusOr<Plan> plan = plan_with(planner.name, problem, options_for(planner));
  if (!planner.fast && plan.status().code() == StatusCode::kDeadlineExceeded) {
    GTEST_SKIP() << planner.name << " found no plan in " << kSlowPlannerSeconds << " s on " << scenario.name;
  }
  ASSERT_TRUE(plan.ok()) << planner.name << " on " << scenario.name << ": " << plan.status().to_string();
  const ValidationResult verdict = validate(problem, *plan);
  ASSERT_TRUE(verdict.ok()) << planner.name << " on " << scenario.name << ": " << verdict.message;

  const int64_t bound = load(problem);
  EXPECT_GE(plan->arena, bound) << "arena below the load: the validator or the bound is wrong";
  if (scenario.optimal_arena) {
    EXPECT_GE(plan->arena, *scenario.optimal_arena) << "arena below the proven optimum of " << scenario.name;
  }

  const bool may_stop_on_the_clock = !planner.fast || planner.form == PlanForm::kComposite;
  if (may_stop_on_the_clock && problem.size() > kClockFreeScenarioSize) return;
  StatusOr<Plan> again = plan_with(planner.name, problem, options_for(planner));
  ASSERT_TRUE(again.ok()) << "second run: " << again.status().to_string();
  EXPECT_EQ(again->offsets, plan->offsets) << "same problem, same options, different plan";
  EXPECT_EQ(again->arena, plan->arena);
}

INSTANTIATE_TEST_SUITE_P(Registry, PlannerOnScenario, testing::ValuesIn(cases_of(scenarios::all_scenarios())),
                         case_name);

// With a capacity, a planner returns a valid plan within it or says why it
// could not: an OK plan above the capacity is a silently wrong answer.
class PlannerUnderCapacity : public testing::TestWithParam<Case> {};

TEST_P(PlannerUnderCapacity, FitsOrReportsAnError) {
  const PlannerInfo& planner = *GetParam().planner;
  const scenarios::Scenario& scenario = GetParam().scenario;
  StatusOr<Plan> plan = plan_with(planner.name, scenario.problem, options_for(planner));
  if (!plan.ok()) {
    EXPECT_NE(plan.status().code(), StatusCode::kInternal) << plan.status().to_string();
    EXPECT_FALSE(plan.status().message().empty());
    return;
  }
  const ValidationResult verdict = validate(scenario.problem, *plan);
  EXPECT_TRUE(verdict.ok()) << planner.name << " returned OK with an invalid plan: " << verdict.message;
}

INSTANTIATE_TEST_SUITE_P(Registry, PlannerUnderCapacity, testing::ValuesIn(cases_of(scenarios::capacity_scenarios())),
                         case_name);

// A request cancelled before it starts is answered with kCancelled, or with a
// valid plan by planners too quick to poll the flag; never with anything else.
TEST(Registry, EveryPlannerAnswersACancelledRequestHonestly) {
  const std::atomic<bool> cancelled{true};
  const scenarios::Scenario scenario = scenarios::DnnLike();
  for (const PlannerInfo& p : planners()) {
    PlanOptions options = options_for(p);
    options.cancel = &cancelled;
    StatusOr<Plan> plan = plan_with(p.name, scenario.problem, options);
    if (!plan.ok()) {
      EXPECT_EQ(plan.status().code(), StatusCode::kCancelled) << p.name << ": " << plan.status().to_string();
      continue;
    }
    const ValidationResult verdict = validate(scenario.problem, *plan);
    EXPECT_TRUE(verdict.ok()) << p.name << ": " << verdict.message;
  }
}

TEST(Registry, NamesAreUniqueAndFindable) {
  for (const PlannerInfo& p : planners()) {
    EXPECT_FALSE(p.name.empty());
    EXPECT_FALSE(p.description.empty()) << p.name;
    EXPECT_NE(p.plan, nullptr) << p.name;
    EXPECT_EQ(find_planner(p.name), &p) << p.name << " is shadowed by an earlier entry of the same name";
  }
  EXPECT_NE(find_planner(kDefaultPlanner), nullptr);
  EXPECT_EQ(find_planner("no_such_planner"), nullptr);
}

TEST(Registry, UnknownPlannerIsNotFound) {
  EXPECT_EQ(plan_with("no_such_planner", scenarios::Diamond().problem).status().code(), StatusCode::kNotFound);
}

TEST(Registry, EveryPlannerRejectsAMalformedProblem) {
  const Problem malformed{.buffers = {{.id = "backwards", .lower = 5, .upper = 2, .size = 8}}};
  for (const PlannerInfo& p : planners()) {
    EXPECT_EQ(plan_with(p.name, malformed).status().code(), StatusCode::kInvalidArgument) << p.name;
  }
}

TEST(Scenarios, NamesAreUniqueAndProblemsWellFormed) {
  std::vector<scenarios::Scenario> all = scenarios::all_scenarios();
  for (const scenarios::Scenario& s : scenarios::capacity_scenarios()) all.push_back(s);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_TRUE(check_problem(all[i].problem).ok()) << all[i].name;
    EXPECT_FALSE(all[i].description.empty()) << all[i].name;
    if (all[i].optimal_arena) EXPECT_GE(*all[i].optimal_arena, load(all[i].problem)) << all[i].name;
    for (size_t j = i + 1; j < all.size(); ++j) EXPECT_NE(all[i].name, all[j].name);
  }
}

}  // namespace
}  // namespace memplan
