// Background planning (ReplayConfig::plan_in_background): the thread whose
// iterations agree keeps profiling while a planner thread plans, adopts the
// plan at a later boundary, never adopts a plan of a profile that changed
// meanwhile, and survives the allocator's destruction and a fork.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "memplan/backing_allocator.h"
#include "memplan/replay.h"
#include "support/xorshift.h"

namespace memplan {
namespace {

// The C heap, counting the planner thread's requests to trim it.
class CountingHeap final : public HeapBacking {
 public:
  void release_free_memory() override { releases.fetch_add(1); }
  std::atomic<int> releases{0};
};

ReplayConfig background_config() {
  ReplayConfig config;
  config.profile_iterations = 2;
  config.max_slab_bytes = 16 << 20;
  config.max_threads = 4;
  config.huge_pages = false;
  config.planner = "greedy_by_size";
  config.plan_in_background = true;
  config.min_sequenced_size = 0;  // every request in the sequence
  return config;
}

// One iteration: blocks of `sizes`, each filled with a cookie, freed in a
// staggered order; returns false if a cookie was overwritten (two live blocks
// sharing bytes).
bool run_iteration(ReplayAllocator& a, const std::vector<size_t>& sizes) {
  std::vector<unsigned char*> live;
  bool intact = true;
  auto release = [&](size_t k) {
    for (size_t i = 0; i < sizes[k]; ++i) intact &= live[k][i] == static_cast<unsigned char>(k);
    a.deallocate(live[k]);
  };
  for (size_t k = 0; k < sizes.size(); ++k) {
    live.push_back(static_cast<unsigned char*>(a.allocate(sizes[k])));
    std::memset(live[k], static_cast<int>(k), sizes[k]);
    if (k >= 2) release(k - 2);
  }
  for (size_t k = sizes.size() >= 2 ? sizes.size() - 2 : 0; k < sizes.size(); ++k) release(k);
  return intact;
}

// Iterates (one mark after each) until the calling thread replays; false if it
// never does within about two seconds.
bool iterate_until_replaying(ReplayAllocator& a, const std::vector<size_t>& sizes) {
  for (int i = 0; i < 2000; ++i) {
    if (a.phase_of_calling_thread() == ReplayPhase::kReplaying) return true;
    if (!run_iteration(a, sizes)) return false;
    a.mark();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// Waits until the planner thread has finished `plans` plans (adopted or
// not); false if it has not within about five seconds.
bool wait_for_background_plans(ReplayAllocator& a, uint64_t plans) {
  for (int i = 0; i < 5000 && a.stats().background_plans < plans; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return a.stats().background_plans >= plans;
}

// Requests served from the slab during one iteration of `sizes` (marked).
uint64_t served_in_iteration(ReplayAllocator& a, const std::vector<size_t>& sizes, bool& intact) {
  const uint64_t before = a.stats().served;
  intact &= run_iteration(a, sizes);
  a.mark();
  return a.stats().served - before;
}

const std::vector<size_t> kPatternA = {64, 4096, 256, 100000, 32, 8192, 512, 48};
const std::vector<size_t> kPatternB = {128, 2048, 70000, 16, 1024, 96};

// A backing allocator whose trim waits until the test opens the gate: the
// planner thread trims before it marks a plan done, so while the gate is
// shut no plan is done.
class GatedBacking final : public BackingAllocator {
 public:
  void* allocate(size_t size, size_t alignment) override { return heap.allocate(size, alignment); }
  void* allocate_zeroed(size_t size) override { return heap.allocate_zeroed(size); }
  void* reallocate(void* p, size_t size) override { return heap.reallocate(p, size); }
  void deallocate(void* p) override { heap.deallocate(p); }
  size_t usable_size(void* p) override { return heap.usable_size(p); }
  void release_free_memory() override {
    while (!open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CountingHeap heap;
  std::atomic<bool> open{false};
};

TEST(ReplayBackgroundTest, BoundaryThatAgreesBeforeThePlanIsDoneKeepsProfilingAndALaterOneAdoptsIt) {
  GatedBacking backing;
  ReplayAllocator a(background_config(), backing);
  ASSERT_TRUE(run_iteration(a, kPatternA));
  a.mark();
  ASSERT_TRUE(run_iteration(a, kPatternA));
  a.mark();  // two iterations agree; the plan queued after the first is not done: not waited for
  EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kProfiling);
  EXPECT_EQ(a.stats().plans, 0u);
  backing.open = true;

  ASSERT_TRUE(iterate_until_replaying(a, kPatternA));
  const ReplayStats adopted = a.stats();
  EXPECT_EQ(adopted.plans, 1u);
  EXPECT_GT(adopted.max_plan_stall_ns, 0u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(run_iteration(a, kPatternA));
    a.mark();
  }
  const ReplayStats replayed = a.stats();
  EXPECT_EQ(replayed.served - adopted.served, 3 * kPatternA.size());
  EXPECT_EQ(replayed.deviations, 0u);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

// Note [Plans ahead of agreement]: with K = 2 a loop is served from its
// third iteration, the one after the two that agree, as when planning at
// the boundary; nothing is served before two iterations agreed.
TEST(ReplayBackgroundTest, ALoopIsServedFromTheIterationAfterTheTwoThatAgree) {
  CountingHeap backing;
  ReplayAllocator a(background_config(), backing);
  bool intact = true;
  EXPECT_EQ(served_in_iteration(a, kPatternA, intact), 0u);
  ASSERT_TRUE(wait_for_background_plans(a, 1)) << "the first iteration's plan is made ahead";
  EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kProfiling) << "one iteration is not an agreement";
  EXPECT_EQ(served_in_iteration(a, kPatternA, intact), 0u);
  EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kReplaying);
  EXPECT_EQ(served_in_iteration(a, kPatternA, intact), kPatternA.size()) << "iteration 3 is served";
  EXPECT_EQ(served_in_iteration(a, kPatternA, intact), kPatternA.size());
  EXPECT_TRUE(intact);
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.plans, 1u);
  EXPECT_EQ(s.deviations, 0u);
  EXPECT_EQ(s.profiled, 2 * kPatternA.size());
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

// The same with the one rule that is kept: an unchecked second iteration
// serves nothing. A loop whose second iteration differs is served from the
// iteration after the next two that agree.
TEST(ReplayBackgroundTest, APlanMadeAheadServesOnlyAfterAnIterationAgreesWithIt) {
  CountingHeap backing;
  ReplayAllocator a(background_config(), backing);
  bool intact = true;
  EXPECT_EQ(served_in_iteration(a, kPatternA, intact), 0u);
  ASSERT_TRUE(wait_for_background_plans(a, 1));
  EXPECT_EQ(served_in_iteration(a, kPatternB, intact), 0u) << "B does not agree with A's plan";
  EXPECT_NE(a.phase_of_calling_thread(), ReplayPhase::kReplaying);
  ASSERT_TRUE(wait_for_background_plans(a, 2)) << "B's plan is made ahead";
  EXPECT_EQ(served_in_iteration(a, kPatternB, intact), 0u);
  EXPECT_EQ(served_in_iteration(a, kPatternB, intact), kPatternB.size()) << "B's third iteration is served";
  EXPECT_TRUE(intact);
  EXPECT_EQ(a.stats().deviations, 0u);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

// Note [Trim after adoption]: the planner thread trims the backing
// allocator after it plans (the unit is profiling another iteration then)
// and again once the plan is adopted, when that iteration's blocks are free.
TEST(ReplayBackgroundTest, AdoptingABackgroundPlanTrimsTheBackingAllocatorAgain) {
  CountingHeap backing;
  ReplayAllocator a(background_config(), backing);
  ASSERT_TRUE(iterate_until_replaying(a, kPatternA));
  ASSERT_EQ(a.stats().plans, 1u);
  for (int i = 0; i < 2000 && backing.releases.load() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(backing.releases.load(), 2) << "one trim after planning, one after adoption";
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(run_iteration(a, kPatternA));
    a.mark();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(backing.releases.load(), 2) << "replayed iterations do not trim";

  CountingHeap untrimmed;
  ReplayConfig config = background_config();
  config.trim_backing = false;
  ReplayAllocator b(config, untrimmed);
  ASSERT_TRUE(iterate_until_replaying(b, kPatternA));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(untrimmed.releases.load(), 0);
}

TEST(ReplayBackgroundTest, PlanOfAProfileThatChangedMeanwhileIsNeverAdopted) {
  CountingHeap backing;
  ReplayAllocator a(background_config(), backing);
  ASSERT_TRUE(run_iteration(a, kPatternA));
  a.mark();
  // The job for pattern A is queued ahead; the program now runs pattern B.
  ASSERT_TRUE(iterate_until_replaying(a, kPatternB));
  EXPECT_EQ(a.stats().plans, 1u);
  const uint64_t served = a.stats().served;
  ASSERT_TRUE(run_iteration(a, kPatternB));
  a.mark();
  EXPECT_EQ(a.stats().served - served, kPatternB.size()) << "the plan adopted is not pattern B's";
  EXPECT_EQ(a.stats().deviations, 0u);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

TEST(ReplayBackgroundTest, APlanWhoseMaximaGrewMeanwhileIsAdoptedAndMadeAgain) {
  CountingHeap backing;
  ReplayAllocator a(background_config(), backing);
  ASSERT_TRUE(run_iteration(a, kPatternA));
  a.mark();
  // The job for A's sizes is queued ahead; the planner finishes it.
  ASSERT_TRUE(wait_for_background_plans(a, 1));
  std::vector<size_t> grown = kPatternA;
  grown[3] *= 2;  // the same structure, one request larger: the agreed maxima grow
  ASSERT_TRUE(run_iteration(a, grown));
  a.mark();
  // The finished plan is of narrower maxima: adopted all the same (replay
  // checks every size), and the grown profile is planned again.
  EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kReplaying);
  EXPECT_EQ(a.stats().plans, 1u);
  bool all_served = false;
  for (int i = 0; i < 2000 && !all_served; ++i) {
    const uint64_t before = a.stats().served;
    ASSERT_TRUE(run_iteration(a, grown));
    a.mark();
    all_served = a.stats().served - before == grown.size();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(all_served) << "the plan of the grown maxima was adopted";
  EXPECT_EQ(a.stats().plans, 2u);
  EXPECT_EQ(a.stats().reprofiles, 0u);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

TEST(ReplayBackgroundTest, DestroyingTheAllocatorWhileAPlanIsQueuedWaitsForThePlanner) {
  CountingHeap backing;
  ReplayConfig config = background_config();
  config.planner = "portfolio";
  config.plan_time_limit_seconds = 0.05;
  std::vector<size_t> sizes;
  for (size_t k = 0; k < 600; ++k) sizes.push_back(16 + (k * 7919) % 5000);
  {
    ReplayAllocator a(config, backing);
    ASSERT_TRUE(run_iteration(a, sizes));
    a.mark();  // the plan is queued ahead of agreement
    EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kProfiling);
  }  // the planner may still be running: the destructor stops and joins it
  SUCCEED();
}

TEST(ReplayBackgroundTest, ForkChildPlansAtItsBoundaryWithoutAThread) {
  CountingHeap backing;
  ReplayAllocator a(background_config(), backing);
  ASSERT_TRUE(run_iteration(a, kPatternA));
  a.mark();
  // A job is queued ahead for the parent's planner thread, which the child
  // lacks: the child drops it and plans at its boundary that agrees.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const bool replaying = iterate_until_replaying(a, kPatternA);
    const bool planned_at_once = a.stats().iterations <= 2;  // 1 in the parent, 1 that agrees
    bool intact = true;
    for (int i = 0; i < 3; ++i) {
      intact &= run_iteration(a, kPatternA);
      a.mark();
    }
    const ReplayStats s = a.stats();
    _exit(replaying && planned_at_once && intact && s.served > 0 && s.deviations == 0 && a.check_invariants().ok() ? 0
                                                                                                                   : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child did not replay cleanly";
  ASSERT_TRUE(iterate_until_replaying(a, kPatternA));
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

TEST(ReplayBackgroundTest, OnByDefaultAndTheKnobTurnsItOff) {
  auto config = replay_config_from_environment([](const char* name) -> const char* {
    return std::strcmp(name, "MEMPLAN_PLAN_IN_BACKGROUND") == 0 ? "0" : nullptr;
  });
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->plan_in_background);
  EXPECT_TRUE(ReplayConfig{}.plan_in_background);
  auto bad = replay_config_from_environment([](const char* name) -> const char* {
    return std::strcmp(name, "MEMPLAN_PLAN_IN_BACKGROUND") == 0 ? "maybe" : nullptr;
  });
  EXPECT_FALSE(bad.ok());
}

// Note [The slab fits its plans]: keyed variants of very different sizes in
// a random order, at most two plans held, planned in the background: the
// slab's pages go back and are mapped again as variants are evicted and come
// back, and no live block (one kept across a boundary included) ever loses
// its bytes or lands outside the mapping.
TEST(ReplayBackgroundTest, VariantsEvictedAndComingBackNeverLoseABlocksBytes) {
  ReplayConfig config = background_config();
  config.max_plans = 2;
  CountingHeap backing;
  ReplayAllocator a(config, backing);
  const std::vector<std::vector<size_t>> variants = {
      {64, 4096, 256, 100000}, {128, 2 << 20, 4096, 70000}, {32, 8192, 512}, {1 << 20, 3 << 20, 96, 48}, {16, 1024}};
  test_support::Xorshift rng{0x9E3779B97F4A7C15ull};
  unsigned char* kept = nullptr;
  constexpr size_t kKept = 5000;
  bool intact = true;
  int shrinks = 0;
  uint64_t mapping = 0;
  for (int it = 0; it < 400; ++it) {
    const size_t v = rng.below(variants.size());
    a.mark_key(v + 1);
    intact &= run_iteration(a, variants[v]);
    if (kept) {  // made in the iteration before: it lived across the boundary
      for (size_t i = 0; i < kKept; ++i) intact &= kept[i] == 0xC3;
      a.deallocate(kept);
      kept = nullptr;
    }
    if (rng.below(4) == 0) {
      kept = static_cast<unsigned char*>(a.allocate(kKept));
      std::memset(kept, 0xC3, kKept);
    }
    ASSERT_TRUE(intact) << "iteration " << it;
    ASSERT_TRUE(a.check_invariants().ok());
    const uint64_t now = a.stats().slab_bytes;
    shrinks += now < mapping ? 1 : 0;
    mapping = now;
    if (it % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // plans get done
  }
  if (kept) a.deallocate(kept);
  a.mark();
  const ReplayStats s = a.stats();
  EXPECT_GT(s.served, 0u);
  EXPECT_GT(s.evictions, 0u);
  EXPECT_EQ(s.invalid_frees, 0u);
  EXPECT_LE(s.plans_held, 2u);
  EXPECT_GT(shrinks, 0) << "switches to a smaller variant after a larger one's eviction give pages back";
}

}  // namespace
}  // namespace memplan
