// objects_planners_test.cc — the shared-objects planners (TFLite's strategies).
//
// The small cases come from TFLite's own memory-management tests (the chain
// and the complex records) plus two cases that separate the strategies; the
// expected assignments are worked out by hand in the comments. Where TFLite's
// published assignment differs from ours it is only in how ties between equal
// objects are broken, never in the object sizes. Every plan is checked by the
// validator, and every assignment against the positional-maximums bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/generate.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "planners/shared_objects.h"

namespace memplan {
namespace {

using AssignFunction = std::function<StatusOr<ObjectAssignment>(const Problem&)>;

struct Strategy {
  const char* name;
  AssignFunction assign;
};

const std::vector<Strategy>& strategies() {
  static const std::vector<Strategy> all = {
      {"equality", [](const Problem& p) { return assign_equality(p); }},
      {"greedy_in_order", [](const Problem& p) { return assign_greedy_in_order(p); }},
      {"greedy_by_breadth", [](const Problem& p) { return assign_greedy_by_breadth(p); }},
      {"greedy_by_size_objects", [](const Problem& p) { return assign_greedy_by_size_objects(p); }},
      {"greedy_best", [](const Problem& p) { return assign_greedy_best(p); }},
      {"min_cost_flow", [](const Problem& p) { return assign_min_cost_flow(p); }},
  };
  return all;
}

const AssignFunction& strategy(std::string_view name) {
  for (const Strategy& s : strategies()) {
    if (s.name == name) return s.assign;
  }
  ADD_FAILURE() << "no strategy " << name;
  return strategies()[0].assign;
}

Problem from_records(std::vector<TaskRecord> records) {
  StatusOr<Problem> problem = problem_from_task_records(records);
  EXPECT_TRUE(problem.ok()) << problem.status().to_string();
  return problem.ok() ? *problem : Problem{};
}

// Runs the strategy, checks the assignment stacks into a valid plan through
// the registry too, and returns it.
ObjectAssignment assign_valid(std::string_view name, const Problem& problem) {
  StatusOr<ObjectAssignment> objects = strategy(name)(problem);
  EXPECT_TRUE(objects.ok()) << name << ": " << objects.status().to_string();
  if (!objects.ok()) return {};
  StatusOr<Plan> stacked = plan_from_objects(problem, *objects);
  EXPECT_TRUE(stacked.ok()) << name << ": " << stacked.status().to_string();
  if (stacked.ok()) {
    const ValidationResult v = validate(problem, *stacked);
    EXPECT_TRUE(v.ok()) << name << ": " << v.message;
  }
  StatusOr<Plan> planned = plan_with(name, problem);
  EXPECT_TRUE(planned.ok()) << name << ": " << planned.status().to_string();
  if (planned.ok() && stacked.ok()) {
    EXPECT_EQ(planned->offsets, stacked->offsets) << name;
    EXPECT_EQ(planned->arena, stacked->arena) << name;
  }
  return *objects;
}

void expect_objects(std::string_view name, const Problem& problem, const std::vector<int32_t>& object_of,
                    const std::vector<int64_t>& object_sizes) {
  const ObjectAssignment objects = assign_valid(name, problem);
  EXPECT_EQ(objects.object_of, object_of) << name;
  EXPECT_EQ(objects.object_sizes, object_sizes) << name;
}

std::vector<int64_t> sorted_sizes(ObjectAssignment objects) {
  std::sort(objects.object_sizes.rbegin(), objects.object_sizes.rend());
  return objects.object_sizes;
}

// --- TFLite's chain: sizes 16, 8, 64, 32, 8 on tasks [0,1], [1,2], [2,3],
// [3,4], [4,5] (inclusive), i.e. [0,2), [1,3), [2,4), [3,5), [4,6).
// Naive: objects 16, 8, 64, 32, 8 (128 bytes). Positional maximums: the live
// sets are {16}, {16,8}, {64,8}, {64,32}, {32,8}, {8}, so 64 + 32 = 96.
Problem tflite_object_chain() {
  return from_records({{.size = 16, .first_task = 0, .last_task = 1},
                       {.size = 8, .first_task = 1, .last_task = 2},
                       {.size = 64, .first_task = 2, .last_task = 3},
                       {.size = 32, .first_task = 3, .last_task = 4},
                       {.size = 8, .first_task = 4, .last_task = 5}});
}

TEST(ObjectsPlanners, NaiveGivesEveryChainBufferItsOwnBytes) {
  StatusOr<Plan> plan = plan_with("naive", tflite_object_chain());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->offsets, (std::vector<int64_t>{0, 16, 24, 88, 120}));
  EXPECT_EQ(plan->arena, 128);
  EXPECT_EQ(compute_bounds(tflite_object_chain()).positional_maximums, 96);
}

// Start order. t0: 16 -> new 0. t1: 8 -> new 1. t2: object 0 (16) is free,
// the 64 is not 16 -> new 2. t3: object 1 (8) is free, the 32 -> new 3. t4:
// objects 0 (16), 1 (8) and 2 (64) are free: the last 8 reuses object 1.
// 120 bytes.
TEST(Equality, ReusesOnlyAnObjectOfEqualSizeOnTheChain) {
  expect_objects("equality", tflite_object_chain(), {0, 1, 2, 3, 1}, {16, 8, 64, 32});
  StatusOr<Plan> plan = plan_with("equality", tflite_object_chain());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->offsets, (std::vector<int64_t>{0, 16, 24, 88, 16}));
  EXPECT_EQ(plan->arena, 120);
}

