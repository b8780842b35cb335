// The pools on CUDA devices (built with the CUDA toolkit): device names and
// errors everywhere; the rest needs a GPU and is skipped without one. Device
// memory is checked by copying it back to the host.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "memplan/pool.h"

namespace memplan {
namespace {

int gpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

#define REQUIRE_GPU() \
  if (gpus() == 0) GTEST_SKIP() << "no CUDA device on this machine"

// The bytes of a device block, copied to the host after the legacy default
// stream has done everything issued before.
std::vector<uint8_t> read_back(const void* device_ptr, size_t size) {
  std::vector<uint8_t> host(size);
  EXPECT_EQ(cudaMemcpy(host.data(), device_ptr, size, cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

bool all_bytes_are(const std::vector<uint8_t>& bytes, uint8_t value) {
  return std::all_of(bytes.begin(), bytes.end(), [value](uint8_t b) { return b == value; });
}

TEST(CudaPoolTest, DeviceNamesListTheCpuThenEachGpu) {
  const std::vector<std::string> names = device_names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "cpu");
  ASSERT_EQ(names.size(), static_cast<size_t>(gpus()) + 1);
  for (int i = 0; i < gpus(); ++i) EXPECT_EQ(names[i + 1], "cuda:" + std::to_string(i));
}

TEST(CudaPoolTest, MalformedAndMissingDevicesAreNotFound) {
  for (const char* name : {"cuda", "cuda:", "cuda:x", "cuda:-1", "cuda:0x", "cuda:99999"}) {
    StatusOr<DeviceAllocator*> device = device_allocator(name);
    ASSERT_FALSE(device.ok()) << name;
    EXPECT_EQ(device.status().code(), StatusCode::kNotFound) << name;
  }
  PoolRegistry registry;
  EXPECT_EQ(registry.init_pool("cuda:99999", "no_pool").code(), StatusCode::kNotFound);
  EXPECT_TRUE(registry.devices().empty()) << "a failed init_pool changes nothing";
}

TEST(CudaPoolTest, NoPoolBlocksAreDeviceMemoryTheGpuCanWrite) {
  REQUIRE_GPU();
  StatusOr<DeviceAllocator*> device = device_allocator("cuda:0");
  ASSERT_TRUE(device.ok()) << device.status().message();
  EXPECT_FALSE((*device)->host_accessible());
  EXPECT_EQ((*device)->device(), "cuda:0");
  PoolRegistry registry;
  ASSERT_TRUE(registry.init_pool("cuda:0", "no_pool").ok());
  constexpr size_t kSize = 3 << 20;
  StatusOr<PooledBlock> block = registry.allocate("cuda:0", kSize, 256);
  ASSERT_TRUE(block.ok()) << block.status().message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block->data()) % 256, 0u);
  cudaPointerAttributes attributes = {};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, block->data()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 0);
  ASSERT_EQ(cudaMemsetAsync(block->data(), 0x5A, kSize, cudaStreamLegacy), cudaSuccess);
  EXPECT_TRUE(all_bytes_are(read_back(block->data(), kSize), 0x5A));
  const PoolStats live = registry.pool("cuda:0")->stats();
  EXPECT_EQ(live.allocations, 1u);
  EXPECT_EQ(live.misses, 1u);
  EXPECT_EQ(live.in_use_bytes, kSize);
  block->reset();
  EXPECT_EQ(registry.pool("cuda:0")->stats().in_use_bytes, 0u);
  EXPECT_EQ(registry.pool("cuda:0")->stats().frees, 1u);
}

TEST(CudaPoolTest, PageUnitHandsAFreedDeviceBlockOutAgain) {
  REQUIRE_GPU();
  PoolOptions options;
  options.page_unit_bytes = 1 << 16;
  StatusOr<std::unique_ptr<MemoryPool>> pool = make_pool("page_unit", **device_allocator("cuda:0"), options);
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  void* a = (*pool)->allocate(50000);
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(cudaMemsetAsync(a, 1, 50000, cudaStreamLegacy), cudaSuccess);
  (*pool)->free(a);
  void* b = (*pool)->allocate(65536);
  EXPECT_EQ(b, a) << "the same rounded size (one 64 KiB unit) reuses the cached block";
  ASSERT_EQ(cudaMemsetAsync(b, 2, 65536, cudaStreamLegacy), cudaSuccess);
  EXPECT_TRUE(all_bytes_are(read_back(b, 65536), 2));
  void* c = (*pool)->allocate(65537);
  EXPECT_NE(c, b);
  const PoolStats stats = (*pool)->stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(stats.in_use_bytes, 65536u + 131072u);
  (*pool)->free(b);
  (*pool)->free(c);
  EXPECT_EQ((*pool)->stats().cached_bytes, 65536u + 131072u);
}

TEST(CudaPoolTest, OutOfDeviceMemoryIsAnErrorAndTheDeviceStaysUsable) {
  REQUIRE_GPU();
  PoolRegistry registry;
  ASSERT_TRUE(registry.init_pool("cuda:0", "no_pool").ok());
  StatusOr<PooledBlock> huge = registry.allocate("cuda:0", size_t{1} << 50);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kCapacityExceeded);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failed request leaves no error behind";
  StatusOr<PooledBlock> small = registry.allocate("cuda:0", 4096);
  ASSERT_TRUE(small.ok()) << small.status().message();
}

