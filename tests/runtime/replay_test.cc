// Replay allocator: profiling, planning, replay, and every kind of deviation,
// on a mock backing allocator that counts calls and can run out of memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "memplan/plan_file.h"
#include "memplan/replay.h"
#include "support/xorshift.h"

namespace memplan {
namespace {

class MockBacking final : public BackingAllocator {
 public:
  void* allocate(size_t size, size_t alignment) override {
    if (out_of_memory) return nullptr;
    ++allocations;
    void* p = nullptr;
    if (posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) : alignment, size ? size : 1) != 0) return nullptr;
    return p;
  }
  void* allocate_zeroed(size_t size) override {
    void* p = allocate(size, 16);
    if (p) std::memset(p, 0, size);
    return p;
  }
  void* reallocate(void* p, size_t size) override {
    if (out_of_memory) return nullptr;
    return std::realloc(p, size);
  }
  void deallocate(void* p) override {
    ++deallocations;
    std::free(p);
  }
  size_t usable_size(void*) override { return 0; }
  void release_free_memory() override { ++releases; }

  std::atomic<bool> out_of_memory{false};
  std::atomic<int64_t> releases{0};
  std::atomic<int64_t> allocations{0};
  std::atomic<int64_t> deallocations{0};
};

// Every live block, to prove that no two ever share a byte.
class LiveBlocks {
 public:
  void add(void* p, size_t size) {
    auto* b = static_cast<unsigned char*>(p);
    auto next = blocks_.lower_bound(b);
    if (next != blocks_.end()) {
      EXPECT_LE(b + size, next->first) << "block overlaps a live block after it";
    }
    if (next != blocks_.begin()) {
      auto prev = std::prev(next);
      EXPECT_LE(prev->first + prev->second, b) << "block overlaps a live block before it";
    }
    blocks_[b] = size;
  }
  void remove(void* p) { blocks_.erase(static_cast<unsigned char*>(p)); }

 private:
  std::map<unsigned char*, size_t> blocks_;
};

ReplayConfig test_config() {
  ReplayConfig config;
  config.profile_iterations = 2;
  config.deviations_to_reprofile = 2;
  config.max_slab_bytes = 16 << 20;
  config.max_threads = 8;
  config.huge_pages = false;
  config.planner = "greedy_by_size";
  // Every request takes a tick: the tests below are about the sequence; the
  // small-request pool (min_sequenced_size, on by default) has tests of its own.
  config.min_sequenced_size = 0;
  // The plan is adopted at the boundary that agreed, so that the tests can
  // say which iteration replays; replay_background_test covers the default.
  config.plan_in_background = false;
  return config;
}

// One iteration of a small chain-with-skips pattern: 8 allocations, each freed
// two allocations later, the last two at the end. Returns the pointers in order.
struct Iteration {
  std::vector<size_t> sizes = {1000, 2000, 3000, 4000, 500, 600, 700, 800};
};

void run_iteration(ReplayAllocator& a, const std::vector<size_t>& sizes, LiveBlocks& live,
                   std::vector<void*>* out = nullptr) {
  std::vector<void*> p(sizes.size(), nullptr);
  for (size_t i = 0; i < sizes.size(); ++i) {
    p[i] = a.allocate(sizes[i]);
    ASSERT_NE(p[i], nullptr);
    live.add(p[i], sizes[i]);
    std::memset(p[i], static_cast<int>(i + 1), sizes[i]);
    if (i >= 2) {
      for (size_t k = 0; k < sizes[i - 2]; ++k) {
        ASSERT_EQ(static_cast<unsigned char*>(p[i - 2])[k], static_cast<unsigned char>(i - 1)) << "cookie clobbered";
      }
      live.remove(p[i - 2]);
      a.deallocate(p[i - 2]);
    }
  }
  for (size_t i = sizes.size() >= 2 ? sizes.size() - 2 : 0; i < sizes.size(); ++i) {
    live.remove(p[i]);
    a.deallocate(p[i]);
  }
  if (out) *out = p;
}

TEST(ReplayTest, ServesTheThirdIterationFromTheSlab) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  ASSERT_TRUE(a.init_status().ok());
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  run_iteration(a, sizes, live);
  a.mark();
  EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kProfiling);
  run_iteration(a, sizes, live);
  a.mark();
  EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kReplaying);
  const int64_t backing_before = backing.allocations.load();
  std::vector<void*> pointers;
  run_iteration(a, sizes, live, &pointers);
  EXPECT_EQ(backing.allocations.load(), backing_before) << "a repeated iteration needs no backing allocation";
  for (void* p : pointers) EXPECT_TRUE(a.owns(p));
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.served, sizes.size());
  EXPECT_EQ(s.plans, 1u);
  EXPECT_EQ(s.planned_buffers, sizes.size());
  EXPECT_GT(s.slab_bytes, 0u);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

// ReplayConfig::min_sequenced_size: small requests whose number changes
// from one iteration to the next take no tick, so the larger ones still make
// one sequence that is learnt and served. Without a small-request pool the
// backing allocator serves them; with one (Note [Small-request pool], the
// default) the thread's window does. Either way their bytes stay theirs.
void run_small_requests_outside_the_sequence(bool pool) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.min_sequenced_size = 256;
  if (!pool) config.small_pool_bytes = 0;
  ReplayAllocator a(config, backing);
  ASSERT_TRUE(a.init_status().ok());
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  for (int iteration = 0; iteration < 5; ++iteration) {
    // 1 + iteration small blocks before the sequence, kept across it.
    std::vector<void*> small;
    for (int k = 0; k <= iteration; ++k) {
      small.push_back(a.allocate(192));
      ASSERT_NE(small.back(), nullptr);
      EXPECT_EQ(a.owns(small.back()), pool) << "a small request is the pool's, or the backing allocator's";
      live.add(small.back(), 192);
      std::memset(small.back(), 0x40 + k, 192);
    }
    const int64_t backing_before = backing.allocations.load();
    std::vector<void*> pointers;
    run_iteration(a, sizes, live, &pointers);
    if (iteration >= 2) {
      EXPECT_EQ(backing.allocations.load(), backing_before) << "iteration " << iteration;
      for (void* p : pointers) EXPECT_TRUE(a.owns(p));
    }
    for (size_t k = 0; k < small.size(); ++k) {
      for (size_t b = 0; b < 192; ++b) {
        ASSERT_EQ(static_cast<unsigned char*>(small[k])[b], 0x40 + k) << "a small block was clobbered";
      }
      live.remove(small[k]);
      a.deallocate(small[k]);
    }
    a.mark();
  }
  const ReplayStats s = a.stats();
  EXPECT_EQ(pool ? s.pooled : s.small, 1u + 2 + 3 + 4 + 5);
  EXPECT_EQ(pool ? s.small : s.pooled, 0u);
  EXPECT_EQ(s.pool_bytes, pool ? 64u << 10 : 0u) << "one class, one chunk";
  EXPECT_EQ(s.served, 3 * sizes.size());
  EXPECT_EQ(s.plans, 1u);
  EXPECT_EQ(s.invalid_frees, 0u);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

TEST(ReplayTest, RequestsBelowMinSequencedSizeTakeNoPlaceInTheSequence) {
  run_small_requests_outside_the_sequence(false);
}

TEST(ReplayTest, SmallRequestPoolServesRequestsOutsideTheSequence) { run_small_requests_outside_the_sequence(true); }

// The defaults: requests below 4 KiB and a header (4,160 B) are pooled and
// take no tick; the larger ones make the sequence that is planned and served.
TEST(ReplayTest, ByDefaultRequestsBelow4KiBAndAHeaderArePooledAndTheRestPlanned) {
  EXPECT_EQ(ReplayConfig{}.min_sequenced_size, 4160);
  EXPECT_EQ(ReplayConfig{}.small_pool_bytes, 64 << 20);
  MockBacking backing;
  ReplayConfig config;
  config.max_slab_bytes = 16 << 20;
  config.max_threads = 2;
  config.plan_in_background = false;
  ReplayAllocator a(config, backing);
  ASSERT_TRUE(a.init_status().ok());
  LiveBlocks live;
  // 4 of 8 below 4,160 B (4,129 B: a Python bytes object of a 4 KiB read)
  const std::vector<size_t> sizes = {1000, 4129, 9000, 8192, 500, 4159, 12000, 4160};
  std::vector<void*> pointers;
  for (int iteration = 0; iteration < 3; ++iteration) {
    run_iteration(a, sizes, live, &pointers);
    a.mark();
  }
  for (void* p : pointers) EXPECT_TRUE(a.owns(p));
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.pooled, 3u * 4);
  EXPECT_EQ(s.served, 4u);  // the third iteration's 9000, 8192, 12000 and 4160 B
  EXPECT_EQ(s.profiled, 2u * 4);
  EXPECT_EQ(s.small, 0u);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

// Random small requests and frees, with a cookie in every block: no block is
// handed out twice while live, no block is smaller than its request, and a
// second run of the same requests commits nothing more (freed blocks are reused).
TEST(ReplayTest, SmallPoolBlocksAreNeverSharedAndAreReused) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.min_sequenced_size = 4097;
  ReplayAllocator a(config, backing);
  ASSERT_TRUE(a.init_status().ok());
  std::vector<uint64_t> committed;
  for (int round = 0; round < 2; ++round) {
    uint64_t state = 12345;  // the same requests in both rounds
    auto next = [&state] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
    LiveBlocks live;
    std::vector<std::pair<unsigned char*, size_t>> held;
    for (int op = 0; op < 20000; ++op) {
      if (held.empty() || next() % 3 != 0) {
        const size_t size = 1 + next() % 4096;
        auto* p = static_cast<unsigned char*>(a.allocate(size));
        ASSERT_NE(p, nullptr);
        ASSERT_TRUE(a.owns(p));
        ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
        ASSERT_GE(a.usable_size(p), size);
        live.add(p, size);
        std::memset(p, static_cast<int>(size & 0xff), size);
        held.push_back({p, size});
      } else {
        const size_t k = next() % held.size();
        auto [p, size] = held[k];
        for (size_t b = 0; b < size; ++b) ASSERT_EQ(p[b], static_cast<unsigned char>(size & 0xff)) << "cookie";
        live.remove(p);
        a.deallocate(p);
        held[k] = held.back();
        held.pop_back();
      }
    }
    for (auto [p, size] : held) {
      live.remove(p);
      a.deallocate(p);
    }
    committed.push_back(a.stats().pool_bytes);
    ASSERT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
  }
  EXPECT_EQ(committed[1], committed[0]) << "the second round reuses the first round's blocks";
  EXPECT_EQ(a.stats().small, 0u);
  EXPECT_EQ(a.stats().invalid_frees, 0u);
}