// t0: 16 -> new 0. t1: 8 -> new 1. t2: free {0:16}; nothing >= 64, so the
// largest free (0) grows to 64. t3: free {1:8} grows to 32. t4: free {0:64}
// takes the last 8. Objects 64 + 32 = 96: the bound.
TEST(GreedyInOrder, GrowsTheLargestFreeObjectOnTheChain) {
  expect_objects("greedy_in_order", tflite_object_chain(), {0, 1, 0, 1, 0}, {64, 32});
  StatusOr<Plan> plan = plan_with("greedy_in_order", tflite_object_chain());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->offsets, (std::vector<int64_t>{0, 64, 0, 64, 0}));
  EXPECT_EQ(plan->arena, 96);
}

// Breadths at the start ticks: t0 16, t1 24, t2 72, t3 96, t4 40. Each buffer
// belongs to its widest start tick: 16 -> t1, 8 -> t2, 64 and 32 -> t3, the
// last 8 -> t4. t3: 64 -> new 0, 32 conflicts -> new 1. t2: 8 [1,3) fits
// object 1 (member [3,5)). t4: 8 [4,6) fits object 0 (member [2,4)). t1: 16
// [0,2) fits object 0. Objects 64, 32.
TEST(GreedyByBreadth, PlacesTheWidestTickFirstOnTheChain) {
  expect_objects("greedy_by_breadth", tflite_object_chain(), {0, 1, 0, 1, 0}, {64, 32});
}

// Positional maximums 64, 32: position 0 for the 64, position 1 for the rest.
// 64 -> new 0. Then 16 [0,2) and 8 [4,6) are adjacent to the 64 (distance 0)
// while 8 [1,3) and 32 [3,5) overlap it: the 16 goes first (larger), then the
// 8, both into object 0. Then 32 (larger of the two at infinite distance) ->
// new 1, and 8 [1,3) ends where the 32 starts -> object 1.
TEST(GreedyBySizeObjects, ChainsAdjacentBuffersIntoTheBigObject) {
  expect_objects("greedy_by_size_objects", tflite_object_chain(), {0, 1, 0, 1, 0}, {64, 32});
}

// Both greedy halves give 96; ties keep greedy_by_size_objects.
TEST(GreedyBest, KeepsSizeDistanceOnATie) {
  expect_objects("greedy_best", tflite_object_chain(), {0, 1, 0, 1, 0}, {64, 32});
}

// Chains {16 -> 64 -> 8} cost 16 + 48 + 0 and {8 -> 32} cost 8 + 24: 96, the
// only way to reach the bound. The sweep opens objects for 16 and 8 and
// follows them as the flow says.
TEST(MinCostFlow, FindsTheOptimalChainsOfTfliteChain) {
  expect_objects("min_cost_flow", tflite_object_chain(), {0, 1, 0, 1, 0}, {64, 32});
}

