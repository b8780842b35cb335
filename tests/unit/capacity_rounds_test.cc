// capacity_rounds_test.cc — minimisation as rounds of decisions over capacities
// (src/solver/capacity_rounds.h), driven by mock decision oracles: the
// shared floor and ceiling, a non-monotone oracle whose plans only some
// capacities find, time-outs that must prove nothing, repeats skipped, and
// the sweep reaching every capacity of the gap; and the seeded helper threads
// over the real search. solve_minimize as a whole is covered by
// exact_test.cc (against brute force, with and without threads).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/exact.h"
#include "memplan/generate.h"
#include "memplan/plan.h"
#include "memplan/validate.h"
#include "solver/capacity_rounds.h"
#include "solver/seeded_helpers.h"
#include "support/watchdog.h"

namespace memplan {
namespace {

using solver::CapacityBounds;
using solver::CapacityProbe;
using solver::ProbeResult;
using solver::ProbeVerdict;
using solver::RoundSchedule;

constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

// A decision oracle given as a table: at capacity c a plan of arena
// plan_arena[c] is found once the budget reaches plan_nodes[c]; capacities
// below refuted_below are refuted completely (next capacity refuted_below);
// everything else runs out of budget. Records every probe it answers.
struct MockOracle {
  std::map<int64_t, int64_t> plan_nodes;
  std::map<int64_t, int64_t> plan_arena;
  int64_t refuted_below = 0;
  std::vector<std::pair<CapacityProbe, ProbeResult>> calls;
  int64_t nodes = 0;

