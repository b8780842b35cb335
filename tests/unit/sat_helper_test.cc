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
#include "support/test_size.h"
#include "support/watchdog.h"

namespace memplan {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<solver::CanonicalSearch::Item> canonical_items(const Problem& problem) {
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

std::vector<std::string> all_gap_files() {
  std::vector<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(MEMPLAN_SOURCE_DIR) / "tests/bench/data/sat_gaps")) {
    if (entry.path().extension() == ".csv") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The gap files a test runs: all twelve, or three spread over the sizes (12,
// 16 and 20 buffers) in a reduced run (test_size.h).
std::vector<std::string> gap_files() { return test_support::scaled_sample(all_gap_files(), 3); }

solver::StopCondition stop_after(double seconds, const std::atomic<bool>* cancel = nullptr) {
  solver::StopCondition stop;
  stop.has_deadline = true;
  stop.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  stop.cancel = cancel;
  return stop;
}

// The exact planner alone (one thread) is the oracle.
int64_t proven_optimum(const Problem& problem) {
  // No time limit: a slow machine must not turn a proof into a time-out.
  const StatusOr<ExactResult> r = solve_minimize(problem, ExactOptions{});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, ExactOutcome::kOptimal);
  return r->plan->arena;
}

TEST(SatHelper, ProvesTheOptimumAboveTheLoadAndHandsOverAValidPlan) {
  ASSERT_GE(all_gap_files().size(), 12u);
  const std::vector<std::string> files = gap_files();
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
    const auto items = canonical_items(*problem);
    int64_t unit = 0;
    ASSERT_TRUE(solver::SatHelper::applies(items, ceiling, solver::kSatMaxClauses, &unit));
    EXPECT_EQ(unit, 1);  // the sizes are coprime
    // Alone, the helper must close the gap (plans from above, refutations
    // from below); in kMinimize mode its thread ends when the bounds meet
    // (join would stop it, so the test waits for it to end by itself). The
    // deadline only bounds a helper that never closes it.
    std::atomic<bool> finished{false};
    solver::SatHelper helper(items, unit, stop_after(600), floor, ceiling, {}, solver::SatHelper::Mode::kMinimize,
                             &finished);
    {
      test_support::Watchdog watchdog(std::chrono::minutes(12), "the SAT helper to close the gap on " + file);
      while (!finished.load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    helper.join();
    const std::optional<solver::SatHelper::Found> best = helper.take_better(ceiling);
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
  auto items = canonical_items(*gap);
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
  const StatusOr<Problem> d = read_problem_csv(
      (std::filesystem::path(MEMPLAN_SHARED_DATA_DIR) / "dsa/minimalloc/challenging/D.1048576.csv").string());
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_FALSE(solver::SatHelper::applies(canonical_items(*d), 1001472, solver::kSatMaxClauses, &unit));
}

TEST(SatHelper, StopsOnTheCallersCancel) {
  // A 200-buffer puzzle that the solver does not settle in a moment.
  const Problem problem =
      generate_problem({.shape = ProblemShape::kPuzzle, .buffers = 200, .seed = 14, .max_size = 256});
  const auto items = canonical_items(problem);
  int64_t unit = 0;
  ASSERT_TRUE(solver::SatHelper::applies(items, 300, solver::kSatMaxClauses, &unit));
  // No deadline: only the cancel can end the helper before the bounds meet.
  std::atomic<bool> cancel{false};
  std::atomic<bool> finished{false};
  solver::StopCondition stop;
  stop.cancel = &cancel;
  solver::SatHelper helper(items, unit, stop, load(problem), 300, {}, solver::SatHelper::Mode::kMinimize, &finished);
  // Wait until the helper has run a solve, so that the cancel meets a solve
  // in progress or between two, not a thread that has not started.
  {
    test_support::Watchdog watchdog(std::chrono::minutes(5), "the SAT helper's first solve");
    while (helper.stats().decisions == 0 && !finished.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_FALSE(finished.load()) << "the helper settled the puzzle before the cancel: pick a harder one";
  cancel.store(true);
  {
    // join would stop it too: wait for the thread to end on the cancel alone.
    test_support::Watchdog watchdog(std::chrono::minutes(5), "the SAT helper to end after the caller's cancel");
    while (!finished.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  helper.join();
  // It stopped on the cancel, not because the bounds met.
  const std::optional<solver::SatHelper::Found> found = helper.take_better(300);
  EXPECT_LT(helper.floor(), found ? found->arena : 300);
}

TEST(SatHelper, MinimisationWithTheHelperStaysOptimal) {
  for (const std::string& file : gap_files()) {
    SCOPED_TRACE(file);
    const StatusOr<Problem> problem = read_problem_csv(file);
    ASSERT_TRUE(problem.ok());
    ExactOptions options;
    options.time_limit_seconds = 0;  // no limit: the verdict, not the clock, ends the call
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
    const auto items = canonical_items(*problem);
    for (const int64_t capacity : {optimum, optimum - 1}) {
      int64_t unit = 0;
      ASSERT_TRUE(solver::SatHelper::applies(items, capacity + 1, solver::kSatMaxClauses, &unit));
      std::atomic<bool> finished{false};
      // kDecide ends at its first answer; the deadline only bounds a helper that never answers.
      solver::SatHelper helper(items, unit, stop_after(600), load(*problem), capacity + 1, {},
                               solver::SatHelper::Mode::kDecide, &finished);
      {
        // kDecide ends at its answer (join would stop it: wait for the end).
        test_support::Watchdog watchdog(std::chrono::minutes(12),
                                        "the SAT helper's answer at " + std::to_string(capacity));
        while (!finished.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
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
    options.time_limit_seconds = 0;  // no limit: the verdict, not the clock, ends the call
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
  options.time_limit_seconds = 0;  // no limit: the verdict, not the clock, ends the call
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
  std::optional<StatusOr<ExactResult>> c;
  {
    test_support::Watchdog watchdog(std::chrono::minutes(5), "solve_decision with threads after the caller's cancel");
    c = solve_decision(hard, 256, options);
  }
  canceller.join();
  ASSERT_TRUE(c->ok());
  // Either the pair answered before the cancel, or the cancel ended it and says so.
  if ((*c)->outcome == ExactOutcome::kTimedOut) {
    EXPECT_TRUE((*c)->stats.cancelled);
  } else {
    EXPECT_TRUE((*c)->outcome == ExactOutcome::kOptimal || (*c)->outcome == ExactOutcome::kFeasible ||
                (*c)->outcome == ExactOutcome::kInfeasible);
  }
}

}  // namespace
}  // namespace memplan
#endif  // MEMPLAN_WITH_CADICAL
