// The exact minimiser's SAT helper thread (solver/sat/sat_helper.cc) under
// ThreadSanitizer: this file and sat_helper.cc are instrumented; CaDiCaL and
// the rest of memplan_core are not (the solver is the helper's alone). The
// caller does what solve_minimize's sync() does while the helper solves:
// publish its bounds, read the shared floor, take better plans, read the
// counters. Any data race in the shared state fails the run (halt_on_error).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/generate.h"
#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "solver/sat/sat_helper.h"
#include "support/watchdog.h"
#include "trade_bounds.h"

namespace memplan {
namespace {

using Clock = std::chrono::steady_clock;

TEST(SatHelperTsan, CallerTradesBoundsWhileTheSolverRuns) {
  // A 100-buffer puzzle that fits in 256 bytes: plans come from the
  // heuristic plan down, which the solver's phases start from (200 buffers
  // took 19-29 s to the first plan under ThreadSanitizer, for the same races).
  const Problem problem =
      generate_problem({.shape = ProblemShape::kPuzzle, .buffers = 100, .seed = 4, .max_size = 256});
  std::vector<solver::CanonicalSearch::Item> items;
  for (const Buffer& b : problem.buffers) items.push_back({.lower = b.lower, .upper = b.upper, .size = b.size});
  const StatusOr<Plan> heuristic = plan_with("greedy_by_size", problem);
  ASSERT_TRUE(heuristic.ok());
  const int64_t kCeiling = heuristic->arena;
  int64_t unit = 0;
  ASSERT_TRUE(solver::SatHelper::applies(items, kCeiling, solver::kSatMaxClauses, &unit));
  const int64_t lower = load(problem);
  std::atomic<bool> cancel{false};
  solver::StopCondition stop;  // no deadline: only the cancel ends the helper
  stop.cancel = &cancel;
  std::atomic<bool> finished{false};
  solver::SatHelper helper(items, unit, stop, lower, kCeiling, heuristic->offsets, solver::SatHelper::Mode::kMinimize,
                           &finished);
  int64_t best = kCeiling;
  int64_t plans = 0;
  // Trade for at least 2.5 s, and on until the first plan: a few seconds on
  // a fast machine, a minute on a slow shared one (the helper's time slices
  // double from 0.25 s and alternate between the floor and the ceiling).
  const Clock::time_point start = Clock::now();
  {
    test_support::Watchdog watchdog(std::chrono::minutes(10), "the SAT helper's first plan under ThreadSanitizer");
    ASSERT_NO_FATAL_FAILURE(trade_bounds(
        helper, problem, lower, &best, &plans,
        [&] { return Clock::now() < start + std::chrono::milliseconds(2500) || plans == 0; },
        [](const solver::SatHelper::Stats& s) { EXPECT_GE(s.decisions, s.plans + s.refutations); }));
  }
  cancel = true;  // the caller's cancel ends the solve in progress
  {
    // join would stop it too: wait for the thread to end on the cancel alone.
    test_support::Watchdog watchdog(std::chrono::minutes(5), "the SAT helper to end after the caller's cancel");
    while (!finished.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  helper.join();
  EXPECT_GT(plans, 0);
  EXPECT_LE(helper.floor(), best) << "a refutation above a plan";
}

}  // namespace
}  // namespace memplan
