// cuda_pluggable.cc — libmemplan_cuda_alloc.so: the device replay allocator
// (device_replay.h) on CUDA, in the form PyTorch's CUDAPluggableAllocator
// loads (PyTorch >= 2.0):
//
//   alloc = torch.cuda.memory.CUDAPluggableAllocator(
//       "libmemplan_cuda_alloc.so", "memplan_cuda_malloc", "memplan_cuda_free")
//   torch.cuda.memory.change_current_allocator(alloc)   # before any CUDA tensor
//   lib = ctypes.CDLL("libmemplan_cuda_alloc.so")
//   for batch in data: step(batch); lib.memplan_cuda_mark()
//
// Device memory, per device:
//   - a unit's window: cuMemAddressReserve (virtual addresses only);
//   - its slab: cuMemCreate + cuMemMap + cuMemSetAccess over the window's
//     first bytes, in the device's allocation granularity (2 MiB on current
//     GPUs), unmapped and released by cuMemUnmap + cuMemRelease;
//   - the fallback: cudaMallocAsync / cudaFreeAsync on the request's stream
//     (the device's default memory pool), trimmed with cudaMemPoolTrimTo
//     before a slab is mapped;
//   - synchronize: cudaStreamSynchronize.
// Knobs: the MEMPLAN_* environment of the host runtime (docs/runtime.md),
// read once when the first request arrives; MEMPLAN_STATS=1 prints the
// counters at exit; MEMPLAN_PLANS=F serves a device plan file (memplan
// snapshot --save-plans, or MEMPLAN_SAVE_PLANS of an earlier run) from the
// first request, MEMPLAN_SAVE_PLANS=F writes what was learnt at exit.
//
// Statistics: PyTorch keeps none for a pluggable allocator (memory_stats()
// and max_memory_allocated() raise), so the library gives its own
// (DeviceMemoryStats, device_replay.h):
//
//   class Stats(ctypes.Structure):
//       _fields_ = [(n, ctypes.c_uint64) for n in ("allocated_bytes", "peak_allocated_bytes",
//                   "reserved_bytes", "peak_reserved_bytes", "requests", "served")]
//   s = Stats(); lib.memplan_cuda_memory_stats(ctypes.byref(s), ctypes.sizeof(s))  # 0: filled
//   lib.memplan_cuda_reset_peak_memory_stats()
//
// Built only with the CUDA toolkit (MEMPLAN_WITH_CUDA). Its logic is the
// device replay allocator's, tested on a mock device in every build
// (tests/runtime/device_replay_test.cc); this file is the CUDA calls alone.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include "memplan/plan_file.h"
#include "memplan/replay_config.h"
#include "runtime/device/device_replay.h"
#include "runtime/os/os_memory.h"
#include "runtime/plan_files.h"

namespace memplan::runtime {
namespace {

class CudaMemory final : public DeviceMemory {
 public:
  explicit CudaMemory(int device) : device_(device) {
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device;
    size_t granularity = 0;
    if (cuMemGetAllocationGranularity(&granularity, &prop_, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS ||
        granularity == 0) {
      granularity = size_t{2} << 20;
    }
    granularity_ = granularity;
  }

  size_t granularity() const override { return granularity_; }

  void* reserve(size_t bytes) override {
    CUdeviceptr address = 0;
    if (cuMemAddressReserve(&address, bytes, granularity_, 0, 0) != CUDA_SUCCESS) return nullptr;
    return reinterpret_cast<void*>(address);
  }
  void release(void* window, size_t bytes) override { cuMemAddressFree(reinterpret_cast<CUdeviceptr>(window), bytes); }
  bool commit(void* address, size_t bytes) override {
    CUmemGenericAllocationHandle handle = 0;
    if (cuMemCreate(&handle, bytes, &prop_, 0) != CUDA_SUCCESS) return false;
    const auto at = reinterpret_cast<CUdeviceptr>(address);
    if (cuMemMap(at, bytes, 0, handle, 0) != CUDA_SUCCESS) {
      cuMemRelease(handle);
      return false;
    }
    CUmemAccessDesc access{};
    access.location = prop_.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (cuMemSetAccess(at, bytes, &access, 1) != CUDA_SUCCESS) {
      cuMemUnmap(at, bytes);
      cuMemRelease(handle);
      return false;
    }
    handles_[at] = {handle, bytes};
    return true;
  }
  // A slab grows by one commit per growth: every chunk in the range goes.
  void decommit(void* address, size_t bytes) override {
    const auto from = reinterpret_cast<CUdeviceptr>(address);
    auto it = handles_.lower_bound(from);
    while (it != handles_.end() && it->first < from + bytes) {
      cuMemUnmap(it->first, it->second.second);
      cuMemRelease(it->second.first);
      it = handles_.erase(it);
    }
  }
  void* allocate(size_t bytes, void* stream) override {
    void* p = nullptr;
    if (cudaMallocAsync(&p, bytes, static_cast<cudaStream_t>(stream)) != cudaSuccess) return nullptr;
    return p;
  }
  void deallocate(void* p, size_t, void* stream) override { cudaFreeAsync(p, static_cast<cudaStream_t>(stream)); }
  void synchronize(void* stream) override { cudaStreamSynchronize(static_cast<cudaStream_t>(stream)); }
  void trim() override {
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, device_) == cudaSuccess) cudaMemPoolTrimTo(pool, 0);
  }