// --- TFLite's complex records, half-open:
//   b0 32 [0,2)  b1 32 [1,5)  b2 8 [2,6)  b3 16 [3,6)  b4 8 [4,6)
//   b5 64 [5,8)  b6 8 [6,9)   b7 8 [7,9)  b8 16 [8,10)
// Live sets by tick: {32} {32,32} {32,8} {32,16,8} {32,16,8,8} {64,16,8,8}
// {64,8} {64,8,8} {16,8,8} {16}: positional maximums 64, 32, 8, 8 = 112.
Problem tflite_complex() {
  return from_records({{.size = 32, .first_task = 0, .last_task = 1},
                       {.size = 32, .first_task = 1, .last_task = 4},
                       {.size = 8, .first_task = 2, .last_task = 5},
                       {.size = 16, .first_task = 3, .last_task = 5},
                       {.size = 8, .first_task = 4, .last_task = 5},
                       {.size = 64, .first_task = 5, .last_task = 7},
                       {.size = 8, .first_task = 6, .last_task = 8},
                       {.size = 8, .first_task = 7, .last_task = 8},
                       {.size = 16, .first_task = 8, .last_task = 9}});
}

TEST(ObjectsPlanners, ComplexRecordsHavePositionalMaximums112) {
  EXPECT_EQ(compute_bounds(tflite_complex()).positional_maximums, 112);
}

// Start order, reuse on equal size only. b0 -> 0, b1 -> 1 (0 busy), b2 8 -> 2,
// b3 16 -> 3, b4 8 -> 4 (only 32s free), b5 64 -> 5. t6: objects 2, 3, 4 free;
// b6 8 takes the lowest-id 8 (2; TFLite takes 4), b7 8 -> 4, b8 16 -> 3.
TEST(Equality, ReusesEqualSizesOnComplexRecords) {
  expect_objects("equality", tflite_complex(), {0, 1, 2, 3, 4, 5, 2, 4, 3}, {32, 32, 8, 16, 8, 64});
}

// b0 -> 0, b1 -> 1, b2 8 takes free 0 (32), b3 -> 2, b4 -> 3, b5 64: free {1:32}
// grows to 64. t6: free {3:8, 2:16, 0:32}: b6 -> 3, b7 -> 2. t8: free {0:32,
// 1:64}: b8 16 -> 0. TFLite's published result.
TEST(GreedyInOrder, MatchesTflitesComplexRecords) {
  expect_objects("greedy_in_order", tflite_complex(), {0, 1, 0, 2, 3, 1, 3, 2, 0}, {32, 64, 16, 8});
}

// Breadths at start ticks 0..8: 32 64 40 56 64 96 72 80 32 -> visit t5, t7,
// t6, t1, t4, t3, t2, t0, t8. Owners: b0, b1 -> t1; b2..b5 -> t5; b6, b7 ->
// t7; b8 -> t8. t5: b5 -> 0 (64), b3 -> 1 (16), b2 -> 2 (8), b4 -> 3 (8), all
// live together. t7: b6 8 [6,9) fits 1, 2 and 3; the 8s win, and of those the
// hole starting latest (after b4 = 3; both start at 6, ties to the later
// member); b7 -> 2. t1: b0 32 fits object 0 (the only one >= 32); b1 32
// [1,5) conflicts everywhere -> new 4. t8: b8 16 -> 1 (16, free). 128 bytes.
// TFLite gives the same sizes with b6 and b7 swapped.
TEST(GreedyByBreadth, MatchesTfliteSizesOnComplexRecords) {
  expect_objects("greedy_by_breadth", tflite_complex(), {0, 4, 2, 1, 3, 0, 3, 2, 1}, {64, 16, 8, 8, 32});
}

