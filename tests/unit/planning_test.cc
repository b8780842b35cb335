// planning_test.cc — run_planner, the one path from a problem to a checked
// plan (memplan/planning.h): verdicts, proofs, cancel, and plan_with over it.
#include "memplan/planning.h"

#include <gtest/gtest.h>

#include <atomic>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/validate.h"

namespace memplan {
namespace {

// Twelve buffers whose optimum (163 B) is above their load (157 B).
Problem gap_problem() {
  StatusOr<Problem> p = read_problem_csv(std::string(MEMPLAN_SOURCE_DIR) + "/tests/cli/data/gap_above_load.csv");
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? *p : Problem{};
}

Problem minimalloc_a() {
  StatusOr<Problem> p =
      read_problem_csv(std::string(MEMPLAN_SHARED_DATA_DIR) + "/dsa/minimalloc/challenging/A.1048576.csv");
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? *p : Problem{};
}

TEST(RunPlanner, WithoutCapacityPlansAndValidates) {
  const Problem problem = gap_problem();
  StatusOr<PlanningResult> r = run_planner("portfolio", problem);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->verdict, PlanVerdict::kPlanned);
  ASSERT_TRUE(r->plan.has_value());
  EXPECT_TRUE(validate(problem, *r->plan).ok());
  EXPECT_EQ(r->load, 157);
  EXPECT_EQ(r->made_by, "heuristics");
  EXPECT_FALSE(r->exact.has_value()) << "no capacity and no time limit: the heuristics alone";
}

TEST(RunPlanner, DefaultPlannerDecidesACapacityTheHeuristicsMiss) {
  Problem problem = minimalloc_a();
  problem.capacity = 1 << 20;  // the load: the heuristics need more, the exact search fits it
  Problem uncapped = problem;
  uncapped.capacity.reset();
  StatusOr<Plan> heuristic = plan_with("greedy_by_size", uncapped);
  ASSERT_TRUE(heuristic.ok());
  ASSERT_GT(heuristic->arena, *problem.capacity) << "the instance no longer needs the exact solver";
  StatusOr<PlanningResult> r = run_planner("portfolio", problem);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->verdict, PlanVerdict::kFits);
  EXPECT_EQ(r->made_by, "exact");
  ASSERT_TRUE(r->plan.has_value());
  EXPECT_TRUE(validate(problem, *r->plan).ok());
  EXPECT_TRUE(plan_with("portfolio", problem).ok()) << "plan_with takes the same path";
}

TEST(RunPlanner, CapacityBelowTheLoadIsProvenWithoutSearch) {
  Problem problem = gap_problem();
  problem.capacity = 156;
  StatusOr<PlanningResult> r = run_planner("portfolio", problem);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->verdict, PlanVerdict::kDoesNotFit);
  EXPECT_FALSE(r->plan.has_value());
  EXPECT_NE(r->reason.find("below the load"), std::string::npos) << r->reason;
  EXPECT_FALSE(r->exact.has_value());
  EXPECT_EQ(plan_with("portfolio", problem).status().code(), StatusCode::kInfeasible);
}

TEST(RunPlanner, CapacityBetweenLoadAndOptimumIsRefutedByTheExactSearch) {
  Problem problem = gap_problem();
  problem.capacity = 162;
  StatusOr<PlanningResult> r = run_planner("portfolio", problem);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->verdict, PlanVerdict::kDoesNotFit);
  EXPECT_EQ(r->lower_bound, 163);
  ASSERT_TRUE(r->exact.has_value());
  EXPECT_EQ(r->exact->outcome, ExactOutcome::kInfeasible);
  problem.capacity = 163;
  StatusOr<PlanningResult> fits = run_planner("portfolio", problem);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(fits->verdict, PlanVerdict::kFits);
  EXPECT_EQ(fits->plan->arena, 163);
}

TEST(RunPlanner, AHeuristicAboveTheCapacityIsUnknownNotAProof) {
  Problem problem = gap_problem();
  problem.capacity = 163;  // fits, but not with the naive plan
  StatusOr<PlanningResult> r = run_planner("naive", problem);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->verdict, PlanVerdict::kUnknown);
  ASSERT_TRUE(r->plan.has_value()) << "the best plan found is kept";
  EXPECT_GT(r->plan->arena, 163);
  EXPECT_NE(r->reason.find("not a proof"), std::string::npos) << r->reason;
  EXPECT_EQ(plan_with("naive", problem).status().code(), StatusCode::kCapacityExceeded);
}

TEST(RunPlanner, TheExactPlannerReportsItsStatistics) {
  const Problem problem = gap_problem();
  StatusOr<PlanningResult> r = run_planner("exact", problem);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->verdict, PlanVerdict::kPlanned);
  ASSERT_TRUE(r->exact.has_value());
  EXPECT_EQ(r->exact->outcome, ExactOutcome::kOptimal);
  EXPECT_GT(r->exact->stats.nodes, 0);
  EXPECT_EQ(r->plan->arena, 163);
  EXPECT_EQ(r->lower_bound, 163);
}

TEST(RunPlanner, CancelReturnsTheBestPlanFoundSoFar) {
  Problem problem = minimalloc_a();
  std::atomic<bool> cancel{true};
  StatusOr<PlanningResult> r = run_planner("portfolio", problem, {.cancel = &cancel});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->cancelled);
  ASSERT_TRUE(r->plan.has_value()) << "at least the naive plan";
  EXPECT_TRUE(validate(problem, *r->plan).ok());
  EXPECT_EQ(plan_with("portfolio", problem, {.cancel = &cancel}).status().code(), StatusCode::kCancelled);
}

TEST(RunPlanner, UnknownPlannerAndInvalidProblemAreErrors) {
  EXPECT_EQ(run_planner("no_such_planner", gap_problem()).status().code(), StatusCode::kNotFound);
  Problem bad{.buffers = {{.id = "x", .lower = 3, .upper = 3, .size = 1}}};
  EXPECT_EQ(run_planner("portfolio", bad).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace memplan