// Blocks freed by another thread go to the owner's remote stack and are
// served to the owner again.
TEST(ReplayTest, SmallPoolTakesBackBlocksFreedByOtherThreads) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.min_sequenced_size = 1024;
  ReplayAllocator a(config, backing);
  ASSERT_TRUE(a.init_status().ok());
  constexpr int kBlocks = 500;
  std::set<void*> first;
  for (int k = 0; k < kBlocks; ++k) first.insert(a.allocate(100));
  ASSERT_EQ(first.size(), size_t{kBlocks});
  const uint64_t bytes = a.stats().pool_bytes;
  std::thread other([&] {
    for (void* p : first) a.deallocate(p);
  });
  other.join();
  std::set<void*> second;
  for (int k = 0; k < kBlocks; ++k) second.insert(a.allocate(100));
  EXPECT_EQ(second, first) << "the owner reuses what the other thread freed";
  EXPECT_EQ(a.stats().pool_bytes, bytes);
  EXPECT_EQ(a.stats().invalid_frees, 0u);
  for (void* p : second) a.deallocate(p);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

TEST(ReplayTest, SmallPoolIgnoresDoubleAndInteriorFrees) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.min_sequenced_size = 1024;
  ReplayAllocator a(config, backing);
  ASSERT_TRUE(a.init_status().ok());
  void* p = a.allocate(64);
  void* q = a.allocate(64);
  a.deallocate(p);
  a.deallocate(p);  // double free: counted, ignored
  EXPECT_EQ(a.stats().invalid_frees, 1u);
  a.deallocate(static_cast<unsigned char*>(q) + 16);  // interior pointer
  EXPECT_EQ(a.stats().invalid_frees, 2u);
  EXPECT_EQ(a.usable_size(p), 0u) << "a free block has no usable size";
  void* r = a.allocate(64);
  void* t = a.allocate(64);
  EXPECT_NE(r, t) << "a double free must not hand one block out twice";
  EXPECT_NE(t, q);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
  for (void* x : {q, r, t}) a.deallocate(x);
}

TEST(ReplayTest, SmallPoolFullFallsBackToTheBackingAllocator) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.min_sequenced_size = 1024;
  config.small_pool_bytes = 64 << 10;  // one chunk
  ReplayAllocator a(config, backing);
  ASSERT_TRUE(a.init_status().ok());
  std::vector<void*> blocks;
  for (int k = 0; k < (64 << 10) / 16; ++k) {
    blocks.push_back(a.allocate(16));
    ASSERT_TRUE(a.owns(blocks.back()));
  }
  void* beyond = a.allocate(16);
  EXPECT_FALSE(a.owns(beyond)) << "the chunk is full";
  void* other_class = a.allocate(500);
  EXPECT_FALSE(a.owns(other_class)) << "no chunk is left for another class";
  EXPECT_EQ(a.stats().small, 2u);
  EXPECT_EQ(a.stats().pool_bytes, 64u << 10);
  a.deallocate(blocks[7]);
  EXPECT_EQ(a.allocate(16), blocks[7]) << "a freed block is served again";
  for (void* p : blocks) a.deallocate(p);
  a.deallocate(beyond);
  a.deallocate(other_class);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

TEST(ReplayTest, SmallPoolBlocksReallocateAndZero) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.min_sequenced_size = 1024;
  ReplayAllocator a(config, backing);
  ASSERT_TRUE(a.init_status().ok());
  auto* p = static_cast<unsigned char*>(a.allocate(100));
  EXPECT_EQ(a.usable_size(p), 112u);
  std::memset(p, 0x5a, 100);
  EXPECT_EQ(a.reallocate(p, 110), p) << "grows in place inside its class";
  auto* q = static_cast<unsigned char*>(a.reallocate(p, 3000));
  ASSERT_NE(q, nullptr);
  ASSERT_NE(q, p);
  for (int b = 0; b < 100; ++b) ASSERT_EQ(q[b], 0x5a);
  // p went back to its class: calloc of the same class reuses it, zeroed.
  auto* z = static_cast<unsigned char*>(a.allocate_zeroed(100));
  EXPECT_EQ(z, p);
  for (int b = 0; b < 100; ++b) ASSERT_EQ(z[b], 0);
  a.deallocate(q);
  a.deallocate(z);
  EXPECT_EQ(a.stats().invalid_frees, 0u);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

// Alignments up to 64 (libtorch's storages) are pooled; larger alignments
// and requests above the pool's largest class go to the backing allocator,
// as without a pool.
TEST(ReplayTest, SmallPoolServesAlignmentsUpTo64) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.min_sequenced_size = 16384;
  ReplayAllocator a(config, backing);
  ASSERT_TRUE(a.init_status().ok());
  LiveBlocks live;
  std::vector<void*> pooled;
  for (size_t alignment : {32, 64}) {
    for (size_t size : {0, 1, 17, 48, 65, 100, 200, 257, 300, 1000, 4000, 4096, 4129, 8000, 8192}) {
      for (int k = 0; k < 3; ++k) {
        void* p = a.allocate(size, alignment);
        ASSERT_TRUE(a.owns(p)) << size << " aligned to " << alignment;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u) << size << " aligned to " << alignment;
        EXPECT_GE(a.usable_size(p), size);
        live.add(p, size);
        pooled.push_back(p);
      }
    }
  }
  void* aligned = a.allocate(100, 128);
  void* large = a.allocate(9000);
  EXPECT_FALSE(a.owns(aligned));
  EXPECT_FALSE(a.owns(large));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(aligned) % 128, 0u);
  EXPECT_EQ(a.stats().small, 2u);
  EXPECT_EQ(a.stats().pooled, pooled.size());
  for (void* p : pooled) a.deallocate(p);
  a.deallocate(aligned);
  a.deallocate(large);
  EXPECT_EQ(a.stats().invalid_frees, 0u);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

// Without it, the same program never agrees: its sequences differ in length.
TEST(ReplayTest, SmallRequestsOfAVaryingCountKeepIterationsApartWithoutMinSequencedSize) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.predict_variants = false;
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  for (int iteration = 0; iteration < 5; ++iteration) {
    std::vector<void*> small;
    for (int k = 0; k <= iteration; ++k) small.push_back(a.allocate(192));
    run_iteration(a, Iteration().sizes, live);
    for (void* p : small) a.deallocate(p);
    a.mark();
  }
  EXPECT_EQ(a.stats().served, 0u);
  EXPECT_EQ(a.stats().small, 0u);
}

TEST(ReplayTest, StartUpBeforeTheFirstMarkIsNotProfiledWhenSwitchedOff) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.profile_before_first_mark = false;
  ReplayAllocator a(config, backing);
  ASSERT_TRUE(a.init_status().ok());
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  // Start-up: a different pattern, which must not count as a profile.
  run_iteration(a, {sizes[0], sizes[0], sizes[0]}, live);
  a.mark();
  EXPECT_EQ(a.stats().profiled, 0u);
  run_iteration(a, sizes, live);
  a.mark();
  EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kProfiling) << "one profile is not enough";
  run_iteration(a, sizes, live);
  a.mark();
  EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kReplaying);
  EXPECT_EQ(a.stats().profiled, 2 * sizes.size());
  std::vector<void*> pointers;
  run_iteration(a, sizes, live, &pointers);
  for (void* p : pointers) EXPECT_TRUE(a.owns(p));
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

TEST(ReplayTest, ReplayedBlocksReuseBytesAsPlanned) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  for (int i = 0; i < 2; ++i) {
    run_iteration(a, sizes, live);
    a.mark();
  }
  // The plan is smaller than the sum of sizes: blocks with disjoint lifetimes share bytes.
  size_t total = 0;
  for (size_t s : sizes) total += s;
  EXPECT_LT(a.stats().slab_bytes, total + 4096);
  std::vector<void*> first, second;
  run_iteration(a, sizes, live, &first);
  a.mark();
  run_iteration(a, sizes, live, &second);
  EXPECT_EQ(first, second) << "every iteration gets the same planned addresses";
}

TEST(ReplayTest, DoesNotPlanIterationsThatDisagree) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  for (size_t n = 1; n <= 4; ++n) {
    run_iteration(a, std::vector<size_t>(n + 2, 100 * n), live);
    a.mark();
    EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kProfiling);
  }
  EXPECT_EQ(a.stats().plans, 0u);
}

void reach_replay(ReplayAllocator& a, const std::vector<size_t>& sizes, LiveBlocks& live) {
  run_iteration(a, sizes, live);
  a.mark();
  run_iteration(a, sizes, live);
  a.mark();
  ASSERT_EQ(a.phase_of_calling_thread(), ReplayPhase::kReplaying);
}

TEST(ReplayTest, LargerRequestFallsBackForTheRestOfTheIteration) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  sizes[3] = 100000;  // grows
  std::vector<void*> p;
  run_iteration(a, sizes, live, &p);
  EXPECT_TRUE(a.owns(p[2]));
  EXPECT_FALSE(a.owns(p[3]));
  EXPECT_FALSE(a.owns(p[4])) << "the rest of a deviating iteration goes to the backing allocator";
  a.mark();
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.deviations, 1u);
  EXPECT_EQ(s.served, 3u);
  EXPECT_EQ(s.fallback, 5u);
  EXPECT_TRUE(a.check_invariants().ok());
}

TEST(ReplayTest, SmallerRequestIsServedFromItsPlannedBlock) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  sizes[1] = 10;
  std::vector<void*> p;
  run_iteration(a, sizes, live, &p);
  for (void* q : p) EXPECT_TRUE(a.owns(q));
  EXPECT_EQ(a.stats().deviations, 0u);
}

TEST(ReplayTest, ExtraRequestsGoToTheBackingAllocator) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.predict_variants = false;  // with prediction a longer iteration is another variant, not a deviation
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  sizes.push_back(64);
  sizes.push_back(64);
  std::vector<void*> p;
  run_iteration(a, sizes, live, &p);
  EXPECT_TRUE(a.owns(p[7]));
  EXPECT_FALSE(a.owns(p[8]));
  a.mark();
  EXPECT_EQ(a.stats().deviations, 1u);
}

TEST(ReplayTest, BlockKeptAcrossTheBoundaryIsNeverOverlapped) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  // This iteration keeps its last block past the boundary (it was planned
  // to die at the iteration's end, so this iteration itself is on plan).
  std::vector<void*> p(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    p[i] = a.allocate(sizes[i]);
    ASSERT_TRUE(a.owns(p[i]));
    live.add(p[i], sizes[i]);
    if (i >= 2) {
      live.remove(p[i - 2]);
      a.deallocate(p[i - 2]);
    }
  }
  live.remove(p[sizes.size() - 2]);
  a.deallocate(p[sizes.size() - 2]);
  void* kept = p.back();
  const size_t kept_size = sizes.back();
  std::memset(kept, 0x5a, kept_size);
  a.mark();
  // While `kept` lives, the next iteration must not touch the slab.
  std::vector<void*> next;
  run_iteration(a, sizes, live, &next);
  for (void* p : next) EXPECT_FALSE(a.owns(p));
  for (size_t k = 0; k < kept_size; ++k) ASSERT_EQ(static_cast<unsigned char*>(kept)[k], 0x5a);
  live.remove(kept);
  a.deallocate(kept);
  a.mark();
  // Freed: replay resumes.
  run_iteration(a, sizes, live, &next);
  for (void* p : next) EXPECT_TRUE(a.owns(p));
  EXPECT_TRUE(a.check_invariants().ok());
}