// Positions: 64 -> 0; 32 and 16 -> 1; 8 -> 3. Position 0: b5 -> 0. Position 1:
// b1 [1,5) ends where b5 starts (0) and b8 [8,10) starts where it ends (0);
// b1 is larger -> 0, then b8 -> 0; b0 and b3 now conflict -> b0 new 1, b3
// follows it at distance 1. Position 3: b6 [6,9) is adjacent to b3 -> 1; the
// rest conflict with everything: b2 -> new 2, b7 joins it (distance 1), b4 ->
// new 3. 112 bytes: the bound. TFLite's published result.
TEST(GreedyBySizeObjects, MatchesTfliteAndTheBoundOnComplexRecords) {
  expect_objects("greedy_by_size_objects", tflite_complex(), {1, 0, 2, 1, 3, 0, 1, 2, 0}, {64, 32, 8, 8});
}

TEST(GreedyBest, PicksSizeDistanceWhenItIsSmaller) {
  expect_objects("greedy_best", tflite_complex(), {1, 0, 2, 1, 3, 0, 1, 2, 0}, {64, 32, 8, 8});
}

// TFLite's flow reaches 112 (its published chains: {b0,b3,b8} 32, {b1,b5} 64,
// {b2,b7} 8, {b4,b6} 8). The flow cost bounds the real total from above and
// the positional maximums from below, so any optimal flow gives exactly the
// objects 64, 32, 8, 8; which buffers share is up to the solver.
TEST(MinCostFlow, ReachesTheBoundOnComplexRecords) {
  const ObjectAssignment objects = assign_valid("min_cost_flow", tflite_complex());
  EXPECT_EQ(sorted_sizes(objects), (std::vector<int64_t>{64, 32, 8, 8}));
}

// --- A big buffer ends just as a small long one starts, and a second big one
// starts while the small one still lives:
//   b0 100 [0,1)   b1 10 [1,3)   b2 100 [2,3)
// Naive 210; positional maximums 100 + 10 = 110.
Problem early_big_object() {
  return from_records({{.size = 100, .first_task = 0, .last_task = 0},
                       {.size = 10, .first_task = 1, .last_task = 2},
                       {.size = 100, .first_task = 2, .last_task = 2}});
}

// At t1 object 0 (100) is the only free one, so b1 takes it; at t2 b2 finds
// nothing free and opens a second 100. 200 bytes.
TEST(GreedyInOrder, GivesAFreedBigObjectToAnEarlySmallBuffer) {
  expect_objects("greedy_in_order", early_big_object(), {0, 0, 1}, {100, 100});
}

// Everyone else keeps object 0 for b2: equality (sizes differ), breadth (t2 is
// the widest tick: b2 then b1 first, b0 joins b2's object), size/distance (the
// 100s go first, b2 follows b0 at distance 1), and the flow (b0 -> b2 costs 0).
TEST(ObjectsPlanners, KeepTheBigObjectForTheBigBuffer) {
  expect_objects("equality", early_big_object(), {0, 1, 0}, {100, 10});
  expect_objects("greedy_by_breadth", early_big_object(), {0, 1, 0}, {100, 10});
  expect_objects("greedy_by_size_objects", early_big_object(), {0, 1, 0}, {100, 10});
  expect_objects("min_cost_flow", early_big_object(), {0, 1, 0}, {100, 10});
}

// --- A case where breadth beats size/distance:
//   b0 8 [2,5)   b1 16 [4,6)   b2 32 [0,3)   b3 64 [1,2)   b4 8 [2,5)
// Live sets {32} {64,32} {32,8,8} {8,8} {16,8,8} {16}: positional maximums
// 64 + 32 + 8 = 104.
Problem breadth_wins() {
  return from_records({{.size = 8, .first_task = 2, .last_task = 4},
                       {.size = 16, .first_task = 4, .last_task = 5},
                       {.size = 32, .first_task = 0, .last_task = 2},
                       {.size = 64, .first_task = 1, .last_task = 1},
                       {.size = 8, .first_task = 2, .last_task = 4}});
}

// Breadths: t0 32, t1 96, t2 48, t4 32. t1: b3 -> 0, b2 -> 1. t2: b0 8 fits
// only object 0 (after b3) -> 0; b4 -> new 2. t4: b1 16 fits only object 1
// (after b2) -> 1. 64 + 32 + 8 = 104: the bound.
TEST(GreedyByBreadth, ReachesTheBoundWhereSizeDistanceDoesNot) {
  expect_objects("greedy_by_breadth", breadth_wins(), {0, 1, 1, 0, 2}, {64, 32, 8});
}

