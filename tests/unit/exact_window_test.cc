// exact_window_test.cc — the exact planner's proven lower bounds (never above
// a brute-force optimum, rounded to the size granule) and windowed improvement
// of large problems (validated, never worse than its start, fixed buffers
// untouched, long-lived peaks lowered by band windows), and the repair of a
// small problem's best plan by offset bands (solver::repair_by_bands,
// ExactOptions::repair_share). The validator is the oracle for every plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/exact.h"
#include "memplan/generate.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "solver/window.h"

namespace memplan {
namespace {

// Buffer names (built with append: GCC 12 misreports `"b" + to_string(i)`
// as a huge memcpy under -Wstringop-overflow).
std::string name_of(const char* prefix, int64_t i) {
  std::string name(prefix);
  name.append(std::to_string(i));
  return name;
}

uint64_t mix_state(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Random small problem whose sizes are multiples of `granule`.
Problem granular_problem(uint64_t seed, size_t buffers, int64_t granule, int64_t max_alignment) {
  uint64_t state = seed * 7919 + buffers;
  Problem p;
  for (size_t i = 0; i < buffers; ++i) {
    Buffer b;
    b.id = name_of("b", i);
    b.lower = static_cast<int64_t>(mix_state(state) % 12);
    b.upper = b.lower + 1 + static_cast<int64_t>(mix_state(state) % 6);
    b.size = granule * (1 + static_cast<int64_t>(mix_state(state) % 9));
    b.alignment = int64_t{1} << (mix_state(state) % 4);
    b.alignment = std::min(b.alignment, max_alignment);
    p.buffers.push_back(b);
  }
  return p;
}

// Smallest arena over all placement orders, each buffer first fit: some order
// reproduces every optimal plan (place its buffers by increasing offset).
int64_t brute_force_optimum(const Problem& p) {
  const size_t n = p.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  int64_t best = INT64_MAX;
  std::vector<int64_t> offsets(n);
  do {
    int64_t arena = 0;
    for (size_t k = 0; k < n && arena < best; ++k) {
      const size_t b = order[k];
      std::vector<std::pair<int64_t, int64_t>> taken;
      for (size_t j = 0; j < k; ++j) {
        const size_t o = order[j];
        if (p.buffers[o].overlaps_in_time(p.buffers[b])) taken.emplace_back(offsets[o], offsets[o] + p.buffers[o].size);
      }
      std::sort(taken.begin(), taken.end());
      int64_t x = 0;
      for (const auto& [lo, hi] : taken) {
        if (x + p.buffers[b].size <= lo) break;
        x = std::max(x, align_up(hi, p.alignment_of(b)));
      }
      offsets[b] = x;
      arena = std::max(arena, x + p.buffers[b].size);
    }
    best = std::min(best, arena);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

TEST(ExactBounds, ProvenLowerBoundsNeverExceedTheBruteForceOptimum) {
  int refuted_below = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    // Granules 24 and 1000, both multiples of every alignment used (<= 8).
    const int64_t granule = seed % 2 == 0 ? 24 : 1000;
    const Problem problem = granular_problem(seed, 7, granule, 8);
    const std::string context = "seed " + std::to_string(seed);
    const int64_t optimum = brute_force_optimum(problem);
    // Cut-short minimisations report bounds proven so far; none may pass the optimum.
    for (const int64_t nodes : {int64_t{1}, int64_t{8}, int64_t{64}}) {
      StatusOr<ExactResult> r = solve_minimize(problem, {.node_limit = nodes});
      ASSERT_TRUE(r.ok()) << context << ": " << r.status().to_string();
      EXPECT_LE(r->lower_bound, optimum) << context << " nodes " << nodes;
      ASSERT_TRUE(r->plan.has_value()) << context;
      EXPECT_TRUE(validate(problem, *r->plan).ok()) << context;
      EXPECT_GE(r->plan->arena, optimum) << context;
    }
    StatusOr<ExactResult> full = solve_minimize(problem, {});
    ASSERT_TRUE(full.ok());
    EXPECT_EQ(full->outcome, ExactOutcome::kOptimal) << context;
    EXPECT_EQ(full->plan->arena, optimum) << context;
    // A refutation just below the optimum proves exactly the optimum (rounded
    // to the granule, it cannot pass it).
    StatusOr<ExactResult> below = solve_decision(problem, optimum - 1, {});
    ASSERT_TRUE(below.ok());
    EXPECT_EQ(below->outcome, ExactOutcome::kInfeasible) << context;
    EXPECT_EQ(below->lower_bound, optimum) << context;
    refuted_below += below->outcome == ExactOutcome::kInfeasible ? 1 : 0;
  }
  EXPECT_EQ(refuted_below, 24);
}

TEST(ExactBounds, GranuleRoundsARefutationUpToTheNextMultiple) {
  // Two buffers of 1000 bytes live together: refuting 1500 proves 2000 (every
  // canonical top is a multiple of 1000), not 1501.
  Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 1000},
                        {.id = "b", .lower = 1, .upper = 3, .size = 1000}}};
  StatusOr<ExactResult> r = solve_decision(p, 1500, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, ExactOutcome::kInfeasible);
  EXPECT_EQ(r->lower_bound, 2000);
}

// A random problem of `n` buffers, about a tenth of them fixed (stacked low
// by the generator), and its naive plan (a poor start with room to improve).
struct Started {
  Problem problem;
  Plan start;
};

Started naive_start(size_t n, uint64_t seed) {
  Started s;
  s.problem = generate_problem({.shape = ProblemShape::kRandomIntervals,
                                .buffers = n,
                                .seed = seed,
                                .max_size = 4096,
                                .fixed_offset_probability = 0.1});
  StatusOr<Plan> naive = plan_with("naive", s.problem);
  EXPECT_TRUE(naive.ok());
  s.start = *naive;
  return s;
}

TEST(ExactWindows, ImprovesANaivePlanWithoutMovingFixedBuffers) {
  for (const uint64_t seed : {uint64_t{1}, uint64_t{2}}) {
    const Started s = naive_start(600, seed);
    ASSERT_TRUE(validate(s.problem, s.start).ok());
    StatusOr<ExactResult> r = improve_by_windows(s.problem, s.start, {.time_limit_seconds = 2, .window_buffers = 32});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_TRUE(r->plan.has_value());
    const ValidationResult v = validate(s.problem, *r->plan);
    EXPECT_TRUE(v.ok()) << v.message;
    EXPECT_LT(r->plan->arena, s.start.arena) << "seed " << seed;  // naive leaves room
    EXPECT_GT(r->stats.windows_improved, 0);
    EXPECT_LE(r->stats.windows_improved, r->stats.windows);
    EXPECT_GE(r->plan->arena, r->lower_bound);
    int fixed = 0;
    for (size_t i = 0; i < s.problem.size(); ++i) {
      if (!s.problem.buffers[i].offset) continue;
      ++fixed;
      EXPECT_EQ(r->plan->offsets[i], *s.problem.buffers[i].offset) << "buffer " << i;
    }
    EXPECT_GT(fixed, 0);
  }
}

TEST(ExactWindows, KeepsAnOptimalStartAndRejectsAnInvalidOne) {
  Problem p{
      .buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8}, {.id = "b", .lower = 1, .upper = 3, .size = 4}}};
  const Plan optimal = make_plan(p, {0, 8});
  StatusOr<ExactResult> r = improve_by_windows(p, optimal, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, ExactOutcome::kOptimal);
  EXPECT_EQ(r->plan->offsets, optimal.offsets);
  EXPECT_EQ(r->stats.windows, 0);
  EXPECT_FALSE(improve_by_windows(p, make_plan(p, {0, 4}), {}).ok());              // overlapping start
  EXPECT_FALSE(improve_by_windows(p, Plan{.offsets = {0}, .arena = 8}, {}).ok());  // one offset for two buffers
}

