// The replay allocator's off-heap profile containers (runtime/mapped.h), and
// the property they exist for: profiling adds nothing to the malloc heap.
#include "runtime/mapped.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <unordered_map>

#include "memplan/replay.h"
#include "runtime/os/os_memory.h"

namespace memplan::runtime {
namespace {

TEST(PointerTickMapTest, AgreesWithAReferenceMapUnderRandomInsertsAndTakes) {
  PointerTickMap map;
  std::unordered_map<uintptr_t, uint32_t> reference;
  std::mt19937_64 rng(7);
  // Keys from a small range so that probe runs collide, wrap around the table
  // and are shifted back by takes.
  for (uint32_t step = 0; step < 50000; ++step) {
    const uintptr_t key = 16 * (1 + rng() % 3000);
    if (rng() % 3 != 0) {
      map.insert(key, step);
      reference[key] = step;
    } else {
      const auto it = reference.find(key);
      const int64_t expected = it == reference.end() ? -1 : static_cast<int64_t>(it->second);
      if (it != reference.end()) reference.erase(it);
      ASSERT_EQ(map.take(key), expected) << "step " << step;
    }
    ASSERT_EQ(map.size(), reference.size());
  }
  for (const auto& [key, tick] : reference) EXPECT_EQ(map.take(key), static_cast<int64_t>(tick));
  EXPECT_EQ(map.size(), 0u);
}

TEST(PointerTickMapTest, ClearKeepsTheTableAndReleaseGivesItBack) {
  PointerTickMap map;
  EXPECT_EQ(map.take(4096), -1);
  for (uint32_t i = 1; i <= 1000; ++i) map.insert(16 * i, i);
  const size_t capacity = map.capacity();
  EXPECT_GE(capacity, 2000u);  // at most half full
  map.clear();
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.take(16), -1);
  EXPECT_EQ(map.capacity(), capacity);
  map.insert(32, 5);
  EXPECT_EQ(map.take(32), 5);
  map.release();
  EXPECT_EQ(map.capacity(), 0u);
  map.insert(48, 9);  // usable again after a release
  EXPECT_EQ(map.take(48), 9);
}

TEST(MappedVectorTest, GrowsCopiesAndComparesLikeAVector) {
  MappedVector<int64_t> v;
  for (int64_t i = 0; i < 100000; ++i) v.push_back(i * 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % os::page_size(), 0u) << "each array is a mapping of its own";
  MappedVector<int64_t> copy = v;
  EXPECT_EQ(copy, v);
  copy[99999] = -1;
  EXPECT_NE(copy, v);
  EXPECT_EQ(v[99999], 299997);
}

// A backing allocator outside the malloc heap (a bump arena in static
// storage), so that the heap shows only the replay allocator's own requests.
class BumpBacking final : public BackingAllocator {
 public:
  void* allocate(size_t size, size_t alignment) override {
    const size_t start = (used_ + alignment - 1) / alignment * alignment;
    if (start + size > sizeof arena_) return nullptr;
    used_ = start + size;
    return arena_ + start;
  }
  void* allocate_zeroed(size_t size) override { return allocate(size, 16); }
  void* reallocate(void*, size_t) override { return nullptr; }
  void deallocate(void*) override {}
  size_t usable_size(void*) override { return 0; }

 private:
  alignas(64) static inline unsigned char arena_[8 << 20];
  size_t used_ = 0;
};

size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

TEST(ReplayProfileMemoryTest, ProfilingAddsNothingToTheMallocHeap) {
  // Sanitizer runtimes replace malloc and may not report through mallinfo2.
  const size_t empty = heap_in_use();
  void* volatile probe = std::malloc(256 << 10);
  const bool measurable = probe && heap_in_use() >= empty + (256u << 10);
  std::free(probe);
  if (!measurable) GTEST_SKIP() << "mallinfo2 does not see this process's malloc";

  BumpBacking backing;
  ReplayConfig config;
  config.huge_pages = false;
  config.max_threads = 2;
  config.max_slab_bytes = 16 << 20;
  config.min_sequenced_size = 0;  // every request is profiled
  ReplayAllocator a(config, backing);
  ASSERT_TRUE(a.init_status().ok());
  a.deallocate(a.allocate(64));  // claims this thread's record (a heap object) before measuring
  const size_t before = heap_in_use();
  // One profiled iteration of 20,000 requests, each freed two requests later:
  // a malloc-backed profile would hold 20,000 x 24 bytes of arrays here.
  void* previous[2] = {nullptr, nullptr};
  for (int i = 0; i < 20000; ++i) {
    void* p = a.allocate(48);
    ASSERT_NE(p, nullptr);
    if (previous[i % 2]) a.deallocate(previous[i % 2]);
    previous[i % 2] = p;
  }
  const size_t after = heap_in_use();
  EXPECT_LT(after, before + 4096) << "the profile lives outside the malloc heap";
  EXPECT_EQ(a.phase_of_calling_thread(), ReplayPhase::kProfiling);
  EXPECT_EQ(a.stats().profiled, 20001u);
}

}  // namespace
}  // namespace memplan::runtime
