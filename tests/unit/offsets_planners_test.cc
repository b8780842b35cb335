// offsets_planners_test.cc — the gap-placement planners (TFLite, XLA, Gergov),
// the shared placement loop and the occupancy index behind it. Every plan is
// checked by the validator; the small cases are worked out by hand in the
// comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/generate.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "planners/occupancy_index.h"
#include "planners/offset_placement.h"

namespace memplan {
namespace {

constexpr const char* kOffsetsPlanners[] = {"greedy_by_size", "greedy_by_size_first_fit", "best_fit_spatial",
                                            "best_fit_temporal", "gergov"};

Plan plan_valid(std::string_view planner, const Problem& problem) {
  StatusOr<Plan> plan = plan_with(planner, problem);
  EXPECT_TRUE(plan.ok()) << planner << ": " << plan.status().to_string();
  if (!plan.ok()) return {};
  const ValidationResult v = validate(problem, *plan);
  EXPECT_TRUE(v.ok()) << planner << ": " << v.message;
  return *plan;
}

Buffer fixed(std::string id, int64_t lower, int64_t upper, int64_t size, int64_t offset) {
  return Buffer{.id = std::move(id), .lower = lower, .upper = upper, .size = size, .offset = offset};
}

// TFLite's chain example: tensor sizes 16, 8, 64, 32, 8 used by tasks
// [0,1], [1,2], [2,3], [3,4], [4,5] (inclusive), i.e. half-open lifetimes
// [0,2), [1,3), [2,4), [3,5), [4,6). Load: 64 + 32 = 96 at tick 3.
Problem tflite_chain() {
  const TaskRecord records[] = {{.size = 16, .first_task = 0, .last_task = 1},
                                {.size = 8, .first_task = 1, .last_task = 2},
                                {.size = 64, .first_task = 2, .last_task = 3},
                                {.size = 32, .first_task = 3, .last_task = 4},
                                {.size = 8, .first_task = 4, .last_task = 5}};
  StatusOr<Problem> problem = problem_from_task_records(records);
  EXPECT_TRUE(problem.ok());
  return *problem;
}

// By size: 64, 32, 16, then the two 8s (equal lifetimes, so by index).
//   64 [2,4) -> 0, nothing placed yet.
//   32 [3,5) meets 64: no gap below it -> on top, 64.
//   16 [0,2) meets nothing (64 starts at 2) -> 0.
//   8  [1,3) meets 16 at [0,16) and 64 at [0,64): no gap -> on top, 64.
//   8  [4,6) meets only 32 at [64,96): the gap [0,64) fits -> 0.
// Arena 96 = load: optimal.
TEST(GreedyBySize, PlacesTfliteChainExampleAtLoad) {
  const Problem problem = tflite_chain();
  const Plan plan = plan_valid("greedy_by_size", problem);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 64, 0, 64, 0}));
  EXPECT_EQ(plan.arena, 96);
}

// Every gap in the chain is the only one that fits, so first fit agrees.
TEST(GreedyBySizeFirstFit, PlacesTfliteChainExampleAtLoad) {
  const Problem problem = tflite_chain();
  const Plan plan = plan_valid("greedy_by_size_first_fit", problem);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 64, 0, 64, 0}));
  EXPECT_EQ(plan.arena, 96);
}

// Peeling the chain (loads per tick 16 24 72 96 40 8):
//   peak 96 at tick 3: 32 [3,5) reaches furthest;
//   peak 72 at tick 2: 64 [2,4);
//   peak 24 at tick 1: 8 [1,3) reaches past 16 [0,2);
//   peak 16 at tick 0: 16 [0,2);   peak 8 at ticks 4-5: 8 [4,6).
// First fit in that order: 32 -> 0; 64 meets 32 -> 32; 8 [1,3) meets only 64
// at [32,96) -> 0; 16 meets 8 [1,3) at [0,8) -> 8; 8 [4,6) meets 32 -> 32.
TEST(Gergov, PlacesTfliteChainExampleAtLoad) {
  const Problem problem = tflite_chain();
  const Plan plan = plan_valid("gergov", problem);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{8, 0, 32, 0, 32}));
  EXPECT_EQ(plan.arena, 96);
}