// The 11-buffer gadget of exact_subproblem_test.cc: load 15, optimum 16. From
// an optimal start no window can lower the peak, so every pass of every
// window size fails and the call says so (windows_exhausted) long before its
// time limit, instead of reporting a time-out.
TEST(ExactWindows, SaysWhenEveryWindowOfEveryPassFailed) {
  const std::vector<std::array<int64_t, 3>> gadget = {{3, 6, 5},  {6, 7, 1},  {3, 5, 4}, {5, 7, 1},
                                                      {4, 9, 4},  {2, 4, 5},  {1, 2, 2}, {7, 10, 5},
                                                      {6, 10, 4}, {5, 10, 2}, {4, 7, 2}};
  Problem p;
  for (size_t i = 0; i < gadget.size(); ++i) {
    p.buffers.push_back({.id = std::to_string(i), .lower = gadget[i][0], .upper = gadget[i][1], .size = gadget[i][2]});
  }
  StatusOr<ExactResult> optimum = solve_minimize(p, {});
  ASSERT_TRUE(optimum.ok() && optimum->plan);
  ASSERT_EQ(optimum->plan->arena, 16);
  ASSERT_EQ(load(p), 15);
  ExactOptions options;
  options.time_limit_seconds = 600;  // far beyond the sweep: windows_exhausted, not the clock, must end it
  options.window_buffers = 8;
  StatusOr<ExactResult> r = improve_by_windows(p, *optimum->plan, options);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->plan->arena, 16);
  EXPECT_EQ(r->outcome, ExactOutcome::kTimedOut);  // not proven: the bound is the load
  EXPECT_TRUE(r->stats.windows_exhausted);
  EXPECT_EQ(r->stats.window_passes, 3);
  EXPECT_GT(r->stats.windows, 0);

  // A time limit that ends the call first is not an exhausted search.
  ExactOptions quick;
  quick.time_limit_seconds = 1e-9;
  StatusOr<ExactResult> stopped = improve_by_windows(p, *optimum->plan, quick);
  ASSERT_TRUE(stopped.ok());
  EXPECT_FALSE(stopped->stats.windows_exhausted);
}

