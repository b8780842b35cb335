// replay.h — the replay allocator: learns a program's iteration, plans it, and
// serves the following iterations from one pre-faulted slab per thread.
//
// Each thread goes through three phases, independently of the others:
//
//   1. Profiling. Requests go to the backing allocator and are recorded as
//      the thread's request sequence (size, alignment, order). The tick is the
//      index of the thread's allocation within the iteration; a block's
//      lifetime is [its tick, the thread's allocation count when it is freed).
//   2. Planning, at the thread's iteration boundary: when the last K
//      iterations (config.profile_iterations) made the same sequence of
//      (size, alignment) requests, the blocks that were allocated and freed
//      by the thread within every one of those iterations become the buffers
//      of a Problem (lifetimes: the union over the K profiles) and are planned
//      with the configured planner. Blocks that escape an iteration (kept
//      across the boundary, freed by another thread, or realloc'ed) and blocks
//      below config.min_planned_size stay with the backing allocator.
//      Planning runs synchronously on the thread, at the boundary: the marking
//      thread at memplan_mark/mark(), every other thread at its first request
//      after the mark; or, with config.plan_in_background, on a planner thread
//      while the thread keeps profiling, the plan being adopted at a later
//      boundary.
//   3. Replay. The i-th allocation of the iteration is served at the i-th
//      buffer's planned offset in the thread's slab after a check: size <=
//      planned size, alignment <= planned alignment, and no slab block whose
//      planned lifetime has ended is still live. Each served block is preceded
//      by a 16-byte header (the block's alignment when larger) holding its
//      tick, so a free of a slab pointer is a range check, a header read, a
//      check of that tick's planned offset and liveness flag, and one store.
//
// Deviation (Note [Replay fallback]): an allocation beyond the plan, larger or
// more aligned than planned, or one made while a block whose planned lifetime
// has ended is still live (freed late, or kept across the boundary) goes to the
// backing allocator, and so does the rest of that thread's iteration. After
// config.deviations_to_reprofile consecutive deviating iterations the thread
// profiles again. A slab block is therefore handed out only when every live
// slab block was planned to be live at the same time as it — which the plan
// keeps apart in bytes — so a deviation never corrupts memory.
//
// Thread-safety: allocate, deallocate, reallocate and mark may be called from
// any thread at any time. The replay fast path takes no lock, makes no system
// call and never allocates; a thread's first request takes a short lock to
// claim a per-thread record. stats() reads counters racily (each is exact once
// the threads are quiet); check_invariants() must run while no other thread
// uses the allocator. The allocator must outlive every thread that uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/status.h"