// Obstacles at [40,50) and [60,100) leave gaps [0,40) and [50,60) during
// [0,2). A 10-byte buffer: best fit takes the tight gap, first fit the low one.
TEST(GreedyBySize, BestFitTakesTheTightestGapWhereFirstFitTakesTheLowest) {
  Problem problem{.buffers = {fixed("f1", 0, 2, 10, 40), fixed("f2", 0, 2, 40, 60),
                              Buffer{.id = "x", .lower = 0, .upper = 2, .size = 10}}};
  EXPECT_EQ(plan_valid("greedy_by_size", problem).offsets[2], 50);
  EXPECT_EQ(plan_valid("greedy_by_size_first_fit", problem).offsets[2], 0);
  EXPECT_EQ(plan_valid("greedy_by_size", problem).arena, 100);
}

// Obstacles [0,10) and [60,70) during [0,1); `a` (80 bytes, alone in time)
// goes first and sets the arena to 80. For `x` (10 bytes, [0,1)) the gap
// between the obstacles is 50 bytes; the room between the top obstacle and the
// arena, [70,80), is 10. TFLite looks only between the obstacles (-> 10); XLA
// also counts the room under the arena and it is tighter (-> 70).
TEST(BestFitHeap, CountsTheRoomUnderTheArenaAsAGap) {
  Problem problem{.buffers = {fixed("f1", 0, 1, 10, 0), fixed("f2", 0, 1, 10, 60),
                              Buffer{.id = "a", .lower = 5, .upper = 6, .size = 80},
                              Buffer{.id = "x", .lower = 0, .upper = 1, .size = 10}}};
  EXPECT_EQ(plan_valid("greedy_by_size", problem).offsets[3], 10);
  EXPECT_EQ(plan_valid("best_fit_spatial", problem).offsets[3], 70);
  EXPECT_EQ(plan_valid("best_fit_temporal", problem).offsets[3], 70);
  EXPECT_EQ(plan_valid("best_fit_spatial", problem).arena, 80);
}

// Temporal order puts the long-lived buffer first even though it is smaller:
// `long` [0,10) 10 bytes -> 0; then `big` [0,2) 100 bytes meets it -> 10.
// Spatial order puts `big` first -> 0, then `long` -> 100.
TEST(BestFitHeap, TemporalOrderPlacesLongestLifetimeFirst) {
  Problem problem{.buffers = {Buffer{.id = "big", .lower = 0, .upper = 2, .size = 100},
                              Buffer{.id = "long", .lower = 0, .upper = 10, .size = 10}}};
  EXPECT_EQ(plan_valid("best_fit_temporal", problem).offsets, (std::vector<int64_t>{10, 0}));
  EXPECT_EQ(plan_valid("best_fit_spatial", problem).offsets, (std::vector<int64_t>{0, 100}));
}

// By size (ties: lifetime, index) `a` goes first and takes [0,10); `b`
// (64-aligned) meets it and cannot start at 10 -> 64. Gergov peels `b` first
// (at the peak tick 1 it lives longer): `b` -> 0, then `a` fits at 10.
TEST(OffsetsPlanners, RespectBufferAlignment) {
  Problem problem{.buffers = {Buffer{.id = "a", .lower = 0, .upper = 2, .size = 10},
                              Buffer{.id = "b", .lower = 1, .upper = 3, .size = 10, .alignment = 64}}};
  for (const char* planner : {"greedy_by_size", "greedy_by_size_first_fit", "best_fit_spatial", "best_fit_temporal"}) {
    const Plan plan = plan_valid(planner, problem);
    EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 64})) << planner;
    EXPECT_EQ(plan.arena, 74) << planner;
  }
  const Plan plan = plan_valid("gergov", problem);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{10, 0}));
  EXPECT_EQ(plan.arena, 20);
}

// Gap [10,100) between obstacles. A 32-aligned buffer of 50 bytes starts at 32
// (32 + 50 <= 100); one of 70 bytes does not fit there (32 + 70 > 100) and
// goes above the obstacles, at 110 rounded up to 128.
TEST(OffsetsPlanners, FitGapsAtTheirFirstAlignedOffset) {
  for (const auto& [size, expected] : {std::pair<int64_t, int64_t>{50, 32}, {70, 128}}) {
    Problem problem{.buffers = {fixed("f1", 0, 1, 10, 0), fixed("f2", 0, 1, 10, 100),
                                Buffer{.id = "x", .lower = 0, .upper = 1, .size = size, .alignment = 32}}};
    for (const char* planner : kOffsetsPlanners) {
      EXPECT_EQ(plan_valid(planner, problem).offsets[2], expected) << planner << " size " << size;
    }
  }
}