TEST(ExactWindows, BandWindowLowersAPeakThatLivesThroughoutTheProblem) {
  // 150 ticks, two 5-byte buffers each; the start stacks the second one of
  // odd ticks at 10 (a 5-byte hole under it) and a long buffer over all ticks
  // on top at 15: arena 25. No time window avoids the long buffer, so only a
  // band (every buffer above an offset floor) can lower it, to 20.
  Problem p;
  std::vector<int64_t> offsets;
  for (int64_t t = 0; t < 150; ++t) {
    p.buffers.push_back({.id = name_of("a", t), .lower = t, .upper = t + 1, .size = 5});
    offsets.push_back(0);
    p.buffers.push_back({.id = name_of("b", t), .lower = t, .upper = t + 1, .size = 5});
    offsets.push_back(t % 2 == 0 ? 5 : 10);
  }
  p.buffers.push_back({.id = "long", .lower = 0, .upper = 150, .size = 10});
  offsets.push_back(15);
  const Plan start = make_plan(p, offsets);
  ASSERT_EQ(start.arena, 25);
  StatusOr<ExactResult> r = improve_by_windows(p, start, {.time_limit_seconds = 5, .window_buffers = 8});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(validate(p, *r->plan).ok());
  EXPECT_EQ(r->plan->arena, 20);
  EXPECT_EQ(r->outcome, ExactOutcome::kOptimal);
}

TEST(ExactWindows, TicksSpanningAllOfInt64DoNotOverflowTheWindowMargins) {
  // Lifetimes near both ends of int64 make every margin of the window search
  // saturate (UBSan reports any overflow in the sanitizer stage).
  constexpr int64_t kFar = int64_t{1} << 62;
  Problem p;
  for (int64_t i = 0; i < 40; ++i) {
    const int64_t lower = i % 2 == 0 ? -kFar - kFar + i : i;
    const int64_t upper = i % 3 == 0 ? kFar + (kFar - 1) : i + 2;
    p.buffers.push_back({.id = name_of("b", i), .lower = lower, .upper = upper, .size = 1 + i % 5});
  }
  StatusOr<Plan> naive = plan_with("naive", p);
  ASSERT_TRUE(naive.ok());
  StatusOr<ExactResult> r = improve_by_windows(p, *naive, {.time_limit_seconds = 1, .window_buffers = 8});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(validate(p, *r->plan).ok());
  EXPECT_LT(r->plan->arena, naive->arena);  // the naive stack leaves room
}

TEST(ExactWindows, LargeMinimisationIsWindowedAndNeverWorseThanPortfolio) {
  const Problem problem = generate_problem({.shape = ProblemShape::kRandomIntervals, .buffers = 1500, .seed = 3});
  StatusOr<Plan> portfolio = plan_with("portfolio", problem, {.time_limit_seconds = 0.5});
  ASSERT_TRUE(portfolio.ok());
  ExactOptions options{.time_limit_seconds = 2, .start_plan = &*portfolio, .window_threshold = 500};
  StatusOr<ExactResult> r = solve_minimize(problem, options);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->plan.has_value());
  EXPECT_TRUE(validate(problem, *r->plan).ok());
  EXPECT_LE(r->plan->arena, portfolio->arena);
  EXPECT_GE(r->plan->arena, r->lower_bound);
  EXPECT_GE(r->lower_bound, load(problem));
  // Either the dive at the load met it, or windows ran on the start plan.
  EXPECT_TRUE(r->outcome == ExactOutcome::kOptimal || r->stats.windows > 0);
}