TEST(ReplayTest, LateFreeMakesLaterRequestsFallBack) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  // Same requests, but no block is freed until the end.
  std::vector<void*> p;
  for (size_t i = 0; i < sizes.size(); ++i) {
    p.push_back(a.allocate(sizes[i]));
    live.add(p.back(), sizes[i]);  // fails the test on any overlap
    std::memset(p.back(), static_cast<int>(i), sizes[i]);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    for (size_t k = 0; k < sizes[i]; ++k) ASSERT_EQ(static_cast<unsigned char*>(p[i])[k], i);
    live.remove(p[i]);
    a.deallocate(p[i]);
  }
  a.mark();
  EXPECT_EQ(a.stats().deviations, 1u);
  EXPECT_GT(a.stats().fallback, 0u);
}

TEST(ReplayTest, ReprofilesAfterConsecutiveDeviatingIterations) {
  MockBacking backing;
  ReplayConfig config = test_config();  // deviations_to_reprofile = 2
  config.upper_bound_plans = false;     // else the grown sizes are a growth, not a re-profile
  config.predict_variants = false;      // else other sizes are another variant, not a deviation
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  const std::vector<size_t> grown(sizes.size(), 5000);
  run_iteration(a, grown, live);
  a.mark();
  EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kReplaying);
  run_iteration(a, grown, live);
  a.mark();
  EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kProfiling);
  EXPECT_EQ(a.stats().reprofiles, 1u);
  // The new pattern is learnt and served.
  reach_replay(a, grown, live);
  std::vector<void*> p;
  run_iteration(a, grown, live, &p);
  for (void* q : p) EXPECT_TRUE(a.owns(q));
  EXPECT_EQ(a.stats().plans, 2u);
  EXPECT_TRUE(a.check_invariants().ok());
}

TEST(ReplayTest, TrimsTheBackingAllocatorOncePerPlan) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  run_iteration(a, sizes, live);
  a.mark();
  EXPECT_EQ(backing.releases.load(), 0) << "profiling alone keeps the backing allocator's cache";
  run_iteration(a, sizes, live);
  a.mark();
  ASSERT_EQ(a.phase_of_calling_thread(), ReplayPhase::kReplaying);
  EXPECT_EQ(backing.releases.load(), 1);
  for (int it = 0; it < 3; ++it) {
    run_iteration(a, sizes, live);
    a.mark();
  }
  EXPECT_EQ(backing.releases.load(), 1) << "replayed iterations do not trim again";
  // A changed pattern is re-profiled and re-planned: one more trim.
  const std::vector<size_t> grown(sizes.size(), 5000);
  for (int it = 0; it < 4; ++it) {
    run_iteration(a, grown, live);
    a.mark();
  }
  ASSERT_EQ(a.stats().plans, 2u);
  EXPECT_EQ(backing.releases.load(), 2);
}

TEST(ReplayTest, KeepsTheBackingAllocatorsCacheWhenTrimmingIsOff) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.trim_backing = false;
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  ASSERT_EQ(a.stats().plans, 1u);
  EXPECT_EQ(backing.releases.load(), 0);
}

TEST(ReplayTest, APageOptimalGreedyPlanIsServedWithoutTheConfiguredPlanner) {
  // Note [Page-optimal plans]: the chain's greedy plan needs no more pages
  // than its load, so the configured planner (here one that does not exist,
  // and would fail) is never asked.
  MockBacking backing;
  ReplayConfig config = test_config();
  config.planner = "no_such_planner";
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  EXPECT_EQ(a.stats().plans, 1u);
  EXPECT_EQ(a.stats().plan_failures, 0u);
  std::vector<void*> p;
  run_iteration(a, sizes, live, &p);
  for (void* q : p) EXPECT_TRUE(a.owns(q));
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

TEST(ReplayTest, EscapingBlocksStayWithTheBackingAllocator) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  std::vector<void*> escaped;
  for (int it = 0; it < 3; ++it) {
    void* kept = a.allocate(4096);  // never freed within the iteration
    void* temp = a.allocate(100);
    a.deallocate(temp);
    escaped.push_back(kept);
    if (it == 2) {
      EXPECT_FALSE(a.owns(kept));
      EXPECT_TRUE(a.owns(temp) || temp != nullptr);
    }
    a.mark();
  }
  EXPECT_EQ(a.stats().planned_buffers, 1u);
  for (void* p : escaped) a.deallocate(p);
}

TEST(ReplayTest, BackingOutOfMemoryIsReportedAsNull) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.min_planned_size = 1000;  // the 500..800 B requests stay with the backing allocator
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  backing.out_of_memory = true;
  // Planned requests are still served; unplanned ones fail cleanly.
  std::vector<void*> p;
  for (size_t i = 0; i < sizes.size(); ++i) p.push_back(a.allocate(sizes[i]));
  EXPECT_NE(p[0], nullptr);
  EXPECT_TRUE(a.owns(p[0]));
  EXPECT_EQ(p[4], nullptr);
  for (void* q : p) a.deallocate(q);
  backing.out_of_memory = false;
  EXPECT_TRUE(a.check_invariants().ok());
}

TEST(ReplayTest, ProfilingPassesBackingOutOfMemoryThrough) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  backing.out_of_memory = true;
  EXPECT_EQ(a.allocate(100), nullptr);
  EXPECT_EQ(a.allocate_zeroed(100), nullptr);
  backing.out_of_memory = false;
  a.mark();
  EXPECT_TRUE(a.check_invariants().ok());
}

TEST(ReplayTest, ReallocStaysInPlaceWhenItFitsAndMovesOtherwise) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  void* p = a.allocate(sizes[0]);
  ASSERT_TRUE(a.owns(p));
  std::memset(p, 7, sizes[0]);
  EXPECT_EQ(a.reallocate(p, sizes[0] / 2), p);
  EXPECT_EQ(a.usable_size(p), sizes[0]);
  void* q = a.reallocate(p, sizes[0] * 10);
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(a.owns(q));
  for (size_t k = 0; k < sizes[0] / 2; ++k) ASSERT_EQ(static_cast<unsigned char*>(q)[k], 7);
  a.deallocate(q);
  EXPECT_EQ(a.stats().invalid_frees, 0u);
  EXPECT_TRUE(a.check_invariants().ok());
}

TEST(ReplayTest, FreeOfAPointerThatIsNotABlockIsIgnored) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  void* p = a.allocate(sizes[0]);
  ASSERT_TRUE(a.owns(p));
  a.deallocate(static_cast<char*>(p) + 8);  // inside the block, not its start
  a.deallocate(p);
  a.deallocate(p);  // twice
  EXPECT_EQ(a.stats().invalid_frees, 2u);
  EXPECT_TRUE(a.check_invariants().ok());
}

TEST(ReplayTest, FastPathEntryPointsDeclineWithoutSideEffects) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  EXPECT_EQ(a.serve_from_slab(sizes[0]), nullptr) << "a profiling thread is never served";
  void* foreign = a.allocate(sizes[0]);  // profiled: from the backing allocator
  EXPECT_FALSE(a.release_to_slab(foreign)) << "not a slab pointer: left to the caller";
  a.deallocate(foreign);
  a.mark();
  reach_replay(a, sizes, live);
  EXPECT_EQ(a.serve_from_slab(sizes[0] + 1), nullptr) << "larger than planned: declined";
  const int64_t backing_before = backing.allocations.load();
  void* p = a.serve_from_slab(sizes[0]);
  ASSERT_NE(p, nullptr) << "the declined request consumed nothing: tick 0 is still next";
  EXPECT_TRUE(a.owns(p));
  EXPECT_EQ(a.usable_size(p), sizes[0]);
  EXPECT_TRUE(a.release_to_slab(p));
  EXPECT_EQ(backing.allocations.load(), backing_before);
  EXPECT_EQ(a.stats().invalid_frees, 0u);
  EXPECT_TRUE(a.release_to_slab(p)) << "a slab pointer, even freed twice, never reaches the backing allocator";
  EXPECT_EQ(a.stats().invalid_frees, 1u);
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

TEST(ReplayTest, AlignedRequestsAreServedAlignedFromTheSlab) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  const std::vector<size_t> alignments = {16, 64, 256, 4096, 64, 16};
  std::vector<void*> first;
  for (int iteration = 0; iteration < 4; ++iteration) {
    std::vector<void*> blocks;
    for (size_t k = 0; k < alignments.size(); ++k) {
      void* p = a.allocate(100 + 10 * k, alignments[k]);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignments[k], 0u) << "alignment " << alignments[k];
      std::memset(p, 0x5a, 100 + 10 * k);
      blocks.push_back(p);
    }
    if (iteration == 3) {
      for (void* p : blocks) EXPECT_TRUE(a.owns(p)) << "served from the slab in the replayed iteration";
    }
    for (void* p : blocks) a.deallocate(p);
    a.mark();
  }
  EXPECT_EQ(a.stats().served, 2 * alignments.size());
  EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
}

TEST(ReplayTest, CallocFromTheSlabIsZeroed) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  for (int it = 0; it < 3; ++it) {
    auto* p = static_cast<unsigned char*>(a.allocate_zeroed(4000));
    ASSERT_NE(p, nullptr);
    for (int k = 0; k < 4000; ++k) ASSERT_EQ(p[k], 0);
    std::memset(p, 0xff, 4000);
    if (it == 2) EXPECT_TRUE(a.owns(p));
    a.deallocate(p);
    a.mark();
  }
}

TEST(ReplayTest, ThreadsLearnTheirOwnPatterns) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  constexpr int kThreads = 4;
  std::atomic<int> served_last{0};
  std::barrier<> sync(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      LiveBlocks live;
      std::vector<size_t> sizes(6 + t, 256 * (t + 1));
      // Iterations in lock step: everyone done, one mark, everyone on.
      for (int it = 0; it < 3; ++it) {
        std::vector<void*> p;
        run_iteration(a, sizes, live, &p);
        if (it == 2) {
          bool all = true;
          for (void* q : p) all = all && a.owns(q);
          if (all) served_last.fetch_add(1);
        }
        sync.arrive_and_wait();
        if (t == 0) a.mark();
        sync.arrive_and_wait();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(a.check_invariants().ok());
  EXPECT_EQ(served_last.load(), kThreads) << "every thread's third iteration is served from its slab";
  EXPECT_EQ(a.stats().threads, static_cast<uint64_t>(kThreads));
}

TEST(ReplayTest, IterationGuardMarksTheEndOfEachIteration) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> sizes = Iteration().sizes;
  std::vector<void*> last;
  for (int it = 0; it < 3; ++it) {
    IterationGuard guard(a);
    run_iteration(a, sizes, live, &last);
  }
  for (void* p : last) EXPECT_TRUE(a.owns(p)) << "the third guarded iteration is replayed";
  EXPECT_EQ(a.stats().iterations, 3u);
}

