// extract_test.cc — turning an iteration of a trace into a planning problem,
// and the per-iteration statistics of `memplan trace-info`.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "memplan/bounds.h"
#include "memplan/planner.h"
#include "memplan/trace.h"
#include "memplan/validate.h"
#include "trace_builder.h"

namespace memplan {
namespace {

using testing::TraceBuilder;

struct Lifetime {
  int64_t lower, upper, size;
  bool operator==(const Lifetime&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Lifetime& l) {
  return os << "{[" << l.lower << ", " << l.upper << "), " << l.size << "}";
}

std::vector<Lifetime> lifetimes(const Problem& p) {
  std::vector<Lifetime> out;
  for (const Buffer& b : p.buffers) out.push_back({b.lower, b.upper, b.size});
  return out;
}

TEST(Extract, LifetimesAreHalfOpenInEventTicks) {
  // tick:               0            1         2            3
  const Trace t = TraceBuilder().mark().malloc(0xA0, 8).free(0xA0).malloc(0xB0, 8).free(0xB0).mark().build();
  auto x = extract_iteration(t, 1);
  ASSERT_TRUE(x.ok()) << x.status().to_string();
  EXPECT_EQ(x->events, 4u);
  EXPECT_EQ(lifetimes(x->problem), (std::vector<Lifetime>{{0, 1, 8}, {2, 3, 8}}));
  EXPECT_EQ(x->problem.buffers[0].id, "0");
  EXPECT_EQ(x->problem.buffers[1].id, "2");
  // A buffer freed at tick t may share bytes with one allocated at t.
  const Trace u = TraceBuilder()
                      .mark()
                      .malloc(0xA0, 8)
                      .malloc(0xB0, 8)
                      .free(0xA0)
                      .malloc(0xC0, 8)
                      .free(0xB0)
                      .free(0xC0)
                      .mark()
                      .build();
  auto y = extract_iteration(u, 1);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(lifetimes(y->problem), (std::vector<Lifetime>{{0, 2, 8}, {1, 4, 8}, {3, 5, 8}}));
  const Plan reuse = make_plan(y->problem, {0, 16, 0});
  EXPECT_TRUE(validate(y->problem, reuse).ok()) << validate(y->problem, reuse).message;
  const Plan clash = make_plan(y->problem, {0, 0, 16});
  EXPECT_EQ(validate(y->problem, clash).violation, Violation::kOverlap);
}

TEST(Extract, LeavesOutBuffersThatEscapeTheIteration) {
  const Trace t = TraceBuilder()
                      .mark()
                      .malloc(0xA0, 100)
                      .malloc(0xB0, 200)  // freed only in the next iteration
                      .free(0xA0)
                      .mark()
                      .free(0xB0)
                      .mark()
                      .build();
  auto x = extract_iteration(t, 1);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(lifetimes(x->problem), (std::vector<Lifetime>{{0, 2, 100}}));
  EXPECT_EQ(x->escaped, 1u);
  EXPECT_EQ(x->escaped_bytes, 200u);
  auto next = extract_iteration(t, 2);
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->problem.buffers.empty());
  EXPECT_EQ(next->inherited, 1u);
}

TEST(Extract, LeavesOutBuffersAllocatedBeforeTheIterationEvenWhenReallocated) {
  const Trace t = TraceBuilder()
                      .malloc(0xA0, 100)
                      .mark()
                      .realloc(0xA0, 0xC0, 300)  // old side inherited, new side a buffer of this iteration
                      .free(0xC0)
                      .mark()
                      .build();
  auto x = extract_iteration(t, 1);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->inherited, 1u);
  EXPECT_EQ(lifetimes(x->problem), (std::vector<Lifetime>{{0, 1, 300}}));
}

TEST(Extract, ReallocKeepsOldAndNewBuffersLiveTogetherForTheCopy) {
  const Trace t = TraceBuilder()
                      .mark()
                      .malloc(0xA0, 100)         // tick 0
                      .realloc(0xA0, 0xC0, 400)  // tick 1
                      .realloc(0xC0, 0xC0, 800)  // tick 2: in place
                      .free(0xC0)                // tick 3
                      .mark()
                      .build();
  auto x = extract_iteration(t, 1);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(lifetimes(x->problem), (std::vector<Lifetime>{{0, 2, 100}, {1, 3, 400}, {2, 3, 800}}));
  EXPECT_TRUE(x->problem.buffers[0].overlaps_in_time(x->problem.buffers[1]));
}

TEST(Extract, PointerReusedWhileAnotherThreadReallocsIsNotALostFree) {
  // Thread 0 reallocs 0xA0 -> 0xF0; glibc releases 0xA0 inside the call and
  // thread 1 gets it back before thread 0's realloc returns. In sequence
  // order thread 1's malloc comes first, but the realloc's release sequence
  // says 0xA0 was already free then.
  TraceBuilder b;
  b.mark().malloc(0xA0, 64, 0);
  const uint64_t release = b.take_sequence();
  b.malloc(0xA0, 32, 1).free(0xA0, 1).realloc_released_at(release, 0xA0, 0xF0, 128, 0).free(0xF0, 0).mark();
  auto x = extract_iteration(b.build(), 1);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->reused_live, 0u);
  EXPECT_EQ(x->inherited, 0u);
  // ticks: 0 malloc A0 (t0), 1 malloc A0 (t1), 2 free A0 (t1), 3 realloc A0->F0, 4 free F0
  EXPECT_EQ(lifetimes(x->problem), (std::vector<Lifetime>{{0, 4, 64}, {1, 2, 32}, {3, 4, 128}}));
}

