// pool.h — memory pools per device (the RAF design): a MemoryPool interface,
// pools made by name, and a registry that gives each device one current pool
// and switches it at run time.
//
// Pools (make_pool, pool_names()):
//   no_pool     every request goes straight to the device allocator, every
//               free straight back;
//   page_unit   sizes are rounded up to a whole number of page units
//               (PoolOptions::page_unit_bytes, default 4 KiB); a freed block is
//               cached under its rounded size and handed out again for the
//               next request of that rounded size (a hit), up to
//               PoolOptions::max_cached_bytes cached; otherwise the device
//               allocates (a miss);
//   replay      the replay allocator (memplan/replay.h) as a pool: it learns
//               the iteration between mark() calls and serves it from a slab.
//               Host memory only, so only on the CPU device.
//
// Devices: "cpu" (aligned host allocations) always; "cuda:N" (stream-ordered
// cudaMallocFromPoolAsync / cudaFreeAsync on the legacy default stream, from a
// CUDA memory pool of memplan's own) only when CMake finds the CUDA toolkit
// (MEMPLAN_WITH_CUDA) and the machine has device N. CUDA memory is not host
// memory: no_pool and page_unit serve it, replay does not.
//
// Switching (Note [Pool switching]): init_pool replaces a device's pool and
// remove_pool drops it, while blocks of the old pool may still be live. A
// block must be freed through the pool that allocated it, never through its
// successor: PooledBlock holds a reference to its pool, so an old pool stays
// alive until its last block is freed, and then releases what it cached.
// Callers that use raw pointers from pool(device)->allocate must keep that
// shared_ptr while their blocks live, for the same reason.
//
// Thread-safety: every function of a pool and of the registry may be called
// from any thread. no_pool and page_unit take a mutex per call; replay is
// lock-free on its fast path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "memplan/replay.h"
#include "memplan/status.h"

namespace memplan {

// Where a pool's memory comes from: one device's own allocator.
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  virtual std::string_view device() const = 0;  // "cpu", "cuda:0", ...
  // True when the memory is host memory the CPU may read and write.
  virtual bool host_accessible() const = 0;
  // nullptr when out of memory. alignment: a power of two.
  virtual void* allocate(size_t size, size_t alignment) = 0;
  virtual void free(void* p) = 0;
};

// The host allocator (aligned_alloc / free of the process's malloc).
DeviceAllocator& cpu_device_allocator();
// The allocator of a device by name ("cpu"; "cuda:N" in CUDA builds), or NotFound.
StatusOr<DeviceAllocator*> device_allocator(std::string_view device);
// The devices this build can serve on this machine: "cpu", then "cuda:0", ...
std::vector<std::string> device_names();

struct PoolStats {
  uint64_t allocations = 0;    // requests served (by the pool or its device)
  uint64_t frees = 0;          // blocks given back to the pool
  uint64_t hits = 0;           // requests served from the pool's own memory (cache, slab)
  uint64_t misses = 0;         // requests that went to the device allocator
  uint64_t cached_bytes = 0;   // bytes held for reuse and not in use (page_unit: cache; replay: slabs)
  uint64_t in_use_bytes = 0;   // bytes of live blocks (page_unit and no_pool: as rounded / requested)
  uint64_t invalid_frees = 0;  // frees of pointers the pool did not hand out (ignored)
};

struct PoolOptions {
  // page_unit: the rounding unit (bytes, >= 1).
  int64_t page_unit_bytes = 4096;
  // page_unit: most bytes kept in the cache; frees beyond go to the device.
  int64_t max_cached_bytes = int64_t{1} << 40;
  // replay: the replay allocator's knobs.
  ReplayConfig replay;
};

// The options from the environment: MEMPLAN_POOL_PAGE_UNIT,
// MEMPLAN_POOL_MAX_CACHED and every replay knob (replay_config_from_environment);
// unset variables keep their defaults. Fails on a malformed value, naming it.
StatusOr<PoolOptions> pool_options_from_environment(EnvironmentLookup lookup = nullptr);
// The knobs of PoolOptions but its replay part (MEMPLAN_POOL_*), as
// replay_knobs() lists the replay knobs.
std::span<const ReplayKnob> pool_knobs();

class MemoryPool {
 public:
  virtual ~MemoryPool() = default;
  virtual std::string_view name() const = 0;
  // nullptr when out of memory. alignment: a power of two (16 is assumed when smaller).
  virtual void* allocate(size_t size, size_t alignment = 64) = 0;
  // A block this pool allocated; nullptr is ignored, other pointers are counted as invalid.
  virtual void free(void* p) = 0;
  virtual PoolStats stats() const = 0;
  // An iteration boundary (replay learns from it; the other pools ignore it).
  virtual void mark() {}
};

// The pools make_pool knows, in a stable order.
std::vector<std::string_view> pool_names();
// A new pool of the given name on `device`. InvalidArgument for bad options or
// a pool the device cannot hold (replay needs host memory); NotFound for an
// unknown name.
StatusOr<std::unique_ptr<MemoryPool>> make_pool(std::string_view name, DeviceAllocator& device,
                                                const PoolOptions& options = {});

// A block from PoolRegistry::allocate: freed through the pool that made it
// when the handle is reset or destroyed, which it keeps alive until then.
class PooledBlock {
 public:
  PooledBlock() = default;
  PooledBlock(void* data, size_t size, std::shared_ptr<MemoryPool> pool)
      : data_(data), size_(size), pool_(std::move(pool)) {}
  PooledBlock(PooledBlock&& other) noexcept { *this = std::move(other); }
  PooledBlock& operator=(PooledBlock&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = other.data_;
      size_ = other.size_;
      pool_ = std::move(other.pool_);
      other.data_ = nullptr;
      other.size_ = 0;
    }
    return *this;
  }
  PooledBlock(const PooledBlock&) = delete;
  PooledBlock& operator=(const PooledBlock&) = delete;
  ~PooledBlock() { reset(); }

  void reset() {
    if (pool_) pool_->free(data_);
    pool_.reset();
    data_ = nullptr;
    size_ = 0;
  }
  void* data() const { return data_; }
  size_t size() const { return size_; }
  const MemoryPool* pool() const { return pool_.get(); }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<MemoryPool> pool_;
};

// One current pool per device.
class PoolRegistry {
 public:
  // Makes pool `name` the device's current pool, replacing any other (see
  // Note [Pool switching]). Fails without changing anything when the device
  // or the pool is unknown or the options are invalid.
  Status init_pool(std::string_view device, std::string_view name, const PoolOptions& options = {});
  // Drops the device's pool; NotFound when it has none.
  Status remove_pool(std::string_view device);
  // The device's current pool, or nullptr.
  std::shared_ptr<MemoryPool> pool(std::string_view device) const;
  // A block from the device's current pool: NotFound without a pool,
  // CapacityExceeded when out of memory.
  StatusOr<PooledBlock> allocate(std::string_view device, size_t size, size_t alignment = 64);
  // Devices that have a pool, sorted.
  std::vector<std::string> devices() const;

  // The process-wide registry behind init_pool / remove_pool.
  static PoolRegistry& global();

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<MemoryPool>> pools_;
};

// RAF's entry points, on PoolRegistry::global(), with the options from the
// environment (pool_options_from_environment).
Status init_pool(std::string_view device, std::string_view name);
Status remove_pool(std::string_view device);

}  // namespace memplan
