// validate_test.cc — the plan oracle: one test per Violation it reports
// (Invalidates<Reason>), plus the plans it must accept.
#include "memplan/validate.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "memplan/plan.h"
#include "memplan/problem.h"

namespace memplan {
namespace {

// a [0,2) 8 bytes, b [1,3) 8 bytes, c [2,4) 8 bytes: a and b conflict, b and
// c conflict, a and c may share bytes.
Problem three_in_a_row() {
  return Problem{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8},
                             {.id = "b", .lower = 1, .upper = 3, .size = 8},
                             {.id = "c", .lower = 2, .upper = 4, .size = 8}}};
}

TEST(Validate, AcceptsAValidPlan) {
  const Problem p = three_in_a_row();
  const ValidationResult r = validate(p, make_plan(p, {0, 8, 0}));
  EXPECT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.violation, Violation::kNone);
  EXPECT_TRUE(r.message.empty());
}

TEST(Validate, AcceptsTheEmptyPlanOfAnEmptyProblem) { EXPECT_TRUE(validate(Problem{}, Plan{}).ok()); }

TEST(Validate, AcceptsTouchingLifetimesSharingBytes) {
  // [0,2) ends as [2,4) starts: never live together, so the same bytes serve both.
  const Problem p{.buffers = {{.id = "early", .lower = 0, .upper = 2, .size = 16},
                              {.id = "late", .lower = 2, .upper = 4, .size = 16}}};
  const ValidationResult r = validate(p, make_plan(p, {0, 0}));
  EXPECT_TRUE(r.ok()) << r.message;
}

TEST(Validate, AcceptsAdjacentByteRanges) {
  // [0,8) and [8,16) touch but do not intersect.
  const Problem p{
      .buffers = {{.id = "x", .lower = 0, .upper = 4, .size = 8}, {.id = "y", .lower = 0, .upper = 4, .size = 8}}};
  EXPECT_TRUE(validate(p, make_plan(p, {0, 8})).ok());
}

TEST(Validate, AcceptsZeroSizeBuffersAtTheEdgesOfLiveBuffers) {
  const Problem p{.buffers = {{.id = "big", .lower = 0, .upper = 4, .size = 16},
                              {.id = "empty_at_start", .lower = 1, .upper = 3, .size = 0},
                              {.id = "empty_at_end", .lower = 0, .upper = 4, .size = 0}}};
  const ValidationResult r = validate(p, make_plan(p, {0, 0, 16}));
  EXPECT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(make_plan(p, {0, 0, 16}).arena, 16);
}

TEST(Validate, AcceptsZeroSizeBufferInsideALiveBuffer) {
  // An empty byte range [8, 8) intersects nothing, wherever it lies.
  const Problem p{.buffers = {{.id = "big", .lower = 0, .upper = 4, .size = 16},
                              {.id = "empty", .lower = 1, .upper = 3, .size = 0}}};
  const ValidationResult r = validate(p, make_plan(p, {0, 8}));
  EXPECT_TRUE(r.ok()) << r.message;
}

TEST(Validate, AcceptsAPlanExactlyAtCapacity) {
  Problem p = three_in_a_row();
  p.capacity = 16;
  const ValidationResult r = validate(p, make_plan(p, {0, 8, 0}));
  EXPECT_TRUE(r.ok()) << r.message;
}

TEST(Validate, AcceptsAFixedBufferAtItsOffset) {
  Problem p = three_in_a_row();
  p.buffers[1].offset = 8;
  EXPECT_TRUE(validate(p, make_plan(p, {0, 8, 0})).ok());
}

TEST(Validate, InvalidatesWrongBufferCount) {
  const Problem p = three_in_a_row();
  const ValidationResult r = validate(p, Plan{.offsets = {0, 8}, .arena = 16});
  EXPECT_EQ(r.violation, Violation::kWrongBufferCount);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("2 offsets for 3 buffers"), std::string::npos) << r.message;
}

TEST(Validate, InvalidatesNegativeOffset) {
  const Problem p = three_in_a_row();
  const ValidationResult r = validate(p, make_plan(p, {0, 8, -8}));
  EXPECT_EQ(r.violation, Violation::kNegativeOffset);
  EXPECT_EQ(r.first, 2u);
  EXPECT_NE(r.message.find("'c'"), std::string::npos) << r.message;
}