TEST(Extract, CountsALostFreeInsteadOfFailing) {
  const Trace t = TraceBuilder().mark().malloc(0xA0, 8).malloc(0xA0, 16).free(0xA0).mark().build();
  auto x = extract_iteration(t, 1);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->reused_live, 1u);
  EXPECT_EQ(lifetimes(x->problem), (std::vector<Lifetime>{{1, 2, 16}}));
}

TEST(Extract, MinSizeLeavesOutSmallBuffersAndCountsThem) {
  const Trace t = TraceBuilder().mark().malloc(0xA0, 10).malloc(0xB0, 4096).free(0xA0).free(0xB0).mark().build();
  auto x = extract_iteration(t, 1, {.min_size = 100});
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(lifetimes(x->problem), (std::vector<Lifetime>{{1, 3, 4096}}));
  EXPECT_EQ(x->below_min_size, 1u);
  EXPECT_EQ(x->below_min_size_bytes, 10u);
}

TEST(Extract, BuffersKeepMallocsAlignmentOrTheOneTheyAskedFor) {
  const Trace t =
      TraceBuilder().mark().malloc(0xA0, 10).aligned(0x1000, 64, 4096).free(0xA0).free(0x1000).mark().build();
  auto x = extract_iteration(t, 1);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->problem.buffers[0].alignment, 16);
  EXPECT_EQ(x->problem.buffers[1].alignment, 4096);
  auto y = extract_iteration(t, 1, {.alignment = 1});
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->problem.buffers[0].alignment, 1);
  EXPECT_EQ(extract_iteration(t, 1, {.alignment = 3}).status().code(), StatusCode::kInvalidArgument);
}

TEST(Extract, CountsFailedAllocations) {
  const Trace t = TraceBuilder().mark().malloc(0, uint64_t{1} << 62).realloc(0xA0, 0, 1 << 30).mark().build();
  auto x = extract_iteration(t, 1);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->failed, 2u);
  EXPECT_EQ(x->inherited, 0u);  // a failed realloc leaves its old block alone
  EXPECT_TRUE(x->problem.buffers.empty());
}

TEST(Extract, IterationZeroIsEverythingBeforeTheFirstMark) {
  const Trace unmarked = TraceBuilder().malloc(0xA0, 8).free(0xA0).build();
  auto all = extract_iteration(unmarked, 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->problem.size(), 1u);
  EXPECT_EQ(unmarked.iteration_count(), 1);
  auto missing = extract_iteration(unmarked, 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("0 marks"), std::string::npos);
  auto span = iteration_span(TraceBuilder().malloc(1, 1).mark().malloc(2, 1).build(), 1);
  ASSERT_TRUE(span.ok());
  EXPECT_FALSE(span->closed);  // the last iteration runs to the end of the trace
}

// A synthetic program: `iterations` iterations of the same shape of
// temporaries on two threads, plus a few blocks that outlive their iteration.
Trace repeating_program(int iterations, uint64_t seed) {
  TraceBuilder b;
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> sizes(200);
  for (auto& s : sizes) s = 1 + rng() % 65536;
  uint64_t next_pointer = 0x10000;
  std::vector<uint64_t> escaped;
  for (int it = 0; it < iterations; ++it) {
    b.mark();
    std::vector<std::pair<uint64_t, uint32_t>> live;
    std::mt19937_64 shape(seed);  // the same choices every iteration
    for (uint64_t s : sizes) {
      const auto thread = static_cast<uint32_t>(shape() % 2);
      if (!live.empty() && shape() % 3 == 0) {
        b.free(live.front().first, live.front().second);
        live.erase(live.begin());
      }
      const uint64_t p = next_pointer += 0x20000;
      b.malloc(p, s, thread);
      live.emplace_back(p, thread);
    }
    for (size_t i = 0; i + 1 < live.size(); ++i) b.free(live[i].first, live[i].second);
    escaped.push_back(live.back().first);  // outlives the iteration
  }
  b.mark();
  for (uint64_t p : escaped) b.free(p);
  return b.build();
}

