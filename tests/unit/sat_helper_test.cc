// sat_helper_test.cc — the exact solver's SAT helper thread
// (src/solver/sat/sat_helper.h; CaDiCaL builds only): on problems whose
// optimum lies above their load it proves that optimum (its refutations are
// the lower bound, its plan the upper) and its plan is valid; it declines
// problems the encoding cannot state or that are too large; a cancel stops
// it; and solve_minimize with it stays optimal.
#if MEMPLAN_WITH_CADICAL
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/exact.h"
#include "memplan/generate.h"
#include "memplan/plan.h"
#include "memplan/validate.h"
#include "solver/sat/sat_helper.h"

namespace memplan {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<solver::CanonicalSearch::Item> items_of(const Problem& problem) {
  std::vector<solver::CanonicalSearch::Item> items;
  for (size_t i = 0; i < problem.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    items.push_back({.lower = b.lower,
                     .upper = b.upper,
                     .size = b.size,
                     .alignment = problem.alignment_of(i),
                     .fixed_offset = b.offset ? *b.offset : -1});
  }
  return items;
}

std::vector<std::string> gap_files() {
  std::vector<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(MEMPLAN_SOURCE_DIR) / "tests/bench/data/sat_gaps")) {
    if (entry.path().extension() == ".csv") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

solver::StopCondition stop_after(double seconds, const std::atomic<bool>* cancel = nullptr) {
  solver::StopCondition stop;
  stop.has_deadline = true;
  stop.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  stop.cancel = cancel;
  return stop;
}

// The exact planner alone (one thread) is the oracle.
int64_t proven_optimum(const Problem& problem) {
  ExactOptions options;
  options.time_limit_seconds = 30;
  const StatusOr<ExactResult> r = solve_minimize(problem, options);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, ExactOutcome::kOptimal);
  return r->plan->arena;
}

TEST(SatHelper, ProvesTheOptimumAboveTheLoadAndHandsOverAValidPlan) {
  const std::vector<std::string> files = gap_files();
  ASSERT_GE(files.size(), 12u);
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const StatusOr<Problem> problem = read_problem_csv(file);
    ASSERT_TRUE(problem.ok()) << problem.status().message();
    const int64_t optimum = proven_optimum(*problem);
    const int64_t floor = load(*problem);
    ASSERT_GT(optimum, floor);  // a gap problem: refuting the load takes a search
    int64_t ceiling = 0;
    for (const Buffer& b : problem->buffers) ceiling += b.size;  // stacking every buffer fits
    ceiling += 1;
    const auto items = items_of(*problem);
    int64_t unit = 0;
    ASSERT_TRUE(solver::SatHelper::applies(items, ceiling, solver::kSatMaxClauses, &unit));
    EXPECT_EQ(unit, 1);  // the sizes are coprime
    solver::SatHelper helper(items, unit, stop_after(20), floor, ceiling);
    // Alone, the helper must close the gap: plans from above, refutations from below.
    std::optional<solver::SatHelper::Found> best;
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < until) {
      if (auto f = helper.take_better(best ? best->arena : ceiling)) best = f;
      if (best && helper.floor() >= best->arena) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    helper.join();
    if (auto f = helper.take_better(best ? best->arena : ceiling)) best = f;
    ASSERT_TRUE(best.has_value()) << "no plan";
    EXPECT_EQ(best->arena, optimum);
    EXPECT_EQ(helper.floor(), optimum) << "the refutations must reach the optimum and never pass it";
    const Plan plan = make_plan(*problem, best->offsets);
    EXPECT_EQ(plan.arena, best->arena);
    EXPECT_TRUE(validate(*problem, plan).ok()) << validate(*problem, plan).message;
    const solver::SatHelper::Stats stats = helper.stats();
    EXPECT_GE(stats.refutations, 1);
    EXPECT_GE(stats.plans, 1);
    EXPECT_GE(stats.decisions, stats.refutations + stats.plans);
  }
}

TEST(SatHelper, DeclinesWhatTheEncodingCannotStateOrIsTooLarge) {
  const StatusOr<Problem> gap = read_problem_csv(gap_files().front());
  ASSERT_TRUE(gap.ok());
  int64_t unit = 0;
  auto items = items_of(*gap);
  EXPECT_TRUE(solver::SatHelper::applies(items, 1000, solver::kSatMaxClauses, &unit));
  EXPECT_FALSE(solver::SatHelper::applies(items, 1000, /*max_clauses=*/100, &unit)) << "over the clause limit";
  auto fixed = items;
  fixed[0].fixed_offset = 0;
  EXPECT_FALSE(solver::SatHelper::applies(fixed, 1000, solver::kSatMaxClauses, &unit)) << "a fixed offset";
  auto aligned = items;
  for (auto& item : aligned) item.size *= 8;
  aligned[0].alignment = 64;  // sizes' gcd is 8: offsets in units of 8 cannot all be 64-aligned
  EXPECT_FALSE(solver::SatHelper::applies(aligned, 8000, solver::kSatMaxClauses, &unit)) << "alignment";
  aligned[0].alignment = 8;
  EXPECT_TRUE(solver::SatHelper::applies(aligned, 8000, solver::kSatMaxClauses, &unit));
  EXPECT_EQ(unit, 8);
  // MiniMalloc's D: about 24 million clauses at its best plan.
  const StatusOr<Problem> d =
      read_problem_csv((std::filesystem::path(MEMPLAN_SHARED_DATA_DIR) / "dsa/minimalloc/challenging/D.1048576.csv").string());
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_FALSE(solver::SatHelper::applies(items_of(*d), 1001472, solver::kSatMaxClauses, &unit));
}