namespace memplan {

// Every knob of the runtime, with its default. replay_knobs() lists them with
// the environment variable that sets each one.
struct ReplayConfig {
  // Iterations that must make the same request sequence before a thread plans.
  int64_t profile_iterations = 2;
  // Consecutive deviating iterations after which a thread profiles again.
  int64_t deviations_to_reprofile = 3;
  // Requests smaller than this (bytes) are never planned: they go to the
  // backing allocator but keep their place in the sequence.
  int64_t min_planned_size = 0;
  // Largest slab of one thread (bytes, rounded up to a power of two). Each
  // thread reserves this much address space (no memory) for its slab.
  int64_t max_slab_bytes = int64_t{1} << 30;
  // Threads that get a slab; later threads use the backing allocator only.
  int64_t max_threads = 64;
  // Longest request sequence profiled per thread and iteration; a longer
  // iteration is not planned.
  int64_t max_requests = int64_t{1} << 20;
  // Advise transparent huge pages for slabs.
  bool huge_pages = true;
  // Keep a slab's mapping when the thread re-profiles (true), so that the next
  // plan reuses it without faults, or give the memory back at once (false).
  bool keep_slab = true;
  // Planner used at the iteration boundary (a name from the registry).
  std::string planner = "portfolio";
  // Time budget of one planning run (seconds).
  double plan_time_limit_seconds = 0.25;
  // Profile what a thread requests before the first mark as an iteration.
  // Right for loops that mark at the end of each iteration (the C++ guard);
  // the LD_PRELOAD drop-in turns it off by default, because there the span
  // before the first mark is the program's start-up (`import torch` alone is
  // over a million requests) and recording it only costs memory.
  bool profile_before_first_mark = true;
  // After a plan is made, and before its slab is committed, ask the backing
  // allocator to give the free memory it caches back to the OS
  // (BackingAllocator::release_free_memory): the profiled iterations' blocks
  // and the planner's working memory, freed by then, would otherwise stay
  // resident under the slab that replaces them.
  bool trim_backing = true;
  // Address colouring (Note [Address colouring] in replay.cc): when > 0, each
  // planned block of at least 4 KiB is shifted up by a different multiple of
  // 64 bytes below this span (bytes, a multiple of 64), so that blocks do not
  // all share the same address bits below the page size. 0: off.
  int64_t color_span_bytes = 0;
  // Run the planner on a thread of its own instead of at the boundary. The
  // thread whose iterations agree keeps profiling on the backing allocator
  // while the planner runs, and adopts the plan (committing its slab) at its
  // first boundary after the planner is done, if its iterations still agree;
  // that boundary stalls only for the slab. The plan then arrives one or more
  // iterations later than at the boundary. A fork child starts no thread:
  // it plans at its boundaries, never waiting for its parent's planner.
  bool plan_in_background = false;
};

struct ReplayKnob {
  std::string_view variable;      // MEMPLAN_...
  std::string_view default_value;
  std::string_view description;
};
// The knob table, in the order of ReplayConfig's fields.
std::span<const ReplayKnob> replay_knobs();

// Reads every MEMPLAN_* knob through `lookup` (getenv by default); unset
// variables keep their default. A malformed value (or MEMPLAN_PLANNER naming
// no registered planner) rejects that knob alone: it keeps its default, the
// others still apply, and `rejected` (if given) gets one line naming the
// variable, its value and what was expected.
using EnvironmentLookup = const char* (*)(const char*);
ReplayConfig read_replay_config(EnvironmentLookup lookup, std::vector<std::string>* rejected);
// The same, strict: fails on the first rejected knob, naming it.
StatusOr<ReplayConfig> replay_config_from_environment(EnvironmentLookup lookup = nullptr);
// An on/off knob's value: 1/0, on/off, true/false, yes/no (any case);
// nullopt for anything else.
std::optional<bool> parse_switch(const char* text);

// The allocator that requests go to when they are not served from a slab.
// Alignments are powers of two >= 16. Every function may be called from any
// thread; allocate* return nullptr when out of memory.
class BackingAllocator {
 public:
  virtual ~BackingAllocator() = default;
  virtual void* allocate(size_t size, size_t alignment) = 0;
  virtual void* allocate_zeroed(size_t size) = 0;
  virtual void* reallocate(void* p, size_t size) = 0;
  virtual void deallocate(void* p) = 0;
  virtual size_t usable_size(void* p) = 0;
  // Returns memory the allocator holds but no live block uses to the OS
  // (glibc: malloc_trim(0)). Called at most once per plan, on the planning
  // thread, when config.trim_backing is set. The default keeps everything.
  virtual void release_free_memory() {}
};

struct ReplayStats {
  uint64_t threads = 0;          // per-thread records in use or kept for reuse
  uint64_t iterations = 0;       // iteration boundaries, summed over threads
  uint64_t profiled = 0;         // allocations passed to the backing allocator while profiling
  uint64_t served = 0;           // allocations served from a slab
  uint64_t unplanned = 0;        // allocations in replay left to the backing allocator by the plan
  uint64_t fallback = 0;         // allocations in replay sent to the backing allocator by a deviation
  uint64_t deviations = 0;       // iterations that deviated
  uint64_t plans = 0;            // plans made
  uint64_t reprofiles = 0;       // returns from replay to profiling
  uint64_t plan_failures = 0;    // planning attempts that gave no usable plan (or had to wait)
  uint64_t invalid_frees = 0;    // frees into a slab window that matched no live block (ignored)
  uint64_t slab_bytes = 0;       // bytes mapped for slabs now
  uint64_t planned_buffers = 0;  // buffers in the plans in use now
  // Time threads spent stopped at their boundaries for planning (the planner,
  // the slab's commit and pre-fault, the plan's arrays), summed over threads,
  // and the longest such stall.
  uint64_t plan_stall_ns = 0;
  uint64_t max_plan_stall_ns = 0;
};

enum class ReplayPhase { kProfiling, kReplaying, kBackingOnly };

class ReplayAllocator;
namespace runtime::fast {
struct SharedFast;
// The state read by the inlined fast paths (src/runtime/replay_fast.h, private
// to memplan): the drop-in runs them without calling into the allocator.
SharedFast* shared_state(ReplayAllocator& allocator);
}  // namespace runtime::fast

class ReplayAllocator {
 public:
  // `backing` must outlive the allocator. If the slab address space cannot be
  // reserved, every request goes to `backing` and init_status() says why.
  ReplayAllocator(const ReplayConfig& config, BackingAllocator& backing);
  ~ReplayAllocator();
  ReplayAllocator(const ReplayAllocator&) = delete;
  ReplayAllocator& operator=(const ReplayAllocator&) = delete;

