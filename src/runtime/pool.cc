// pool.cc — memory pools (memplan/pool.h): no_pool, page_unit, replay, the
// CPU device allocator and the per-device registry.
//
// page_unit, per request of `size` bytes and alignment a:
//   1. round: r = ceil(max(size, 1) / unit) * unit;
//   2. look up the cache list of r; take the most recently freed block that
//      is aligned to a (a hit), else allocate r bytes aligned to
//      max(a, 64) from the device (a miss);
//   3. record the block as live with its rounded size;
//   free: find the block's rounded size among the live blocks, and push it on
//   the list of that size unless the cache would exceed max_cached_bytes
//   (then the device frees it).
// Complexity: O(1) expected per call (hash maps; a hit scans past misaligned
// blocks, which only requests aligned beyond 64 bytes can meet), under one
// mutex per pool.
#include "memplan/pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <utility>

#include "memplan/backing_allocator.h"
#include "runtime/knob_table.h"

#ifdef MEMPLAN_WITH_CUDA
#include "runtime/cuda/cuda_device.h"
#endif

namespace memplan {
namespace {

// The blocks a pool has handed out and not yet taken back, with the bytes
// each holds, kept in step with the pool's statistics. Callers hold the
// pool's mutex.
class LiveBlocks {
 public:
  // Records a new block; false when the bookkeeping itself is out of memory
  // (the caller gives the block back and fails the request).
  bool add(void* p, size_t bytes, PoolStats& stats) {
    try {
      bytes_.emplace(p, bytes);
    } catch (...) {
      return false;
    }
    ++stats.allocations;
    stats.in_use_bytes += bytes;
    return true;
  }
  // The bytes of a live block, which is no longer live; nothing for a
  // pointer this pool did not hand out (counted as an invalid free).
  std::optional<size_t> remove(void* p, PoolStats& stats) {
    auto it = bytes_.find(p);
    if (it == bytes_.end()) {
      ++stats.invalid_frees;
      return std::nullopt;
    }
    const size_t bytes = it->second;
    bytes_.erase(it);
    ++stats.frees;
    stats.in_use_bytes -= bytes;
    return bytes;
  }
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& [p, bytes] : bytes_) f(p);
  }

 private:
  std::unordered_map<void*, size_t> bytes_;
};
// Device blocks are aligned at least this much, so a cached block fits any
// request up to it (what RAF and PyTorch's CPU allocator give tensors).
constexpr size_t kDeviceAlignment = 64;

class CpuDeviceAllocator final : public DeviceAllocator {
 public:
  std::string_view device() const override { return "cpu"; }
  bool host_accessible() const override { return true; }
  void* allocate(size_t size, size_t alignment) override {
    alignment = std::max(alignment, sizeof(void*));
    void* p = nullptr;
    return posix_memalign(&p, alignment, size ? size : 1) == 0 ? p : nullptr;
  }
  void free(void* p) override { std::free(p); }
};

class NoPool final : public MemoryPool {
 public:
  explicit NoPool(DeviceAllocator& device) : device_(device) {}
  ~NoPool() override {
    // Blocks still live when the pool goes are the caller's leak; give them back.
    live_.for_each([this](void* p) { device_.free(p); });
  }
  std::string_view name() const override { return "no_pool"; }
  void* allocate(size_t size, size_t alignment) override {
    void* p = device_.allocate(size, std::max(alignment, kMinAlignment));
    if (!p) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!live_.add(p, size, stats_)) {
      device_.free(p);
      return nullptr;
    }
    ++stats_.misses;
    return p;
  }
  void free(void* p) override {
    if (!p) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!live_.remove(p, stats_)) return;
    }
    device_.free(p);
  }
  PoolStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  DeviceAllocator& device_;
  mutable std::mutex mutex_;
  LiveBlocks live_;
  PoolStats stats_;
};

class PageUnitPool final : public MemoryPool {
 public:
  PageUnitPool(DeviceAllocator& device, size_t unit, size_t max_cached)
      : device_(device), unit_(unit), max_cached_(max_cached) {}
  ~PageUnitPool() override {
    for (auto& [rounded, blocks] : cache_) {
      for (void* p : blocks) device_.free(p);
    }
    live_.for_each([this](void* p) { device_.free(p); });
  }
  std::string_view name() const override { return "page_unit"; }

