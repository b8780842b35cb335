// The exact minimiser's helper threads (solver/seeded_helpers.cc) under
// ThreadSanitizer: this file and seeded_helpers.cc are instrumented, the rest
// of memplan_core (each helper's own CanonicalSearch) is not, so the build
// costs two files. The caller's side does what solve_minimize's sync() does,
// as often as it can, while three helpers search: publish its bounds, read
// the shared floor, take better plans, read the counters. Any data race in
// the shared state fails the run (halt_on_error).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/exact.h"
#include "memplan/plan.h"
#include "memplan/validate.h"
#include "solver/seeded_helpers.h"
#include "support/watchdog.h"
#include "trade_bounds.h"

namespace memplan {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<solver::CanonicalSearch::Item> items_of(const Problem& problem) {
  std::vector<solver::CanonicalSearch::Item> items;
  for (const Buffer& b : problem.buffers) items.push_back({.lower = b.lower, .upper = b.upper, .size = b.size});
  return items;
}

// MiniMalloc's D: the helpers find plans from 1 MiB down at once, and the
// bounds never meet (its optimum is unknown), so they stay busy.
Problem instance_d() {
  StatusOr<Problem> problem =
      read_problem_csv(std::string(MEMPLAN_SHARED_DATA_DIR) + "/dsa/minimalloc/challenging/D.1048576.csv");
  EXPECT_TRUE(problem.ok()) << problem.status().to_string();
  return problem.ok() ? *problem : Problem{};
}

constexpr int64_t kCeiling = 1 << 20;

TEST(SeededHelpersTsan, CallerTradesBoundsWhileHelpersSearch) {
  const Problem problem = instance_d();
  ASSERT_FALSE(problem.buffers.empty());
  const int64_t lower = load(problem);
  std::atomic<bool> cancel{false};
  solver::StopCondition stop;  // no deadline: the caller's cancel ends the helpers
  stop.cancel = &cancel;
  solver::SeededHelpers helpers(items_of(problem), ExactOptions{}, stop, {.threads = 3, .node_budget = 4096, .seed = 5},
                                lower, kCeiling);
  int64_t best = kCeiling;
  int64_t plans = 0;
  // Trade for at least 1.5 s, and on until a plan and a probe were seen.
  const Clock::time_point until = Clock::now() + std::chrono::milliseconds(1500);
  {
    test_support::Watchdog watchdog(std::chrono::minutes(10), "the seeded helpers' first plan under ThreadSanitizer");
    ASSERT_NO_FATAL_FAILURE(trade_bounds(
        helpers, problem, lower, &best, &plans,
        [&] { return Clock::now() < until || plans == 0 || helpers.stats().probes == 0; },
        [](const solver::SeededHelpers::Stats& s) { EXPECT_GE(s.nodes, s.probes); }));
  }
  cancel = true;
  {
    test_support::Watchdog watchdog(std::chrono::minutes(5), "the seeded helpers to end after the cancel");
    while (helpers.running() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  helpers.join();
  EXPECT_GT(plans, 0);
  EXPECT_GT(helpers.stats().probes, 0);
}

// The caller's cancel stops the helpers between decisions: with no deadline
// and a gap that never closes, the helpers end only because of the cancel. A
// destructor stops and joins
// helpers nobody joined.
TEST(SeededHelpersTsan, CancelAndDestructionStopTheHelpers) {
  const Problem problem = instance_d();
  ASSERT_FALSE(problem.buffers.empty());
  const int64_t lower = load(problem);
  std::atomic<bool> cancel{false};
  solver::StopCondition stop;
  stop.cancel = &cancel;
  {
    solver::SeededHelpers helpers(items_of(problem), ExactOptions{}, stop,
                                  {.threads = 3, .node_budget = 1024, .seed = 7}, lower, kCeiling);
    {
      test_support::Watchdog watchdog(std::chrono::minutes(10), "the seeded helpers' first decision");
      while (helpers.stats().probes == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::thread canceller([&] { cancel = true; });
    canceller.join();
    {
      // join would stop them too: wait for every helper to end on the cancel alone.
      test_support::Watchdog watchdog(std::chrono::minutes(5), "the seeded helpers to end after the cancel");
      while (helpers.running() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    helpers.join();
    EXPECT_GT(helpers.stats().probes, 0);
  }
  cancel = false;
  {
    test_support::Watchdog watchdog(std::chrono::minutes(5), "~SeededHelpers to stop helpers nobody joined");
    solver::SeededHelpers helpers(items_of(problem), ExactOptions{}, stop,
                                  {.threads = 3, .node_budget = 1 << 20, .seed = 8}, lower, kCeiling);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace
}  // namespace memplan