TEST(Validate, InvalidatesMisalignment) {
  Problem p = three_in_a_row();
  p.buffers[1].alignment = 16;
  const ValidationResult r = validate(p, make_plan(p, {0, 8, 0}));
  EXPECT_EQ(r.violation, Violation::kMisaligned);
  EXPECT_EQ(r.first, 1u);
  EXPECT_NE(r.message.find("'b'"), std::string::npos) << r.message;
}

TEST(Validate, InvalidatesMisalignmentUnderTheProblemsDefaultAlignment) {
  Problem p = three_in_a_row();
  p.alignment = 16;  // no buffer asks for it, the problem does
  const ValidationResult r = validate(p, make_plan(p, {0, 8, 0}));
  EXPECT_EQ(r.violation, Violation::kMisaligned);
  EXPECT_EQ(r.first, 1u);
  EXPECT_TRUE(validate(p, make_plan(p, {0, 16, 0})).ok());
}

TEST(Validate, InvalidatesFixedOffsetMoved) {
  Problem p = three_in_a_row();
  p.buffers[2].offset = 16;
  const ValidationResult r = validate(p, make_plan(p, {0, 8, 0}));
  EXPECT_EQ(r.violation, Violation::kFixedOffsetMoved);
  EXPECT_EQ(r.first, 2u);
  EXPECT_NE(r.message.find("16"), std::string::npos) << r.message;
}

TEST(Validate, InvalidatesExceedsCapacity) {
  Problem p = three_in_a_row();
  p.capacity = 15;
  const ValidationResult r = validate(p, make_plan(p, {0, 8, 0}));
  EXPECT_EQ(r.violation, Violation::kExceedsCapacity);
  EXPECT_EQ(r.first, 1u);
  EXPECT_NE(r.message.find("15"), std::string::npos) << r.message;
}

TEST(Validate, InvalidatesExceedsCapacityForOffsetsBeyondTheAddressableRange) {
  const Problem p{.buffers = {{.id = "far", .lower = 0, .upper = 1, .size = 16}}};
  const int64_t beyond = (int64_t{1} << 62) - 8;  // offset + size would pass 2^62
  const ValidationResult r = validate(p, Plan{.offsets = {beyond}, .arena = beyond + 16});
  EXPECT_EQ(r.violation, Violation::kExceedsCapacity);
}

TEST(Validate, InvalidatesOverlap) {
  const Problem p = three_in_a_row();
  const ValidationResult r = validate(p, make_plan(p, {0, 4, 12}));
  EXPECT_EQ(r.violation, Violation::kOverlap);
  // a [0,2) at [0,8) and b [1,3) at [4,12) are both live at tick 1.
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.second, 1u);
  EXPECT_EQ(r.tick, 1);
  EXPECT_NE(r.message.find("'a'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("'b'"), std::string::npos) << r.message;
}

TEST(Validate, OverlapReportsAPairAndATickAtWhichBothAreLive) {
  // Listed out of time order so that index order and start order differ:
  // late [5,9) at [0,10) and early [2,6) at [6,16) are both live at tick 5.
  const Problem p{.buffers = {{.id = "late", .lower = 5, .upper = 9, .size = 10},
                              {.id = "other", .lower = 0, .upper = 2, .size = 100},
                              {.id = "early", .lower = 2, .upper = 6, .size = 10}}};
  const ValidationResult r = validate(p, make_plan(p, {0, 0, 6}));
  ASSERT_EQ(r.violation, Violation::kOverlap);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.second, 2u);
  EXPECT_EQ(r.tick, 5);
}

// The sweep compares a starting buffer with the live ranges just below and
// just above its offset; each of the next tests needs one of them.
// below [0,4) at [0,16), above [0,4) at [32,48); the third starts at tick 1.
Problem below_and_above(int64_t size_of_third) {
  return Problem{.buffers = {{.id = "below", .lower = 0, .upper = 4, .size = 16},
                             {.id = "above", .lower = 0, .upper = 4, .size = 16},
                             {.id = "third", .lower = 1, .upper = 3, .size = size_of_third}}};
}

TEST(Validate, InvalidatesOverlapWithTheRangeBelowOnly) {
  const Problem p = below_and_above(4);
  const ValidationResult r = validate(p, make_plan(p, {0, 32, 8}));
  ASSERT_EQ(r.violation, Violation::kOverlap);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.second, 2u);
  EXPECT_EQ(r.tick, 1);
  EXPECT_NE(r.message.find("[8, 12)"), std::string::npos) << r.message;
}