TEST(ReplayTest, KnobsComeFromTheEnvironment) {
  auto lookup = [](const char* name) -> const char* {
    const std::string n(name);
    if (n == "MEMPLAN_PROFILE_ITERATIONS") return "5";
    if (n == "MEMPLAN_HUGE_PAGES") return "0";
    if (n == "MEMPLAN_PLANNER") return "greedy_by_size";
    if (n == "MEMPLAN_TRIM_BACKING") return "0";
    if (n == "MEMPLAN_MIN_SEQUENCED_SIZE") return "256";
    if (n == "MEMPLAN_PLAN_TIME_SHARE") return "0.1";
    if (n == "MEMPLAN_SMALL_POOL_BYTES") return "1048576";
    return nullptr;
  };
  StatusOr<ReplayConfig> config = replay_config_from_environment(lookup);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->min_sequenced_size, 256);
  EXPECT_EQ(config->small_pool_bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(config->plan_time_share, 0.1);
  EXPECT_EQ(config->profile_iterations, 5);
  EXPECT_FALSE(config->huge_pages);
  EXPECT_EQ(config->planner, "greedy_by_size");
  EXPECT_EQ(config->deviations_to_reprofile, ReplayConfig{}.deviations_to_reprofile);
  EXPECT_FALSE(config->trim_backing);
  EXPECT_EQ(config->color_span_bytes, 0);
  EXPECT_EQ(replay_knobs().size(), 26u);  // MEMPLAN_STATS and MEMPLAN_BACKING are rows too
}

// One bad value rejects that knob only: the others still apply.
TEST(ReplayTest, AMalformedKnobKeepsItsDefaultAndTheOthersApply) {
  auto lookup = [](const char* name) -> const char* {
    const std::string n(name);
    if (n == "MEMPLAN_PROFILE_ITERATIONS") return "5";
    if (n == "MEMPLAN_HUGE_PAGES") return "maybe";
    if (n == "MEMPLAN_PLANNER") return "greedy_by_siz";
    if (n == "MEMPLAN_PLAN_TIME_LIMIT") return "-1";
    if (n == "MEMPLAN_TRIM_BACKING") return "Off";
    if (n == "MEMPLAN_SMALL_POOL_BYTES") return "67108865";  // above the pool's 64 MiB
    return nullptr;
  };
  std::vector<std::string> rejected;
  const ReplayConfig config = read_replay_config(lookup, &rejected);
  EXPECT_EQ(config.profile_iterations, 5);
  EXPECT_EQ(config.huge_pages, ReplayConfig{}.huge_pages);
  EXPECT_EQ(config.planner, ReplayConfig{}.planner);
  EXPECT_EQ(config.plan_time_limit_seconds, ReplayConfig{}.plan_time_limit_seconds);
  EXPECT_FALSE(config.trim_backing);
  EXPECT_EQ(config.small_pool_bytes, ReplayConfig{}.small_pool_bytes);
  ASSERT_EQ(rejected.size(), 4u);
  EXPECT_NE(rejected[0].find("MEMPLAN_SMALL_POOL_BYTES='67108865': expected an integer >= 0 and <= 67108864"),
            std::string::npos)
      << rejected[0];
  EXPECT_NE(rejected[1].find("MEMPLAN_HUGE_PAGES='maybe'"), std::string::npos) << rejected[1];
  EXPECT_NE(rejected[2].find("MEMPLAN_PLANNER='greedy_by_siz': no such planner"), std::string::npos) << rejected[2];
  EXPECT_NE(rejected[3].find("MEMPLAN_PLAN_TIME_LIMIT='-1'"), std::string::npos) << rejected[3];
  // The strict form fails on the first of them.
  EXPECT_NE(replay_config_from_environment(lookup).status().message().find("MEMPLAN_SMALL_POOL_BYTES"),
            std::string::npos);
}

TEST(ReplayTest, SwitchesAcceptTheUsualSpellings) {
  for (const char* on : {"1", "on", "ON", "true", "True", "yes"}) EXPECT_EQ(parse_switch(on), true) << on;
  for (const char* off : {"0", "off", "false", "FALSE", "no"}) EXPECT_EQ(parse_switch(off), false) << off;
  for (const char* bad : {"", "2", "enabled", "y"}) EXPECT_FALSE(parse_switch(bad).has_value()) << bad;
  EXPECT_FALSE(parse_switch(nullptr).has_value());
}

const char* g_color_span = nullptr;  // what the lookup below answers for MEMPLAN_COLOR_SPAN

TEST(ReplayTest, ColourSpanMustBeAMultipleOf64) {
  for (const char* bad : {"100", "-64", "2097152"}) {
    g_color_span = bad;
    auto lookup = [](const char* name) -> const char* {
      return std::string(name) == "MEMPLAN_COLOR_SPAN" ? g_color_span : nullptr;
    };
    StatusOr<ReplayConfig> config = replay_config_from_environment(lookup);
    ASSERT_FALSE(config.ok()) << bad;
    EXPECT_NE(config.status().message().find("MEMPLAN_COLOR_SPAN"), std::string::npos);
  }
  auto good = [](const char* name) -> const char* {
    return std::string(name) == "MEMPLAN_COLOR_SPAN" ? "4096" : nullptr;
  };
  StatusOr<ReplayConfig> config = replay_config_from_environment(good);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->color_span_bytes, 4096);
}

// Blocks whose size plus header is a multiple of 4 KiB land at addresses that
// agree modulo 4 KiB; colouring spreads them, and the served blocks still
// keep their cookies (run_iteration checks) and pass check_invariants.
TEST(ReplayTest, ColouringSpreadsPlannedBlocksBelowThePageSize) {
  auto residues = [](int64_t color_span) {
    MockBacking backing;
    ReplayConfig config = test_config();
    config.color_span_bytes = color_span;
    ReplayAllocator a(config, backing);
    LiveBlocks live;
    // 64 B header: a block this large is planned 64 B-aligned (Note [Aligned large blocks], profile_plan.cc).
    const std::vector<size_t> sizes(12, 16384 - 64);
    std::vector<void*> last;
    for (int it = 0; it < 3; ++it) {
      run_iteration(a, sizes, live, &last);
      a.mark();
    }
    std::set<uintptr_t> out;
    for (void* p : last) {
      EXPECT_TRUE(a.owns(p)) << "the third iteration is served from the slab";
      out.insert(reinterpret_cast<uintptr_t>(p) % 4096);
    }
    EXPECT_TRUE(a.check_invariants().ok());
    return out.size();
  };
  EXPECT_EQ(residues(0), 1u) << "without colouring every block shares its address bits below 4 KiB";
  EXPECT_GE(residues(4096), 6u);
}

// Note [Aligned large blocks] (profile_plan.cc): requests of 4 KiB and more
// that ask for malloc's 16 B are served at cache-line (64 B) addresses,
// with or without colouring; smaller ones keep 16 B. Sizes that are odd
// multiples of 16 put 16 B-aligned offsets in any packed plan.
TEST(ReplayTest, LargeBlocksStartOnACacheLine) {
  for (const int64_t color_span : {int64_t{0}, int64_t{4096}}) {
    MockBacking backing;
    ReplayConfig config = test_config();
    config.color_span_bytes = color_span;
    ReplayAllocator a(config, backing);
    LiveBlocks live;
    const std::vector<size_t> sizes = {4096 + 16, 48, 5008, 4096, 80, 12336, 4112, 7000, 4095, 9999, 6160, 16};
    std::vector<void*> last;
    for (int it = 0; it < 3; ++it) {
      run_iteration(a, sizes, live, &last);
      a.mark();
    }
    size_t large = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const uintptr_t address = reinterpret_cast<uintptr_t>(last[i]);
      EXPECT_TRUE(a.owns(last[i])) << "the third iteration is served from the slab";
      EXPECT_EQ(address % 16, 0u) << "request " << i;
      if (sizes[i] >= 4096) {
        ++large;
        EXPECT_EQ(address % 64, 0u) << "request " << i << " of " << sizes[i] << " B, colour span " << color_span;
      }
    }
    EXPECT_EQ(large, 8u);
    EXPECT_TRUE(a.check_invariants().ok());
  }
}

TEST(ReplayTest, RejectsAMalformedKnob) {
  auto lookup = [](const char* name) -> const char* {
    return std::string(name) == "MEMPLAN_PROFILE_ITERATIONS" ? "two" : nullptr;
  };
  StatusOr<ReplayConfig> config = replay_config_from_environment(lookup);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("MEMPLAN_PROFILE_ITERATIONS"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Upper-bound plans (Note [Upper-bound plans], runtime/learner.cc).

using Rng = test_support::Xorshift;

// `variants` size vectors of one structure (n requests): each request's size
// drawn around a base, scaled per variant as a batch size would scale it.
std::vector<std::vector<size_t>> same_structure_variants(Rng& rng, size_t n, size_t variants) {
  std::vector<size_t> base(n);
  for (size_t& b : base) b = 64 + rng.below(4000);
  std::vector<std::vector<size_t>> out;
  for (size_t v = 0; v < variants; ++v) {
    std::vector<size_t> sizes(n);
    for (size_t i = 0; i < n; ++i) sizes[i] = base[i] * (v + 1) + rng.below(64);
    out.push_back(sizes);
  }
  return out;
}

bool all_owned(ReplayAllocator& a, const std::vector<void*>& p) {
  for (void* q : p) {
    if (!a.owns(q)) return false;
  }
  return true;
}

TEST(ReplayTest, IterationsOfOneStructureAndOtherSizesShareAnUpperBoundPlan) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> small = {1000, 2000, 3000, 4000, 500, 600, 700, 800};
  const std::vector<size_t> large = {3000, 6000, 9000, 12000, 1500, 1800, 2100, 2400};
  run_iteration(a, small, live);
  a.mark();
  run_iteration(a, large, live);
  a.mark();
  ASSERT_EQ(a.phase_of_calling_thread(), ReplayPhase::kReplaying);
  for (int round = 0; round < 3; ++round) {
    for (const std::vector<size_t>* sizes : std::initializer_list<const std::vector<size_t>*>{&small, &large}) {
      std::vector<void*> p;
      run_iteration(a, *sizes, live, &p);
      EXPECT_TRUE(all_owned(a, p)) << "every request fits its upper-bound block";
      a.mark();
    }
  }
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.plans, 1u);
  EXPECT_EQ(s.deviations, 0u);
  EXPECT_EQ(s.variants, 2u);
  EXPECT_EQ(s.served, 48u);
  EXPECT_GT(s.max_shape_load_bytes, s.min_shape_load_bytes);
  EXPECT_GE(s.arena_bytes, s.max_shape_load_bytes) << "the upper bound holds the largest shape";
  EXPECT_TRUE(a.check_invariants().ok());
}

TEST(ReplayTest, UpperBoundsOffPlanOnlyIterationsOfEqualSizes) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.upper_bound_plans = false;
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  const std::vector<size_t> small = Iteration().sizes;
  std::vector<size_t> large = small;
  for (size_t& s : large) s *= 2;
  for (int i = 0; i < 6; ++i) {
    run_iteration(a, i % 2 ? large : small, live);
    a.mark();
  }
  EXPECT_EQ(a.stats().plans, 2u) << "each size is a variant of its own (Note [Predicted variants])";
  config.predict_variants = false;
  ReplayAllocator b(config, backing);
  for (int i = 0; i < 6; ++i) {
    run_iteration(b, i % 2 ? large : small, live);
    b.mark();
  }
  EXPECT_EQ(b.stats().plans, 0u) << "without prediction, one variant whose sizes never agree";
}