TEST(CudaPoolTest, TheReplayPoolRefusesDeviceMemory) {
  REQUIRE_GPU();
  StatusOr<std::unique_ptr<MemoryPool>> pool = make_pool("replay", **device_allocator("cuda:0"));
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), StatusCode::kInvalidArgument);
}

TEST(CudaPoolTest, SwitchingTheDevicesPoolKeepsOldBlocksWithTheirPool) {
  REQUIRE_GPU();
  PoolRegistry registry;
  ASSERT_TRUE(registry.init_pool("cuda:0", "page_unit").ok());
  StatusOr<PooledBlock> old_block = registry.allocate("cuda:0", 1000);
  ASSERT_TRUE(old_block.ok());
  ASSERT_TRUE(registry.init_pool("cuda:0", "no_pool").ok());
  EXPECT_EQ(registry.pool("cuda:0")->name(), "no_pool");
  EXPECT_EQ(old_block->pool()->name(), "page_unit");
  StatusOr<PooledBlock> new_block = registry.allocate("cuda:0", 1000);
  ASSERT_TRUE(new_block.ok());
  EXPECT_EQ(new_block->pool()->name(), "no_pool");
  old_block->reset();  // freed through the page_unit pool, which then goes
  EXPECT_EQ(registry.pool("cuda:0")->stats().invalid_frees, 0u);
  ASSERT_TRUE(registry.remove_pool("cuda:0").ok());
  new_block->reset();
}

// Threads allocate, fill with their own byte on the GPU, check and free at
// once through one page_unit pool: a block shared by two live owners would
// show the other thread's byte.
TEST(CudaPoolTest, ConcurrentThreadsGetDisjointDeviceBlocks) {
  REQUIRE_GPU();
  PoolOptions options;
  options.page_unit_bytes = 4096;
  StatusOr<std::unique_ptr<MemoryPool>> made = make_pool("page_unit", **device_allocator("cuda:0"), options);
  ASSERT_TRUE(made.ok());
  MemoryPool& pool = **made;
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&pool, &bad, t] {
      std::vector<std::pair<void*, size_t>> live;
      for (int r = 0; r < kRounds; ++r) {
        const size_t size = 4096 * (1 + (r * 7 + t) % 5);
        void* p = pool.allocate(size);
        if (!p) {
          ++bad[t];
          continue;
        }
        cudaMemsetAsync(p, t + 1, size, cudaStreamLegacy);
        live.emplace_back(p, size);
        if (live.size() == 4 || r == kRounds - 1) {
          for (auto [q, n] : live) {
            if (!all_bytes_are(read_back(q, n), static_cast<uint8_t>(t + 1))) ++bad[t];
            pool.free(q);
          }
          live.clear();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  const PoolStats stats = pool.stats();
  EXPECT_EQ(stats.allocations, static_cast<uint64_t>(kThreads * kRounds));
  EXPECT_EQ(stats.frees, stats.allocations);
  EXPECT_GT(stats.hits, 0u) << "freed blocks are reused";
  EXPECT_EQ(stats.in_use_bytes, 0u);
}

}  // namespace
}  // namespace memplan