TEST(Validate, InvalidatesOverlapWithTheRangeAboveOnly) {
  const Problem p = below_and_above(16);
  const ValidationResult r = validate(p, make_plan(p, {0, 32, 20}));
  ASSERT_EQ(r.violation, Violation::kOverlap);
  EXPECT_EQ(r.first, 1u);
  EXPECT_EQ(r.second, 2u);
  EXPECT_NE(r.message.find("[32, 36)"), std::string::npos) << r.message;
}

TEST(Validate, InvalidatesOverlapAtTheSameOffset) {
  const Problem p = below_and_above(1);
  const ValidationResult r = validate(p, make_plan(p, {0, 32, 32}));
  ASSERT_EQ(r.violation, Violation::kOverlap);
  EXPECT_EQ(r.first, 1u);
  EXPECT_EQ(r.second, 2u);
}

TEST(Validate, AcceptsARangeFillingTheGapBetweenTwoLiveRanges) {
  // [16, 32) touches the range below at 16 and the range above at 32.
  const Problem p = below_and_above(16);
  const ValidationResult r = validate(p, make_plan(p, {0, 32, 16}));
  EXPECT_TRUE(r.ok()) << r.message;
}

TEST(Validate, ZeroSizeBufferDoesNotHideAnOverlap) {
  // The empty buffer at offset 8 sits inside `wide`; `narrow` overlaps `wide`.
  const Problem p{.buffers = {{.id = "wide", .lower = 0, .upper = 4, .size = 16},
                              {.id = "empty", .lower = 0, .upper = 4, .size = 0},
                              {.id = "narrow", .lower = 2, .upper = 4, .size = 2}}};
  const ValidationResult r = validate(p, make_plan(p, {0, 8, 10}));
  ASSERT_EQ(r.violation, Violation::kOverlap);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.second, 2u);
  EXPECT_EQ(r.tick, 2);
}

TEST(Validate, InvalidatesOverlapWithABufferLiveAfterAnotherEnded) {
  // `gone` ends at tick 2, so `late` may reuse its bytes, but not `stays`'.
  const Problem p{.buffers = {{.id = "gone", .lower = 0, .upper = 2, .size = 16},
                              {.id = "stays", .lower = 0, .upper = 5, .size = 16},
                              {.id = "late", .lower = 2, .upper = 6, .size = 16}}};
  EXPECT_TRUE(validate(p, make_plan(p, {0, 16, 0})).ok());
  const ValidationResult r = validate(p, make_plan(p, {0, 16, 8}));
  ASSERT_EQ(r.violation, Violation::kOverlap);
  EXPECT_EQ(r.first, 1u);
  EXPECT_EQ(r.second, 2u);
  EXPECT_EQ(r.tick, 2);
}

TEST(Validate, AcceptsManyBuffersLiveAtOnce) {
  // 20,000 buffers all live at tick 0, stacked: the all-pairs sweep this
  // validator replaced took seconds here.
  Problem p;
  std::vector<int64_t> offsets;
  for (int i = 0; i < 20000; ++i) {
    p.buffers.push_back({.id = std::to_string(i), .lower = 0, .upper = 1, .size = 8});
    offsets.push_back(8 * int64_t{i});
  }
  EXPECT_TRUE(validate(p, make_plan(p, offsets)).ok());
  offsets.back() = 0;  // now the last one overlaps the first
  const ValidationResult r = validate(p, make_plan(p, offsets));
  ASSERT_EQ(r.violation, Violation::kOverlap);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.second, 19999u);
}

TEST(Validate, InvalidatesWrongArena) {
  const Problem p = three_in_a_row();
  Plan too_small{.offsets = {0, 8, 0}, .arena = 15};
  EXPECT_EQ(validate(p, too_small).violation, Violation::kWrongArena);
  Plan too_large{.offsets = {0, 8, 0}, .arena = 17};
  const ValidationResult r = validate(p, too_large);
  EXPECT_EQ(r.violation, Violation::kWrongArena);
  EXPECT_NE(r.message.find("17"), std::string::npos) << r.message;
}

TEST(Validate, ViolationsHaveDistinctNames) {
  const Violation all[] = {Violation::kNone,       Violation::kWrongBufferCount, Violation::kNegativeOffset,
                           Violation::kMisaligned, Violation::kFixedOffsetMoved, Violation::kExceedsCapacity,
                           Violation::kOverlap,    Violation::kWrongArena};
  for (size_t i = 0; i < std::size(all); ++i) {
    EXPECT_FALSE(violation_name(all[i]).empty());
    for (size_t j = i + 1; j < std::size(all); ++j) EXPECT_NE(violation_name(all[i]), violation_name(all[j]));
  }
}

}  // namespace
}  // namespace memplan
