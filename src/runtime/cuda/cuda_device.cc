// cuda_device.cc — stream-ordered device memory for the pools: each "cuda:N"
// allocates with cudaMallocFromPoolAsync and frees with cudaFreeAsync on the
// legacy default stream, from a CUDA memory pool of its own.
//
// Per device, once (the first device_allocator("cuda:N")):
//   1. parse N; check it against cudaGetDeviceCount and that the device
//      supports memory pools (cudaDevAttrMemoryPoolsSupported);
//   2. create a memory pool on the device (pinned device memory) whose
//      release threshold is "never": memory freed to it stays reserved and is
//      handed out again without a driver call, as PyTorch's cudaMallocAsync
//      backend does; the process's default pool is left alone, so other
//      libraries see no change.
// allocate(size, a): cudaMallocFromPoolAsync on the legacy default stream with
//   the device current (restored afterwards); a block not aligned to `a` is
//   given back and the request refused (CUDA aligns to at least 256 bytes, so
//   this only refuses larger alignments).
// free(p): cudaFreeAsync on the legacy default stream.
// Cost: one or two runtime calls per request (no lock of ours); the driver's
// pool does its own locking.
//
// Why the legacy default stream: a MemoryPool call carries no stream, so the
// block must be safe to use on any stream. The legacy default stream waits
// for all work already issued to blocking streams and blocks them until its
// own work ends, so a free is ordered after every kernel already launched on
// such a stream, and an allocation before every kernel launched after it.
// Work on non-blocking streams (cudaStreamNonBlocking) is not ordered by it:
// callers using those must synchronise before freeing (docs/adapters.md).
//
// Allocators are never destroyed: blocks may be freed from static
// destructors, and the CUDA runtime may already be shut down at exit, when a
// cudaMemPoolDestroy would fail.
#include "runtime/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include <charconv>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace memplan::cuda {
namespace {

std::string error_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// Makes `device` current for the scope and restores the caller's device.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) cudaSetDevice(device);
    switched_ = previous_ >= 0 && previous_ != device;
  }
  ~CurrentDevice() {
    if (switched_) cudaSetDevice(previous_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
};

class CudaDeviceAllocator final : public DeviceAllocator {
 public:
  CudaDeviceAllocator(int index, cudaMemPool_t pool)
      : index_(index), name_("cuda:" + std::to_string(index)), pool_(pool) {}
  std::string_view device() const override { return name_; }
  bool host_accessible() const override { return false; }

  void* allocate(size_t size, size_t alignment) override {
    CurrentDevice current(index_);
    void* p = nullptr;
    const cudaError_t e = cudaMallocFromPoolAsync(&p, size ? size : 1, pool_, cudaStreamLegacy);
    if (e != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky: clear it for the caller's next check
      return nullptr;
    }
    if (alignment > 1 && (reinterpret_cast<uintptr_t>(p) & (alignment - 1)) != 0) {
      cudaFreeAsync(p, cudaStreamLegacy);
      return nullptr;
    }
    return p;
  }

  void free(void* p) override {
    if (!p) return;
    CurrentDevice current(index_);
    cudaFreeAsync(p, cudaStreamLegacy);
  }

 private:
  const int index_;
  const std::string name_;
  const cudaMemPool_t pool_;
};

StatusOr<int> parse_index(std::string_view device) {
  constexpr std::string_view kPrefix = "cuda:";
  if (device.substr(0, kPrefix.size()) != kPrefix || device.size() == kPrefix.size()) {
    return NotFound("unknown device '" + std::string(device) + "' (CUDA devices are named cuda:N)");
  }
  int index = -1;
  const char* first = device.data() + kPrefix.size();
  const char* last = device.data() + device.size();
  auto [end, ec] = std::from_chars(first, last, index);
  if (ec != std::errc() || end != last || index < 0) {
    return NotFound("unknown device '" + std::string(device) + "' (CUDA devices are named cuda:N, N >= 0)");
  }
  return index;
}

// The number of CUDA devices, or the runtime's error (no driver, ...), which
// is cleared so that it does not linger for the caller's next check.
StatusOr<int> device_count() {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();
    return NotFound(error_text(e));
  }
  return count;
}

StatusOr<DeviceAllocator*> make_allocator(int index) {
  const StatusOr<int> devices = device_count();
  if (!devices.ok()) {
    return NotFound("no CUDA device cuda:" + std::to_string(index) + " (" + devices.status().message() + ")");
  }
  const int count = *devices;
  if (index >= count) {
    return NotFound("no CUDA device cuda:" + std::to_string(index) + " (this machine has " + std::to_string(count) +
                    ")");
  }
  int pools_supported = 0;
  cudaDeviceGetAttribute(&pools_supported, cudaDevAttrMemoryPoolsSupported, index);
  if (!pools_supported) {
    return NotFound("CUDA device cuda:" + std::to_string(index) + " has no stream-ordered memory pools");
  }
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = index;
  cudaMemPool_t pool = nullptr;
  if (const cudaError_t e = cudaMemPoolCreate(&pool, &props); e != cudaSuccess) {
    cudaGetLastError();
    return NotFound("cannot create a memory pool on cuda:" + std::to_string(index) + " (" + error_text(e) + ")");
  }
  uint64_t keep_everything = UINT64_MAX;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything);
  return static_cast<DeviceAllocator*>(new CudaDeviceAllocator(index, pool));
}

}  // namespace

StatusOr<DeviceAllocator*> device_allocator(std::string_view device) {
  StatusOr<int> index = parse_index(device);
  if (!index.ok()) return index.status();
  static std::mutex mutex;
  static auto* made = new std::unordered_map<int, DeviceAllocator*>;  // never destroyed, see above
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = made->find(*index); it != made->end()) return it->second;
  StatusOr<DeviceAllocator*> allocator = make_allocator(*index);
  if (allocator.ok()) made->emplace(*index, *allocator);
  return allocator;
}

std::vector<std::string> device_names() {
  std::vector<std::string> names;
  const StatusOr<int> count = device_count();
  for (int i = 0; count.ok() && i < *count; ++i) names.push_back("cuda:" + std::to_string(i));
  return names;
}

}  // namespace memplan::cuda
