// device_replay.h — device memory (a GPU's) served from planned slabs by the
// runtime's one learner (runtime/learner.h), as PyTorch's
// CUDAPluggableAllocator asks for it: malloc(size, device, stream) and
// free(ptr, size, device, stream). The CUDA form is
// src/runtime/cuda/cuda_pluggable.cc (libmemplan_cuda_alloc.so, built with
// the CUDA toolkit); tests drive it with a mock device.
//
// Learning units: one per (device, stream). Each unit profiles its stream's
// requests (the i-th request of the iteration is request i), plans when
// ReplayConfig::profile_iterations iterations agree (upper-bound plans and
// keyed marks as on the host), and serves request i at its planned offset in
// the unit's own slab: a window of the device's virtual address space
// (DeviceMemory::reserve) whose first `arena` bytes are mapped when the plan
// is committed (DeviceMemory as the slab's SlabMemory). Requests the plan
// does not cover, or that deviate, go to DeviceMemory::allocate (the CUDA
// form: cudaMallocAsync on the request's stream).
//
// Note [Streams]. A block freed on a stream is reused only by later requests
// of the same stream, because each stream has its own unit and slab: work
// already queued on the stream that used the block runs before any work the
// next owner queues on that stream (stream order), so no event is needed. This
// is the rule of PyTorch's caching allocator too. One more point needs the
// device: a slab grows by mapping only what lies past its mapping, but it is
// given back (re-profiling, the allocator's end) while kernels queued earlier
// may still use it, so a unit synchronises its stream whenever the learner
// withdraws its plan, which precedes any unmapping (DeviceMemory::synchronize). A tensor used on a second
// stream must be recorded with record_stream for the caching allocator; the
// pluggable interface has no such hook, so such a block is as unsafe here as
// in any pluggable allocator: programs that share tensors across streams
// must synchronise themselves (documented in docs/adapters.md).
//
// Note [No headers on the device]. The host drop-in keeps a tick header in
// front of each block to detect a block outliving its plan; the host cannot
// touch device memory, so here every planned block knows the blocks that share
// its bytes and is handed out only when none is live (the checked kernel,
// runtime/checked_kernel.h). A request out of the profiled order therefore costs a fallback, never
// a shared byte.
//
// Addresses: a plan serves every iteration that follows it at the same
// addresses (offset in a window that never moves), which is what a captured
// CUDA graph needs; a new plan (growth, another key, re-profiling) moves
// them, and the stats count plans so that a program can re-capture.
//
// Thread-safety: one mutex for the allocator. Device requests are tensors,
// hundreds to a few thousand per iteration, made from the host threads that
// launch kernels; the lock is noise beside a kernel launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "memplan/plan_file.h"
#include "memplan/replay_config.h"
#include "memplan/replay_stats.h"
#include "memplan/status.h"
#include "runtime/slab.h"

namespace memplan::runtime {

// One device's memory as the allocator uses it. Also the SlabMemory of the
// units' slabs on this device.
class DeviceMemory : public SlabMemory {
 public:
  // Reserves `bytes` of the device's virtual address space, nothing mapped;
  // nullptr when it cannot. Aligned to granularity().
  virtual void* reserve(size_t bytes) = 0;
  virtual void release(void* window, size_t bytes) = 0;
  // The fallback: a block of at least `bytes`, ordered on `stream`
  // (cudaMallocAsync); nullptr when out of memory.
  virtual void* allocate(size_t bytes, void* stream) = 0;
  virtual void deallocate(void* p, size_t bytes, void* stream) = 0;
  // Waits until the work queued on `stream` is done (cudaStreamSynchronize):
  // called before a unit's slab is remapped or re-planned.
  virtual void synchronize(void* stream) = 0;
  // Gives unused fallback memory back (before a slab is mapped).
  virtual void trim() {}
};

// The devices of the process: the allocator asks once per device index.
class DeviceSet {
 public:
  virtual ~DeviceSet() = default;
  // nullptr for a device that does not exist.
  virtual DeviceMemory* device(int index) = 0;
};

// What torch.cuda.memory_stats() says of PyTorch's own allocator, from the
// device replay allocator itself (PyTorch keeps no statistics for a
// CUDAPluggableAllocator). Bytes are the requests' sizes as asked (the
// pluggable interface frees with the same size). Peaks are since the start or
// the last reset_peaks().
struct DeviceMemoryStats {
  uint64_t allocated_bytes = 0;  // requests live now, slab and fallback
  uint64_t peak_allocated_bytes = 0;
  uint64_t reserved_bytes = 0;  // slab bytes mapped (every unit) + fallback requests live
  uint64_t peak_reserved_bytes = 0;
  uint64_t requests = 0;  // allocations that returned memory, since the start
  uint64_t served = 0;    // of those, served from a slab or a resident slot
};

class DeviceReplayAllocator {
 public:
  // Units reserve config.max_slab_bytes of a device's address space each, at
  // most config.max_threads units (streams x devices); a stream beyond that
  // is served by the fallback only.
  static StatusOr<std::unique_ptr<DeviceReplayAllocator>> create(const ReplayConfig& config, DeviceSet& devices);
  ~DeviceReplayAllocator();
  DeviceReplayAllocator(const DeviceReplayAllocator&) = delete;
  DeviceReplayAllocator& operator=(const DeviceReplayAllocator&) = delete;

  // PyTorch's CUDAPluggableAllocator calls. nullptr when the fallback is out of memory.
  void* allocate(size_t bytes, int device, void* stream);
  void deallocate(void* p, size_t bytes, int device, void* stream);

  // The iteration boundary of every unit; `next_key` names the variant of
  // the iteration that starts (0: a plain mark).
  void mark(uint64_t next_key = 0);

  // Plans that outlive the process (memplan/plan_file.h; Note [Plans from a
  // file], runtime/learner_saved.cc), as ReplayAllocator's: units are named
  // "cuda:<device>/<k>", the k-th stream of the device to make a request.
  // load_plans before the first request.
  Status load_plans(const PlanFile& file);
  PlanFile saved_plans(const std::string& program) const;

  ReplayStats stats() const;
  DeviceMemoryStats memory_stats() const;
  // Bytes of resident slots laid out while they serve (Note [Resident
  // blocks], device_replay.cc), every unit: within reserved_bytes, beside
  // the slabs.
  uint64_t resident_bytes() const;
  // Sets each peak to its current value (torch.cuda.reset_peak_memory_stats).
  void reset_peaks();
  // Units (streams x devices) in use.
  size_t units() const;
  // Every unit's checked kernel (CheckedKernel::check_invariants: its slab,
  // its blocks' overlap lists, its live blocks, never two sharing a byte) and
  // that no two units' windows overlap. Run while no other thread uses the
  // allocator.
  Status check_invariants() const;

  struct Impl;

 private:
  explicit DeviceReplayAllocator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace memplan::runtime
