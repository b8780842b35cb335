// planner_stop_test.cc — every planner honours PlanOptions::cancel and
// PlanOptions::time_limit_seconds: a flag raised before the call, or a time
// limit already spent, makes it give up with the matching status instead of
// planning (behaviour, not timing: the status proves the planner looked).
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "memplan/generate.h"
#include "memplan/planner.h"
#include "memplan/validate.h"

namespace memplan {
namespace {

// Large enough that every planner has many units of work between polls.
Problem busy_problem() {
  return generate_problem({.shape = ProblemShape::kRandomIntervals, .buffers = 20000, .seed = 7});
}

// Planners whose contract is to return the best plan found so far when they
// are stopped (the exact search keeps its heuristic upper bound), and naive,
// the O(n) last resort that honours only a cancel raised before it starts.
bool may_answer_with_a_plan(const PlannerInfo& p) { return !p.fast; }

TEST(PlannerStop, EveryPlannerGivesUpOnACancelRaisedBeforeTheCall) {
  const Problem problem = busy_problem();
  const std::atomic<bool> cancel{true};
  for (const PlannerInfo& p : planners()) {
    StatusOr<Plan> plan = p.plan(problem, PlanOptions{.cancel = &cancel});
    if (plan.ok() && may_answer_with_a_plan(p)) {
      EXPECT_TRUE(validate(problem, *plan).ok()) << p.name;
      continue;
    }
    ASSERT_FALSE(plan.ok()) << p.name << " planned although cancelled";
    EXPECT_EQ(plan.status().code(), StatusCode::kCancelled) << p.name << ": " << plan.status().to_string();
    EXPECT_NE(plan.status().message().find("cancelled"), std::string::npos) << plan.status().message();
  }
}

TEST(PlannerStop, EveryFastPlannerGivesUpOnASpentTimeLimit) {
  const Problem problem = busy_problem();
  // 1e-12 s rounds to a deadline at the moment the planner starts.
  const PlanOptions spent{.time_limit_seconds = 1e-12};
  for (const PlannerInfo& p : planners()) {
    if (!p.fast) continue;  // exact and mip: covered by their own tests
    StatusOr<Plan> plan = p.plan(problem, spent);
    if (p.name == "portfolio" || p.name == "naive") {
      // The portfolio answers with the best plan it has, naive's when none:
      // a time limit never leaves a caller of the default planner empty-handed.
      ASSERT_TRUE(plan.ok()) << p.name << ": " << plan.status().to_string();
      EXPECT_TRUE(validate(problem, *plan).ok()) << p.name;
      continue;
    }
    ASSERT_FALSE(plan.ok()) << p.name << " planned past its time limit";
    EXPECT_EQ(plan.status().code(), StatusCode::kDeadlineExceeded) << p.name << ": " << plan.status().to_string();
  }
}

TEST(PlannerStop, PortfolioReportsACancelEvenWithATimeLimit) {
  const std::atomic<bool> cancel{true};
  const StatusOr<Plan> plan =
      plan_with("portfolio", busy_problem(), PlanOptions{.time_limit_seconds = 60, .cancel = &cancel});
  EXPECT_EQ(plan.status().code(), StatusCode::kCancelled);
}

}  // namespace
}  // namespace memplan
