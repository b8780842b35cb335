// torch_allocator.h — a c10::Allocator that serves libtorch's CPU tensors from
// a planned slab, matching requests to the plan by operator (as MemoMalloc
// does) rather than by their global order.
//
// Why operator-scoped: with intra-op threads, or any other concurrency, the
// order in which tensors are requested changes from pass to pass while each
// operator invocation asks for the same tensors. A RecordFunction callback
// (at::addGlobalCallback) tells the allocator which operator a request comes
// from (the operator identity, torch/operator_identity.h, shared with the
// trace recorder), so a request is identified by
//
//     key = (operator name, how many times this thread entered that operator
//            in this iteration, index of the request within the invocation)
//
// plus its size (checked, not hashed: a request may be smaller than planned).
// Requests made outside any operator are numbered per thread.
//
// Learning (the allocator is process-wide; one mutex guards its state — c10
// sees a few hundred to a few thousand requests per pass, each for a tensor,
// so the lock is noise next to the operator that asked) is the learner's
// (src/runtime/learner.h), the drop-in's too, with the keyed identity:
//
//   1. Profiling (config.profile_iterations iterations, at least 1): requests
//      go to the backing allocator (below) and are recorded as (key, size,
//      lifetime), the lifetime in ticks of the process's allocation count in
//      the iteration.
//      A key seen twice in one iteration (ambiguous), a block still live at
//      the boundary and a block below config.min_planned_size are not planned.
//   2. Planning, when the last K iterations made the same keys with the same
//      sizes (in any order): their lifetimes are united into a
//      memplan::Problem and planned as the learner plans for every adapter
//      (the page-optimal greedy_by_size shortcut, then config.planner; served
//      only if memplan::validate accepts it); the backing heap is trimmed
//      (config.trim_backing: malloc_trim, and mi_collect with mimalloc) and
//      the slab (one pre-faulted mapping in a reserved window) committed to
//      the arena.
//      At the boundary, or with config.plan_in_background on a planner
//      thread, adopted at a later boundary. Planning waits while a block of
//      an earlier slab is still live.
//   3. Replay: a request whose key is planned, whose size fits and whose
//      planned block is free is served at the planned offset — unless a block
//      that overlaps it in bytes is live (Note [Operator-scoped safety]).
//      Anything else goes to the backing allocator; an unknown key or a
//      larger size makes the iteration a deviating one, and after
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
// The backing allocator (config.backing, MEMPLAN_BACKING) serves every
// request the slab does not: "next", c10::alloc_cpu (posix_memalign, as
// libtorch's default CPU allocator); "mimalloc", the system's mimalloc loaded
// privately (runtime/os/mimalloc_library.h), mi_malloc_aligned(bytes, 64).
// If mimalloc cannot be loaded, create() says why on stderr and uses
// c10::alloc_cpu. The default is "next" (ReplayConfig's).
//
// Ownership: install() makes this the CPU allocator (c10::SetCPUAllocator) and
// registers the RecordFunction callback; uninstall() (or the destructor)
// restores the previous allocator. Tensors allocated through it may outlive
// uninstall() and the allocator (mimalloc is never unloaded); if slab blocks
// are still live when the allocator is destroyed, its slab and state are kept
// (leaked) so that their frees stay valid.
// At most one TorchReplayAllocator is installed at a time.
//
// Plans that outlive the process (memplan/plan_file.h, Note [Plans from a
// file] in runtime/learner_saved.cc): the allocator is one learning unit,
// named "0" in a plan file of adapter "libtorch". Operator keys are hashes
// of operator names and invocation counts (torch/operator_identity.h), the
// same in every process, so a later process that runs the same operators in
// the same order serves its first iteration from the file's plans; one that
// does not falls back and learns, as after any deviation.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Allocator.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <memory>
#include <string>

#include "memplan/plan_file.h"
#include "memplan/replay_config.h"
#include "memplan/replay_stats.h"
#include "memplan/status.h"

namespace memplan::torch_serving {

class TorchReplayAllocator final : public c10::Allocator {
 public:
  // Reserves the slab's address space (config.max_slab_bytes); fails if it
  // cannot. Uses every knob of `config` but max_threads (one learning unit
  // for the process) and profile_before_first_mark (it always profiles).
  // config.plans_file: loaded here (load_plans) when it was written by this
  // adapter for this command line, with one line on stderr either way (an
  // unusable file is ignored: the allocator learns as without one).
  // config.save_plans_file: saved_plans written there at uninstall(), with
  // one line on stderr.
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
  // The same, naming the variant of the iteration that starts (Note [Keyed
  // plans], runtime/learner.h): each key gets its own plan, held in a
  // bounded LRU set (ReplayConfig::max_plans, max_plan_bytes). 0 is a plain
  // mark.
  void mark(uint64_t next_key);
  // The same, keyed by the shapes of the inputs the next iteration runs on
  // (shape_key): a program that runs one model at several input shapes gets
  // one plan per shape without naming keys itself.
  void mark(c10::ArrayRef<c10::IValue> next_inputs);

  // Serves `file`'s plans from the iteration under way: its one unit, "0",
  // seeds the learner (each keyed variant planned at once, its saved offsets
  // kept where the validator accepts them). Call before the first request
  // (it fails after one). Fails on a file of another adapter, a unit of
  // another name, or variants none of which this allocator can serve (the
  // sequence identity); an empty file changes nothing.
  Status load_plans(const PlanFile& file);
  // What the allocator learnt, as a plan file of adapter "libtorch" for
  // `program`: no unit when nothing was planned.
  PlanFile saved_plans(const std::string& program) const;

  // Counters of memplan/replay_stats.h; `threads` stays 0, `operators` counts
  // the operator invocations the callback saw.
  ReplayStats stats() const;
  ReplayPhase phase() const;
  // Every live slab block sits at its planned offset, no two overlap, the
  // plan validates. Run while no other thread uses the allocator.
  Status check_invariants() const;

  struct Impl;

 private:
  explicit TorchReplayAllocator(Impl* impl) : impl_(impl) {}
  Impl* impl_;
};

// A key for a list of inputs: the element types, layouts, ranks and sizes of
// its tensors, and the values of its integers, booleans and doubles, through
// tuples and lists. Never 0. Two input lists with the same key run the same
// operators on the same shapes for any model whose control flow depends only
// on shapes and those scalars.
uint64_t shape_key(c10::ArrayRef<c10::IValue> inputs);

// Iterations are marked with memplan::IterationGuard (memplan/replay_stats.h):
// `for (...) { IterationGuard iteration(allocator); module.forward(inputs); }`,
// or, for inputs of several shapes, with a keyed mark before each pass:
// `for (...) { allocator.mark(inputs); module.forward(inputs); }`.

}  // namespace memplan::torch_serving
