// bounds_test.cc — load, alignment-aware load, positional maximums and live
// counts on cases worked out by hand.
#include "memplan/bounds.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "memplan/plan.h"
#include "memplan/problem.h"
#include "memplan/validate.h"

namespace memplan {
namespace {

TEST(Load, IsZeroForAnEmptyProblem) {
  const Bounds b = compute_bounds(Problem{});
  EXPECT_EQ(b.load, 0);
  EXPECT_EQ(b.positional_maximums, 0);
  EXPECT_EQ(b.max_live_count, 0u);
  EXPECT_EQ(b.total_size, 0);
}

TEST(Load, TouchingLifetimesDoNotAddUp) {
  // [0,2) and [2,4) are never live together (half-open): the load is the larger.
  const Problem p{
      .buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 10}, {.id = "b", .lower = 2, .upper = 4, .size = 20}}};
  const Bounds b = compute_bounds(p);
  EXPECT_EQ(b.load, 20);
  EXPECT_EQ(b.load_tick, 2);
  EXPECT_EQ(b.max_live_count, 1u);
  EXPECT_EQ(b.total_size, 30);
  EXPECT_EQ(load(p), 20);
}

TEST(Load, OverlappingLifetimesAddUpAtTheirCommonTick) {
  // Live sets: t0 {10}, t1 {10, 20}, t2 {10, 20, 5}, t3 {20, 5}, t4 {5}.
  const Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 3, .size = 10},
                              {.id = "b", .lower = 1, .upper = 4, .size = 20},
                              {.id = "c", .lower = 2, .upper = 5, .size = 5}}};
  const Bounds b = compute_bounds(p);
  EXPECT_EQ(b.load, 35);
  EXPECT_EQ(b.load_tick, 2);
  EXPECT_EQ(b.max_live_count, 3u);
}

TEST(Load, PeakMayComeAfterManyBuffersHaveEnded) {
  // Many small buffers early, one large pair later.
  Problem p;
  for (int64_t i = 0; i < 10; ++i)
    p.buffers.push_back({.id = "s" + std::to_string(i), .lower = 0, .upper = 5, .size = 3});
  p.buffers.push_back({.id = "l1", .lower = 5, .upper = 9, .size = 20});
  p.buffers.push_back({.id = "l2", .lower = 6, .upper = 8, .size = 15});
  const Bounds b = compute_bounds(p);
  EXPECT_EQ(b.load, 35);
  EXPECT_EQ(b.load_tick, 6);
  EXPECT_EQ(b.max_live_count, 10u);
}

TEST(Load, ZeroSizeBuffersCountAsLiveButAddNoBytes) {
  const Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 3, .size = 7},
                              {.id = "z1", .lower = 1, .upper = 2, .size = 0},
                              {.id = "z2", .lower = 1, .upper = 3, .size = 0}}};
  const Bounds b = compute_bounds(p);
  EXPECT_EQ(b.load, 7);
  EXPECT_EQ(b.max_live_count, 3u);
}

TEST(Load, CountsAlignmentPaddingBetweenAlignedBuffers) {
  // Two 1-byte buffers aligned to 64 and live together: one must start at 64
  // or above, so no plan is smaller than 65 bytes, and 65 is reached.
  const Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 1, .alignment = 64},
                              {.id = "b", .lower = 0, .upper = 2, .size = 1, .alignment = 64}}};
  EXPECT_EQ(load(p), 65);
  const Plan tight = make_plan(p, {0, 64});
  EXPECT_TRUE(validate(p, tight).ok());
  EXPECT_EQ(tight.arena, 65);
}

TEST(Load, AlignmentOfTheLeastAlignedLiveBufferGovernsPadding) {
  // A byte-aligned buffer can sit right after the aligned one: 2 bytes suffice.
  const Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 1, .alignment = 64},
                              {.id = "b", .lower = 0, .upper = 2, .size = 1, .alignment = 1}}};
  EXPECT_EQ(load(p), 2);
  EXPECT_TRUE(validate(p, make_plan(p, {0, 1})).ok());
}

TEST(Load, UsesTheProblemsDefaultAlignment) {
  // Three 1-byte buffers under a problem-wide alignment of 32: 2 * 32 + 1.
  Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 1, .size = 1},
                        {.id = "b", .lower = 0, .upper = 1, .size = 1},
                        {.id = "c", .lower = 0, .upper = 1, .size = 1}}};
  p.alignment = 32;
  EXPECT_EQ(load(p), 65);
}

TEST(Load, PlainSumWinsWhenSizesAreAlreadyNearlyAligned) {
  // Rounded: 128 + 128 - 63 = 193 < 200 = plain sum.
  const Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 1, .size = 100, .alignment = 64},
                              {.id = "b", .lower = 0, .upper = 1, .size = 100, .alignment = 64}}};
  EXPECT_EQ(load(p), 200);
}

