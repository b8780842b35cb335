// replay.h — the replay allocator: learns a program's iteration, plans it, and
// serves the following iterations from one pre-faulted slab per thread.
//
// Each thread goes through three phases, independently of the others (the
// learning cycle is the one the libtorch allocator runs too:
// src/runtime/learner.h; here a request is named by its index in the
// thread's sequence):
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

#include "memplan/backing_allocator.h"
#include "memplan/plan_file.h"
#include "memplan/replay_config.h"
#include "memplan/replay_stats.h"
#include "memplan/status.h"

namespace memplan {

class ReplayAllocator;
namespace runtime::fast {
struct SequencedKernel;
using SharedFast = SequencedKernel;
// The sequenced serving kernel, whose inlined fast paths read this state
// (src/runtime/replay_fast.h, private to memplan): the drop-in runs them
// without calling into the allocator.
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
  // Iteration boundary that names the variant of the iteration it starts
  // (memplan_mark_key; Note [Keyed plans] in runtime/variants.cc): each key is
  // learnt and planned on its own, and a key with a plan is served from its
  // first request. mark() is mark_key(0).
  void mark_key(uint64_t key);
  // Iteration boundary for the calling thread only (memplan_mark_thread):
  // for threads that each serve requests of their own, as in a web server,
  // where one thread's boundary falls in the middle of another's request.
  // `key` names the variant of the thread's next iteration, as in mark_key.
  // A thread that marks this way is profiled from its first mark even when
  // profile_before_first_mark is off.
  void mark_thread(uint64_t key = 0);

  // Plans that outlive the process (memplan/plan_file.h; Note [Plans from a
  // file], runtime/learner_saved.cc). load_plans hands each thread record
  // the saved unit of its window ("0", "1", ... in the order threads made
  // their first request), seeded into the record's learner at its first
  // iteration. Call before the first request; an adapter or program
  // mismatch (plan_file_mismatch) is the caller's to check. saved_plans()
  // is what every record learnt, as a file for `program`; call it while no
  // other thread uses the allocator.
  Status load_plans(const PlanFile& file);
  PlanFile saved_plans(const std::string& program) const;

  ReplayPhase phase_of_calling_thread();
  ReplayStats stats() const;
  // Checks every slab, that each thread serves its learner's plan (validated
  // once, when it was made: memplan/planning.h), and that each live block
  // sits at a planned offset. Run while no other thread uses the allocator.
  Status check_invariants() const;

  struct Impl;

 private:
  friend runtime::fast::SharedFast* runtime::fast::shared_state(ReplayAllocator& allocator);
  Impl* impl_;
};

}  // namespace memplan