TEST(ReplayTest, ALargerRequestRaisesTheUpperBoundForTheNextPlan) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  sizes[3] = 100000;
  std::vector<void*> p;
  run_iteration(a, sizes, live, &p);
  EXPECT_FALSE(a.owns(p[3])) << "a request larger than its block is never served from it";
  a.mark();
  ReplayStats s = a.stats();
  EXPECT_EQ(s.deviations, 1u);
  EXPECT_EQ(s.growths, 1u);
  EXPECT_EQ(s.plans, 2u);
  EXPECT_EQ(s.reprofiles, 0u);
  run_iteration(a, sizes, live, &p);
  EXPECT_TRUE(all_owned(a, p)) << "the grown plan serves the larger request in place";
  a.mark();
  run_iteration(a, Iteration().sizes, live, &p);
  EXPECT_TRUE(all_owned(a, p)) << "and still the smaller ones";
  a.mark();
  s = a.stats();
  EXPECT_EQ(s.deviations, 1u);
  EXPECT_EQ(s.growths, 1u);
  EXPECT_TRUE(a.check_invariants().ok());
}

TEST(ReplayTest, AGrowthIsNotAdoptedFromAnIterationOfAnotherLength) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  std::vector<size_t> sizes = Iteration().sizes;
  reach_replay(a, sizes, live);
  sizes[3] = 100000;
  sizes.push_back(64);  // another structure: its sizes say nothing about the plan's requests
  run_iteration(a, sizes, live);
  a.mark();
  EXPECT_EQ(a.stats().growths, 0u);
  EXPECT_EQ(a.stats().plans, 1u);
}

TEST(ReplayTest, RotatingSizesAreServedAfterTheUpperBoundSettles) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng{seed * 0x9E3779B97F4A7C15ull};
    MockBacking backing;
    ReplayAllocator a(test_config(), backing);
    LiveBlocks live;
    const auto variants = same_structure_variants(rng, 6 + rng.below(40), 2 + rng.below(5));
    // Rotation with the largest shape last, so that the first plan is too small.
    for (int round = 0; round < 4; ++round) {
      for (const auto& sizes : variants) {
        run_iteration(a, sizes, live);
        a.mark();
        ASSERT_TRUE(a.check_invariants().ok());
      }
    }
    const uint64_t served_before = a.stats().served;
    for (const auto& sizes : variants) {
      std::vector<void*> p;
      run_iteration(a, sizes, live, &p);
      EXPECT_TRUE(all_owned(a, p)) << "after a few rotations every shape fits";
      a.mark();
    }
    const ReplayStats s = a.stats();
    EXPECT_GT(s.served, served_before);
    EXPECT_LE(s.growths, variants.size()) << "each growth covers at least the shape that caused it";
    EXPECT_EQ(s.reprofiles, 0u);
    EXPECT_EQ(s.invalid_frees, 0u);
  }
}

TEST(ReplayTest, InterleavedStructuresAndRandomGrowthNeverShareABlock) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng{seed * 0xD1B54A32D192ED03ull};
    MockBacking backing;
    ReplayAllocator a(test_config(), backing);
    LiveBlocks live;
    std::vector<std::vector<size_t>> structures;
    for (int k = 0; k < 3; ++k) structures.push_back(same_structure_variants(rng, 4 + rng.below(20), 1)[0]);
    for (int it = 0; it < 120; ++it) {
      std::vector<size_t> sizes = structures[rng.below(rng.below(4) == 0 ? structures.size() : 1)];
      for (size_t& s : sizes) {
        if (rng.below(10) == 0) s = s * (1 + rng.below(3)) + rng.below(100);
      }
      run_iteration(a, sizes, live);  // cookies and overlaps checked inside
      a.mark();
      ASSERT_TRUE(a.check_invariants().ok());
    }
    const ReplayStats s = a.stats();
    EXPECT_GT(s.served, 0u);
    EXPECT_EQ(s.invalid_frees, 0u);
  }
}

TEST(ReplayTest, CreepingSizesCostAFewPlansPerDoubling) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  std::vector<size_t> sizes = Iteration().sizes;
  for (int it = 0; it < 80; ++it) {
    run_iteration(a, sizes, live);
    a.mark();
    for (size_t& s : sizes) s += s / 100 + 1;  // +1% each iteration: 2.2x over the run
  }
  const ReplayStats s = a.stats();
  // Without headroom each of the 78 iterations after the first plan would
  // be a growth; with 1/8 each request grows about once per 12 iterations
  // (8 requests whose sizes creep at different rates: a few apart).
  EXPECT_LE(s.growths, 26u) << "a growth leaves 1/8 of headroom";
  EXPECT_GT(s.served, 80u * 8 / 2);
  EXPECT_TRUE(a.check_invariants().ok());
}

// ---------------------------------------------------------------------------
// Keyed plans (Note [Keyed plans], runtime/variants.cc).

TEST(ReplayTest, KeyedVariantsOfDifferentStructuresEachGetAPlan) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<std::vector<size_t>> variants = {
      Iteration().sizes, {300, 5000, 70, 9000, 1200}, {64, 64, 128, 4096, 8192, 100, 100, 100, 100, 100, 2000}};
  a.mark_key(1);
  for (int round = 0; round < 2; ++round) {
    for (size_t v = 0; v < variants.size(); ++v) {
      run_iteration(a, variants[v], live);
      a.mark_key(1 + (v + 1) % variants.size());
    }
  }
  ASSERT_EQ(a.stats().plans, 3u) << "each key agreed with itself, three iterations apart";
  const uint64_t served_before = a.stats().served;
  for (int round = 0; round < 3; ++round) {
    for (size_t v = 0; v < variants.size(); ++v) {
      std::vector<void*> p;
      run_iteration(a, variants[v], live, &p);
      EXPECT_TRUE(all_owned(a, p)) << "variant " << v << " is served from its own plan";
      a.mark_key(1 + (v + 1) % variants.size());
      ASSERT_TRUE(a.check_invariants().ok());
    }
  }
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.served - served_before, 3 * (8 + 5 + 11));
  EXPECT_EQ(s.deviations, 0u);
  EXPECT_EQ(s.plans_held, 3u);
  EXPECT_EQ(s.evictions, 0u);
  EXPECT_GE(s.switches, 9u);
  EXPECT_GT(s.plan_bytes, 0u);
}

TEST(ReplayTest, UnkeyedIterationsOfDifferentStructuresAreNeverPlannedWithoutPrediction) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.predict_variants = false;
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  const std::vector<std::vector<size_t>> variants = {Iteration().sizes, {300, 5000, 70, 9000, 1200}};
  for (int i = 0; i < 8; ++i) {
    run_iteration(a, variants[i % 2], live);
    a.mark();
  }
  EXPECT_EQ(a.stats().plans, 0u) << "what keyed marks or prediction are for";
}

TEST(ReplayTest, LeastRecentlyUsedVariantIsEvictedBeyondMaxPlans) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.max_plans = 2;
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  auto variant = [](uint64_t key) { return std::vector<size_t>(3 + key, 1000 * key); };
  // Keys 1 and 2 learnt and served; then key 3 evicts key 1 (used longest ago).
  for (uint64_t key : {1, 1, 2, 2, 1, 2, 3, 3, 3, 1, 1, 1}) {
    a.mark_key(key);
    std::vector<void*> p;
    run_iteration(a, variant(key), live, &p);
    ASSERT_TRUE(a.check_invariants().ok());
  }
  a.mark();
  const ReplayStats s = a.stats();
  EXPECT_GE(s.evictions, 2u) << "key 1 for key 3, then key 2 for key 1";
  EXPECT_LE(s.plans_held, 2u);
  EXPECT_EQ(s.plans, 4u) << "key 1 was planned again after its eviction";
  EXPECT_EQ(s.deviations, 0u);
}

TEST(ReplayTest, VariantsBeyondMaxPlanBytesAreEvicted) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.max_plan_bytes = 64 << 10;  // room for one of the two plans below
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  const std::vector<size_t> big(4, 20000);
  for (uint64_t key : {1, 1, 1, 2, 2, 2, 1}) {
    a.mark_key(key);
    run_iteration(a, key == 1 ? big : std::vector<size_t>(5, 15000), live);
  }
  a.mark();
  const ReplayStats s = a.stats();
  EXPECT_GE(s.evictions, 1u);
  EXPECT_EQ(s.plans_held, 1u);
  EXPECT_LE(s.plan_bytes, 64u << 10);
  EXPECT_TRUE(a.check_invariants().ok());
}

TEST(ReplayTest, SwitchingToAKeyWhileABlockIsLiveNeverSharesIt) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> one = Iteration().sizes;
  const std::vector<size_t> two = {4096, 4096, 4096, 4096};
  for (uint64_t key : {1, 1, 2, 2, 1}) {
    a.mark_key(key);
    run_iteration(a, key == 1 ? one : two, live);
  }
  // Key 1 replays; a block of it is kept across the switch to key 2.
  a.mark_key(1);
  void* kept = a.allocate(one[0]);
  ASSERT_TRUE(a.owns(kept));
  std::memset(kept, 0x5A, one[0]);
  a.mark_key(2);
  std::vector<void*> p;
  run_iteration(a, two, live, &p);
  for (void* q : p) EXPECT_FALSE(a.owns(q)) << "key 2 waits for key 1's block to be freed";
  for (size_t k = 0; k < one[0]; ++k) ASSERT_EQ(static_cast<unsigned char*>(kept)[k], 0x5A);
  a.deallocate(kept);
  a.mark_key(2);
  run_iteration(a, two, live, &p);
  EXPECT_TRUE(all_owned(a, p)) << "and is served once the slab is free";
  a.mark();
  EXPECT_TRUE(a.check_invariants().ok());
  EXPECT_EQ(a.stats().invalid_frees, 0u);
}

TEST(ReplayTest, RandomKeyedStreamsKeepCookies) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng{seed * 0x2545F4914F6CDD1Dull};
    MockBacking backing;
    ReplayConfig config = test_config();
    config.max_plans = 3;
    ReplayAllocator a(config, backing);
    LiveBlocks live;
    std::vector<std::vector<std::vector<size_t>>> keys;  // per key: a few sizes of one structure
    for (int k = 0; k < 5; ++k) keys.push_back(same_structure_variants(rng, 3 + rng.below(30), 1 + rng.below(3)));
    for (int it = 0; it < 150; ++it) {
      const size_t k = rng.below(rng.below(3) == 0 ? keys.size() : 2);
      a.mark_key(k + 1);
      run_iteration(a, keys[k][rng.below(keys[k].size())], live);
      ASSERT_TRUE(a.check_invariants().ok());
    }
    a.mark();
    const ReplayStats s = a.stats();
    EXPECT_GT(s.served, 0u);
    EXPECT_LE(s.plans_held, 3u);
    EXPECT_EQ(s.invalid_frees, 0u);
  }
}

// ---------------------------------------------------------------------------
// Predicted variants (Note [Predicted variants], runtime/variants.cc): plain
// marks, iterations of several structures.

// Three structures: other request counts (and one other alignment).
const std::vector<std::vector<size_t>>& three_structures() {
  static const std::vector<std::vector<size_t>> v = {
      Iteration().sizes, {300, 5000, 70, 9000, 1200}, {64, 64, 128, 4096, 8192, 100, 100, 100, 100, 100, 2000}};
  return v;
}

