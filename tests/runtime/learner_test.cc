// The iteration learner (runtime/learner.h) on its own, with both request
// identities: agreement, lifetime union, the filters, planning and the
// deviation count, through a recording adapter.
#include "runtime/learner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/generate.h"
#include "memplan/planner.h"
#include "memplan/validate.h"

namespace memplan::runtime {
namespace {

class NoBacking final : public BackingAllocator {
 public:
  void* allocate(size_t, size_t) override { return nullptr; }
  void* allocate_zeroed(size_t) override { return nullptr; }
  void* reallocate(void*, size_t) override { return nullptr; }
  void deallocate(void*) override {}
  size_t usable_size(void*) override { return 0; }
  void release_free_memory() override { ++trims; }
  int trims = 0;
};

// The learner plans; an adapter with no tables of its own gives its layout.
class PlainTables final : public PlanTables {
 public:
  BlockLayout layout() const override { return {.max_arena = 1 << 20}; }
};

class RecordingAdapter final : public Learner::Adapter {
 public:
  bool slab_in_use() const override { return in_use; }
  void withdraw() override { published = nullptr; }
  void publish(PreparedPlan& plan) override { published = &plan; }
  bool in_use = false;
  PreparedPlan* published = nullptr;
};

class LearnerTest : public ::testing::Test {
 protected:
  LearnerTest() {
    config_.profile_iterations = 2;
    config_.deviations_to_reprofile = 2;
    config_.planner = "greedy_by_size";
    config_.huge_pages = false;
    window_ = os::reserve(window_bytes_);
  }
  ~LearnerTest() override { os::release(window_, window_bytes_); }

  std::unique_ptr<Learner> make(RequestIdentity identity) {
    auto learner = std::make_unique<Learner>(config_, identity);
    learner->set_window(window_, window_bytes_);
    return learner;
  }
  // One iteration: requests (key, size) allocated in order at fake addresses,
  // each freed right after the next one is made, the last one kept when `keep_last`.
  void iteration(Learner& l, const std::vector<std::pair<uint64_t, uint64_t>>& requests, bool keep_last = false,
                 bool deviated = false) {
    uintptr_t address = 0x1000;
    const void* previous = nullptr;
    for (const auto& [key, size] : requests) {
      const void* p = reinterpret_cast<const void*>(address += 0x1000);
      l.record(key, size, 64, p);
      if (previous) l.record_end(previous, false);
      previous = p;
    }
    if (previous && !keep_last) l.record_end(previous, false);
    l.end_iteration(deviated, {.tables = tables_, .backing = backing_, .planner = nullptr}, adapter_,
                    static_cast<uint32_t>(requests.size()));
  }

