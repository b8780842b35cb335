// good_enough_test.cc — run_planner's good-enough stop and its time budget
// (memplan/planning.h, "Good enough", PlanningBudget): a quick greedy plan
// close enough to the load is kept and the named planner not run; a budget
// bounds the time a run gets.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "memplan/bounds.h"
#include "memplan/generate.h"
#include "memplan/planning.h"
#include "memplan/validate.h"

namespace memplan {
namespace {

constexpr int64_t kGoodEnoughUnit = 4096;

int64_t good_enough_units(int64_t bytes) { return (bytes + kGoodEnoughUnit - 1) / kGoodEnoughUnit; }

// A problem greedy_by_size does not plan at its load (in pages), and on
// which the portfolio finds a smaller arena: a greedy plan that comes back
// shows that the portfolio's was not used.
Problem problem_greedy_leaves_above_its_load() {
  for (uint64_t seed = 1; seed < 200; ++seed) {
    Problem p =
        generate_problem({.shape = ProblemShape::kRandomIntervals, .buffers = 300, .seed = seed, .max_size = 1 << 16});
    StatusOr<Plan> greedy = plan_with("greedy_by_size", p, {});
    if (!greedy.ok() || good_enough_units(greedy->arena) <= good_enough_units(load(p))) continue;
    StatusOr<Plan> portfolio = plan_with("portfolio", p, {});
    if (portfolio.ok() && portfolio->arena < greedy->arena) return p;
  }
  ADD_FAILURE() << "no generated problem leaves greedy_by_size above its load";
  return {};
}

TEST(GoodEnoughTest, AGreedyPlanWithinTheToleranceIsKeptAndTheNamedPlannerNotRun) {
  const Problem problem = problem_greedy_leaves_above_its_load();
  const StatusOr<Plan> greedy = plan_with("greedy_by_size", problem, {});
  ASSERT_TRUE(greedy.ok());
  const double floor_units = static_cast<double>(good_enough_units(load(problem)));
  const double greedy_units = static_cast<double>(good_enough_units(greedy->arena));
  PlanOptions options;
  options.time_limit_seconds = 1.0;
  options.good_enough =
      GoodEnough{.unit_bytes = kGoodEnoughUnit, .tolerance = (greedy_units - floor_units) / floor_units + 1e-9};
  const StatusOr<PlanningResult> kept = run_planner("portfolio", problem, options);
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE(kept->plan);
  EXPECT_EQ(kept->plan->arena, greedy->arena) << "the portfolio's smaller plan was used";
  EXPECT_EQ(kept->made_by, "greedy_by_size");
  EXPECT_EQ(kept->planner, "portfolio");
  EXPECT_EQ(kept->verdict, PlanVerdict::kPlanned);

  options.good_enough->tolerance = 0;  // not within a page of the load: the portfolio runs
  const StatusOr<PlanningResult> planned = run_planner("portfolio", problem, options);
  ASSERT_TRUE(planned.ok());
  ASSERT_TRUE(planned->plan);
  EXPECT_TRUE(validate(problem, *planned->plan).ok());
  EXPECT_LT(planned->plan->arena, greedy->arena);
  EXPECT_NE(planned->made_by, "greedy_by_size");
}

TEST(GoodEnoughTest, UnitsOfOneByteCompareTheArenaWithTheLoadItself) {
  // Two buffers live together, 100 B and 28 B: greedy's plan is at the load.
  Problem problem;
  problem.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 100}, {.id = "b", .lower = 1, .upper = 3, .size = 28}};
  PlanOptions options;
  options.good_enough = GoodEnough{};
  const StatusOr<PlanningResult> r = run_planner("portfolio", problem, options);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->plan);
  EXPECT_EQ(r->made_by, "greedy_by_size");
  EXPECT_EQ(r->ending, PlanEnding::kOptimal);
}

TEST(GoodEnoughTest, TheNamedPlannerIsNotAskedWhenTheQuickPlanIsGoodEnough) {
  // One buffer: greedy's plan is at the load, so a planner that does not
  // exist (and would fail) is never run; with good_enough unset it is.
  Problem problem;
  problem.buffers = {{.id = "a", .lower = 0, .upper = 1, .size = 8}};
  PlanOptions options;
  options.good_enough = GoodEnough{};
  const StatusOr<PlanningResult> kept = run_planner("no_such_planner", problem, options);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  EXPECT_EQ(kept->made_by, "greedy_by_size");
  options.good_enough.reset();
  const StatusOr<PlanningResult> asked = run_planner("no_such_planner", problem, options);
  ASSERT_FALSE(asked.ok());
  EXPECT_EQ(asked.status().code(), StatusCode::kNotFound);
}

TEST(PlanningBudgetTest, AFreshBudgetAllowsOneFullRunAndAnEmptyOneNone) {
  PlanningBudget budget;
  EXPECT_DOUBLE_EQ(budget.allowance(0.5, 0), 0.5);
  budget.spend(200'000'000);  // 0.2 s
  EXPECT_NEAR(budget.allowance(0.5, 0), 0.3, 1e-6);
  budget.spend(400'000'000);
  EXPECT_EQ(budget.allowance(0.5, 0), 0.0);
  EXPECT_DOUBLE_EQ(budget.allowance(0.5, 1), 0.5);  // a share of 1: no budget
  EXPECT_EQ(budget.allowance(0, 0), 0.0);           // the planner's own default: no budget either
}

TEST(PlanningBudgetTest, TheShareOfElapsedTimeRefillsIt) {
  PlanningBudget budget;
  const auto before = std::chrono::steady_clock::now();
  budget.allowance(0.01, 0.05);  // starts the clock
  budget.spend(10'000'000);      // the whole first run
  const double earned = budget.allowance(0.01, 0.05);
  // Only what the share earned since the clock started is left, however
  // long that was: at most 5% of the time that passed around the two calls.
  const double passed = std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  EXPECT_LE(earned, 0.05 * passed + 1e-9);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // earns >= 12.5 ms, capped at the 10 ms limit
  EXPECT_DOUBLE_EQ(budget.allowance(0.01, 0.05), 0.01);
}

TEST(PlanningBudgetTest, PastItsBudgetAPlanIsGreedyBySizesAndStillValid) {
  const Problem problem = problem_greedy_leaves_above_its_load();
  const StatusOr<Plan> greedy = plan_with("greedy_by_size", problem, {});
  ASSERT_TRUE(greedy.ok());
  PlanningBudget spent;
  spent.allowance(1.0, 0);
  spent.spend(1'000'000'000);
  PlanOptions options;
  options.time_limit_seconds = 1.0;
  options.budget = &spent;
  options.budget_share = 0;
  options.good_enough = GoodEnough{.unit_bytes = kGoodEnoughUnit, .tolerance = 0};  // the budget alone decides
  const StatusOr<Plan> quick = plan_with("portfolio", problem, options);
  ASSERT_TRUE(quick.ok()) << quick.status().message();
  EXPECT_TRUE(validate(problem, *quick).ok());
  EXPECT_EQ(quick->arena, greedy->arena) << "the portfolio's smaller plan was used past the budget";

  PlanningBudget fresh;
  options.budget = &fresh;
  const StatusOr<Plan> full = plan_with("portfolio", problem, options);
  ASSERT_TRUE(full.ok()) << full.status().message();
  EXPECT_TRUE(validate(problem, *full).ok());
  EXPECT_LT(full->arena, greedy->arena);
}

}  // namespace
}  // namespace memplan