TEST(Extract, EveryFastPlannerGivesAValidPlanOfAnExtractedIteration) {
  const Trace t = repeating_program(3, 5);
  for (int64_t it = 1; it <= 3; ++it) {
    auto x = extract_iteration(t, it);
    ASSERT_TRUE(x.ok()) << x.status().to_string();
    EXPECT_EQ(x->escaped, 1u);
    for (const PlannerInfo& planner : planners()) {
      if (!planner.fast) continue;
      auto plan = planner.plan(x->problem, {});
      ASSERT_TRUE(plan.ok()) << planner.name << ": " << plan.status().to_string();
      const ValidationResult v = validate(x->problem, *plan);
      EXPECT_TRUE(v.ok()) << planner.name << ", iteration " << it << ": " << v.message;
    }
  }
}

TEST(Extract, RepeatingIterationsGiveIdenticalProblems) {
  const Trace t = repeating_program(3, 9);
  auto two = extract_iteration(t, 2);
  auto three = extract_iteration(t, 3);
  ASSERT_TRUE(two.ok() && three.ok());
  ASSERT_EQ(two->problem.size(), three->problem.size());
  for (size_t i = 0; i < two->problem.size(); ++i) {
    const Buffer& a = two->problem.buffers[i];
    const Buffer& b = three->problem.buffers[i];
    EXPECT_EQ(std::tie(a.id, a.lower, a.upper, a.size, a.alignment),
              std::tie(b.id, b.lower, b.upper, b.size, b.alignment));
  }
}

TEST(IterationSummary, DetectsRepeatsAndCountsWhatEachIterationDid) {
  const Trace t = repeating_program(3, 13);
  const std::vector<IterationSummary> s = summarize_iterations(t);
  ASSERT_EQ(s.size(), 5u);  // 0 (empty prologue), 1..3, 4 (frees the escaped blocks; open)
  EXPECT_EQ(s[0].events, 0u);
  EXPECT_FALSE(s[1].repeats_previous);
  EXPECT_TRUE(s[2].repeats_previous);
  EXPECT_TRUE(s[3].repeats_previous);
  EXPECT_FALSE(s[4].closed);
  EXPECT_EQ(s[1].allocations, 200u);
  EXPECT_EQ(s[1].threads, 2u);
  uint64_t histogram_total = 0;
  for (uint64_t c : s[1].size_histogram) histogram_total += c;
  EXPECT_EQ(histogram_total, 200u);
  // Each iteration leaves one block live, so process-wide peaks grow.
  EXPECT_LT(s[1].peak_live_bytes, s[3].peak_live_bytes);
  EXPECT_EQ(s[2].peak_iteration_bytes, s[3].peak_iteration_bytes);
  EXPECT_EQ(s[4].frees, 3u);
}

TEST(IterationSummary, PeakOfBuffersThatStayInTheIterationIsTheProblemsLoad) {
  // Without escaping blocks and reallocs the two computations must agree.
  const Trace t = TraceBuilder()
                      .mark()
                      .malloc(0xA0, 100)
                      .malloc(0xB0, 50)
                      .free(0xA0)
                      .malloc(0xC0, 70)
                      .free(0xB0)
                      .free(0xC0)
                      .mark()
                      .build();
  auto x = extract_iteration(t, 1, {.alignment = 1});
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(static_cast<uint64_t>(load(x->problem)), summarize_iterations(t)[1].peak_iteration_bytes);
  EXPECT_EQ(summarize_iterations(t)[1].peak_iteration_bytes, 150u);
}

TEST(IterationSummary, HistogramBucketsArePowersOfTwo) {
  const Trace t =
      TraceBuilder().malloc(0xA0, 1).malloc(0xB0, 2).malloc(0xC0, 3).malloc(0xD0, 4).malloc(0xE0, 5).build();
  const IterationSummary s = summarize_iterations(t)[0];
  EXPECT_EQ(s.size_histogram[0], 1u);  // <= 1
  EXPECT_EQ(s.size_histogram[1], 1u);  // 2
  EXPECT_EQ(s.size_histogram[2], 2u);  // 3, 4
  EXPECT_EQ(s.size_histogram[3], 1u);  // 5..8
}

}  // namespace
}  // namespace memplan
