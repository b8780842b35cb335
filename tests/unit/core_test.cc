// core_test.cc — the problem model, plan stacking and TFLite task records.
#include <gtest/gtest.h>

#include "memplan/plan.h"
#include "memplan/problem.h"

namespace memplan {
namespace {

TEST(TaskRecords, InclusiveTasksBecomeHalfOpenLifetimes) {
  const TaskRecord records[] = {{.size = 16, .first_task = 0, .last_task = 1},
                                {.size = 8, .first_task = 1, .last_task = 2}};
  auto problem = problem_from_task_records(records);
  ASSERT_TRUE(problem.ok()) << problem.status().to_string();
  ASSERT_EQ(problem->size(), 2u);
  EXPECT_EQ(problem->buffers[0].lower, 0);
  EXPECT_EQ(problem->buffers[0].upper, 2);
  EXPECT_EQ(problem->buffers[1].lower, 1);
  EXPECT_EQ(problem->buffers[1].upper, 3);
  // Inclusive [0,1] and [1,2] share task 1, so the half-open lifetimes overlap.
  EXPECT_TRUE(problem->buffers[0].overlaps_in_time(problem->buffers[1]));
}

TEST(TaskRecords, RejectsLastTaskBeforeFirstTask) {
  const TaskRecord records[] = {{.size = 16, .first_task = 3, .last_task = 1}};
  auto problem = problem_from_task_records(records);
  ASSERT_FALSE(problem.ok());
  EXPECT_NE(problem.status().message().find("task record #0"), std::string::npos);
}

TEST(CheckProblem, RejectsEmptyLifetime) {
  Problem p{.buffers = {{.id = "x", .lower = 3, .upper = 3, .size = 1}}};
  Status s = check_problem(p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'x'"), std::string::npos);
}

TEST(CheckProblem, RejectsAlignmentThatIsNotAPowerOfTwo) {
  Problem p{.buffers = {{.id = "x", .lower = 0, .upper = 1, .size = 1, .alignment = 3}}};
  EXPECT_EQ(check_problem(p).code(), StatusCode::kInvalidArgument);
}

TEST(CheckProblem, RejectsTotalSizeOverflow) {
  Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 1, .size = int64_t{1} << 61},
                        {.id = "b", .lower = 0, .upper = 1, .size = int64_t{1} << 61},
                        {.id = "c", .lower = 0, .upper = 1, .size = int64_t{1} << 61}}};
  EXPECT_EQ(check_problem(p).code(), StatusCode::kInvalidArgument);
}

TEST(CheckProblem, RejectsFixedOffsetsThatOverlapWhileBothLive) {
  // c overlaps a's bytes only through the predecessor in offset order.
  Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 4, .size = 8, .offset = 0},
                        {.id = "b", .lower = 0, .upper = 9, .size = 8, .offset = 16},
                        {.id = "c", .lower = 2, .upper = 5, .size = 4, .offset = 4}}};
  const Status s = check_problem(p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("buffer 'a' (#0) and buffer 'c' (#2) have fixed offsets that overlap: both hold "
                             "bytes [4, 8) at tick 2"),
            std::string::npos)
      << s.message();
  // The same bytes at different times, a zero-size buffer inside another, and
  // ranges that only touch are fine.
  p.buffers[2].lower = 4;
  p.buffers.push_back({.id = "empty", .lower = 0, .upper = 9, .size = 0, .offset = 16});
  p.buffers.push_back({.id = "touching", .lower = 0, .upper = 9, .size = 8, .offset = 24});
  EXPECT_TRUE(check_problem(p).ok()) << check_problem(p).message();
  // Overlap through the successor in offset order.
  p.buffers.push_back({.id = "late", .lower = 8, .upper = 12, .size = 8, .offset = 12});
  EXPECT_NE(check_problem(p).message().find("buffer 'b' (#1) and buffer 'late' (#5)"), std::string::npos)
      << check_problem(p).message();
}

TEST(PlanFromObjects, StacksObjectsWithAlignment) {
  Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 10},
                        {.id = "b", .lower = 2, .upper = 4, .size = 6},
                        {.id = "c", .lower = 0, .upper = 4, .size = 8, .alignment = 16}}};
  ObjectAssignment objects{.object_of = {0, 0, 1}, .object_sizes = {10, 8}};
  auto plan = plan_from_objects(p, objects);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->offsets, (std::vector<int64_t>{0, 0, 16}));
  EXPECT_EQ(plan->arena, 24);
}

TEST(PlanFromObjects, RejectsMembersLiveAtTheSameTime) {
  Problem p{
      .buffers = {{.id = "a", .lower = 0, .upper = 3, .size = 10}, {.id = "b", .lower = 2, .upper = 4, .size = 6}}};
  ObjectAssignment objects{.object_of = {0, 0}, .object_sizes = {10}};
  EXPECT_FALSE(plan_from_objects(p, objects).ok());
}

TEST(PlanFromObjects, KeepsFixedBuffersAndStacksAboveThem) {
  Problem p{.buffers = {{.id = "f", .lower = 0, .upper = 2, .size = 10, .offset = 4},
                        {.id = "a", .lower = 0, .upper = 2, .size = 3}}};
  ObjectAssignment objects{.object_of = {-1, 0}, .object_sizes = {3}};
  auto plan = plan_from_objects(p, objects);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->offsets, (std::vector<int64_t>{4, 14}));
}

}  // namespace
}  // namespace memplan

namespace memplan {
namespace {

// Zero-size buffers with huge alignments still need padding in a stacked plan:
// four of them between 1-byte buffers would push naive's offsets past 2^63.
TEST(CheckProblem, CountsAlignmentPaddingOfZeroSizeBuffersInTheTotal) {
  Problem p;
  for (int i = 0; i < 4; ++i) {
    p.buffers.push_back({.id = "one" + std::to_string(i), .lower = 0, .upper = 1, .size = 1});
    p.buffers.push_back(
        {.id = "zero" + std::to_string(i), .lower = 0, .upper = 1, .size = 0, .alignment = int64_t{1} << 61});
  }
  EXPECT_EQ(check_problem(p).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace memplan