  ProbeResult answer(const CapacityProbe& p) {
    ProbeResult r;
    if (p.capacity < refuted_below) {
      r = {.verdict = ProbeVerdict::kRefuted, .next_capacity = refuted_below};
      nodes += 1;
    } else if (auto it = plan_nodes.find(p.capacity); it != plan_nodes.end() && p.node_budget >= it->second) {
      r = {.verdict = ProbeVerdict::kPlan, .arena = plan_arena.at(p.capacity)};
      nodes += it->second;
    } else {
      nodes += p.node_budget;
    }
    calls.push_back({p, r});
    return r;
  }
  solver::DecideFn fn() {
    return [this](const CapacityProbe& p) -> StatusOr<ProbeResult> { return answer(p); };
  }
};

TEST(CapacityBounds, PlansLowerTheCeilingAndRefutationsRaiseTheFloor) {
  CapacityBounds b(100, 200, 4);
  b.plan_found(180);
  EXPECT_EQ(b.ceiling(), 180);
  b.plan_found(190);  // a worse plan never raises it
  EXPECT_EQ(b.ceiling(), 180);
  b.refuted(120, 0);  // no plan <= 120: floor 121, rounded up to the granule
  EXPECT_EQ(b.floor(), 124);
  b.refuted(110, 0);  // a weaker refutation never lowers it
  EXPECT_EQ(b.floor(), 124);
  b.refuted(130, 150);  // the search's next capacity jumps further
  EXPECT_EQ(b.floor(), 152);
  EXPECT_FALSE(b.closed());
  b.plan_found(152);
  EXPECT_TRUE(b.closed());
}

TEST(CapacityBounds, TimeOutsProveNothing) {
  CapacityBounds b(100, 200, 1);
  b.absorb({.capacity = 150, .node_budget = 10}, {.verdict = ProbeVerdict::kOutOfBudget, .next_capacity = 190});
  EXPECT_EQ(b.floor(), 100);
  EXPECT_EQ(b.ceiling(), 200);
}

TEST(CapacityRounds, FindsThePlanOnlyOneCapacityGivesInANonMonotoneOracle) {
  // Like MiniMalloc's D: the optimum region [95, 120) has a plan at 100 that
  // is easy, one at 97 that needs 40k nodes, and every other capacity
  // (including 98 and 99, above 97) resists any budget. A walk down from the
  // ceiling stalls at 99; bisection alone probes 97 only by chance.
  MockOracle oracle;
  oracle.refuted_below = 95;
  oracle.plan_nodes = {{110, 10}, {100, 500}, {97, 40000}};
  oracle.plan_arena = {{110, 110}, {100, 100}, {97, 97}};
  CapacityBounds bounds(90, 120, 1);
  const RoundSchedule schedule{.base_budget = 256, .max_budget = int64_t{1} << 20, .sweep_points = 16};
  auto stats = solver::run_capacity_rounds(&bounds, schedule, oracle.fn(), [] { return false; });
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_EQ(bounds.ceiling(), 97);
  EXPECT_EQ(bounds.floor(), 95);  // the refutations at 90..94 were complete
  // It never ends above a plan any of its decisions found.
  for (const auto& [probe, result] : oracle.calls) {
    if (result.verdict == ProbeVerdict::kPlan) EXPECT_LE(bounds.ceiling(), result.arena);
  }
  // And it found 97 with a budget within a small factor of what the table
  // needs times the number of capacities in the gap (a fair share each).
  EXPECT_LT(oracle.nodes, int64_t{40000} * 25 * 8);
}

TEST(CapacityRounds, NeverEndsAboveAnyDecisionItRan) {
  // A pseudo-random non-monotone oracle: 40 capacities, a few with plans at
  // random budgets, the arena at most the capacity.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    MockOracle oracle;
    uint32_t x = seed * 2654435761u;
    auto next = [&] {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      return x;
    };
    oracle.refuted_below = 1000 + static_cast<int64_t>(next() % 5);
    for (int64_t c = 1000; c < 1040; ++c) {
      if (next() % 4 == 0) {
        oracle.plan_nodes[c] = 1 + next() % 20000;
        // Consistent with the refutations: no plan below refuted_below.
        oracle.plan_arena[c] = std::max(oracle.refuted_below, c - static_cast<int64_t>(next() % 3));
      }
    }
    CapacityBounds bounds(1000, 1040, 1);
    const RoundSchedule schedule{.base_budget = 64, .max_budget = 1 << 16, .sweep_points = 48};
    ASSERT_TRUE(solver::run_capacity_rounds(&bounds, schedule, oracle.fn(), [] { return false; }).ok());
    int64_t best_run = kNone;
    for (const auto& [probe, result] : oracle.calls) {
      if (result.verdict == ProbeVerdict::kPlan) best_run = std::min(best_run, result.arena);
    }
    EXPECT_EQ(bounds.ceiling(), std::min<int64_t>(1040, best_run)) << "seed " << seed;
    // Every capacity's plan that needs at most 512 nodes is reached (the
    // sweep's fifth pass over the 40 capacities): the ceiling is at or below it.
    int64_t best_table = kNone;
    for (const auto& [c, n] : oracle.plan_nodes) {
      if (c >= oracle.refuted_below && n <= 512) best_table = std::min(best_table, oracle.plan_arena[c]);
    }
    if (best_table != kNone) EXPECT_LE(bounds.ceiling(), best_table) << "seed " << seed;
    EXPECT_LE(bounds.floor(), bounds.ceiling());
  }
}

TEST(CapacityRounds, TimeOutsNeverRaiseTheFloor) {
  MockOracle oracle;  // nothing found, nothing refuted
  CapacityBounds bounds(500, 600, 1);
  const RoundSchedule schedule{.base_budget = 16, .max_budget = 1 << 12};
  ASSERT_TRUE(solver::run_capacity_rounds(&bounds, schedule, oracle.fn(), [] { return false; }).ok());
  EXPECT_EQ(bounds.floor(), 500);
  EXPECT_EQ(bounds.ceiling(), 600);
  EXPECT_FALSE(oracle.calls.empty());
}

TEST(CapacityRounds, SkipsRepeatsAndSweepsEveryCapacityOfANarrowGap) {
  MockOracle oracle;  // every probe runs out of budget
  CapacityBounds bounds(100, 110, 1);
  const RoundSchedule schedule{.base_budget = 64, .max_budget = 1 << 12, .sweep_points = 32};
  auto stats = solver::run_capacity_rounds(&bounds, schedule, oracle.fn(), [] { return false; });
  ASSERT_TRUE(stats.ok());
  std::map<std::tuple<int64_t, int32_t, bool>, int64_t> largest;
  std::map<int64_t, int64_t> per_capacity;
  for (const auto& [p, r] : oracle.calls) {
    int64_t& seen = largest[{p.capacity, p.first_order, p.allow_restarts}];
    EXPECT_GT(p.node_budget, seen) << "capacity " << p.capacity << " repeated with no more nodes";
    seen = p.node_budget;
    per_capacity[p.capacity] = std::max(per_capacity[p.capacity], p.node_budget);
    EXPECT_GE(p.capacity, 100);
    EXPECT_LT(p.capacity, 110);
  }
  // Every capacity of the gap got at least the first sweep's budget.
  for (int64_t c = 100; c < 110; ++c) EXPECT_GE(per_capacity[c], 16) << "capacity " << c;
}

TEST(CapacityRounds, RefutationAboveTheFloorRaisesItAndStopEndsTheRun) {
  MockOracle oracle;
  oracle.refuted_below = 150;
  oracle.plan_nodes = {{150, 1}};
  oracle.plan_arena = {{150, 150}};
  CapacityBounds bounds(100, 200, 2);
  ASSERT_TRUE(solver::run_capacity_rounds(&bounds, {.base_budget = 8}, oracle.fn(), [] { return false; }).ok());
  EXPECT_EQ(bounds.floor(), 150);
  EXPECT_EQ(bounds.ceiling(), 150);

  MockOracle never;
  CapacityBounds open(100, 200, 1);
  int calls = 0;
  ASSERT_TRUE(solver::run_capacity_rounds(&open, {.base_budget = 8}, never.fn(), [&] { return ++calls > 5; }).ok());
  EXPECT_LE(never.calls.size(), 6u);
}

// Seeded restarts (step 5): the deterministic trees never find the plan at
// 97 (any capacity from 100 up gives a plan of 100); only some seeds do (one
// in seven), as on MiniMalloc's D, where one short decision in a hundred
// finds 995 KiB and the fixed tree needs 779k nodes. Without the step the
// run ends at 100; with it at 97, every seeded
// probe with a seed of its own, below the ceiling and at or above the floor.
TEST(CapacityRounds, SeededRestartsFindPlansOnlyOtherOrderingsFind) {
  struct SeededOracle : MockOracle {
    ProbeResult answer_seeded(const CapacityProbe& p) {
      if (p.seed != 0 && p.seed % 7 == 3 && p.capacity == 97 && p.node_budget >= 300) {
        calls.push_back({p, {.verdict = ProbeVerdict::kPlan, .arena = 97}});
        nodes += 300;
        return calls.back().second;
      }
      return answer(p);
    }
  };
  for (const int64_t seeded_budget : {int64_t{0}, int64_t{400}}) {
    SeededOracle oracle;
    oracle.refuted_below = 95;
    for (int64_t c = 100; c < 120; ++c) oracle.plan_nodes[c] = 10, oracle.plan_arena[c] = 100;
    CapacityBounds bounds(90, 120, 1);
    const RoundSchedule schedule{.base_budget = 256,
                                 .max_budget = int64_t{1} << 20,
                                 .sweep_points = 16,
                                 .seeded_budget = seeded_budget,
                                 .seeded_levels = 8};
    auto stats = solver::run_capacity_rounds(
        &bounds, schedule, [&](const CapacityProbe& p) -> StatusOr<ProbeResult> { return oracle.answer_seeded(p); },
        [] { return false; });
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    if (seeded_budget == 0) {
      EXPECT_EQ(bounds.ceiling(), 100);
      EXPECT_EQ(stats->seeded_probes, 0);
      continue;
    }
    EXPECT_EQ(bounds.ceiling(), 97);
    EXPECT_GE(stats->seeded_plans, 1);
    std::set<uint64_t> seeds;
    int64_t ceiling = 120, seeded_nodes = 0, other_nodes = 0;
    for (const auto& [p, r] : oracle.calls) {
      // Seeded probes, and only they, say they come from step 5.
      EXPECT_EQ(p.step == PlanSource::kSeeded, p.seed != 0);
      if (p.seed == 0) {
        other_nodes += p.node_budget;
      } else {
        EXPECT_TRUE(seeds.insert(p.seed).second) << "seed " << p.seed << " used twice";
        EXPECT_EQ(p.node_budget, 400);
        EXPECT_LT(p.capacity, ceiling);
        EXPECT_GE(p.capacity, ceiling - 8);  // within seeded_levels steps of 1 byte
        EXPECT_GE(p.capacity, 95);           // never below the floor
        seeded_nodes += p.node_budget;
      }
      if (r.verdict == ProbeVerdict::kPlan) ceiling = std::min(ceiling, r.arena);
    }
    EXPECT_EQ(stats->seeded_probes, static_cast<int64_t>(seeds.size()));
    // Without a clock the step takes its share (half) of the nodes: as many
    // as the other steps' 2 B a round, plus at most one probe.
    EXPECT_GT(seeded_nodes, 0);
    EXPECT_LE(seeded_nodes, 4 * other_nodes + 400 * stats->rounds);
  }
}

// Step 5b: every seeded_floor_every-th seeded probe decides at the floor. Here
// the floor (90) fits, but only under a seeded tree (as on the pinwheel):
// the fixed orders at 90 never finish, and every other capacity's plan is
// 100. Without step 5b the run ends at 100; with it, at the floor, and the
// probe that found it was seeded and at the floor.
TEST(CapacityRounds, SeededProbesAtTheFloorFindPlansTheFixedOrdersMiss) {
  struct FloorOracle : MockOracle {
    ProbeResult answer_at_floor(const CapacityProbe& p) {
      if (p.seed != 0 && p.capacity == 90) {
        calls.push_back({p, {.verdict = ProbeVerdict::kPlan, .arena = 90}});
        return calls.back().second;
      }
      return answer(p);
    }
  };
  for (const int32_t every : {0, 4}) {
    FloorOracle oracle;
    for (int64_t c = 91; c < 120; ++c) oracle.plan_nodes[c] = 10, oracle.plan_arena[c] = 100;
    CapacityBounds bounds(90, 120, 1);
    const RoundSchedule schedule{.base_budget = 256,
                                 .max_budget = int64_t{1} << 16,
                                 .sweep_points = 16,
                                 .seeded_budget = 400,
                                 .seeded_levels = 8,
                                 .seeded_floor_every = every};
    auto stats = solver::run_capacity_rounds(
        &bounds, schedule, [&](const CapacityProbe& p) -> StatusOr<ProbeResult> { return oracle.answer_at_floor(p); },
        [] { return false; });
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    if (every == 0) {
      EXPECT_EQ(bounds.ceiling(), 100);
      for (const auto& [p, r] : oracle.calls) {
        if (p.seed != 0) EXPECT_GT(p.capacity, 90) << "a seeded probe at the floor without step 5b";
      }
      continue;
    }
    EXPECT_TRUE(bounds.closed());
    EXPECT_EQ(bounds.ceiling(), 90);
    ASSERT_FALSE(oracle.calls.empty());
    EXPECT_EQ(oracle.calls.back().first.capacity, 90);
    EXPECT_NE(oracle.calls.back().first.seed, 0u);
    EXPECT_EQ(oracle.calls.back().first.step, PlanSource::kSeeded);
    // Seeded probes before it: three below the ceiling for each one at the floor.
    int64_t seeded = 0, at_floor = 0;
    for (const auto& [p, r] : oracle.calls) {
      if (p.seed == 0) continue;
      ++seeded;
      if (p.capacity == 90) ++at_floor;
    }
    EXPECT_EQ(at_floor, 1);
    EXPECT_EQ(seeded, 4);
  }
}

// The helper threads (seeded_helpers.h) on a generated puzzle that fits in
// 256 bytes, started with a ceiling of 512: their plans are valid, each
// lowers the shared ceiling, and a closed gap ends them.
TEST(SeededHelpers, FindValidPlansBelowTheCeilingAndStopWhenTheBoundsMeet) {
  const Problem problem = generate_problem({.shape = ProblemShape::kPuzzle, .buffers = 40, .seed = 5, .max_size = 256});
  std::vector<solver::CanonicalSearch::Item> items;
  for (const Buffer& b : problem.buffers) items.push_back({.lower = b.lower, .upper = b.upper, .size = b.size});
  // No deadline: only closed bounds (below) end the helpers.
  solver::SeededHelpers helpers(items, ExactOptions{}, solver::StopCondition{},
                                {.threads = 2, .node_budget = 4096, .seed = 9}, 1, 512);
  // Wait for a plan (the puzzle fits far below 512: the first decisions find one).
  std::optional<solver::SeededHelpers::Found> found;
  {
    test_support::Watchdog watchdog(std::chrono::minutes(5), "the seeded helpers' first plan");
    while (!found) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      found = helpers.take_better(512);
    }
  }
  EXPECT_LT(found->arena, 512);
  ASSERT_EQ(found->offsets.size(), problem.size());
  const Plan plan = make_plan(problem, found->offsets);
  EXPECT_EQ(plan.arena, found->arena);
  EXPECT_TRUE(validate(problem, plan).ok()) << validate(problem, plan).message;
  // The caller closes the gap at that plan: the helpers stop on their own.
  helpers.publish(found->arena, found->arena);
  {
    // Without a deadline or a cancel, only the closed gap ends them (join would stop them too: wait).
    test_support::Watchdog watchdog(std::chrono::minutes(5), "the seeded helpers to stop once the bounds met");
    while (helpers.running() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  helpers.join();
  // Their best is the plan taken, or one they found below it meanwhile;
  // take_better only hands over plans below `than`.
  const std::optional<solver::SeededHelpers::Found> last = helpers.take_better(512);
  ASSERT_TRUE(last.has_value());
  EXPECT_LE(last->arena, found->arena);
  EXPECT_FALSE(helpers.take_better(last->arena).has_value());
  const solver::SeededHelpers::Stats stats = helpers.stats();
  EXPECT_GE(stats.probes, 1);
  EXPECT_GE(stats.plans, 1);
  EXPECT_GE(stats.nodes, stats.probes);
  EXPECT_EQ(helpers.floor(), found->arena);
}

// Helper 0's dive at the floor: a decision at the load with its own budget,
// before the seeded probes. Here the seeded probes get one node each (no plan
// can be found in one node), so a plan at the load can only come from the dive.
TEST(SeededHelpers, TheFirstHelperDivesAtTheFloorFirst) {
  const Problem problem = generate_problem({.shape = ProblemShape::kPuzzle, .buffers = 24, .seed = 3, .max_size = 64});
  std::vector<solver::CanonicalSearch::Item> items;
  for (const Buffer& b : problem.buffers) items.push_back({.lower = b.lower, .upper = b.upper, .size = b.size});
  const int64_t floor = load(problem);
  solver::SeededHelpers helpers(items, ExactOptions{}, solver::StopCondition{},
                                {.threads = 1, .node_budget = 1, .seed = 4, .floor_budget = int64_t{1} << 20}, floor,
                                4 * floor);
  std::optional<solver::SeededHelpers::Found> found;
  {
    test_support::Watchdog watchdog(std::chrono::minutes(5), "the floor dive's plan");
    while (!found) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      found = helpers.take_better(4 * floor);
    }
  }
  helpers.join();
  EXPECT_EQ(found->arena, floor);
  const Plan plan = make_plan(problem, found->offsets);
  EXPECT_EQ(plan.arena, floor);
  EXPECT_TRUE(validate(problem, plan).ok()) << validate(problem, plan).message;
  EXPECT_GE(helpers.stats().plans, 1);
}

// The real search behind the rounds: on small random problems
// solve_minimize still ends optimal and its plan is valid.
TEST(CapacityRounds, MinimisationWithTheRoundsStaysOptimalOnSmallProblems) {
  uint32_t x = 12345;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    return x;
  };
  for (int trial = 0; trial < 30; ++trial) {
    Problem p;
    const int n = 6 + static_cast<int>(next() % 8);
    for (int i = 0; i < n; ++i) {
      const int64_t lower = next() % 10;
      p.buffers.push_back({.id = std::to_string(i),
                           .lower = lower,
                           .upper = lower + 1 + next() % 6,
                           .size = 1 + static_cast<int64_t>(next() % 9)});
    }
    auto r = solve_minimize(p, {});
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->plan);
    EXPECT_TRUE(validate(p, *r->plan).ok());
    EXPECT_EQ(r->outcome, ExactOutcome::kOptimal);
    EXPECT_EQ(r->plan->arena, r->lower_bound);
    EXPECT_LE(r->stats.seconds_to_best, r->stats.seconds);
  }
}

}  // namespace
}  // namespace memplan