// Positions: 64 -> 0, 32 and 16 -> 1, 8 -> 2. b3 -> 0. Position 1: b1 [4,6)
// is at distance 2 after b3, b2 overlaps it: b1 -> 0, b2 -> new 1. Position
// 2: both 8s overlap b1 (object 0) and b2 (object 1) and each other: new 2
// and 3. 112 bytes.
TEST(GreedyBySizeObjects, SpendsTheBigObjectOnANearbyMidBuffer) {
  expect_objects("greedy_by_size_objects", breadth_wins(), {2, 0, 1, 0, 3}, {64, 32, 8, 8});
}

TEST(GreedyBest, PicksBreadthWhenItIsSmaller) {
  expect_objects("greedy_best", breadth_wins(), {0, 1, 1, 0, 2}, {64, 32, 8});
}

// Start order b2, b3, b0, b4, b1. Equality: 32 -> 0, 64 -> 1, the 8s -> 2, 3,
// the 16 finds no 16 -> 4: 128. In order: 32 -> 0, 64 -> 1; t2: b0 8 takes
// free 1 (64), b4 -> new 2; t4: b1 16 takes free 0 (32): 104. The flow: chains
// {b3, b0} 64, {b2, b1} 32, {b4} 8 cost 104, the bound.
TEST(ObjectsPlanners, StartOrderStrategiesOnBreadthCase) {
  expect_objects("equality", breadth_wins(), {2, 4, 0, 1, 3}, {32, 64, 8, 8, 16});
  expect_objects("greedy_in_order", breadth_wins(), {1, 0, 0, 1, 2}, {32, 64, 8});
  EXPECT_EQ(sorted_sizes(assign_valid("min_cost_flow", breadth_wins())), (std::vector<int64_t>{64, 32, 8}));
}

// --- Properties on every strategy.

TEST(ObjectsPlanners, AreRegisteredInTheObjectsForm) {
  for (const Strategy& s : strategies()) {
    const PlannerInfo* info = find_planner(s.name);
    ASSERT_NE(info, nullptr) << s.name;
    EXPECT_EQ(info->form, PlanForm::kObjects) << s.name;
    EXPECT_TRUE(info->fast) << s.name;
  }
}

TEST(ObjectsPlanners, GiveNoObjectsForAnEmptyProblem) {
  for (const Strategy& s : strategies()) {
    const ObjectAssignment objects = assign_valid(s.name, Problem{});
    EXPECT_TRUE(objects.object_of.empty()) << s.name;
    EXPECT_TRUE(objects.object_sizes.empty()) << s.name;
  }
}

TEST(ObjectsPlanners, RejectAnInvalidProblem) {
  Problem bad;
  bad.buffers.push_back(Buffer{.id = "x", .lower = 3, .upper = 3, .size = 8});
  for (const Strategy& s : strategies()) {
    EXPECT_EQ(s.assign(bad).status().code(), StatusCode::kInvalidArgument) << s.name;
  }
}

// Fixed buffers belong to no object; the objects are stacked above them.
TEST(ObjectsPlanners, LeaveFixedBuffersOutOfObjects) {
  Problem problem = tflite_object_chain();
  problem.buffers.push_back(Buffer{.id = "fixed", .lower = 0, .upper = 6, .size = 40, .offset = 0});
  for (const Strategy& s : strategies()) {
    const ObjectAssignment objects = assign_valid(s.name, problem);
    ASSERT_EQ(objects.object_of.size(), problem.size()) << s.name;
    EXPECT_EQ(objects.object_of.back(), -1) << s.name;
    StatusOr<Plan> plan = plan_from_objects(problem, objects);
    ASSERT_TRUE(plan.ok());
    for (size_t i = 0; i + 1 < problem.size(); ++i) EXPECT_GE(plan->offsets[i], 40) << s.name;
  }
}

