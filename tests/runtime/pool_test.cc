// Memory pools: page-unit rounding and reuse, no_pool, the replay pool, and
// switching a device's pool while blocks of the old one are live.
#include "memplan/pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace memplan {
namespace {

// A device that counts what reaches it, over the host allocator.
class CountingDevice final : public DeviceAllocator {
 public:
  std::string_view device() const override { return "counting"; }
  bool host_accessible() const override { return host; }
  void* allocate(size_t size, size_t alignment) override {
    ++allocations;
    last_size = size;
    return cpu_device_allocator().allocate(size, alignment);
  }
  void free(void* p) override {
    ++frees;
    cpu_device_allocator().free(p);
  }
  int allocations = 0;
  int frees = 0;
  size_t last_size = 0;
  bool host = true;
};

std::unique_ptr<MemoryPool> page_unit(DeviceAllocator& device, int64_t unit, int64_t max_cached = int64_t{1} << 40) {
  PoolOptions options;
  options.page_unit_bytes = unit;
  options.max_cached_bytes = max_cached;
  auto pool = make_pool("page_unit", device, options);
  EXPECT_TRUE(pool.ok()) << pool.status().message();
  return std::move(pool).value();
}

TEST(PoolTest, PageUnitRoundsSizesUpToWholeUnits) {
  CountingDevice device;
  auto pool = page_unit(device, 4096);
  void* a = pool->allocate(1);
  EXPECT_EQ(device.last_size, 4096u);
  void* b = pool->allocate(4097);
  EXPECT_EQ(device.last_size, 8192u);
  void* c = pool->allocate(0);
  EXPECT_EQ(device.last_size, 4096u) << "a zero-byte request still takes one unit";
  EXPECT_EQ(pool->stats().in_use_bytes, 4096u + 8192u + 4096u);
  pool->free(a);
  pool->free(b);
  pool->free(c);
  EXPECT_EQ(pool->stats().in_use_bytes, 0u);
}

TEST(PoolTest, PageUnitReusesAFreedBlockOfTheSameRoundedSize) {
  CountingDevice device;
  auto pool = page_unit(device, 1000);
  void* a = pool->allocate(1500);  // rounded to 2000
  pool->free(a);
  EXPECT_EQ(pool->stats().cached_bytes, 2000u);
  void* b = pool->allocate(1999);  // also 2000: the cached block
  EXPECT_EQ(b, a);
  void* c = pool->allocate(2001);  // 3000: a new block
  EXPECT_NE(c, a);
  const PoolStats s = pool->stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.allocations, 3u);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(device.allocations, 2);
  pool->free(b);
  pool->free(c);
  EXPECT_EQ(pool->stats().frees, 3u);
  EXPECT_EQ(pool->stats().cached_bytes, 5000u);
  EXPECT_EQ(device.frees, 0) << "freed blocks stay cached";
  pool.reset();
  EXPECT_EQ(device.frees, 2) << "the pool gives its cache back when it goes";
}

TEST(PoolTest, PageUnitCountsReusesOverARepeatedPattern) {
  CountingDevice device;
  auto pool = page_unit(device, 4096);
  const std::vector<size_t> sizes = {100, 5000, 100, 70000, 4096, 12};
  for (int round = 0; round < 5; ++round) {
    std::vector<void*> blocks;
    for (size_t s : sizes) {
      void* p = pool->allocate(s);
      ASSERT_NE(p, nullptr);
      std::memset(p, round, s);
      blocks.push_back(p);
    }
    for (void* p : blocks) pool->free(p);
  }
  const PoolStats s = pool->stats();
  EXPECT_EQ(s.misses, sizes.size()) << "only the first round reaches the device";
  EXPECT_EQ(s.hits, 4 * sizes.size());
  EXPECT_EQ(device.allocations, static_cast<int>(sizes.size()));
}

TEST(PoolTest, PageUnitCacheLimitSendsFreesToTheDevice) {
  CountingDevice device;
  auto pool = page_unit(device, 4096, 4096);
  void* a = pool->allocate(10);
  void* b = pool->allocate(10);
  pool->free(a);
  pool->free(b);  // the cache holds one unit already
  EXPECT_EQ(device.frees, 1);
  EXPECT_EQ(pool->stats().cached_bytes, 4096u);
}

TEST(PoolTest, PageUnitHonoursAlignment) {
  CountingDevice device;
  auto pool = page_unit(device, 64);
  for (size_t alignment : {16u, 64u, 256u, 4096u}) {
    void* p = pool->allocate(64, alignment);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u) << alignment;
    pool->free(p);
  }
}

TEST(PoolTest, RejectsBadOptionsAndUnknownNames) {
  CountingDevice device;
  PoolOptions options;
  options.page_unit_bytes = 0;
  EXPECT_EQ(make_pool("page_unit", device, options).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_pool("arena", device).status().code(), StatusCode::kNotFound);
  device.host = false;
  EXPECT_EQ(make_pool("replay", device).status().code(), StatusCode::kInvalidArgument)
      << "the replay pool's slab is host memory";
}

TEST(PoolTest, NoPoolGoesStraightToTheDeviceAndIgnoresForeignFrees) {
  CountingDevice device;
  auto made = make_pool("no_pool", device);
  ASSERT_TRUE(made.ok());
  auto& pool = *made;
  void* a = pool->allocate(100);
  pool->free(a);
  void* b = pool->allocate(100);
  pool->free(b);
  int local = 0;
  pool->free(&local);
  const PoolStats s = pool->stats();
  EXPECT_EQ(device.allocations, 2);
  EXPECT_EQ(device.frees, 2);
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.invalid_frees, 1u);
}