  void* allocate(size_t size, size_t alignment) override {
    alignment = std::max(alignment, kMinAlignment);
    const size_t units = std::max<size_t>(size, 1) / unit_ + (std::max<size_t>(size, 1) % unit_ != 0);
    if (units > SIZE_MAX / unit_) return nullptr;
    const size_t rounded = units * unit_;
    std::lock_guard<std::mutex> lock(mutex_);
    void* p = nullptr;
    if (auto it = cache_.find(rounded); it != cache_.end()) {
      std::vector<void*>& blocks = it->second;
      for (size_t k = blocks.size(); k-- > 0;) {
        if ((reinterpret_cast<uintptr_t>(blocks[k]) & (alignment - 1)) == 0) {
          p = blocks[k];
          blocks[k] = blocks.back();
          blocks.pop_back();
          stats_.cached_bytes -= rounded;
          ++stats_.hits;
          break;
        }
      }
    }
    if (!p) {
      p = device_.allocate(rounded, std::max(alignment, kDeviceAlignment));
      if (!p) return nullptr;
      ++stats_.misses;
    }
    if (!live_.add(p, rounded, stats_)) {
      device_.free(p);
      return nullptr;
    }
    return p;
  }

  void free(void* p) override {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const std::optional<size_t> removed = live_.remove(p, stats_);
    if (!removed) return;
    const size_t rounded = *removed;
    if (stats_.cached_bytes + rounded <= max_cached_) {
      try {
        cache_[rounded].push_back(p);
        stats_.cached_bytes += rounded;
        return;
      } catch (...) {
        // No memory for the cache entry: the device takes the block back.
      }
    }
    device_.free(p);
  }

  PoolStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  DeviceAllocator& device_;
  const size_t unit_;
  const size_t max_cached_;
  mutable std::mutex mutex_;
  LiveBlocks live_;                                       // block -> rounded size
  std::unordered_map<size_t, std::vector<void*>> cache_;  // rounded size -> freed blocks
  PoolStats stats_;
};

// The replay allocator's backing allocator on the host device.
class HostBacking final : public BackingAllocator {
 public:
  explicit HostBacking(DeviceAllocator& device) : device_(device) {}
  void* allocate(size_t size, size_t alignment) override { return device_.allocate(size, alignment); }
  // BackingAllocator's contract: every request at least kMinAlignment-aligned.
  void* allocate_zeroed(size_t size) override {
    void* p = device_.allocate(size, kMinAlignment);
    if (p) std::memset(p, 0, size);
    return p;
  }
  // The pool's interface has no realloc and no usable size: neither is reached.
  void* reallocate(void*, size_t) override { return nullptr; }
  void deallocate(void* p) override { device_.free(p); }
  size_t usable_size(void*) override { return 0; }

 private:
  DeviceAllocator& device_;
};

class ReplayPool final : public MemoryPool {
 public:
  ReplayPool(DeviceAllocator& device, const ReplayConfig& config) : backing_(device), replay_(config, backing_) {}
  std::string_view name() const override { return "replay"; }
  void* allocate(size_t size, size_t alignment) override { return replay_.allocate(size, alignment); }
  void free(void* p) override { replay_.deallocate(p); }
  void mark() override { replay_.mark(); }
  PoolStats stats() const override {
    const ReplayStats s = replay_.stats();
    PoolStats p;
    p.hits = s.served + s.pooled;
    p.misses = s.profiled + s.unplanned + s.fallback + s.small;
    p.allocations = p.hits + p.misses;
    p.cached_bytes = s.slab_bytes;
    p.invalid_frees = s.invalid_frees;
    return p;
  }
  Status init_status() const { return replay_.init_status(); }

 private:
  HostBacking backing_;
  ReplayAllocator replay_;
};

}  // namespace

DeviceAllocator& cpu_device_allocator() {
  static CpuDeviceAllocator cpu;
  return cpu;
}

StatusOr<DeviceAllocator*> device_allocator(std::string_view device) {
  if (device == "cpu") return &cpu_device_allocator();
#ifdef MEMPLAN_WITH_CUDA
  if (device.substr(0, 4) == "cuda") return cuda::device_allocator(device);
  return NotFound("unknown device '" + std::string(device) + "' (this build has: cpu, cuda:N)");
#else
  return NotFound("unknown device '" + std::string(device) +
                  "' (this build has: cpu; CUDA devices need a build "
                  "with the CUDA toolkit)");
#endif
}

std::vector<std::string> device_names() {
  std::vector<std::string> names = {"cpu"};
#ifdef MEMPLAN_WITH_CUDA
  for (std::string& name : cuda::device_names()) names.push_back(std::move(name));
#endif
  return names;
}

std::vector<std::string_view> pool_names() { return {"no_pool", "page_unit", "replay"}; }