TEST(ObjectsPlanners, StackAlignedObjectsIntoValidPlans) {
  Problem problem = tflite_complex();
  problem.alignment = 32;
  problem.buffers[2].alignment = 64;
  for (const Strategy& s : strategies()) {
    const ObjectAssignment objects = assign_valid(s.name, problem);
    StatusOr<Plan> plan = plan_from_objects(problem, objects);
    ASSERT_TRUE(plan.ok());
    EXPECT_GE(plan->arena, total_object_size(objects)) << s.name;
  }
}

// Distances between lifetimes near both ends of int64_t do not overflow: the
// three buffers are pairwise disjoint in time, so one object holds them all.
TEST(ObjectsPlanners, HandleTicksAtTheEndsOfTheRange) {
  Problem problem;
  problem.buffers = {Buffer{.id = "first", .lower = INT64_MIN, .upper = INT64_MIN + 1, .size = 8},
                     Buffer{.id = "last", .lower = INT64_MAX - 1, .upper = INT64_MAX, .size = 8},
                     Buffer{.id = "middle", .lower = 0, .upper = 1, .size = 8}};
  for (const Strategy& s : strategies()) {
    const ObjectAssignment objects = assign_valid(s.name, problem);
    EXPECT_EQ(objects.object_of, (std::vector<int32_t>{0, 0, 0})) << s.name;
    EXPECT_EQ(objects.object_sizes, (std::vector<int64_t>{8})) << s.name;
  }
}

TEST(MinCostFlow, StopsWhenCancelled) {
  std::atomic<bool> cancel{true};
  PlanOptions options;
  options.cancel = &cancel;
  EXPECT_EQ(assign_min_cost_flow(tflite_object_chain(), options).status().code(), StatusCode::kCancelled);
}

// Every strategy, on seeded random problems of every shape: a valid plan whose
// objects total at least the positional maximums (which no assignment beats)
// and at most the naive sum.
TEST(ObjectsPlanners, RespectThePositionalMaximumsOnRandomProblems) {
  const ProblemShape shapes[] = {ProblemShape::kDnnLike, ProblemShape::kRandomIntervals, ProblemShape::kHeavyTailed,
                                 ProblemShape::kNested, ProblemShape::kEqualSizes};
  for (ProblemShape shape : shapes) {
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      const Problem problem = generate_problem({.shape = shape, .buffers = 5 + 7 * seed, .seed = seed, .max_size = 64});
      const Bounds bounds = compute_bounds(problem);
      for (const Strategy& s : strategies()) {
        const ObjectAssignment objects = assign_valid(s.name, problem);
        const int64_t total = total_object_size(objects);
        EXPECT_GE(total, bounds.positional_maximums) << s.name << " seed " << seed;
        EXPECT_LE(total, bounds.total_size) << s.name << " seed " << seed;
        EXPECT_GE(total, bounds.load) << s.name << " seed " << seed;
      }
    }
  }
}

// greedy_best is never worse than either of its halves.
TEST(GreedyBest, IsNoWorseThanEitherHalfOnRandomProblems) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const Problem problem = generate_problem({.shape = ProblemShape::kDnnLike, .buffers = 40, .seed = seed});
    const int64_t best = total_object_size(assign_valid("greedy_best", problem));
    EXPECT_LE(best, total_object_size(assign_valid("greedy_by_breadth", problem))) << seed;
    EXPECT_LE(best, total_object_size(assign_valid("greedy_by_size_objects", problem))) << seed;
  }
}

// The shared instances: valid and above the bound (small ones, to stay fast).
TEST(ObjectsPlanners, RespectThePositionalMaximumsOnSharedInstances) {
  const std::string data = MEMPLAN_SHARED_DATA_DIR;
  for (const char* file : {"/dsa/idealloc/iopddl/G_1.csv", "/dsa/idealloc/somas_tensors/resnet50.csv",
                           "/dsa/minimalloc/challenging/A.1048576.csv"}) {
    StatusOr<Problem> problem = read_problem_csv(data + file);
    ASSERT_TRUE(problem.ok()) << problem.status().to_string();
    const int64_t bound = compute_bounds(*problem).positional_maximums;
    for (const Strategy& s : strategies()) {
      EXPECT_GE(total_object_size(assign_valid(s.name, *problem)), bound) << s.name << " " << file;
    }
  }
}

}  // namespace
}  // namespace memplan
