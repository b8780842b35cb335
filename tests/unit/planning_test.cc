// planning_test.cc — run_planner, the one path from a problem to a checked
// plan (memplan/planning.h): verdicts, proofs, cancel, and plan_with over it.
#include "memplan/planning.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/validate.h"
#include "planning/validation_reserve.h"

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

TEST(PlanThreads, ZeroMeansOnePerHardwareThreadAndOthersAreKept) {
  const unsigned hardware = std::thread::hardware_concurrency();
  const int32_t expected = hardware == 0 ? 1 : std::min<int32_t>(static_cast<int32_t>(hardware), kMaxPlanThreads);
  EXPECT_EQ(plan_threads({.threads = 0}), expected);
  EXPECT_EQ(plan_threads({}), 1) << "the library's default stays one thread";
  EXPECT_EQ(plan_threads({.threads = 3}), 3);
  EXPECT_EQ(plan_threads({.threads = -4}), 1);
}

TEST(ValidationReserve, ATenthUpToHalfASecondUnlessTheValidatorNeedsMore) {
  EXPECT_DOUBLE_EQ(validation_reserve_seconds(60, 213), 0.5) << "D at 60 s: 59.5 s for the planners, not 54";
  EXPECT_DOUBLE_EQ(validation_reserve_seconds(1, 213), 0.1);
  EXPECT_DOUBLE_EQ(validation_reserve_seconds(60, 1'000'000), 1.5) << "10^6 buffers: the validator's own cost";
  EXPECT_DOUBLE_EQ(validation_reserve_seconds(0.1, 1'000'000), 0.05) << "never more than half the limit";
  EXPECT_DOUBLE_EQ(validation_reserve_seconds(0, 1'000'000), 0) << "no limit, nothing kept back";
}

TEST(RunPlanner, AllHardwareThreadsKeepTheOptimum) {
  const Problem problem = gap_problem();
  StatusOr<PlanningResult> r = run_planner("exact", problem, {.time_limit_seconds = 30, .threads = 0});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->plan.has_value());
  EXPECT_TRUE(validate(problem, *r->plan).ok());
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

// Every run says what it ended in (PlanEnding): proven optimal, fits, does
// not fit, a heuristic plan, the best plan when the time limit stopped the
// search, cancelled, or unknown.
TEST(RunPlanner, EveryRunSaysWhatItEndedIn) {
  Problem problem = gap_problem();
  StatusOr<PlanningResult> heuristic = run_planner("portfolio", problem);
  ASSERT_TRUE(heuristic.ok());
  EXPECT_EQ(heuristic->ending, PlanEnding::kBestHeuristic);
  EXPECT_EQ(plan_ending_name(heuristic->ending), "best found (heuristics)");

  StatusOr<PlanningResult> exact = run_planner("exact", problem);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->ending, PlanEnding::kOptimal);

  problem.capacity = 162;
  StatusOr<PlanningResult> refuted = run_planner("portfolio", problem);
  ASSERT_TRUE(refuted.ok());
  EXPECT_EQ(refuted->ending, PlanEnding::kDoesNotFit);
  problem.capacity = 163;
  StatusOr<PlanningResult> fits = run_planner("portfolio", problem);
  ASSERT_TRUE(fits.ok());
  // The plan reaches 163 but the bound stays at the load: fits, not optimal.
  EXPECT_EQ(fits->ending, fits->lower_bound >= 163 ? PlanEnding::kOptimal : PlanEnding::kFits);
  StatusOr<PlanningResult> unknown = run_planner("naive", problem);
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->ending, PlanEnding::kUnknown);

  std::atomic<bool> cancel{true};
  StatusOr<PlanningResult> cancelled = run_planner("portfolio", minimalloc_a(), {.cancel = &cancel});
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->ending, PlanEnding::kCancelled);
}

// The default search (PlanOptions::default_search_seconds): without a time
// limit, the default planner follows the heuristics with the exact solver
// where they leave a gap, and says which ended the run.
TEST(RunPlanner, TheDefaultSearchClosesTheGapTheHeuristicsLeave) {
  const Problem a = minimalloc_a();
  StatusOr<PlanningResult> heuristics = run_planner("portfolio", a);
  ASSERT_TRUE(heuristics.ok());
  ASSERT_GT(heuristics->plan->arena, heuristics->load) << "A must leave the heuristics a gap for this test";
  EXPECT_FALSE(heuristics->exact.has_value());
  EXPECT_EQ(heuristics->default_search_seconds, 0);

  // No time limit: the search has no clock to beat, so the verdict, not the
  // machine's speed, decides the ending (A's optimum is its load).
  StatusOr<PlanningResult> searched = run_planner("portfolio", a, {.default_search_seconds = 600});
  ASSERT_TRUE(searched.ok());
  ASSERT_TRUE(searched->plan.has_value());
  EXPECT_EQ(searched->ending, PlanEnding::kOptimal);
  EXPECT_EQ(searched->plan->arena, searched->load);
  EXPECT_EQ(searched->made_by, "exact");
  ASSERT_TRUE(searched->exact.has_value());
  EXPECT_EQ(searched->default_search_seconds, 600);
  EXPECT_TRUE(validate(a, *searched->plan).ok());
}

