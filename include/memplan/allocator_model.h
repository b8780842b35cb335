// allocator_model.h — allocator models: a recorded stream of device requests
// replayed through a simulation of an allocator on a simulated device, which
// hands out address ranges and counts the bytes the allocator holds
// (reserved). No device memory is touched.
//
// Three allocators a PyTorch user can choose, each a function of one device's
// trace:
//   simulate_caching              PyTorch's CUDA caching allocator (cudaMalloc'd
//                                 segments split into blocks, small and large
//                                 pools per stream)
//   simulate_expandable_segments  the same with expandable_segments:True (one
//                                 growing segment per stream and pool, mapped
//                                 in pages)
//   simulate_memplan              memplan's device replay allocator
//                                 (runtime/device/) learning from the requests
//                                 as it would live; steady state
//   simulate_memplan_cold         the same on the window alone
// docs/snapshots.md ("Allocator models") states each rule with the PyTorch
// source it comes from, how the models were validated and their limits.
//
// A trace (memplan/device_trace.h) is a start state (the segments held before the first request and
// the blocks they were split into) and the requests after it:
//
//   start:    segment 0x1000 (large, 20 MiB): [alloc 8 MiB][free 12 MiB]
//   requests: alloc id=7 4 MiB, free id=0x1000, free id=7
//
// An alloc's id names the block (snapshots: its recorded address); a free
// names the same id; a block allocated in the start state has id = its
// address (segment address + block offset). Sizes are what the program asked
// for; each model rounds them its own way. A free is the moment the block can
// be reused (a snapshot's free_completed).
//
// Contracts: every function returns InvalidArgument (naming the request
// index or segment) for a trace that contradicts itself: a free of an id that
// is not live, an alloc of an id that is, a start segment whose blocks do not
// tile it, start segments that overlap. Results are deterministic for a given
// trace and settings, except simulate_memplan* with a time-limited planner
// (MemplanModelOptions).
// Thread-safety: the functions may run on several threads at once; the
// memplan models share only the runtime's process-wide planning account
// (atomic): with memplan_model_config()'s plan_time_share = 1 it does not
// limit them, but their planning time is added to it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "memplan/device_trace.h"
#include "memplan/plan_file.h"
#include "memplan/replay_config.h"
#include "memplan/status.h"