 private:
  int device_;
  size_t granularity_ = 0;
  CUmemAllocationProp prop_{};
  std::map<CUdeviceptr, std::pair<CUmemGenericAllocationHandle, size_t>> handles_;  // mapped chunks
};

class CudaDevices final : public DeviceSet {
 public:
  DeviceMemory* device(int index) override {
    std::lock_guard lock(mutex_);
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || index < 0 || index >= count) return nullptr;
    auto& slot = devices_[index];
    if (!slot) slot = std::make_unique<CudaMemory>(index);
    return slot.get();
  }

 private:
  std::mutex mutex_;
  std::map<int, std::unique_ptr<CudaMemory>> devices_;
};

// Never destroyed, like g_allocator: the allocator's units keep pointers into it, and a
// free that comes after the static destructors (a tensor PyTorch releases at
// exit) must still find its device.
CudaDevices& g_devices = *new CudaDevices;
std::once_flag g_once;
DeviceReplayAllocator* g_allocator = nullptr;  // never destroyed: frees may come after exit handlers

// MEMPLAN_SAVE_PLANS: the file and the command line, kept for the exit handler.
const std::string* g_save_path = nullptr;
const std::string* g_program = nullptr;

void save_plans() {
  if (g_allocator == nullptr || g_save_path == nullptr) return;
  const std::string line = save_plans_line(g_allocator->saved_plans(*g_program), *g_save_path);
  std::fprintf(stderr, "memplan cuda: %s\n", line.c_str());
}

void print_stats() {
  if (g_allocator == nullptr) return;
  char line[2048];
  format_replay_stats(g_allocator->stats(), "memplan cuda", "streams", line, sizeof line);
  std::fputs(line, stderr);
}

DeviceReplayAllocator* allocator() {
  std::call_once(g_once, [] {
    auto config = replay_config_from_environment();
    if (!config.ok()) {
      std::fprintf(stderr, "memplan cuda: %s; serving with cudaMallocAsync only\n", config.status().message().c_str());
      return;
    }
    auto made = DeviceReplayAllocator::create(*config, g_devices);
    if (!made.ok()) {
      std::fprintf(stderr, "memplan cuda: %s; serving with cudaMallocAsync only\n", made.status().message().c_str());
      return;
    }
    g_allocator = made->release();
    if (config->print_stats) std::atexit(print_stats);
    if (config->plans_file.empty() && config->save_plans_file.empty()) return;
    g_program = new std::string(os::command_line());  // never destroyed: read by an exit handler
    if (!config->plans_file.empty()) {
      const std::string line = load_plans_line(config->plans_file, "device", *g_program,
                                               [](const PlanFile& file) { return g_allocator->load_plans(file); });
      std::fprintf(stderr, "memplan cuda: %s\n", line.c_str());
    }
    if (!config->save_plans_file.empty()) {
      g_save_path = new std::string(config->save_plans_file);
      std::atexit(save_plans);
    }
  });
  return g_allocator;
}

}  // namespace
}  // namespace memplan::runtime

extern "C" {

__attribute__((visibility("default"))) void* memplan_cuda_malloc(ssize_t size, int device, cudaStream_t stream) {
  using namespace memplan::runtime;
  if (DeviceReplayAllocator* a = allocator()) return a->allocate(static_cast<size_t>(size), device, stream);
  void* p = nullptr;
  return cudaMallocAsync(&p, static_cast<size_t>(size), stream) == cudaSuccess ? p : nullptr;
}

__attribute__((visibility("default"))) void memplan_cuda_free(void* ptr, size_t size, int device, cudaStream_t stream) {
  using namespace memplan::runtime;
  if (DeviceReplayAllocator* a = allocator()) {
    a->deallocate(ptr, size, device, stream);
    return;
  }
  cudaFreeAsync(ptr, stream);
}

__attribute__((visibility("default"))) void memplan_cuda_mark(void) {
  if (auto* a = memplan::runtime::allocator()) a->mark();
}

__attribute__((visibility("default"))) void memplan_cuda_mark_key(uint64_t key) {
  if (auto* a = memplan::runtime::allocator()) a->mark(key);
}

// Copies the first `bytes` bytes of the statistics (six uint64_t fields, in
// DeviceMemoryStats's order) to `out`; 0, or -1 when the allocator could not
// start (its configuration's error was printed; cudaMallocAsync serves).
static_assert(sizeof(memplan::runtime::DeviceMemoryStats) == 6 * sizeof(uint64_t) &&
                  std::is_standard_layout_v<memplan::runtime::DeviceMemoryStats>,
              "memplan_cuda_memory_stats copies DeviceMemoryStats as six uint64_t");
__attribute__((visibility("default"))) int memplan_cuda_memory_stats(void* out, size_t bytes) {
  auto* a = memplan::runtime::allocator();
  if (a == nullptr || out == nullptr) return -1;
  const memplan::runtime::DeviceMemoryStats s = a->memory_stats();
  std::memcpy(out, &s, std::min(bytes, sizeof s));
  return 0;
}

__attribute__((visibility("default"))) void memplan_cuda_reset_peak_memory_stats(void) {
  if (auto* a = memplan::runtime::allocator()) a->reset_peaks();
}

}  // extern "C"