  // One iteration of requests of these sizes, all live until its end.
  void all_live_iteration(Learner& l, const Learner::Planning& planning, const std::vector<uint64_t>& sizes) {
    uintptr_t address = 0x1000;
    for (uint64_t size : sizes) l.record(0, size, 64, reinterpret_cast<const void*>(address += 0x1000));
    for (uintptr_t a = 0x2000; a <= address; a += 0x1000) l.record_end(reinterpret_cast<const void*>(a), false);
    l.end_iteration(false, planning, adapter_, static_cast<uint32_t>(sizes.size()));
  }
  // Waits up to 5 s for the planner thread to have finished `plans` jobs; returns how many it has.
  static uint64_t wait_for_plans(const BackgroundPlanner& planner, uint64_t plans) {
    for (int i = 0; i < 5000 && planner.plans_finished() < plans; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return planner.plans_finished();
  }

  ReplayConfig config_;
  PlainTables tables_;
  NoBacking backing_;
  RecordingAdapter adapter_;
  size_t window_bytes_ = size_t{1} << 24;
  void* window_ = nullptr;
};

TEST_F(LearnerTest, KeyedRequestsAgreeInAnyOrder) {
  auto l = make(RequestIdentity::kKeyed);
  iteration(*l, {{7, 4096}, {3, 8192}, {5, 100}});
  EXPECT_EQ(l->phase(), ReplayPhase::kProfiling);
  iteration(*l, {{3, 8192}, {5, 100}, {7, 4096}});
  ASSERT_EQ(l->phase(), ReplayPhase::kReplaying);
  ASSERT_NE(adapter_.published, nullptr);
  EXPECT_EQ(adapter_.published->problem.size(), 3u);
  EXPECT_TRUE(validate(adapter_.published->problem, adapter_.published->plan).ok());
  EXPECT_EQ(backing_.trims, 1) << "the backing allocator is trimmed once per plan";
  EXPECT_GE(l->slab().mapped_bytes(), adapter_.published->arena);
}

TEST_F(LearnerTest, SequenceRequestsMustComeInTheSameOrder) {
  config_.upper_bound_plans = false;  // else two requests of 16 B alignment agree whatever their sizes
  auto l = make(RequestIdentity::kSequence);
  iteration(*l, {{0, 4096}, {0, 8192}});
  iteration(*l, {{0, 8192}, {0, 4096}});
  EXPECT_EQ(l->phase(), ReplayPhase::kProfiling);
  iteration(*l, {{0, 8192}, {0, 4096}});
  EXPECT_EQ(l->phase(), ReplayPhase::kReplaying);
}

TEST_F(LearnerTest, RequestsOfOtherSizesAgreeOnTheirMaximum) {
  auto l = make(RequestIdentity::kSequence);
  iteration(*l, {{0, 4096}, {0, 8192}, {0, 100}});
  iteration(*l, {{0, 8192}, {0, 2048}, {0, 300}});  // loads 12288 and 10240
  ASSERT_EQ(l->phase(), ReplayPhase::kReplaying);
  const PreparedPlan& p = *adapter_.published;
  ASSERT_EQ(p.problem.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    const uint64_t maximum[] = {8192, 8192, 300};
    EXPECT_EQ(static_cast<uint64_t>(p.problem.buffers[k].size) - p.shift_of[k], maximum[p.request_of[k]]);
  }
  EXPECT_EQ(l->counters().variants.get(), 2u);
  EXPECT_EQ(l->counters().min_shape_load.get(), 10240u);
  EXPECT_EQ(l->counters().max_shape_load.get(), 12288u);
}

TEST_F(LearnerTest, KeyedRequestsOfOtherSizesAgreeOnTheirMaximum) {
  auto l = make(RequestIdentity::kKeyed);
  iteration(*l, {{7, 4096}, {3, 8192}});
  iteration(*l, {{3, 100}, {7, 9000}});
  ASSERT_EQ(l->phase(), ReplayPhase::kReplaying);
  uint64_t total = 0;
  for (size_t k = 0; k < adapter_.published->problem.size(); ++k) {
    total += static_cast<uint64_t>(adapter_.published->problem.buffers[k].size) - adapter_.published->shift_of[k];
  }
  EXPECT_EQ(total, 9000u + 8192u);
}

TEST_F(LearnerTest, ProfileLoadIsTheMostBytesLiveAtOnce) {
  Profile p;
  // [0,2) 100, [1,3) 200, [2,4) 50, escaped 1000: load 300 at tick 1.
  for (auto [size, upper] : std::vector<std::pair<uint64_t, int64_t>>{{100, 2}, {200, 3}, {50, 4}, {1000, kEscaped}}) {
    p.requests.push_back({size, 16});
    p.uppers.push_back(upper);
  }
  EXPECT_EQ(profile_load(p, config_), 300u);
  config_.min_planned_size = 150;
  EXPECT_EQ(profile_load(p, config_), 200u);
}

TEST_F(LearnerTest, AmbiguousEscapingAndTinyRequestsAreNotPlanned) {
  config_.min_planned_size = 64;
  auto l = make(RequestIdentity::kKeyed);
  for (int i = 0; i < 2; ++i) iteration(*l, {{1, 4096}, {2, 4096}, {2, 4096}, {3, 16}, {4, 4096}}, /*keep_last=*/true);
  ASSERT_EQ(l->phase(), ReplayPhase::kReplaying);
  const PreparedPlan& plan = *adapter_.published;
  ASSERT_EQ(plan.problem.size(), 1u) << "key 2 is ambiguous, key 3 tiny, key 4 escapes";
  EXPECT_EQ(plan.request_of.size(), 1u);
}

TEST_F(LearnerTest, LifetimesAreTheUnionOverTheAgreeingIterations) {
  auto l = make(RequestIdentity::kKeyed);
  iteration(*l, {{1, 4096}, {2, 4096}});
  iteration(*l, {{2, 4096}, {1, 4096}});
  ASSERT_EQ(l->phase(), ReplayPhase::kReplaying);
  const Problem& p = adapter_.published->problem;
  ASSERT_EQ(p.size(), 2u);
  // Each key was made at tick 0 once and at tick 1 once, and lived one tick beyond.
  for (const Buffer& b : p.buffers) {
    EXPECT_EQ(b.lower, 0);
    EXPECT_EQ(b.upper, 2);
  }
}

TEST_F(LearnerTest, ConsecutiveDeviatingIterationsReprofile) {
  auto l = make(RequestIdentity::kSequence);
  for (int i = 0; i < 2; ++i) iteration(*l, {{0, 4096}});
  ASSERT_EQ(l->phase(), ReplayPhase::kReplaying);
  iteration(*l, {}, false, /*deviated=*/true);
  iteration(*l, {}, false, /*deviated=*/false);
  iteration(*l, {}, false, /*deviated=*/true);
  EXPECT_EQ(l->phase(), ReplayPhase::kReplaying) << "the deviations were not consecutive";
  iteration(*l, {}, false, /*deviated=*/true);
  EXPECT_EQ(l->phase(), ReplayPhase::kProfiling);
  EXPECT_EQ(l->counters().deviations.get(), 3u);
  EXPECT_EQ(l->counters().reprofiles.get(), 1u);
}

TEST_F(LearnerTest, APlanTooLargeForTheSlabLeavesTheUnitWithTheBackingAllocator) {
  auto l = make(RequestIdentity::kSequence);
  for (int i = 0; i < 2; ++i) iteration(*l, {{0, 2 << 20}});
  EXPECT_EQ(l->phase(), ReplayPhase::kBackingOnly);
  EXPECT_EQ(l->counters().plan_failures.get(), 1u);
  EXPECT_EQ(adapter_.published, nullptr);
}

TEST_F(LearnerTest, ThePlannerThreadGrowsTheSlabSoThatAdoptingOnlyPublishes) {
  config_.plan_in_background = true;
  config_.trim_backing = false;  // the planner thread would count trims while this thread reads nothing
  auto l = make(RequestIdentity::kSequence);
  BackgroundPlanner planner(tables_, backing_);  // stopped and joined before the learner goes
  planner.ensure_started();
  const Learner::Planning planning{.tables = tables_, .backing = backing_, .planner = &planner};
  auto run = [&] {
    l->record(0, 300000, 64, reinterpret_cast<const void*>(0x1000));
    l->record(0, 200000, 64, reinterpret_cast<const void*>(0x2000));
    l->record_end(reinterpret_cast<const void*>(0x1000), false);
    l->record_end(reinterpret_cast<const void*>(0x2000), false);
    l->end_iteration(false, planning, adapter_, 2);
  };
  run();  // Note [Plans ahead of agreement]: one agreement short, the job is queued; nothing is adopted
  EXPECT_EQ(l->phase(), ReplayPhase::kProfiling);
  EXPECT_EQ(adapter_.published, nullptr);
  // The planner thread plans and maps the slab, off the owner's boundary.
  ASSERT_EQ(wait_for_plans(planner, 1), 1u);
  EXPECT_GE(l->slab().mapped_bytes(), 500000u) << "grown by the planner thread before any boundary adopted";
  EXPECT_EQ(adapter_.published, nullptr);
  const size_t pages = l->slab().mapped_bytes() / os::page_size();
  EXPECT_EQ(os::resident_pages(l->slab().base(), l->slab().mapped_bytes()), 0u)
      << "Note [Pre-fault after adoption]: not faulted in while the iteration still runs on the backing allocator";
  run();  // the second iteration agrees and adopts: the commit is a no-op
  ASSERT_EQ(l->phase(), ReplayPhase::kReplaying);
  ASSERT_NE(adapter_.published, nullptr);
  EXPECT_LE(adapter_.published->arena, l->slab().mapped_bytes());
  EXPECT_TRUE(l->slab().check_invariants().ok());
  // Adoption queued the pre-fault on the planner thread.
  if (os::prefault(l->slab().base(), os::page_size())) {
    for (int i = 0; i < 2000 && os::resident_pages(l->slab().base(), l->slab().mapped_bytes()) < pages; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(os::resident_pages(l->slab().base(), l->slab().mapped_bytes()), pages);
  }
}

// Note [Plans ahead of agreement]: the plan queued after one iteration is
// adopted only by a boundary whose iteration agrees with it.
TEST_F(LearnerTest, APlanMadeAheadIsDroppedWhenTheNextIterationDiffers) {
  config_.plan_in_background = true;
  config_.trim_backing = false;
  config_.predict_variants = false;  // one variant: the second pattern replaces the first
  auto l = make(RequestIdentity::kSequence);
  BackgroundPlanner planner(tables_, backing_);
  planner.ensure_started();
  const Learner::Planning planning{.tables = tables_, .backing = backing_, .planner = &planner};
  auto run = [&](const std::vector<uint64_t>& sizes) { all_live_iteration(*l, planning, sizes); };
  auto wait_for = [&](uint64_t plans) { return wait_for_plans(planner, plans) == plans; };
  const std::vector<uint64_t> a = {8192, 4096, 16384}, b = {4096, 4096};
  run(a);
  ASSERT_TRUE(wait_for(1));
  run(b);  // does not agree with a: a's plan is dropped, b's queued
  EXPECT_EQ(l->phase(), ReplayPhase::kProfiling);
  EXPECT_EQ(adapter_.published, nullptr);
  ASSERT_TRUE(wait_for(2));
  run(b);  // agrees: b's plan is adopted
  ASSERT_EQ(l->phase(), ReplayPhase::kReplaying);
  ASSERT_NE(adapter_.published, nullptr);
  EXPECT_EQ(adapter_.published->problem.size(), b.size());
  EXPECT_EQ(l->counters().plans_made.get(), 1u);
}

// Note [Predicted variants]: plain marks (next key 0), sequence identity.

// Note [Trim when predictable].
TEST_F(LearnerTest, TheBackingAllocatorIsTrimmedOnlyWhileIterationsArePredicted) {
  auto steady = make(RequestIdentity::kSequence);
  for (int i = 0; i < 4; ++i) iteration(*steady, {{0, 4096}, {0, 8192}});
  EXPECT_EQ(steady->counters().plans_made.get(), 1u);
  EXPECT_EQ(backing_.trims, 1) << "one variant, always predicted: its plan trims";

  // Sixteen variants (v requests each) once each, all mispredicted and none
  // planned; then variant 20 three times. With seven of the last eight
  // mispredicted it needs three agreeing iterations (Note [Unpredictable
  // streams]), and is planned at its third without a trim.
  backing_.trims = 0;
  auto changing = make(RequestIdentity::kSequence);
  auto variant = [](uint64_t v) { return std::vector<std::pair<uint64_t, uint64_t>>(v, {0, 4096}); };
  for (uint64_t v = 1; v <= 16; ++v) iteration(*changing, variant(v));
  EXPECT_EQ(changing->counters().plans_made.get(), 0u);
  iteration(*changing, variant(20));
  iteration(*changing, variant(20));
  EXPECT_EQ(changing->counters().plans_made.get(), 0u) << "two agreeing iterations, in an unpredictable stream";
  iteration(*changing, variant(20));
  EXPECT_EQ(changing->counters().plans_made.get(), 1u);
  EXPECT_EQ(changing->counters().predictions_wrong.get(), 16u);
  EXPECT_EQ(backing_.trims, 0) << "most recent iterations mispredicted: the backing allocator serves them";
  // Variant 20 served six times, predicted right; then a new variant four
  // times: mispredicted twice while 20 is served (after its first run it
  // gives way to 20, Note [A one-off does not displace a plan]), then
  // profiled as predicted twice and planned (two agreements again) with two
  // of the last eight mispredicted: its plan trims.
  for (int i = 0; i < 6; ++i) iteration(*changing, variant(20));
  for (int i = 0; i < 3; ++i) iteration(*changing, variant(18));
  EXPECT_EQ(changing->counters().plans_made.get(), 1u) << "variant 18 profiled once so far";
  iteration(*changing, variant(18));
  EXPECT_EQ(changing->counters().plans_made.get(), 2u);
  EXPECT_EQ(changing->counters().predictions_wrong.get(), 18u);
  EXPECT_EQ(backing_.trims, 1);

  config_.trim_backing = false;
  backing_.trims = 0;
  auto off = make(RequestIdentity::kSequence);
  for (int i = 0; i < 4; ++i) iteration(*off, {{0, 4096}, {0, 8192}});
  EXPECT_EQ(off->counters().plans_made.get(), 1u);
  EXPECT_EQ(backing_.trims, 0) << "MEMPLAN_TRIM_BACKING=0";
}

// Note [Unpredictable streams]: a variant that came back after another ran
// recurs, and needs no extra agreement.
TEST_F(LearnerTest, AVariantThatComesBackNeedsNoExtraAgreementInAnUnpredictableStream) {
  auto l = make(RequestIdentity::kSequence);
  auto variant = [](uint64_t v) { return std::vector<std::pair<uint64_t, uint64_t>>(v, {0, 4096}); };
  for (uint64_t v = 1; v <= 16; ++v) iteration(*l, variant(v));
  iteration(*l, variant(20));
  iteration(*l, variant(19));
  EXPECT_EQ(l->counters().plans_made.get(), 0u);
  iteration(*l, variant(20));  // back after 19 ran: two agreements suffice
  EXPECT_EQ(l->counters().plans_made.get(), 1u);
  ASSERT_NE(adapter_.published, nullptr);
  EXPECT_EQ(adapter_.published->problem.size(), 20u);
  iteration(*l, variant(21));
  iteration(*l, variant(21));  // two in a row: not back after another, so three are needed
  EXPECT_EQ(l->counters().plans_made.get(), 1u);
  iteration(*l, variant(21));
  EXPECT_EQ(l->counters().plans_made.get(), 2u);
}

// Note [Plans ahead of agreement]: the boundary that switches to a predicted
// variant adopts the plan made ahead from its one profile, so its second
// iteration is served.
TEST_F(LearnerTest, ASwitchToAPredictedVariantAdoptsItsPlanMadeAhead) {
  config_.plan_in_background = true;
  config_.trim_backing = false;
  auto l = make(RequestIdentity::kSequence);
  BackgroundPlanner planner(tables_, backing_);
  planner.ensure_started();
  const Learner::Planning planning{.tables = tables_, .backing = backing_, .planner = &planner};
  auto run = [&](const std::vector<uint64_t>& sizes) { all_live_iteration(*l, planning, sizes); };
  auto wait_for = [&](uint64_t plans) { return wait_for_plans(planner, plans) >= plans; };
  const std::vector<uint64_t> a = {8192, 4096, 16384}, b = {4096, 4096};
  run(a);  // A's plan queued ahead
  ASSERT_TRUE(wait_for(1));
  run(b);  // mispredicted (A again was predicted): filed under B, B's plan queued ahead
  ASSERT_TRUE(wait_for(2));
  EXPECT_EQ(l->phase(), ReplayPhase::kProfiling);
  run(a);  // A agrees and adopts; B, which followed A, is predicted next
  ASSERT_EQ(l->phase(), ReplayPhase::kReplaying) << "switched to B, whose plan made ahead is done";
  ASSERT_NE(adapter_.published, nullptr);
  EXPECT_EQ(adapter_.published->problem.size(), b.size()) << "B's plan, adopted after one of B's iterations";
  EXPECT_EQ(l->counters().plans_made.get(), 2u);
}

// Note [The slab fits its plans]: once the large variant's plan is evicted
// and the small one's is published with no block live, the pages past the
// small plan's arena go back; a mapping that a held plan needs stays.
TEST_F(LearnerTest, TheSlabGivesBackThePagesOfAnEvictedPlan) {
  config_.max_plans = 1;
  auto l = make(RequestIdentity::kSequence);
  const std::vector<std::pair<uint64_t, uint64_t>> large = {{0, 8192}, {0, 512 << 10}}, small = {{0, 4096}};
  iteration(*l, large);
  iteration(*l, large);
  ASSERT_NE(adapter_.published, nullptr);
  ASSERT_EQ(adapter_.published->problem.size(), large.size());
  const size_t large_mapping = l->slab().mapped_bytes();
  ASSERT_GE(large_mapping, size_t{512} << 10);
  for (int i = 0; i < 4 && !(adapter_.published && adapter_.published->problem.size() == small.size()); ++i) {
    iteration(*l, small);
  }
  ASSERT_NE(adapter_.published, nullptr);
  ASSERT_EQ(adapter_.published->problem.size(), small.size()) << "the small variant's plan is served";
  ASSERT_EQ(l->counters().plans_held.get(), 1u) << "the large one's was evicted";
  const size_t page = os::page_size();
  const size_t arena = l->counters().plan_bytes.get();
  EXPECT_EQ(l->slab().mapped_bytes(), (arena + page - 1) / page * page);
  EXPECT_LT(l->slab().mapped_bytes(), large_mapping);
  EXPECT_TRUE(l->slab().check_invariants().ok());

  // While a block of the served plan is live, no switch happens, so nothing is unmapped.
  iteration(*l, large);
  iteration(*l, large);
  const size_t mapping = l->slab().mapped_bytes();
  adapter_.in_use = true;
  iteration(*l, small);
  iteration(*l, small);
  EXPECT_GE(l->slab().mapped_bytes(), mapping) << "a live block keeps the mapping";
  adapter_.in_use = false;
}

TEST_F(LearnerTest, ProfilesOfOtherStructuresAreFiledUnderTheirOwnVariant) {
  auto l = make(RequestIdentity::kSequence);
  const std::vector<std::pair<uint64_t, uint64_t>> a = {{0, 4096}}, b = {{0, 4096}, {0, 8192}};
  iteration(*l, a);
  iteration(*l, b);
  EXPECT_EQ(l->phase(), ReplayPhase::kProfiling) << "one iteration of each: nothing agreed yet";
  iteration(*l, a);
  EXPECT_EQ(l->counters().plans_made.get(), 1u) << "A agreed with A, two iterations apart";
  iteration(*l, b);
  EXPECT_EQ(l->counters().plans_made.get(), 2u);
  EXPECT_TRUE(l->key_predicted());
  EXPECT_EQ(l->counters().plans_held.get(), 2u);
}

TEST_F(LearnerTest, TheNextVariantIsTheOneThatFollowedTheLastOne) {
  auto l = make(RequestIdentity::kSequence);
  const std::vector<std::pair<uint64_t, uint64_t>> a = {{0, 4096}}, b = {{0, 4096}, {0, 8192}},
                                                   c = {{0, 100}, {0, 100}, {0, 100}};
  for (int round = 0; round < 3; ++round) {
    iteration(*l, a);
    iteration(*l, b);
    iteration(*l, c);
  }
  Profile pa;
  pa.requests.push_back({4096, 64});
  pa.uppers.push_back(1);
  const uint64_t key_a = structure_key_of(pa, false);
  EXPECT_EQ(l->key(), key_a) << "after C came A";
  iteration(*l, a);
  EXPECT_NE(l->key(), key_a) << "after A comes B";
  ASSERT_NE(adapter_.published, nullptr);
  EXPECT_EQ(adapter_.published->prefix_hash.size(), 3u) << "B's plan: 2 requests";
  EXPECT_EQ(structure_key(adapter_.published->prefix_hash[2], 2), l->key());
  EXPECT_GE(l->counters().predictions_right.get(), 3u);
}

TEST_F(LearnerTest, ExplicitKeysWinOverPredictedOnes) {
  auto l = make(RequestIdentity::kSequence);
  for (int i = 0; i < 2; ++i) {
    iteration(*l, {{0, 4096}});
  }
  EXPECT_TRUE(l->key_predicted());
  l->end_iteration(false, {.tables = tables_, .backing = backing_, .planner = nullptr}, adapter_, 0, 9);
  EXPECT_FALSE(l->key_predicted());
  EXPECT_EQ(l->key(), 9u);
}

TEST_F(LearnerTest, WithoutPredictionUnkeyedIterationsAreOneVariant) {
  config_.predict_variants = false;
  auto l = make(RequestIdentity::kSequence);
  for (int i = 0; i < 4; ++i)
    iteration(*l, i % 2 ? std::vector<std::pair<uint64_t, uint64_t>>{{0, 1}, {0, 2}}
                        : std::vector<std::pair<uint64_t, uint64_t>>{{0, 1}});
  EXPECT_EQ(l->key(), 0u);
  EXPECT_EQ(l->counters().plans_made.get(), 0u);
}

}  // namespace
}  // namespace memplan::runtime