TEST(RunPlanner, TheDefaultSearchSaysItsBudgetEndedIt) {
  // MiniMalloc's D: no search proves its optimum, so the budget ends it.
  StatusOr<Problem> d =
      read_problem_csv(std::string(MEMPLAN_SHARED_DATA_DIR) + "/dsa/minimalloc/challenging/D.1048576.csv");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  d->capacity.reset();
  StatusOr<PlanningResult> r = run_planner("portfolio", *d, {.default_search_seconds = 0.2});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->plan.has_value());
  EXPECT_EQ(r->ending, PlanEnding::kBestAtSearchBudget);
  EXPECT_EQ(plan_ending_name(r->ending), "best found (default search budget)");
  EXPECT_EQ(r->default_search_seconds, 0.2);
  EXPECT_TRUE(validate(*d, *r->plan).ok());
}

TEST(RunPlanner, TheDefaultSearchSkipsWhatItCannotHelp) {
  // An explicit time limit replaces it; a capacity is decided as before; a
  // plan at the load needs no search; a problem above the size limit gets none.
  const Problem a = minimalloc_a();
  StatusOr<PlanningResult> limited =
      run_planner("portfolio", a, {.time_limit_seconds = 30, .default_search_seconds = 0.001});
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->default_search_seconds, 0);
  Problem at_load{
      .buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8}, {.id = "b", .lower = 1, .upper = 3, .size = 8}}};
  StatusOr<PlanningResult> optimal = run_planner("portfolio", at_load, {.default_search_seconds = 1});
  ASSERT_TRUE(optimal.ok());
  EXPECT_FALSE(optimal->exact.has_value());
  EXPECT_EQ(optimal->ending, PlanEnding::kOptimal);
  // The gap problem (no plan reaches its load) followed by a chain of tiny
  // buffers, one after another, that takes it over the size limit.
  Problem large = gap_problem();
  int64_t tick = 0;
  for (const Buffer& b : large.buffers) tick = std::max(tick, b.upper);
  for (size_t i = large.size(); i <= kDefaultSearchMaxBuffers; ++i, ++tick) {
    large.buffers.push_back({.id = "chain" + std::to_string(i), .lower = tick, .upper = tick + 1, .size = 1});
  }
  StatusOr<PlanningResult> skipped = run_planner("portfolio", large, {.default_search_seconds = 1});
  ASSERT_TRUE(skipped.ok());
  EXPECT_GT(skipped->plan->arena, skipped->load);
  EXPECT_FALSE(skipped->exact.has_value());
  EXPECT_EQ(skipped->default_search_seconds, 0);
  EXPECT_EQ(skipped->ending, PlanEnding::kBestHeuristic);
  // One buffer fewer, at the limit, and the search runs.
  large.buffers.pop_back();
  StatusOr<PlanningResult> searched = run_planner("portfolio", large, {.default_search_seconds = 0.05});
  ASSERT_TRUE(searched.ok());
  EXPECT_TRUE(searched->exact.has_value());
  EXPECT_EQ(searched->default_search_seconds, 0.05);
}

TEST(RunPlanner, ASearchStoppedByTheTimeLimitSaysSo) {
  // MiniMalloc's D: load 986,112 B, best known plan 1,018,880 B; one second
  // neither proves a bound above the load nor reaches it.
  StatusOr<Problem> d =
      read_problem_csv(std::string(MEMPLAN_SHARED_DATA_DIR) + "/dsa/minimalloc/challenging/D.1048576.csv");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  d->capacity.reset();
  StatusOr<PlanningResult> r = run_planner("exact", *d, {.time_limit_seconds = 1});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->plan.has_value());
  EXPECT_GT(r->plan->arena, r->lower_bound);
  EXPECT_EQ(r->ending, PlanEnding::kBestAtTimeLimit);
  EXPECT_EQ(plan_ending_name(r->ending), "best found (time limit)");
  ASSERT_TRUE(r->exact.has_value());
  EXPECT_FALSE(r->exact->stats.windows_exhausted);
  EXPECT_LE(r->exact->stats.seconds_to_best, r->exact->stats.seconds);
}

}  // namespace
}  // namespace memplan