TEST(OffsetsPlanners, RespectTheProblemDefaultAlignment) {
  GenerateOptions options{.shape = ProblemShape::kRandomIntervals, .buffers = 300, .seed = 7, .max_size = 1000};
  Problem problem = generate_problem(options);
  problem.alignment = 16;
  for (const char* planner : kOffsetsPlanners) {
    const Plan plan = plan_valid(planner, problem);
    for (int64_t offset : plan.offsets) EXPECT_EQ(offset % 16, 0) << planner;
  }
}

// A fixed 100-byte buffer at [0,100) during [0,10) and one at [150,200)
// during [5,6): everything live with them must go around them.
TEST(OffsetsPlanners, KeepFixedOffsetsAndPlaceAroundThem) {
  Problem problem{.buffers = {fixed("pinned", 0, 10, 100, 0), Buffer{.id = "a", .lower = 2, .upper = 7, .size = 40},
                              fixed("pinned2", 5, 6, 50, 150), Buffer{.id = "b", .lower = 4, .upper = 8, .size = 60},
                              Buffer{.id = "c", .lower = 10, .upper = 12, .size = 500}}};
  for (const char* planner : kOffsetsPlanners) {
    const Plan plan = plan_valid(planner, problem);
    EXPECT_EQ(plan.offsets[0], 0) << planner;
    EXPECT_EQ(plan.offsets[2], 150) << planner;
    EXPECT_EQ(plan.offsets[4], 0) << planner;  // after the pinned buffers died
  }
}

TEST(OffsetsPlanners, KeepFixedOffsetsOnGeneratedProblems) {
  for (ProblemShape shape : {ProblemShape::kDnnLike, ProblemShape::kRandomIntervals, ProblemShape::kHeavyTailed,
                             ProblemShape::kNested, ProblemShape::kEqualSizes}) {
    GenerateOptions options{.shape = shape,
                            .buffers = 400,
                            .seed = 11,
                            .max_size = 1 << 16,
                            .max_alignment = 64,
                            .fixed_offset_probability = 0.1};
    const Problem problem = generate_problem(options);
    for (const char* planner : kOffsetsPlanners) {
      SCOPED_TRACE(std::string(planner) + " on " + std::string(problem_shape_name(shape)));
      plan_valid(planner, problem);
    }
  }
}

TEST(OffsetsPlanners, PutZeroSizeBuffersAtOffsetZero) {
  Problem problem{.buffers = {Buffer{.id = "a", .lower = 0, .upper = 4, .size = 32},
                              Buffer{.id = "empty", .lower = 1, .upper = 3, .size = 0},
                              Buffer{.id = "b", .lower = 2, .upper = 5, .size = 16}}};
  for (const char* planner : kOffsetsPlanners) {
    const Plan plan = plan_valid(planner, problem);
    EXPECT_EQ(plan.offsets[1], 0) << planner;
    EXPECT_EQ(plan.arena, 48) << planner;
  }
}

TEST(OffsetsPlanners, PlanAnEmptyProblemWithAnEmptyArena) {
  for (const char* planner : kOffsetsPlanners) {
    EXPECT_EQ(plan_valid(planner, Problem{}).arena, 0) << planner;
  }
}

// Nested lifetimes where every buffer meets every other: any valid plan
// stacks them, so every planner must reach the load exactly.
TEST(OffsetsPlanners, ReachTheLoadWhenAllBuffersMeet) {
  Problem problem;
  for (int i = 0; i < 20; ++i) {
    problem.buffers.push_back(Buffer{.id = std::to_string(i), .lower = i, .upper = 100 - i, .size = 8 + 24 * (i % 5)});
  }
  for (const char* planner : kOffsetsPlanners) {
    EXPECT_EQ(plan_valid(planner, problem).arena, load(problem)) << planner;
  }
}

// ---- the shared placement loop ------------------------------------------