TEST(ReplayTest, RotatingUnkeyedStructuresArePredictedAndServed) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const auto& variants = three_structures();
  for (int round = 0; round < 3; ++round) {
    for (const auto& sizes : variants) {
      run_iteration(a, sizes, live);
      a.mark();
      ASSERT_TRUE(a.check_invariants().ok());
    }
  }
  const ReplayStats learnt = a.stats();
  EXPECT_EQ(learnt.plans, 3u) << "one plan per structure, each after two of its iterations";
  for (int round = 0; round < 3; ++round) {
    for (size_t v = 0; v < variants.size(); ++v) {
      std::vector<void*> p;
      run_iteration(a, variants[v], live, &p);
      EXPECT_TRUE(all_owned(a, p)) << "structure " << v << " was predicted and served from its plan";
      a.mark();
      ASSERT_TRUE(a.check_invariants().ok());
    }
  }
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.served - learnt.served, 3 * (8 + 5 + 11));
  EXPECT_EQ(s.predictions_right - learnt.predictions_right, 9u) << "a rotation is predicted exactly";
  EXPECT_EQ(s.predictions_wrong, learnt.predictions_wrong);
  EXPECT_EQ(s.deviations, 0u);
  EXPECT_EQ(s.plans_held, 3u);
  EXPECT_EQ(s.reprofiles, 0u);
  EXPECT_EQ(s.invalid_frees, 0u);
}

// Training with an evaluation pass every third step: step step step eval.
// The last two variants (step, step) are followed by a step once and by an
// evaluation once per period; the longest context seen before tells them
// apart (Learner::predict), so once both plans exist every iteration is
// predicted and served. The evaluation is profiled from its third
// occurrence on (Note [A one-off does not displace a plan]): its plan exists
// after four periods.
TEST(ReplayTest, APeriodLongerThanTwoIsPredictedExactly) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> step = three_structures()[0], eval = three_structures()[1];
  auto period = [&](bool check) {
    for (int i = 0; i < 4; ++i) {
      std::vector<void*> p;
      run_iteration(a, i < 3 ? step : eval, live, &p);
      if (check) EXPECT_TRUE(all_owned(a, p)) << "iteration " << i << " of the period";
      a.mark();
      ASSERT_TRUE(a.check_invariants().ok());
    }
  };
  for (int round = 0; round < 4; ++round) period(false);  // eval needs two of its iterations to plan
  const ReplayStats learnt = a.stats();
  EXPECT_EQ(learnt.plans, 2u);
  for (int round = 0; round < 3; ++round) period(true);
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.predictions_right - learnt.predictions_right, 12u);
  EXPECT_EQ(s.predictions_wrong, learnt.predictions_wrong);
  EXPECT_EQ(s.served - learnt.served, 3 * (3 * step.size() + eval.size()));
  EXPECT_EQ(s.deviations, 0u);
}

// The same loop as a trainer runs it: its first step makes the optimizer's
// state, a structure of its own, so the first period is first, step, step,
// eval. The successor rule alone then predicts the evaluation after one
// step and after two, and the next two steps run unserved as the
// evaluation's variant (Note [A one-off does not displace a plan]).
TEST(ReplayTest, AFirstStepOfItsOwnDoesNotCostTheNextPeriodsSteps) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const std::vector<size_t> step = three_structures()[0], eval = three_structures()[1];
  std::vector<size_t> first = step;
  first.insert(first.end(), {512, 512, 768});  // the optimizer's state, made once
  std::vector<std::string> order;
  std::vector<bool> served;
  for (int i = 0; i < 16; ++i) {  // first step step eval, then (step step step eval) x 3
    const bool is_eval = i % 4 == 3;
    std::vector<void*> p;
    run_iteration(a, i == 0 ? first : is_eval ? eval : step, live, &p);
    order.push_back(i == 0 ? "first" : is_eval ? "eval" : "step");
    served.push_back(all_owned(a, p));
    a.mark();
    ASSERT_TRUE(a.check_invariants().ok());
  }
  // Iteration 5 (0-based 4) runs as the variant predicted after the first
  // evaluation, the latest one; from iteration 6 on every step is served.
  for (int i = 5; i < 16; ++i) {
    if (order[i] == "step") EXPECT_TRUE(served[i]) << "iteration " << i + 1 << " (a step)";
  }
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.deviations, 0u);
  EXPECT_EQ(s.invalid_frees, 0u);
  // The evaluation is still learnt: predicted after its second occurrence,
  // profiled twice, planned and served.
  for (int i = 0; i < 12; ++i) {
    std::vector<void*> p;
    run_iteration(a, i % 4 == 3 ? eval : step, live, &p);
    if (i >= 8) EXPECT_TRUE(all_owned(a, p)) << "iteration " << i + 17;
    a.mark();
  }
  EXPECT_EQ(a.stats().plans_held, 2u) << "step and evaluation (the first step's structure is not planned)";
}

TEST(ReplayTest, AMispredictedIterationFallsBackAndIsNotThePlansDeviation) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const auto& v = three_structures();
  for (int i = 0; i < 12; ++i) {
    run_iteration(a, v[i % 2], live);  // A B A B ...: both planned, each predicted after the other
    a.mark();
  }
  const ReplayStats before = a.stats();
  ASSERT_EQ(before.plans, 2u);
  // A is predicted after B; B comes again: served from A's plan up to its
  // first request A's plan does not fit, then by the backing allocator.
  std::vector<void*> p;
  run_iteration(a, v[1], live, &p);  // (cookies and overlaps checked inside)
  a.mark();
  ReplayStats s = a.stats();
  EXPECT_EQ(s.predictions_wrong - before.predictions_wrong, 1u);
  EXPECT_GT(s.fallback, before.fallback);
  // Repeatedly: never re-profiled, as a deviation of B's plan would be.
  for (int i = 0; i < 8; ++i) {
    run_iteration(a, v[1], live, &p);
    a.mark();
    ASSERT_TRUE(a.check_invariants().ok());
  }
  EXPECT_TRUE(all_owned(a, p)) << "B after B is predicted once seen";
  s = a.stats();
  EXPECT_EQ(s.reprofiles, 0u);
  EXPECT_EQ(s.plans, 2u) << "no plan was made again";
  EXPECT_EQ(s.invalid_frees, 0u);
}

TEST(ReplayTest, AnUnseenStructureIsProfiledAsACandidateAndGetsItsPlan) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const auto& v = three_structures();
  for (int i = 0; i < 6; ++i) {
    run_iteration(a, v[0], live);
    a.mark();
  }
  // A new structure: its first two runs mispredicted (A's plan, then the
  // backing allocator; after its first, A is predicted again: Note [A
  // one-off does not displace a plan]), then profiled under its own key
  // twice, planned, served.
  const ReplayStats before = a.stats();
  std::vector<void*> p;
  for (int i = 0; i < 5; ++i) {
    run_iteration(a, v[2], live, &p);
    EXPECT_EQ(all_owned(a, p), i == 4) << "run " << i + 1 << " of the new structure";
    a.mark();
    ASSERT_TRUE(a.check_invariants().ok());
  }
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.plans, 2u);
  EXPECT_EQ(s.plans_held, 2u);
  EXPECT_EQ(s.predictions_wrong - before.predictions_wrong, 2u);
  EXPECT_EQ(s.reprofiles, 0u);
}

// A structure that comes once (the last, smaller batch of an epoch) does not
// cost the next iteration of the one that repeats: that one is predicted
// and served again (Note [A one-off does not displace a plan]).
TEST(ReplayTest, AOneOffStructureDoesNotCostTheNextIteration) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const auto& v = three_structures();
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int i = 0; i < 5; ++i) {
      std::vector<void*> p;
      run_iteration(a, v[0], live, &p);
      if (epoch > 0) EXPECT_TRUE(all_owned(a, p)) << "epoch " << epoch << ", iteration " << i;
      a.mark();
    }
    run_iteration(a, v[1 + epoch % 2], live);  // a one-off of its own each epoch
    a.mark();
    ASSERT_TRUE(a.check_invariants().ok());
  }
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.plans, 1u);
  EXPECT_EQ(s.deviations, 0u);
  EXPECT_EQ(s.invalid_frees, 0u);
}

TEST(ReplayTest, InterleavedUnkeyedStructuresAreServedMostly) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const auto& v = three_structures();
  // A A B A A B ...: the successor of A alternates; the successor of the
  // last two does not.
  const int pattern[] = {0, 0, 1};
  for (int i = 0; i < 60; ++i) {
    run_iteration(a, v[pattern[i % 3]], live);
    a.mark();
    ASSERT_TRUE(a.check_invariants().ok());
  }
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.plans, 2u);
  EXPECT_GT(s.predictions_right, s.predictions_wrong);
  EXPECT_GT(s.served, s.fallback + s.profiled) << "served: " << s.served << ", fallback " << s.fallback;
  EXPECT_EQ(s.invalid_frees, 0u);
}

TEST(ReplayTest, PredictedVariantsBeyondMaxPlansAreEvicted) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.max_plans = 2;
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  const auto& v = three_structures();
  for (int round = 0; round < 6; ++round) {
    for (const auto& sizes : v) {
      run_iteration(a, sizes, live);
      a.mark();
      ASSERT_TRUE(a.check_invariants().ok());
    }
  }
  const ReplayStats s = a.stats();
  EXPECT_GT(s.evictions, 0u);
  EXPECT_LE(s.plans_held, 2u);
  EXPECT_EQ(s.invalid_frees, 0u);
}

TEST(ReplayTest, KeyedAndUnkeyedIterationsShareTheVariantSet) {
  MockBacking backing;
  ReplayAllocator a(test_config(), backing);
  LiveBlocks live;
  const auto& v = three_structures();
  // An explicit key for structure 2, plain marks rotating structures 0 and 1.
  auto round = [&](std::vector<std::vector<void*>>* out) {
    for (int k : {0, 1, 2}) {
      if (k == 2) {
        a.mark_key(42);
      } else {
        a.mark();
      }
      std::vector<void*> p;
      run_iteration(a, v[k], live, &p);
      if (out) out->push_back(p);
      ASSERT_TRUE(a.check_invariants().ok());
    }
  };
  for (int i = 0; i < 4; ++i) round(nullptr);
  std::vector<std::vector<void*>> last;
  round(&last);
  a.mark();
  for (size_t k = 0; k < last.size(); ++k) EXPECT_TRUE(all_owned(a, last[k])) << "structure " << k;
  const ReplayStats s = a.stats();
  EXPECT_EQ(s.plans_held, 3u);
  EXPECT_EQ(s.reprofiles, 0u);
}

