// exact_subproblem_test.cc — lower bounds from relaxed sub-problems
// (src/solver/subproblem_bounds.h): never above the optimum, and above the
// load where a few sections already force waste. The optimum comes from
// solve_minimize without the sub-problems (itself checked against a brute
// force in exact_window_test.cc); its plans are checked by the validator.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/exact.h"
#include "memplan/validate.h"
#include "solver/subproblem_bounds.h"

namespace memplan {
namespace {

constexpr int64_t kNoUpper = std::numeric_limits<int64_t>::max();

std::vector<solver::CanonicalSearch::Item> items_of(const Problem& p) {
  std::vector<solver::CanonicalSearch::Item> items;
  for (size_t i = 0; i < p.size(); ++i) {
    const Buffer& b = p.buffers[i];
    items.push_back({.lower = b.lower,
                     .upper = b.upper,
                     .size = b.size,
                     .alignment = p.alignment_of(i),
                     .fixed_offset = b.offset ? *b.offset : -1});
  }
  return items;
}

// The bound the sub-problems prove when given unlimited nodes, from the load.
int64_t subproblem_bound(const Problem& p) {
  solver::SubproblemBounds bounds(items_of(p), 1, ExactOptions{});
  int64_t lower = load(p);
  ExactStats stats;
  const solver::StopCondition no_stop;
  EXPECT_TRUE(bounds.raise(&lower, kNoUpper, 0, no_stop, &stats, true));
  return lower;
}

int64_t optimum_of(const Problem& p, const std::string& context) {
  StatusOr<ExactResult> r = solve_minimize(p, {.subproblem_bounds = false});
  EXPECT_TRUE(r.ok()) << context;
  EXPECT_EQ(r->outcome, ExactOutcome::kOptimal) << context;
  EXPECT_TRUE(r->plan.has_value() && validate(p, *r->plan).ok()) << context;
  return r->plan ? r->plan->arena : -1;
}

uint64_t mix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// 7 to 12 buffers with short lifetimes over a few ticks: dense enough that
// some optima exceed the load.
Problem random_problem(uint64_t seed, int64_t max_alignment) {
  uint64_t state = seed;
  Problem p;
  const size_t n = 7 + mix(state) % 6;
  for (size_t i = 0; i < n; ++i) {
    Buffer b;
    b.id = std::to_string(i);
    b.lower = static_cast<int64_t>(mix(state) % 8);
    b.upper = b.lower + 1 + static_cast<int64_t>(mix(state) % 5);
    b.size = 1 + static_cast<int64_t>(mix(state) % 5);
    b.alignment = std::min<int64_t>(int64_t{1} << (mix(state) % 3), max_alignment);
    p.buffers.push_back(b);
  }
  return p;
}

TEST(SubproblemBounds, NeverExceedTheOptimumOnRandomProblems) {
  int above_load = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const Problem p = random_problem(seed, seed % 3 == 0 ? 4 : 1);
    const std::string context = "seed " + std::to_string(seed);
    const int64_t bound = subproblem_bound(p);
    const int64_t optimum = optimum_of(p, context);
    EXPECT_LE(bound, optimum) << context;
    EXPECT_GE(bound, load(p)) << context;
    above_load += bound > load(p) ? 1 : 0;
  }
  // Alignment padding lifts some of them (every third seed is aligned), so
  // the comparison above is not only ever made at the load.
  EXPECT_GT(above_load, 0);
}

// A gadget found by a random search: 11 buffers over ticks 1..10 with load 15
// and optimum 16. After it, a loose chain of 8 buffers (two live at a time,
// 1 byte each): sets of sections that keep nearly every buffer are not tried,
// and the tight sections of the gadget are a set that keeps 11 of 19.
Problem gadget_and_chain(int64_t unit) {
  const std::vector<std::array<int64_t, 3>> gadget = {{3, 6, 5},  {6, 7, 1},  {3, 5, 4}, {5, 7, 1},
                                                      {4, 9, 4},  {2, 4, 5},  {1, 2, 2}, {7, 10, 5},
                                                      {6, 10, 4}, {5, 10, 2}, {4, 7, 2}};
  Problem p;
  for (size_t i = 0; i < gadget.size(); ++i) {
    p.buffers.push_back(
        {.id = std::to_string(i), .lower = gadget[i][0], .upper = gadget[i][1], .size = unit * gadget[i][2]});
  }
  for (int64_t i = 0; i < 8; ++i) {
    p.buffers.push_back({.id = std::to_string(100 + i), .lower = 20 + i, .upper = 22 + i, .size = unit});
  }
  return p;
}

TEST(SubproblemBounds, RaiseTheBoundAboveTheLoadOnAConstructedCase) {
  const Problem p = gadget_and_chain(1);
  ASSERT_EQ(load(p), 15);
  solver::SubproblemBounds bounds(items_of(p), 1, ExactOptions{});
  EXPECT_FALSE(bounds.candidate_sizes().empty());
  int64_t lower = load(p);
  ExactStats stats;
  const solver::StopCondition no_stop;
  ASSERT_TRUE(bounds.raise(&lower, kNoUpper, 0, no_stop, &stats, true));
  EXPECT_EQ(lower, 16);
  EXPECT_GE(stats.subproblem_refutations, 1);
  EXPECT_EQ(optimum_of(p, "constructed"), 16);
  // The bound stops at the upper bound it is given: nothing to prove beyond.
  solver::SubproblemBounds capped(items_of(p), 1, ExactOptions{});
  int64_t capped_lower = 10;
  ASSERT_TRUE(capped.raise(&capped_lower, 12, 0, no_stop, &stats, true));
  EXPECT_GE(capped_lower, 12);  // a refutation may jump past the upper bound
  EXPECT_LE(capped_lower, 16);
}

TEST(SubproblemBounds, RefutationsRoundUpToTheGranule) {
  // Scaled by 1 KiB: a refutation at 15 KiB proves 15 KiB + 1 at least,
  // which the granule turns into 16 KiB.
  const Problem p = gadget_and_chain(1024);
  solver::SubproblemBounds bounds(items_of(p), 1024, ExactOptions{});
  int64_t lower = load(p);
  ExactStats stats;
  const solver::StopCondition no_stop;
  ASSERT_TRUE(bounds.raise(&lower, kNoUpper, 0, no_stop, &stats, true));
  EXPECT_EQ(lower, 16 * 1024);
  EXPECT_EQ(lower, optimum_of(p, "scaled"));
}

TEST(SubproblemBounds, ProblemsWithTwoSectionsOrFewerHaveNoCandidates) {
  // Two sections: every proper subset is one section, bounded by the load.
  Problem p;
  p.buffers.push_back({.id = "a", .lower = 0, .upper = 2, .size = 3});
  p.buffers.push_back({.id = "b", .lower = 0, .upper = 1, .size = 2});
  p.buffers.push_back({.id = "c", .lower = 1, .upper = 2, .size = 4});
  solver::SubproblemBounds bounds(items_of(p), 1, ExactOptions{});
  EXPECT_TRUE(bounds.candidate_sizes().empty());
  EXPECT_EQ(bounds.live(), 0u);
}

}  // namespace
}  // namespace memplan