TEST(PlaceInOrder, RejectsAnOrderThatMissesOrRepeatsABuffer) {
  const Problem problem = tflite_chain();
  const size_t missing[] = {0, 1, 2, 3};
  const size_t repeated[] = {0, 1, 2, 3, 3, 4};
  const size_t out_of_range[] = {0, 1, 2, 3, 4, 5};
  EXPECT_EQ(place_in_order(problem, missing, FitPolicy::kBestFit).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(place_in_order(problem, repeated, FitPolicy::kBestFit).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(place_in_order(problem, out_of_range, FitPolicy::kBestFit).status().code(), StatusCode::kInvalidArgument);
}

TEST(PlaceInOrder, AcceptsAnOrderThatListsFixedBuffersToo) {
  Problem problem{.buffers = {fixed("f", 0, 2, 10, 0), Buffer{.id = "x", .lower = 0, .upper = 2, .size = 5}}};
  const size_t with_fixed[] = {1, 0};
  const size_t without_fixed[] = {1};
  StatusOr<Plan> a = place_in_order(problem, with_fixed, FitPolicy::kFirstFit);
  StatusOr<Plan> b = place_in_order(problem, without_fixed, FitPolicy::kFirstFit);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->offsets, (std::vector<int64_t>{0, 10}));
  EXPECT_EQ(a->offsets, b->offsets);
}

TEST(PlaceInOrder, StopsWhenCancelled) {
  const Problem problem = generate_problem({.shape = ProblemShape::kDnnLike, .buffers = 5000, .seed = 3});
  std::atomic<bool> cancel{true};
  PlanOptions options;
  options.cancel = &cancel;
  const std::vector<size_t> order = order_by_decreasing_size(problem);
  EXPECT_EQ(place_in_order(problem, order, FitPolicy::kBestFit, options).status().code(), StatusCode::kCancelled);
  EXPECT_EQ(plan_with("gergov", problem, options).status().code(), StatusCode::kCancelled);
}

TEST(ChooseOffset, GoesAboveEverythingWhenNoGapFits) {
  const ByteRange taken[] = {{0, 10}, {12, 20}, {20, 30}};
  EXPECT_EQ(choose_offset(taken, 5, 1, FitPolicy::kBestFit, 100), 30);
  EXPECT_EQ(choose_offset(taken, 2, 1, FitPolicy::kBestFit, 100), 10);
  // Aligned to 4, the gap [10,12) starts at 12: no room left, so above all.
  EXPECT_EQ(choose_offset(taken, 2, 4, FitPolicy::kBestFit, 100), 32);
  EXPECT_EQ(choose_offset({}, 7, 1, FitPolicy::kFirstFit, 0), 0);
}

// ---- the occupancy index against brute force -----------------------------

// Deterministic pseudo-random numbers for the cross-checks (splitmix64).
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
};

Problem random_problem(Rng& rng, int n, int64_t horizon) {
  Problem problem;
  for (int i = 0; i < n; ++i) {
    const int64_t lower = rng.below(horizon);
    const int64_t upper = lower + 1 + rng.below(rng.below(4) == 0 ? horizon : 8);
    problem.buffers.push_back(
        Buffer{.id = std::to_string(i), .lower = lower, .upper = upper, .size = 1 + rng.below(64)});
  }
  return problem;
}

std::vector<ByteRange> merged(std::vector<ByteRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  std::vector<ByteRange> out;
  for (const ByteRange& r : ranges) {
    if (!out.empty() && r.begin <= out.back().end)
      out.back().end = std::max(out.back().end, r.end);
    else
      out.push_back(r);
  }
  return out;
}

TEST(OccupancyIndex, ReturnsTheUnionOfRangesTakenDuringALifetime) {
  Rng rng{42};
  for (int round = 0; round < 20; ++round) {
    const Problem problem = random_problem(rng, 200, 60);
    const TimeSlots slots(problem);
    OccupancyIndex index(slots.size());
    std::vector<ByteRange> placed(problem.size());
    std::vector<ByteRange> got;
    for (size_t i = 0; i < problem.size(); ++i) {
      const int64_t begin = rng.below(500);
      placed[i] = {begin, begin + problem.buffers[i].size};
      index.occupy(slots.of(i), placed[i]);
      // Query the lifetime of a random buffer after every insertion.
      const size_t q = static_cast<size_t>(rng.below(static_cast<int64_t>(problem.size())));
      std::vector<ByteRange> expected;
      for (size_t j = 0; j <= i; ++j) {
        if (problem.buffers[j].overlaps_in_time(problem.buffers[q])) expected.push_back(placed[j]);
      }
      expected = merged(expected);
      index.taken_during(slots.of(q), &got);
      ASSERT_EQ(got.size(), expected.size()) << "round " << round << " after " << i;
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(got[k].begin, expected[k].begin);
        EXPECT_EQ(got[k].end, expected[k].end);
      }
    }
  }
}