// The property test: generated multi-variant streams — rotating, random
// order, growing sizes, random extra requests, blocks freed by other threads
// — with cookies in every block (run_iteration checks them before each free,
// LiveBlocks every overlap), check_invariants after each iteration, and no
// backing block leaked at the end.
TEST(ReplayTest, GeneratedMultiVariantStreamsKeepCookies) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Rng rng{seed * 0x9FB21C651E98DF25ull};
    MockBacking backing;
    ReplayConfig config = test_config();
    const int mode = static_cast<int>(seed % 3);  // 0 rotating, 1 random order, 2 runs of one structure
    const size_t count = 3 + rng.below(4);
    // Rotations with room for every structure; else fewer plans than structures (evictions).
    config.max_plans = mode == 0 ? static_cast<int64_t>(count) : 2 + static_cast<int64_t>(rng.below(4));
    ReplayAllocator a(config, backing);
    LiveBlocks live;
    std::vector<std::vector<size_t>> structures;
    for (size_t k = 0; k < count; ++k) {
      structures.push_back(same_structure_variants(rng, 3 + k * 2 + rng.below(12), 1)[0]);  // k: other lengths
    }
    std::vector<void*> from_other_thread;
    size_t current = 0;
    for (int it = 0; it < 150; ++it) {
      if (mode == 0) current = it % count;
      if (mode == 1) current = rng.below(count);
      if (mode == 2 && rng.below(5) == 0) current = rng.below(count);
      std::vector<size_t> sizes = structures[current];
      for (size_t& s : sizes) {
        if (rng.below(8) == 0) s += s / 4 + rng.below(256);  // growing sizes
      }
      // A deviation (one request more) and blocks kept for another thread:
      // in the random streams only, so that rotations stay rotations.
      const bool irregular = mode != 0;
      if (irregular && rng.below(20) == 0) sizes.push_back(64 + rng.below(9000));
      std::vector<void*> p;
      run_iteration(a, sizes, live, &p);
      // A block kept past the iteration and freed by another thread later.
      if (irregular && rng.below(4) == 0) {
        void* kept = a.allocate(sizes[0]);
        ASSERT_NE(kept, nullptr);
        std::memset(kept, 0xC3, sizes[0]);
        live.add(kept, sizes[0]);
        from_other_thread.push_back(kept);
      }
      a.mark();
      if (!from_other_thread.empty() && rng.below(2) == 0) {
        for (void* q : from_other_thread) live.remove(q);
        std::thread([&] {
          for (void* q : from_other_thread) {
            for (size_t k = 0; k < 16; ++k) ASSERT_EQ(static_cast<unsigned char*>(q)[k], 0xC3) << "cookie clobbered";
            a.deallocate(q);
          }
        }).join();
        from_other_thread.clear();
      }
      ASSERT_TRUE(a.check_invariants().ok());
    }
    for (void* q : from_other_thread) {
      live.remove(q);
      a.deallocate(q);
    }
    a.mark();
    ASSERT_TRUE(a.check_invariants().ok());
    const ReplayStats s = a.stats();
    EXPECT_GT(s.served, 0u);
    EXPECT_LE(s.plans_held, static_cast<uint64_t>(config.max_plans));
    EXPECT_EQ(s.invalid_frees, 0u);
    EXPECT_EQ(backing.allocations.load(), backing.deallocations.load()) << "a backing block leaked";
    if (mode == 0) EXPECT_GT(s.predictions_right, s.predictions_wrong) << "rotations are predicted";
  }
}

TEST(ReplayTest, PredictionIsAKnob) {
  StatusOr<ReplayConfig> config = replay_config_from_environment(
      [](const char* name) -> const char* { return std::string(name) == "MEMPLAN_PREDICT" ? "0" : nullptr; });
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->predict_variants);
  EXPECT_TRUE(ReplayConfig{}.predict_variants);
  EXPECT_TRUE(ReplayConfig{}.plan_in_background) << "no boundary waits for the planner by default";
}

TEST(ReplayTest, AThreadWithoutASlabStaysWithTheBackingAllocatorWhateverItsKey) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.max_threads = 0;  // no slab windows at all
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  for (uint64_t key : {1, 2, 1, 2, 1, 2}) {
    a.mark_key(key);
    std::vector<void*> p;
    run_iteration(a, Iteration().sizes, live, &p);
    for (void* q : p) EXPECT_FALSE(a.owns(q));
    EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kBackingOnly);
    ASSERT_TRUE(a.check_invariants().ok());
  }
  EXPECT_EQ(a.stats().profiled, 0u);
}

}  // namespace
}  // namespace memplan

namespace memplan {
namespace {

// Two threads that each serve requests of their own: thread 1 runs a whole
// iteration (and marks) at a point inside thread 0's iteration that moves from
// round to round, as a web server's workers do. `per_thread`: both mark with
// mark_thread; else with mark(), a boundary for every thread.
void two_servers(ReplayAllocator& a, bool per_thread, int rounds) {
  const std::vector<size_t> sizes0 = Iteration().sizes;
  const std::vector<size_t> sizes1 = {96, 4096, 160, 8192, 224};
  auto mark = [&a, per_thread] {
    if (per_thread) {
      a.mark_thread();
    } else {
      a.mark();
    }
  };
  std::barrier sync(2);
  std::thread one([&] {
    LiveBlocks live;
    for (int r = 0; r < rounds; ++r) {
      sync.arrive_and_wait();
      run_iteration(a, sizes1, live);
      mark();
      sync.arrive_and_wait();
    }
  });
  LiveBlocks live;
  std::vector<void*> p(sizes0.size());
  for (int r = 0; r < rounds; ++r) {
    // Thread 0's iterations under process-wide marks are then [0, cut) and
    // [cut, 8): 1, 7, 2, 6, 3, 5, 1, 7, ... requests, never two alike in a row.
    const size_t cut = 1 + static_cast<size_t>(r % 3);
    for (size_t i = 0; i < sizes0.size(); ++i) {
      if (i == cut) {
        sync.arrive_and_wait();  // thread 1 runs one iteration here
        sync.arrive_and_wait();
      }
      p[i] = a.allocate(sizes0[i]);
      ASSERT_NE(p[i], nullptr);
      live.add(p[i], sizes0[i]);
      if (i >= 2) {
        live.remove(p[i - 2]);
        a.deallocate(p[i - 2]);
      }
    }
    for (size_t i = sizes0.size() - 2; i < sizes0.size(); ++i) {
      live.remove(p[i]);
      a.deallocate(p[i]);
    }
    mark();
  }
  one.join();
}

}  // namespace

TEST(ReplayTest, ThreadMarksServeThreadsWhoseIterationsInterleave) {
  MockBacking backing;
  ReplayConfig config = test_config();
  config.profile_before_first_mark = false;  // as under `memplan run`: a thread mark starts profiling too
  uint64_t served_with_thread_marks = 0;
  {
    ReplayAllocator a(config, backing);
    ASSERT_TRUE(a.init_status().ok());
    two_servers(a, /*per_thread=*/true, 8);
    const ReplayStats s = a.stats();
    // Each thread profiles 2 iterations and is served in the others (thread 0's
    // first iteration starts at its first request: profiled from its first mark).
    EXPECT_GE(s.served, 5u * (8 + 5)) << "served " << s.served;
    EXPECT_EQ(s.plans, 2u);
    EXPECT_EQ(s.deviations, 0u);
    EXPECT_EQ(s.predictions_wrong, 0u);
    EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
    served_with_thread_marks = s.served;
  }
  {
    // The same program with process-wide marks: thread 1's marks cut thread
    // 0's iterations at another point each round, into pieces of 1, 7, 2, 6,
    // 3 and 5 requests. Prediction learns the pieces as variants as they
    // recur, but serves far less, after more plans.
    ReplayAllocator a(config, backing);
    ASSERT_TRUE(a.init_status().ok());
    two_servers(a, /*per_thread=*/false, 8);
    const ReplayStats s = a.stats();
    EXPECT_LT(s.served + 20, served_with_thread_marks) << "served " << s.served;
    EXPECT_GT(s.plans, 2u);
    EXPECT_TRUE(a.check_invariants().ok()) << a.check_invariants().message();
  }
}

// Plans that outlive the process (memplan/plan_file.h): what one allocator
// learnt, written out and read back, serves a new allocator's first
// iteration without a backing allocation.
TEST(ReplayTest, SavedPlansServeTheFirstIterationOfANewAllocator) {
  const std::vector<size_t> sizes = Iteration().sizes;
  MockBacking backing;
  PlanFile file;
  {
    ReplayAllocator a(test_config(), backing);
    LiveBlocks live;
    for (int i = 0; i < 3; ++i) {
      run_iteration(a, sizes, live);
      a.mark();
    }
    file = a.saved_plans("the test");
  }
  ASSERT_EQ(file.units.size(), 1u);
  ASSERT_EQ(file.units[0].variants.size(), 1u);
  EXPECT_EQ(file.units[0].variants[0].requests.size(), sizes.size());
  StatusOr<PlanFile> read = read_plan_file(write_plan_file(file));
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(*read, file);

  ReplayAllocator b(test_config(), backing);
  ASSERT_TRUE(b.load_plans(*read).ok());
  LiveBlocks live;
  const int64_t backing_before = backing.allocations.load();
  std::vector<void*> pointers;
  run_iteration(b, sizes, live, &pointers);
  EXPECT_EQ(backing.allocations.load(), backing_before) << "the first iteration needs no backing allocation";
  for (void* p : pointers) EXPECT_TRUE(b.owns(p));
  const ReplayStats s = b.stats();
  EXPECT_EQ(s.served, sizes.size());
  EXPECT_EQ(s.plans_loaded, 1u);
  EXPECT_EQ(s.profiled, 0u);
  EXPECT_TRUE(b.check_invariants().ok()) << b.check_invariants().message();
  EXPECT_FALSE(b.load_plans(*read).ok()) << "plans are loaded before the first request only";
}

namespace {

// The plan file of an allocator with save_plans_file set that ran
// `iterations`, one mark after each.
PlanFile saved_plans_after(const std::vector<const std::vector<size_t>*>& iterations, MockBacking& backing) {
  ReplayConfig config = test_config();
  config.save_plans_file = "kept-for-saved_plans";
  ReplayAllocator a(config, backing);
  LiveBlocks live;
  for (const std::vector<size_t>* sizes : iterations) {
    run_iteration(a, *sizes, live);
    a.mark();
  }
  return a.saved_plans("the test");
}

}  // namespace

// A first iteration unlike the others (a training loop's first step makes
// the optimizer's state): with save_plans_file the learner keeps its
// profile and saves it first, so that a process loading the file serves its
// first iteration; the steady variant, whose first run followed it and
// agreed with the later ones, is saved as following it and serves the
// second iteration (cold: from the third).
TEST(ReplayTest, SavedPlansServeAFirstIterationUnlikeTheRest) {
  const std::vector<size_t> steady = Iteration().sizes;
  std::vector<size_t> first = steady;
  first.insert(first.begin() + 3, 1500);
  MockBacking backing;
  const PlanFile file = saved_plans_after({&first, &steady, &steady, &steady}, backing);
  ASSERT_EQ(file.units.size(), 1u);
  ASSERT_EQ(file.units[0].variants.size(), 2u);
  const SavedVariant& saved_first = file.units[0].variants[0];
  const SavedVariant& saved_steady = file.units[0].variants[1];
  EXPECT_EQ(saved_first.requests.size(), first.size()) << "the first iteration is saved first";
  EXPECT_EQ(saved_first.after, 0u);
  EXPECT_EQ(saved_steady.requests.size(), steady.size());
  EXPECT_EQ(saved_steady.after, saved_first.key) << "the steady variant first ran after the first iteration";
  StatusOr<PlanFile> read = read_plan_file(write_plan_file(file));
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(*read, file);

  ReplayAllocator b(test_config(), backing);
  ASSERT_TRUE(b.load_plans(*read).ok());
  LiveBlocks live;
  const int64_t backing_before = backing.allocations.load();
  run_iteration(b, first, live);
  EXPECT_EQ(b.stats().served, first.size()) << "the first iteration is served from its own plan";
  b.mark();
  run_iteration(b, steady, live);
  b.mark();
  EXPECT_EQ(b.stats().served, first.size() + steady.size()) << "the second iteration is served from the file";
  EXPECT_EQ(backing.allocations.load(), backing_before) << "no backing allocation in either";
  for (int i = 0; i < 2; ++i) {
    run_iteration(b, steady, live);
    b.mark();
  }
  const ReplayStats s = b.stats();
  EXPECT_EQ(s.served, first.size() + 3 * steady.size());
  EXPECT_EQ(s.profiled, 0u) << "nothing profiled: the saved plans serve every iteration";
  EXPECT_EQ(s.plans_loaded, 2u);
  EXPECT_EQ(s.plans, 2u);
  EXPECT_EQ(s.predictions_wrong, 0u);
  EXPECT_TRUE(b.check_invariants().ok()) << b.check_invariants().message();
}

// A variant serves its first run from the file only after the variant its
// first run followed in the saving process. Saved: F, then G (a first run
// unlike the rest, smaller, never agreed with: saved as a first run that
// followed F), then S (after G). Loaded into a run of F, G, S, S, every run
// is served: G's after F, S's after G. Loaded into a run of F, S, S, S (no
// G), the file predicts G after F; S's first run does not fit G's smaller
// blocks and goes to the backing allocator, its variant is planned from the
// file when it is seen, and its later runs are served.
TEST(ReplayTest, SavedPlansServeAFirstRunOnlyAfterTheVariantItFollowed) {
  const std::vector<size_t> steady = Iteration().sizes;
  std::vector<size_t> first = steady;
  first.insert(first.begin() + 3, 1500);
  std::vector<size_t> between = steady;
  for (size_t& size : between) size /= 2;
  between.push_back(700);
  between.push_back(900);
  MockBacking backing;
  const PlanFile file = saved_plans_after({&first, &between, &steady, &steady, &steady}, backing);
  ASSERT_EQ(file.units.size(), 1u);
  ASSERT_EQ(file.units[0].variants.size(), 3u) << "F, S, and G's one run (it followed F)";
  ASSERT_EQ(file.units[0].variants[1].requests.size(), steady.size());
  EXPECT_NE(file.units[0].variants[1].after, 0u);
  EXPECT_NE(file.units[0].variants[1].after, file.units[0].variants[0].key) << "S followed G, not F";
  ASSERT_EQ(file.units[0].variants[2].requests.size(), between.size());
  EXPECT_EQ(file.units[0].variants[2].after, file.units[0].variants[0].key) << "G followed F";
  EXPECT_EQ(file.units[0].variants[1].after, file.units[0].variants[2].key);
  {
    ReplayAllocator b(test_config(), backing);
    ASSERT_TRUE(b.load_plans(file).ok());
    LiveBlocks live;
    for (int i = 0; i < 4; ++i) {
      run_iteration(b, i == 0 ? first : steady, live);
      b.mark();
    }
    const ReplayStats s = b.stats();
    EXPECT_EQ(s.served, first.size() + 2 * steady.size()) << "S's first run here followed F: not served";
    EXPECT_EQ(s.predictions_wrong, 1u) << "G was predicted after F";
    EXPECT_EQ(s.plans_loaded, 3u);
    EXPECT_TRUE(b.check_invariants().ok()) << b.check_invariants().message();
  }
  {
    ReplayAllocator b(test_config(), backing);
    ASSERT_TRUE(b.load_plans(file).ok());
    LiveBlocks live;
    for (const std::vector<size_t>* sizes :
         std::initializer_list<const std::vector<size_t>*>{&first, &between, &steady, &steady}) {
      run_iteration(b, *sizes, live);
      b.mark();
    }
    const ReplayStats s = b.stats();
    EXPECT_EQ(s.profiled, 0u);
    EXPECT_EQ(s.served, first.size() + between.size() + 2 * steady.size()) << "G after F, S from its first run after G";
    EXPECT_TRUE(b.check_invariants().ok()) << b.check_invariants().message();
  }
}

// Rotating shapes, each with a first run unlike its later ones (a shape's
// first pass makes its state): saved A0 B0 C0 A B C A B C A B C, the first
// runs B0 and C0 are saved as following A0 and B0, the steady A as
// following C0, and the twelve variants as the unit's course. A process
// that loads the file and runs the same course profiles nothing and
// serves every request: every first run is served after the run it
// followed, the steady shapes after theirs, and the rotation as the course
// predicts it. Without the course the second A was mispredicted: what
// follows C is in no variant's `after` (only what each first run followed),
// so C was predicted again and A ran under C's plan.
// Three rotating shapes A, B, C and their first runs A0, B0, C0, each a
// structure of its own (8, 11, 5; 9, 12, 6 requests).
struct RotatingShapes {
  std::vector<size_t> a = Iteration().sizes;
  std::vector<size_t> b = with(a, {3000, 1200, 900});
  std::vector<size_t> c{a.begin(), a.end() - 3};
  std::vector<size_t> a0 = first_run(a), b0 = first_run(b), c0 = first_run(c);