  Status init_status() const;

  // malloc / aligned_alloc: alignment is a power of two (16 is assumed when smaller).
  void* allocate(size_t size, size_t alignment = 16);
  // The replay fast path alone: the block planned for the calling thread's
  // next request when the thread is replaying and the request matches its
  // plan; nullptr otherwise, having changed nothing (then call allocate).
  // Never allocates and never calls the backing allocator, so a drop-in may
  // call it without its reentrancy guard.
  void* serve_from_slab(size_t size, size_t alignment = 16);
  // calloc of `size` bytes (overflow checked by the caller).
  void* allocate_zeroed(size_t size);
  // free; nullptr is ignored.
  void deallocate(void* p);
  // The free fast path alone: true when p is a slab pointer, which it then
  // frees (or ignores as invalid) exactly as deallocate would; false, having
  // done nothing, for any other pointer. Never allocates, never calls the
  // backing allocator.
  bool release_to_slab(void* p);
  // realloc: grows in place inside a planned block when it fits; a block that
  // moves goes to the backing allocator (realloc never consumes a planned slot).
  void* reallocate(void* p, size_t size);
  // malloc_usable_size: a slab block's planned size, or the backing allocator's answer.
  size_t usable_size(void* p);
  // True for pointers into the slab address space (served, or stale).
  bool owns(const void* p) const;

  // Iteration boundary for every thread (memplan_mark).
  void mark();

  ReplayPhase phase_of_calling_thread();
  ReplayStats stats() const;
  // Checks every slab, every plan against the validator, and that each live
  // block sits at a planned offset. Run while no other thread uses the allocator.
  Status check_invariants() const;

  struct Impl;

 private:
  friend runtime::fast::SharedFast* runtime::fast::shared_state(ReplayAllocator& allocator);
  Impl* impl_;
};

// Marks an iteration boundary when it goes out of scope: one guard per
// iteration, `for (...) { IterationGuard guard(allocator); run(); }`.
class IterationGuard {
 public:
  explicit IterationGuard(ReplayAllocator& allocator) : allocator_(allocator) {}
  ~IterationGuard() { allocator_.mark(); }
  IterationGuard(const IterationGuard&) = delete;
  IterationGuard& operator=(const IterationGuard&) = delete;

 private:
  ReplayAllocator& allocator_;
};

}  // namespace memplan
