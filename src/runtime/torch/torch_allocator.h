// torch_allocator.h — a c10::Allocator that serves libtorch's CPU tensors from
// a planned slab, matching requests to the plan by operator (as MemoMalloc
// does) rather than by their global order.
//
// Why operator-scoped: with intra-op threads, or any other concurrency, the
// order in which tensors are requested changes from pass to pass while each
// operator invocation asks for the same tensors. A RecordFunction callback
// (at::addGlobalCallback) tells the allocator which operator a request comes
// from, so a request is identified by
//
//     key = (operator name, how many times this thread entered that operator
//            in this iteration, index of the request within the invocation)
//
// plus its size (checked, not hashed: a request may be smaller than planned).
// Requests made outside any operator are numbered per thread.
//
// Phases (the allocator is process-wide; one mutex guards its state — c10
// sees a few hundred to a few thousand requests per pass, each for a tensor,
// so the lock is noise next to the operator that asked):
//
//   1. Profiling (config.profile_iterations iterations, at least 1): requests
//      go to c10::alloc_cpu and are recorded as (key, size, lifetime), the
//      lifetime in ticks of the process's allocation count in the iteration.
//      A key seen twice in one iteration, a block still live at the boundary
//      and a block below config.min_planned_size are not planned.
//   2. Planning, synchronously at the iteration boundary (mark()): when the
//      last K iterations made the same set of plannable (key, size), their
//      lifetimes are united into a memplan::Problem, planned with
//      config.planner and checked with memplan::validate; the slab (one
//      pre-faulted mapping in a reserved window) is committed to its arena.
//      Planning waits while a block of an earlier slab is still live.
//   3. Replay: a request whose key is planned, whose size fits and whose
//      planned block is free is served at the planned offset — unless a block
//      that overlaps it in bytes is live (Note [Operator-scoped safety]).
//      Anything else goes to c10::alloc_cpu; an unknown key or a larger size
//      makes the iteration a deviating one, and after
//      config.deviations_to_reprofile consecutive deviating iterations the
//      allocator profiles again.
//
// Note [Operator-scoped safety]: the plan keeps two blocks apart in bytes only
// if they were live together in a profile. Under another interleaving that
// promise is about a different order, so the allocator does not rely on it:
// each planned block lists the planned blocks it overlaps in bytes, and a
// block is handed out only if none of them is live. Two live slab blocks
// therefore never overlap, whatever the order; the price of a different order
// is a fallback, never corruption.
//
// Ownership: install() makes this the CPU allocator (c10::SetCPUAllocator) and
// registers the RecordFunction callback; uninstall() (or the destructor)
// restores the previous allocator. Tensors allocated through it may outlive
// uninstall(); if slab blocks are still live when the allocator is destroyed,
// its slab and state are kept (leaked) so that their frees stay valid.
// At most one TorchReplayAllocator is installed at a time.
#pragma once

#include <c10/core/Allocator.h>

#include <cstdint>
#include <memory>

#include "memplan/replay.h"
#include "memplan/status.h"

namespace memplan::torch_serving {

struct TorchReplayStats {
  uint64_t iterations = 0;     // boundaries seen (mark calls)
  uint64_t profiled = 0;       // requests passed to c10 while profiling
  uint64_t served = 0;         // requests served from the slab
  uint64_t unplanned = 0;      // replay requests whose key the plan left out (tiny, escaping, ambiguous)
  uint64_t fallback = 0;       // replay requests that deviated: unknown key, larger size, block busy
  uint64_t busy = 0;           // of those, requests whose block (or an overlapping one) was live
  uint64_t deviations = 0;     // iterations with an unknown key or a larger size
  uint64_t plans = 0;          // plans made
  uint64_t reprofiles = 0;     // returns from replay to profiling
  uint64_t plan_failures = 0;  // planning attempts without a usable plan (or that had to wait)
  uint64_t slab_bytes = 0;     // bytes mapped for the slab now
  uint64_t planned_buffers = 0;
  uint64_t operators = 0;      // operator invocations seen by the callback
};

enum class TorchReplayPhase { kProfiling, kReplaying, kBackingOnly };

class TorchReplayAllocator final : public c10::Allocator {
 public:
  // Reserves the slab's address space (config.max_slab_bytes); fails if it
  // cannot. Uses profile_iterations, deviations_to_reprofile,
  // min_planned_size, max_slab_bytes, huge_pages, planner and
  // plan_time_limit_seconds from `config`.
  static StatusOr<std::unique_ptr<TorchReplayAllocator>> create(const ReplayConfig& config);
  ~TorchReplayAllocator() override;
  TorchReplayAllocator(const TorchReplayAllocator&) = delete;
  TorchReplayAllocator& operator=(const TorchReplayAllocator&) = delete;

  // Becomes libtorch's CPU allocator and starts observing operators. Fails if
  // another TorchReplayAllocator is installed.
  Status install();
  // Gives the CPU allocator back to the one install() replaced.
  void uninstall();

  c10::DataPtr allocate(size_t bytes) const override;
  c10::DeleterFnPtr raw_deleter() const override;

  // Iteration boundary: profiles, plans or checks the iteration that ended.
  void mark();

  TorchReplayStats stats() const;
  TorchReplayPhase phase() const;
  // Every live slab block sits at its planned offset, no two overlap, the
  // plan validates. Run while no other thread uses the allocator.
  Status check_invariants() const;

  struct Impl;

 private:
  explicit TorchReplayAllocator(Impl* impl) : impl_(impl) {}
  Impl* impl_;
};

// Marks an iteration boundary when it goes out of scope:
// `for (...) { TorchIterationGuard guard(allocator); module.forward(inputs); }`.
class TorchIterationGuard {
 public:
  explicit TorchIterationGuard(TorchReplayAllocator& allocator) : allocator_(allocator) {}
  ~TorchIterationGuard() { allocator_.mark(); }
  TorchIterationGuard(const TorchIterationGuard&) = delete;
  TorchIterationGuard& operator=(const TorchIterationGuard&) = delete;

 private:
  TorchReplayAllocator& allocator_;
};

}  // namespace memplan::torch_serving