namespace memplan::simulate {

// PYTORCH_CUDA_ALLOC_CONF (or a snapshot's recorded copy of it) as settings,
// as c10's AllocatorConfig::parseArgs reads it: comma-separated key:value
// pairs, e.g. "max_split_size_mb:128,roundup_power2_divisions:[256:1,>:4],
// expandable_segments:True". Keys that do not change reserved memory
// (release_lock_on_cudamalloc, pinned_*, backend:native) are accepted and
// ignored; backend:cudaMallocAsync is Unimplemented (not modelled); anything
// else is an InvalidArgument naming the key. capacity_bytes stays 0.
StatusOr<AllocatorSettings> parse_allocator_conf(std::string_view conf);

// What a caching model asked of the device, as a snapshot records it
// (segment_alloc, segment_free, segment_map, segment_unmap): to compare with
// the recorded events one by one.
struct SegmentEvent {
  enum class Kind : uint8_t { kAlloc, kFree, kMap, kUnmap };
  Kind kind = Kind::kAlloc;
  int64_t request_index = -1;  // the request that caused it
  uint64_t address = 0;        // the model's own address space
  uint64_t bytes = 0;
  int64_t stream = 0;
  bool small_pool = false;
};

struct ModelResult {
  uint64_t peak_reserved_bytes = 0;   // most bytes held from the device at once
  uint64_t peak_allocated_bytes = 0;  // most bytes of blocks handed out at once (block sizes, after rounding)
  uint64_t peak_requested_bytes = 0;  // most bytes requested and live at once (the load of the requests)
  // The request after which reserved bytes first reached their peak; -1: the
  // start state already held it.
  int64_t peak_request_index = -1;
  uint64_t start_reserved_bytes = 0;  // held before the first request
  uint64_t final_reserved_bytes = 0;  // held after the last request
  uint64_t device_allocations = 0;    // cudaMalloc calls / page mappings (segments made or grown)
  uint64_t device_frees = 0;          // cudaFree calls / page unmappings (cached segments given back)
  uint64_t out_of_memory = 0;         // requests that did not fit capacity_bytes even after freeing the cache
  uint64_t requests = 0;              // requests replayed (measured ones, for simulate_memplan)
  // simulate_memplan*: how the measured window was served.
  uint64_t served = 0;               // requests served from a plan's slab
  uint64_t fallback = 0;             // requests the fallback served (profiling, unplanned, deviations)
  uint64_t plans = 0;                // plans made (over every replay)
  uint64_t plan_failures = 0;        // planning attempts that gave no usable plan (the fallback serves on)
  uint64_t arena_bytes = 0;          // arena of the plans serving at the end
  uint64_t slab_bytes = 0;           // slab bytes mapped at the end
  uint64_t resident_bytes = 0;       // resident slots laid out at the end (memplan warm: the start state's)
  uint64_t peak_fallback_bytes = 0;  // most bytes the fallback held at once in the measured window
  // simulate_caching and simulate_expandable_segments: every segment made,
  // grown, shrunk or freed, in order.
  std::vector<SegmentEvent> segment_events;
};

StatusOr<ModelResult> simulate_caching(const DeviceTrace& trace, const AllocatorSettings& settings);
StatusOr<ModelResult> simulate_expandable_segments(const DeviceTrace& trace, const AllocatorSettings& settings);

// How the memplan models count the memory of requests no plan serves (their
// fallback, cudaMallocAsync on the device's default pool in the CUDA form).
enum class FallbackModel : uint8_t {
  // The caching allocator's rules (the `settings` of MemplanModelOptions),
  // starting from the trace's start state: a caching sub-allocator whose
  // cache is given back when memplan trims it (before a slab is mapped, and
  // at stream synchronisation). The default: cudaMallocAsync's pool also
  // caches and splits, and these are the validated rules.
  kCaching,
  // Exactly the live bytes (each block rounded to 512 B), held until memplan
  // trims: no fragmentation, a lower bound on any fallback.
  kExact,
};

// The runtime's defaults, with planning given no share of elapsed time
// (plan_time_share = 1: a simulation's elapsed time is not the program's).
// The models also raise max_slab_bytes and max_plan_bytes to cover the
// trace's requests: address space costs nothing in a simulation, and a live
// run would be configured for its job.
ReplayConfig memplan_model_config();

struct MemplanModelOptions {
  // The runtime's configuration (memplan_model_config() says what differs
  // from the runtime's defaults).
  ReplayConfig config = memplan_model_config();
  FallbackModel fallback = FallbackModel::kCaching;
  AllocatorSettings settings;  // the fallback's rules (kCaching) and the device's capacity
};

// Steady state: the window is replayed config.profile_iterations times for
// the allocator to learn (each replay ends with a mark, and the start state
// is restored before the next one: what a replay allocated and still holds
// is freed, what it freed of the start state is made again outside the
// allocator), then once more, measured. Reserved = slab bytes mapped + what
// the fallback holds; the measured peak starts from what is held when the
// measured replay begins (the plan's slab included).
// `learnt` (optional): what the allocator learnt, as a plan file of the
// device adapter for any program (DeviceReplayAllocator::saved_plans).
StatusOr<ModelResult> simulate_memplan(const DeviceTrace& trace, const MemplanModelOptions& options = {},
                                       PlanFile* learnt = nullptr);
// Cold: the window alone, from the start state, as the first window of a run
// (profiling: the fallback serves).
StatusOr<ModelResult> simulate_memplan_cold(const DeviceTrace& trace, const MemplanModelOptions& options = {});
// Warm: the window alone with `plans` loaded before its first request
// (DeviceReplayAllocator::load_plans; plans learnt from an earlier recording
// of the job, simulate_memplan's `learnt`, or a live run's --save-plans): the
// first window of a run that starts from plans. Its fallback starts empty
// and holds the start state's live blocks, made in it before the window, not
// the recorded segments (Note [Warm start state], memplan_model.cc). Plans
// of another job or shape cost fallbacks, as in a live run.
StatusOr<ModelResult> simulate_memplan_warm(const DeviceTrace& trace, const PlanFile& plans,
                                            const MemplanModelOptions& options = {});

// PyTorch's size rounding of a request (round_size): at least 512 bytes, a
// multiple of 512, or the next power-of-two division when configured.
// Exposed for callers that report size classes.
uint64_t caching_round_size(uint64_t bytes, const AllocatorSettings& settings);

}  // namespace memplan::simulate