StatusOr<std::unique_ptr<MemoryPool>> make_pool(std::string_view name, DeviceAllocator& device,
                                                const PoolOptions& options) {
  if (name == "no_pool") return std::unique_ptr<MemoryPool>(new NoPool(device));
  if (name == "page_unit") {
    if (options.page_unit_bytes < 1) return InvalidArgument("page_unit_bytes must be at least 1");
    if (options.max_cached_bytes < 0) return InvalidArgument("max_cached_bytes must not be negative");
    return std::unique_ptr<MemoryPool>(new PageUnitPool(device, static_cast<size_t>(options.page_unit_bytes),
                                                        static_cast<size_t>(options.max_cached_bytes)));
  }
  if (name == "replay") {
    if (!device.host_accessible()) {
      return InvalidArgument("the replay pool serves host memory; device '" + std::string(device.device()) +
                             "' is not host memory");
    }
    auto pool = std::make_unique<ReplayPool>(device, options.replay);
    MEMPLAN_RETURN_IF_ERROR(pool->init_status());
    return std::unique_ptr<MemoryPool>(std::move(pool));
  }
  std::string known;
  for (std::string_view n : pool_names()) known += (known.empty() ? "" : ", ") + std::string(n);
  return NotFound("unknown pool '" + std::string(name) + "' (known: " + known + ")");
}

Status PoolRegistry::init_pool(std::string_view device, std::string_view name, const PoolOptions& options) {
  StatusOr<DeviceAllocator*> allocator = device_allocator(device);
  if (!allocator.ok()) return allocator.status();
  StatusOr<std::unique_ptr<MemoryPool>> made = make_pool(name, **allocator, options);
  if (!made.ok()) return made.status();
  std::shared_ptr<MemoryPool> pool = std::move(made).value();
  std::shared_ptr<MemoryPool> old;  // destroyed outside the lock, if no block holds it
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<MemoryPool>& slot = pools_[std::string(device)];
  old = std::move(slot);
  slot = std::move(pool);
  return Status::Ok();
}

Status PoolRegistry::remove_pool(std::string_view device) {
  std::shared_ptr<MemoryPool> old;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pools_.find(std::string(device));
  if (it == pools_.end()) return NotFound("device '" + std::string(device) + "' has no pool");
  old = std::move(it->second);
  pools_.erase(it);
  return Status::Ok();
}

std::shared_ptr<MemoryPool> PoolRegistry::pool(std::string_view device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pools_.find(std::string(device));
  return it == pools_.end() ? nullptr : it->second;
}

StatusOr<PooledBlock> PoolRegistry::allocate(std::string_view device, size_t size, size_t alignment) {
  std::shared_ptr<MemoryPool> current = pool(device);
  if (!current) return NotFound("device '" + std::string(device) + "' has no pool (init_pool first)");
  void* p = current->allocate(size, alignment);
  if (!p) {
    return CapacityExceeded("pool " + std::string(current->name()) + " on " + std::string(device) +
                            " cannot allocate " + std::to_string(size) + " B");
  }
  return PooledBlock(p, size, std::move(current));
}

std::vector<std::string> PoolRegistry::devices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [device, pool] : pools_) out.push_back(device);
  std::sort(out.begin(), out.end());
  return out;
}

PoolRegistry& PoolRegistry::global() {
  // Never destroyed: blocks may be freed from other static destructors.
  static PoolRegistry* registry = new PoolRegistry;
  return *registry;
}

namespace {

// The pools' own knobs (runtime/knob_table.h); the replay pool reads the
// replay knobs (replay_config.cc).
constexpr runtime::Knob<PoolOptions> kPoolKnobs[] = {
    {"MEMPLAN_POOL_PAGE_UNIT", runtime::KnobType::kInteger, &PoolOptions::page_unit_bytes,
     "the page_unit pool: rounding unit in bytes", 1},
    {"MEMPLAN_POOL_MAX_CACHED", runtime::KnobType::kInteger, &PoolOptions::max_cached_bytes,
     "the page_unit pool: most bytes kept cached; frees beyond go to the device", 0},
};

}  // namespace

std::span<const ReplayKnob> pool_knobs() {
  static const std::vector<ReplayKnob> described = runtime::describe_knobs<PoolOptions>(kPoolKnobs);
  return described;
}

StatusOr<PoolOptions> pool_options_from_environment(EnvironmentLookup lookup) {
  PoolOptions options;
  StatusOr<ReplayConfig> replay = replay_config_from_environment(lookup);
  if (!replay.ok()) return replay.status();
  options.replay = std::move(replay).value();
  std::vector<std::string> rejected;
  options = runtime::read_knobs<PoolOptions>(kPoolKnobs, lookup, &rejected, std::move(options));
  if (!rejected.empty()) return InvalidArgument(rejected.front());
  return options;
}

Status init_pool(std::string_view device, std::string_view name) {
  StatusOr<PoolOptions> options = pool_options_from_environment();
  if (!options.ok()) return options.status();
  return PoolRegistry::global().init_pool(device, name, *options);
}

Status remove_pool(std::string_view device) { return PoolRegistry::global().remove_pool(device); }

}  // namespace memplan
