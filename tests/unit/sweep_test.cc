// sweep_test.cc — the shared time structure: lifetime events in sweep order
// and time slots.
#include "core/sweep.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "memplan/problem.h"

namespace memplan {
namespace {

// The example of sweep.h: a = [0,2), b = [2,5), c = [0,9).
Problem header_example() {
  return Problem{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 1},
                             {.id = "b", .lower = 2, .upper = 5, .size = 1},
                             {.id = "c", .lower = 0, .upper = 9, .size = 1}}};
}

TEST(Sweep, EventsComeByTickWithEndsBeforeStarts) {
  const std::vector<LifetimeEvent> events = sorted_events(header_example());
  ASSERT_EQ(events.size(), 6u);
  const struct {
    int64_t tick;
    size_t buffer;
    bool start;
  } expected[] = {{0, 0, true}, {0, 2, true}, {2, 0, false}, {2, 1, true}, {5, 1, false}, {9, 2, false}};
  for (size_t k = 0; k < events.size(); ++k) {
    EXPECT_EQ(events[k].tick, expected[k].tick) << k;
    EXPECT_EQ(events[k].buffer, expected[k].buffer) << k;
    EXPECT_EQ(events[k].start, expected[k].start) << k;
  }
}

TEST(Sweep, EventsOfSpansMatchEventsOfTheProblem) {
  const Problem p = header_example();
  std::vector<int64_t> lower, upper;
  for (const Buffer& b : p.buffers) {
    lower.push_back(b.lower);
    upper.push_back(b.upper);
  }
  const std::vector<LifetimeEvent> from_problem = sorted_events(p);
  const std::vector<LifetimeEvent> from_spans = sorted_events(lower, upper);
  ASSERT_EQ(from_problem.size(), from_spans.size());
  for (size_t k = 0; k < from_spans.size(); ++k) {
    EXPECT_EQ(from_problem[k].tick, from_spans[k].tick);
    EXPECT_EQ(from_problem[k].buffer, from_spans[k].buffer);
    EXPECT_EQ(from_problem[k].start, from_spans[k].start);
  }
}

TEST(Sweep, SlotsNumberTheDistinctTicks) {
  const TimeSlots slots(header_example());
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots.tick(0), 0);
  EXPECT_EQ(slots.tick(1), 2);
  EXPECT_EQ(slots.tick(2), 5);
  EXPECT_EQ(slots.tick(3), 9);
  EXPECT_EQ(slots.of(0).first, 0u);
  EXPECT_EQ(slots.of(0).last, 1u);
  EXPECT_EQ(slots.of(1).first, 1u);
  EXPECT_EQ(slots.of(1).last, 2u);
  EXPECT_EQ(slots.of(2).first, 0u);
  EXPECT_EQ(slots.of(2).last, 3u);
}

TEST(Sweep, NoBuffersMeansNoEventsAndNoSlots) {
  EXPECT_TRUE(sorted_events(Problem{}).empty());
  EXPECT_EQ(TimeSlots(Problem{}).size(), 0u);
}

}  // namespace
}  // namespace memplan