  static std::vector<size_t> with(std::vector<size_t> sizes, std::initializer_list<size_t> more) {
    sizes.insert(sizes.end(), more);
    return sizes;
  }
  static std::vector<size_t> first_run(std::vector<size_t> sizes) {
    sizes.insert(sizes.begin() + 2, 1500);
    return sizes;
  }
};

TEST(ReplayTest, SavedPlansServeEveryFirstRunOfRotatingShapes) {
  const RotatingShapes shapes;
  const auto& [a, b, c, a0, b0, c0] = shapes;
  const std::vector<const std::vector<size_t>*> course = {&a0, &b0, &c0, &a, &b, &c, &a, &b, &c, &a, &b, &c};
  MockBacking backing;
  const PlanFile file = saved_plans_after(course, backing);
  ASSERT_EQ(file.units.size(), 1u);
  EXPECT_EQ(file.units[0].variants.size(), 6u) << "A0 first; A, B, C; B0 and C0";
  const std::vector<uint64_t>& keys = file.units[0].course;
  ASSERT_EQ(keys.size(), course.size());
  EXPECT_EQ(keys[0], file.units[0].variants[0].key) << "the course starts with the variant saved first";
  for (size_t i = 3; i < keys.size(); ++i) EXPECT_EQ(keys[i], keys[i % 3 + 3]) << "the rotation, at " << i;
  EXPECT_EQ(std::set<uint64_t>(keys.begin(), keys.end()).size(), 6u);
  ReplayAllocator r(test_config(), backing);
  ASSERT_TRUE(r.load_plans(file).ok());
  LiveBlocks live;
  size_t requests = 0;
  for (const std::vector<size_t>* sizes : course) {
    run_iteration(r, *sizes, live);
    r.mark();
    requests += sizes->size();
  }
  const ReplayStats s = r.stats();
  EXPECT_EQ(s.profiled, 0u);
  EXPECT_EQ(s.served, requests);
  EXPECT_EQ(s.predictions_wrong, 0u);
  EXPECT_TRUE(r.check_invariants().ok()) << r.check_invariants().message();
}

// A process that leaves the saved course (the same shapes, rotating the
// other way from the fourth pass) stops following it at the first
// iteration that differs: nothing is served from a wrong plan's bytes (the
// cookies and LiveBlocks check every block), and the live history then
// learns the new rotation, whose last round is served in full.
TEST(ReplayTest, SavedPlansAreSafeWhenTheProcessLeavesTheSavedCourse) {
  const RotatingShapes shapes;
  const auto& [a, b, c, a0, b0, c0] = shapes;
  MockBacking backing;
  const PlanFile file = saved_plans_after({&a0, &b0, &c0, &a, &b, &c, &a, &b, &c, &a, &b, &c}, backing);
  ReplayAllocator r(test_config(), backing);
  ASSERT_TRUE(r.load_plans(file).ok());
  LiveBlocks live;
  const std::vector<const std::vector<size_t>*> other = {&a0, &b0, &c0, &a, &c, &b, &a, &c, &b,
                                                         &a,  &c,  &b,  &a, &c, &b, &a, &c, &b};
  uint64_t served_before_last_round = 0;
  for (size_t i = 0; i < other.size(); ++i) {
    if (i == other.size() - 3) served_before_last_round = r.stats().served;
    run_iteration(r, *other[i], live);
    r.mark();
  }
  const ReplayStats s = r.stats();
  EXPECT_GE(s.predictions_wrong, 1u) << "the course said B after A";
  EXPECT_EQ(s.served - served_before_last_round, a.size() + b.size() + c.size());
  EXPECT_EQ(s.invalid_frees, 0u);
  EXPECT_TRUE(r.check_invariants().ok()) << r.check_invariants().message();
}

// No wrong serving: plans saved from one request pattern, loaded into an
// allocator that runs another (sizes grown, a request added or dropped, the
// order reversed), never hand out a byte of a live block (LiveBlocks and the
// cookies of run_iteration check), and the allocator still learns the
// pattern it runs.
TEST(ReplayTest, PlansOfAnotherPatternNeverShareALiveByte) {
  MockBacking backing;
  for (uint64_t seed = 1; seed <= 25; ++seed) {
    uint64_t state = seed * 0x9e3779b97f4a7c15ull;
    auto draw = [&state](uint64_t n) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<size_t>((state >> 33) % n);
    };
    std::vector<size_t> saved_sizes(4 + draw(12));
    for (size_t& size : saved_sizes) size = 16 + draw(5000);
    std::vector<size_t> run_sizes = saved_sizes;
    switch (draw(4)) {
      case 0:
        for (size_t& size : run_sizes) size = size * (1 + draw(3)) + draw(64);
        break;
      case 1:
        run_sizes.insert(run_sizes.begin() + static_cast<std::ptrdiff_t>(draw(run_sizes.size())), 100 + draw(4000));
        break;
      case 2:
        run_sizes.erase(run_sizes.begin() + static_cast<std::ptrdiff_t>(draw(run_sizes.size())));
        break;
      default:
        std::reverse(run_sizes.begin(), run_sizes.end());
        break;
    }
    PlanFile file;
    {
      ReplayAllocator a(test_config(), backing);
      LiveBlocks live;
      for (int i = 0; i < 3; ++i) {
        run_iteration(a, saved_sizes, live);
        a.mark();
      }
      file = a.saved_plans("saved");
    }
    ReplayAllocator b(test_config(), backing);
    ASSERT_TRUE(b.load_plans(file).ok());
    LiveBlocks live;
    for (int i = 0; i < 5; ++i) {
      run_iteration(b, run_sizes, live);
      b.mark();
      ASSERT_TRUE(b.check_invariants().ok()) << "seed " << seed << ": " << b.check_invariants().message();
    }
    const ReplayStats s = b.stats();
    EXPECT_EQ(s.plans_loaded, 1u) << "seed " << seed;
    run_iteration(b, run_sizes, live);
    EXPECT_EQ(b.stats().served - s.served, run_sizes.size()) << "seed " << seed << ": the run's own pattern is learnt";
  }
}

}  // namespace memplan