TEST(PoolTest, ReplayPoolServesARepeatedIterationFromItsSlab) {
  CountingDevice device;
  PoolOptions options;
  options.replay.planner = "greedy_by_size";
  options.replay.max_slab_bytes = 1 << 24;
  options.replay.max_threads = 2;
  options.replay.plan_in_background = false;  // adopted at the boundary that agreed: served from the third iteration
  options.replay.min_sequenced_size = 0;      // every request in the sequence (the pool's hits include pooled ones)
  auto made = make_pool("replay", device, options);
  ASSERT_TRUE(made.ok()) << made.status().message();
  auto& pool = *made;
  const std::vector<size_t> sizes = {1000, 200, 3000, 64};
  for (int i = 0; i < 4; ++i) {
    std::vector<void*> blocks;
    for (size_t s : sizes) blocks.push_back(pool->allocate(s, 64));
    for (void* p : blocks) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
      pool->free(p);
    }
    pool->mark();
  }
  const PoolStats s = pool->stats();
  EXPECT_EQ(s.hits, 2 * sizes.size()) << "two profiled iterations, then two served from the slab";
  EXPECT_EQ(s.misses, 2 * sizes.size());
  EXPECT_GT(s.cached_bytes, 0u);
}

TEST(PoolTest, RegistrySwitchesPoolsAndKeepsTheOldOneForItsBlocks) {
  PoolRegistry registry;
  ASSERT_TRUE(registry.init_pool("cpu", "page_unit").ok());
  auto first = registry.allocate("cpu", 100);
  ASSERT_TRUE(first.ok());
  std::memset(first->data(), 1, 100);
  const MemoryPool* old_pool = registry.pool("cpu").get();
  std::weak_ptr<MemoryPool> old_alive = registry.pool("cpu");

  ASSERT_TRUE(registry.init_pool("cpu", "no_pool").ok());
  EXPECT_EQ(registry.pool("cpu")->name(), "no_pool");
  EXPECT_FALSE(old_alive.expired()) << "a live block keeps its pool";
  auto second = registry.allocate("cpu", 100);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->pool(), registry.pool("cpu").get());
  EXPECT_EQ(first->pool(), old_pool) << "the old block still belongs to the old pool";
  EXPECT_EQ(old_pool->stats().frees, 0u);

  first->reset();  // freed through the old pool, which then goes
  EXPECT_TRUE(old_alive.expired());
  EXPECT_EQ(registry.pool("cpu")->stats().invalid_frees, 0u) << "the new pool never saw the old block";
  second->reset();
  EXPECT_EQ(registry.pool("cpu")->stats().frees, 1u);
}

TEST(PoolTest, RegistryRemoveAndUnknownDevices) {
  PoolRegistry registry;
  EXPECT_EQ(registry.allocate("cpu", 10).status().code(), StatusCode::kNotFound) << "no pool yet";
  EXPECT_EQ(registry.init_pool("tpu", "no_pool").code(), StatusCode::kNotFound);
  EXPECT_EQ(registry.init_pool("cpu", "nonsense").code(), StatusCode::kNotFound);
  EXPECT_TRUE(registry.devices().empty()) << "failed init_pool calls change nothing";
  ASSERT_TRUE(registry.init_pool("cpu", "no_pool").ok());
  EXPECT_EQ(registry.devices(), std::vector<std::string>{"cpu"});
  auto block = registry.allocate("cpu", 10);
  ASSERT_TRUE(block.ok());
  ASSERT_TRUE(registry.remove_pool("cpu").ok());
  EXPECT_EQ(registry.pool("cpu"), nullptr);
  EXPECT_EQ(registry.remove_pool("cpu").code(), StatusCode::kNotFound);
  block->reset();  // its pool outlived the removal
}

TEST(PoolTest, GlobalEntryPointsUseTheProcessRegistry) {
  ASSERT_TRUE(init_pool("cpu", "page_unit").ok());
  EXPECT_EQ(PoolRegistry::global().pool("cpu")->name(), "page_unit");
  ASSERT_TRUE(remove_pool("cpu").ok());
  EXPECT_EQ(PoolRegistry::global().pool("cpu"), nullptr);
}

TEST(PoolTest, OptionsComeFromTheEnvironment) {
  auto lookup = [](const char* name) -> const char* {
    const std::string n(name);
    if (n == "MEMPLAN_POOL_PAGE_UNIT") return "65536";
    if (n == "MEMPLAN_POOL_MAX_CACHED") return "0";
    if (n == "MEMPLAN_PROFILE_ITERATIONS") return "3";
    return nullptr;
  };
  auto options = pool_options_from_environment(lookup);
  ASSERT_TRUE(options.ok()) << options.status().message();
  EXPECT_EQ(options->page_unit_bytes, 65536);
  EXPECT_EQ(options->max_cached_bytes, 0);
  EXPECT_EQ(options->replay.profile_iterations, 3);
  auto bad = pool_options_from_environment(
      [](const char* name) -> const char* { return std::string(name) == "MEMPLAN_POOL_PAGE_UNIT" ? "0" : nullptr; });
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("MEMPLAN_POOL_PAGE_UNIT"), std::string::npos);
}

}  // namespace
}  // namespace memplan