TEST(SatHelper, StopsOnTheCallersCancel) {
  // A 200-buffer puzzle that the solver does not settle in a moment.
  const Problem problem = generate_problem({.shape = ProblemShape::kPuzzle, .buffers = 200, .seed = 14, .max_size = 256});
  const auto items = items_of(problem);
  int64_t unit = 0;
  ASSERT_TRUE(solver::SatHelper::applies(items, 300, solver::kSatMaxClauses, &unit));
  std::atomic<bool> cancel{false};
  solver::SatHelper helper(items, unit, stop_after(600, &cancel), load(problem), 300);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  cancel.store(true);
  const auto t = Clock::now();
  helper.join();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t).count(), 5.0);
}

TEST(SatHelper, MinimisationWithTheHelperStaysOptimal) {
  for (const std::string& file : gap_files()) {
    SCOPED_TRACE(file);
    const StatusOr<Problem> problem = read_problem_csv(file);
    ASSERT_TRUE(problem.ok());
    ExactOptions options;
    options.time_limit_seconds = 30;
    options.threads = 2;
    const StatusOr<ExactResult> r = solve_minimize(*problem, options);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->outcome, ExactOutcome::kOptimal);
    EXPECT_EQ(r->plan->arena, proven_optimum(*problem));
    EXPECT_EQ(r->lower_bound, r->plan->arena);
    EXPECT_TRUE(validate(*problem, *r->plan).ok());
  }
}

// Decision mode: the helper answers the one capacity asked, a plan at the
// optimum and a refutation one byte below it, and says it finished.
TEST(SatHelper, DecideModeAnswersTheCapacityAskedAndSaysItFinished) {
  for (const std::string& file : gap_files()) {
    SCOPED_TRACE(file);
    const StatusOr<Problem> problem = read_problem_csv(file);
    ASSERT_TRUE(problem.ok());
    const int64_t optimum = proven_optimum(*problem);
    const auto items = items_of(*problem);
    for (const int64_t capacity : {optimum, optimum - 1}) {
      int64_t unit = 0;
      ASSERT_TRUE(solver::SatHelper::applies(items, capacity + 1, solver::kSatMaxClauses, &unit));
      std::atomic<bool> finished{false};
      solver::SatHelper helper(items, unit, stop_after(20), load(*problem), capacity + 1, {},
                               solver::SatHelper::Mode::kDecide, &finished);
      const auto until = Clock::now() + std::chrono::seconds(20);
      while (!finished.load() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ASSERT_TRUE(finished.load()) << "no answer at " << capacity;
      helper.join();
      const std::optional<solver::SatHelper::Found> found = helper.take_better(capacity + 1);
      if (capacity == optimum) {
        ASSERT_TRUE(found.has_value());
        EXPECT_LE(found->arena, capacity);
        EXPECT_TRUE(validate(*problem, make_plan(*problem, found->offsets)).ok());
      } else {
        EXPECT_FALSE(found.has_value());
        EXPECT_EQ(helper.floor(), optimum);
      }
      // One capacity: every solve but the last ran out of its slice.
      const solver::SatHelper::Stats stats = helper.stats();
      EXPECT_GE(stats.decisions, 1);
      EXPECT_EQ(stats.plans + stats.refutations, 1);
    }
  }
}

// solve_decision with threads: the SAT helper races the search. On the
// puzzles the search alone leaves undecided at 60 s the pair decides at
// the load; on gap problems it refutes the capacity below the optimum.
TEST(SatHelper, DecisionsWithThreadsStayExact) {
  for (const std::string& file : gap_files()) {
    SCOPED_TRACE(file);
    const StatusOr<Problem> problem = read_problem_csv(file);
    ASSERT_TRUE(problem.ok());
    const int64_t optimum = proven_optimum(*problem);
    ExactOptions options;
    options.time_limit_seconds = 30;
    options.threads = 2;
    const StatusOr<ExactResult> below = solve_decision(*problem, optimum - 1, options);
    ASSERT_TRUE(below.ok());
    EXPECT_EQ(below->outcome, ExactOutcome::kInfeasible);
    EXPECT_GE(below->lower_bound, optimum);
    const StatusOr<ExactResult> at = solve_decision(*problem, optimum, options);
    ASSERT_TRUE(at.ok());
    ASSERT_TRUE(at->plan.has_value());
    EXPECT_LE(at->plan->arena, optimum);
    EXPECT_TRUE(validate(*problem, *at->plan).ok());
  }
  const Problem puzzle = generate_problem({.shape = ProblemShape::kPuzzle, .buffers = 200, .seed = 4, .max_size = 256});
  ExactOptions options;
  options.time_limit_seconds = 120;
  options.threads = 2;
  const StatusOr<ExactResult> r = solve_decision(puzzle, 256, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, ExactOutcome::kOptimal);
  ASSERT_TRUE(r->plan.has_value());
  EXPECT_TRUE(validate(puzzle, *r->plan).ok());
  EXPECT_GE(r->stats.sat_decisions, 1);
  // The caller's cancel still stops both, and is reported.
  std::atomic<bool> cancel{false};
  options.cancel = &cancel;
  const Problem hard = generate_problem({.shape = ProblemShape::kPuzzle, .buffers = 300, .seed = 13, .max_size = 256});
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel = true;
  });
  const auto t = Clock::now();
  const StatusOr<ExactResult> c = solve_decision(hard, 256, options);
  canceller.join();
  ASSERT_TRUE(c.ok());
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t).count(), 10.0);
  if (c->outcome == ExactOutcome::kTimedOut) EXPECT_TRUE(c->stats.cancelled);
}

}  // namespace
}  // namespace memplan
#endif  // MEMPLAN_WITH_CADICAL