// The placement loop must give exactly the plan of the quadratic algorithm it
// replaces (scan every placed buffer, keep those that overlap in time).
TEST(PlaceInOrder, MatchesTheQuadraticScanForEveryPolicy) {
  Rng rng{7};
  for (int round = 0; round < 10; ++round) {
    Problem problem = random_problem(rng, 300, 80);
    for (Buffer& b : problem.buffers) b.alignment = int64_t{1} << rng.below(4);
    const std::vector<size_t> order = order_by_decreasing_size(problem);
    for (FitPolicy policy : {FitPolicy::kFirstFit, FitPolicy::kBestFit, FitPolicy::kBestFitInArena}) {
      std::vector<int64_t> expected(problem.size(), 0);
      std::vector<size_t> done;
      int64_t arena = 0;
      for (size_t i : order) {
        std::vector<ByteRange> taken;
        for (size_t j : done) {
          if (problem.buffers[j].overlaps_in_time(problem.buffers[i])) {
            taken.push_back({expected[j], expected[j] + problem.buffers[j].size});
          }
        }
        std::sort(taken.begin(), taken.end(), [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
        expected[i] = choose_offset(taken, problem.buffers[i].size, problem.alignment_of(i), policy, arena);
        arena = std::max(arena, expected[i] + problem.buffers[i].size);
        done.push_back(i);
      }
      StatusOr<Plan> plan = place_in_order(problem, order, policy);
      ASSERT_TRUE(plan.ok());
      EXPECT_EQ(plan->offsets, expected) << "round " << round << " policy " << static_cast<int>(policy);
      EXPECT_TRUE(validate(problem, *plan).ok());
    }
  }
}

// RepeatedPlacement (the portfolio's improvement phase) must give exactly
// place_in_order's plan for every order, whatever prefix it shares with the
// order placed before: random problems with alignments, zero-size and
// fixed-offset buffers, orders perturbed as the portfolio does (a buffer moved
// forward, two swapped), on both of its paths (the scan, and the occupancy
// index above kScanMaxBuffers).
TEST(RepeatedPlacement, MatchesPlaceInOrderAfterEveryPerturbation) {
  Rng rng{11};
  for (int round = 0; round < 12; ++round) {
    const bool large = round >= 10;
    const int n =
        large ? static_cast<int>(RepeatedPlacement::kScanMaxBuffers) + 200 : 40 + static_cast<int>(rng.below(260));
    Problem problem = random_problem(rng, n, large ? 400 : 20 + rng.below(100));
    for (Buffer& b : problem.buffers) {
      b.alignment = int64_t{1} << rng.below(4);
      if (rng.below(20) == 0)
        b.size = 0;
      else if (rng.below(25) == 0)
        b.offset = 64 * rng.below(8);  // may overlap others: only placement is checked
    }
    for (FitPolicy policy : {FitPolicy::kFirstFit, FitPolicy::kBestFit, FitPolicy::kBestFitInArena}) {
      RepeatedPlacement placement(problem, policy);
      std::vector<size_t> base_order = order_by_decreasing_size(problem);
      StatusOr<Plan> base = place_in_order(problem, base_order, policy);
      ASSERT_TRUE(base.ok());
      for (int trial = 0; trial < (large ? 5 : 40); ++trial) {
        std::vector<size_t> order = base_order;
        const size_t k = static_cast<size_t>(rng.below(static_cast<int64_t>(order.size())));
        const size_t j = static_cast<size_t>(rng.below(static_cast<int64_t>(order.size())));
        if (rng.below(2) == 0) {
          std::rotate(order.begin() + static_cast<std::ptrdiff_t>(std::min(k, j)),
                      order.begin() + static_cast<std::ptrdiff_t>(std::max(k, j)),
                      order.begin() + static_cast<std::ptrdiff_t>(std::max(k, j)) + 1);
        } else {
          std::swap(order[k], order[j]);
        }
        StatusOr<Plan> expected = place_in_order(problem, order, policy);
        StatusOr<Plan> got = placement.place(order, base_order, *base);
        ASSERT_TRUE(expected.ok());
        ASSERT_TRUE(got.ok()) << got.status().to_string();
        ASSERT_EQ(got->offsets, expected->offsets) << "round " << round << " trial " << trial;
        EXPECT_EQ(got->arena, expected->arena);
        // Walk on from the new order half of the time, as the portfolio does
        // when a trial is no worse.
        if (rng.below(2) == 0) {
          base_order = order;
          base = std::move(got);
        }
      }
      // A bad order is rejected as place_in_order rejects it.
      std::vector<size_t> repeated = base_order;
      repeated.push_back(problem.size());
      EXPECT_EQ(placement.place(repeated, base_order, *base).status().code(), StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace memplan