TEST(Load, CountsPaddingAtTicksWhereOnlyAlignedBuffersRemain) {
  // At tick 0 the byte-aligned "loose" buffer lets the others pack tightly
  // (3 bytes); at tick 1 it has ended and the two 64-aligned buffers alone
  // need 65 bytes. No buffer starts at tick 1, yet the bound must see it.
  const Problem p{.buffers = {{.id = "loose", .lower = 0, .upper = 1, .size = 1, .alignment = 1},
                              {.id = "a", .lower = 0, .upper = 2, .size = 1, .alignment = 64},
                              {.id = "b", .lower = 0, .upper = 2, .size = 1, .alignment = 64}}};
  const Bounds b = compute_bounds(p);
  EXPECT_EQ(b.load, 65);
  EXPECT_EQ(b.load_tick, 1);
}

TEST(Load, HandlesSizesAndTicksBeyond32Bits) {
  const int64_t tib = int64_t{1} << 40;
  const Problem p{.buffers = {{.id = "a", .lower = -(int64_t{1} << 35), .upper = tib, .size = tib},
                              {.id = "b", .lower = tib - 1, .upper = tib + 1, .size = 3 * tib}}};
  const Bounds b = compute_bounds(p);
  EXPECT_EQ(b.load, 4 * tib);
  EXPECT_EQ(b.load_tick, tib - 1);
}

// TensorFlow Lite's chain, as inclusive task records {size, first, last}:
// {16 [0,1]}, {8 [1,2]}, {64 [2,3]}, {32 [3,4]}, {8 [4,5]}. Half-open live sets:
//   t0 {16}  t1 {16, 8}  t2 {64, 8}  t3 {64, 32}  t4 {32, 8}  t5 {8}
// load = 64 + 32 = 96 at t3. Positional maximums: first = max(16, 16, 64, 64,
// 32, 8) = 64, second = max(8, 8, 32, 8) = 32, total 96.
TEST(PositionalMaximums, MatchesTheTfliteChainWorkedByHand) {
  const TaskRecord records[] = {{.size = 16, .first_task = 0, .last_task = 1},
                                {.size = 8, .first_task = 1, .last_task = 2},
                                {.size = 64, .first_task = 2, .last_task = 3},
                                {.size = 32, .first_task = 3, .last_task = 4},
                                {.size = 8, .first_task = 4, .last_task = 5}};
  StatusOr<Problem> p = problem_from_task_records(records);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const Bounds b = compute_bounds(*p);
  EXPECT_EQ(b.load, 96);
  EXPECT_EQ(b.load_tick, 3);
  EXPECT_EQ(b.positional_maximums, 96);
  EXPECT_EQ(b.max_live_count, 2u);
  EXPECT_EQ(b.total_size, 128);
}

TEST(PositionalMaximums, ExceedLoadWhenLargeSizesPeakAtDifferentTicks) {
  // t0 {10, 1}, t1 {5, 5}: load 11; first position max(10, 5) = 10, second
  // max(1, 5) = 5. Any object assignment needs one object >= 10 for tick 0 and
  // another >= 5 for tick 1's second buffer: 15.
  const Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 1, .size = 10},
                              {.id = "b", .lower = 0, .upper = 1, .size = 1},
                              {.id = "c", .lower = 1, .upper = 2, .size = 5},
                              {.id = "d", .lower = 1, .upper = 2, .size = 5}}};
  const Bounds b = compute_bounds(p);
  EXPECT_EQ(b.load, 11);
  EXPECT_EQ(b.positional_maximums, 15);
  // Reached by objects {a, c} of 10 bytes and {b, d} of 5 bytes.
  StatusOr<Plan> plan = plan_from_objects(p, ObjectAssignment{.object_of = {0, 1, 0, 1}, .object_sizes = {10, 5}});
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->arena, 15);
}

TEST(PositionalMaximums, AreSkippedWhenNotAskedFor) {
  const Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 1, .size = 10}}};
  const Bounds b = compute_bounds(p, /*with_positional_maximums=*/false);
  EXPECT_EQ(b.positional_maximums, 0);
  EXPECT_EQ(b.load, 10);
}

TEST(MaxLiveCount, CountsTheWidestTickNotTheTotal) {
  // Nested brackets: at most three are open at once, though there are five.
  const Problem p{.buffers = {{.id = "outer", .lower = 0, .upper = 10, .size = 1},
                              {.id = "left", .lower = 1, .upper = 4, .size = 1},
                              {.id = "left_inner", .lower = 2, .upper = 3, .size = 1},
                              {.id = "right", .lower = 4, .upper = 9, .size = 1},
                              {.id = "right_inner", .lower = 5, .upper = 6, .size = 1}}};
  EXPECT_EQ(compute_bounds(p).max_live_count, 3u);
}

TEST(Gap, IsZeroAtTheBoundAndRelativeAboveIt) {
  EXPECT_DOUBLE_EQ(gap(100, 100), 0.0);
  EXPECT_DOUBLE_EQ(gap(120, 100), 0.2);
  EXPECT_DOUBLE_EQ(gap(0, 0), 0.0);
}

}  // namespace
}  // namespace memplan