// Bands at the top of a naive stack: each freed band is re-decided under the
// arena, so the plan goes down; fixed buffers stay, the validator accepts it.
TEST(ExactRepair, BandsLowerANaivePlanWithoutMovingFixedBuffers) {
  for (const uint64_t seed : {uint64_t{4}, uint64_t{5}}) {
    const Started s = naive_start(200, seed);
    StatusOr<ExactResult> r = solver::repair_by_bands(s.problem, s.start, 8, 1 << 16, {.time_limit_seconds = 2});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_TRUE(r->plan.has_value());
    const ValidationResult v = validate(s.problem, *r->plan);
    EXPECT_TRUE(v.ok()) << v.message;
    EXPECT_LT(r->plan->arena, s.start.arena) << "seed " << seed;
    EXPECT_GT(r->stats.windows_improved, 0);
    EXPECT_LE(r->stats.windows_improved, r->stats.windows);
    EXPECT_GE(r->plan->arena, r->lower_bound);
    for (size_t i = 0; i < s.problem.size(); ++i) {
      if (s.problem.buffers[i].offset) EXPECT_EQ(r->plan->offsets[i], *s.problem.buffers[i].offset) << "buffer " << i;
    }
  }
}

// The optimum of a problem whose optimum is above its load cannot be lowered:
// every band is refuted, a whole sweep of band sizes ends the call, and the
// plan comes back unchanged. An optimal plan at the load ends it at once.
TEST(ExactRepair, BandsSayWhenEverySizeFailedAndKeepAnOptimalPlan) {
  Problem gap;
  const int64_t rows[][3] = {{6, 7, 31},   {2, 8, 6},   {2, 9, 62}, {10, 17, 37}, {9, 11, 44}, {14, 20, 15},
                             {13, 17, 80}, {8, 16, 12}, {5, 6, 10}, {11, 12, 9},  {0, 3, 68},  {6, 13, 58}};
  for (size_t i = 0; i < std::size(rows); ++i) {
    gap.buffers.push_back(
        {.id = name_of("b", static_cast<int64_t>(i)), .lower = rows[i][0], .upper = rows[i][1], .size = rows[i][2]});
  }
  StatusOr<ExactResult> optimum = solve_minimize(gap, {});
  ASSERT_TRUE(optimum.ok());
  ASSERT_EQ(optimum->outcome, ExactOutcome::kOptimal);
  ASSERT_GT(optimum->plan->arena, load(gap));  // the case this test needs
  // A limit far beyond the sweep: windows_exhausted says the sweep ended it, not the clock.
  StatusOr<ExactResult> r = solver::repair_by_bands(gap, *optimum->plan, 2, 1 << 16, {.time_limit_seconds = 600});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->stats.windows_exhausted);
  EXPECT_GT(r->stats.windows, 0);
  EXPECT_EQ(r->stats.windows_improved, 0);
  EXPECT_EQ(r->plan->arena, optimum->plan->arena);

  const Problem tight = granular_problem(3, 8, 1, 1);
  StatusOr<ExactResult> best = solve_minimize(tight, {});
  ASSERT_TRUE(best.ok());
  if (best->plan->arena == load(tight)) {
    StatusOr<ExactResult> kept = solver::repair_by_bands(tight, *best->plan, 2, 1 << 16, {});
    ASSERT_TRUE(kept.ok());
    EXPECT_EQ(kept->outcome, ExactOutcome::kOptimal);
    EXPECT_EQ(kept->stats.windows, 0);
  }
  // An invalid start is an error, not a plan.
  Plan broken = *optimum->plan;
  broken.offsets[0] = broken.offsets[2];
  EXPECT_FALSE(solver::repair_by_bands(gap, broken, 2, 1 << 16, {}).ok());
}

// The repair phase of solve_minimize (ExactOptions::repair_share) on a small
// problem: with the search held to one node per
// decision, only the bands can lower the naive start plan, and they must.
TEST(ExactRepair, MinimisationRepairsTheBestPlanWithItsShareOfTheTime) {
  const Started s = naive_start(200, 6);
  ExactOptions options{.time_limit_seconds = 2, .node_limit = 1, .start_plan = &s.start};
  options.repair_share = 0.9;
  StatusOr<ExactResult> r = solve_minimize(s.problem, options);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(r->plan.has_value());
  const ValidationResult v = validate(s.problem, *r->plan);
  EXPECT_TRUE(v.ok()) << v.message;
  EXPECT_GT(r->stats.windows_improved, 0);
  EXPECT_LT(r->plan->arena, s.start.arena);
  EXPECT_GE(r->plan->arena, r->lower_bound);
  EXPECT_FALSE(r->stats.windows_exhausted);  // the search stopped early: more time could help
  // Off: the same search runs no band and cannot improve the start.
  options.repair_share = 0;
  StatusOr<ExactResult> off = solve_minimize(s.problem, options);
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_EQ(off->stats.windows, 0);
  EXPECT_EQ(off->plan->arena, s.start.arena);
}

}  // namespace
}  // namespace memplan
