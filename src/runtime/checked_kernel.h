// checked_kernel.h — the checked serving kernel: a plan's blocks handed out by
// allocators that do not trust the order of requests. The other kernel, the
// sequenced one (runtime/replay_fast.h), serves the drop-in lock-free in the
// profiled order; this one serves the libtorch allocator (keyed by operator:
// another interleaving of operators is not the profiled order) and the device
// replay allocator (device memory cannot carry the drop-in's tick headers).
//
// Rule (Note [Operator-scoped safety] in src/torch/torch_allocator.h): each
// block knows the blocks it shares bytes with, and is handed out only when
// neither it nor any of them is live. Two live blocks therefore never share a
// byte whatever the order of requests, and whatever the plan: the price of
// another order is a fallback, never corruption.
//
//   blocks (offset, size)      overlaps        request order a, c, b:
//     a [0, 64)                a: b            a served; c served (shares
//     b [32, 96)               b: a, c         nothing with a); b refused
//     c [64, 128)              c: b            (a and c live): a fallback
//
// Ownership: a CheckedPlan (one per plan the learner publishes) owns its
// blocks and their live flags; the kernel owns which plan is served, the
// live blocks by offset (live_at) and their count. An adapter keeps only its
// request identity (which block a request asks for), its block layout and
// its glue; it calls the kernel under its own lock.
//
// Cost: build_blocks sorts by offset and sweeps, O(n log n + overlaps);
// serve is O(1 + overlaps of the block), tens in the torchvision plans; free
// O(1) expected.
//
// Checks: check_invariants() states every fact the rule rests on. A build
// with MEMPLAN_EXPENSIVE_CHECKS runs it when a plan is published and at each
// iteration boundary (after_boundary), and aborts with its message if a fact
// fails.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "memplan/status.h"
#include "runtime/learner.h"
#include "runtime/slab.h"

namespace memplan::runtime {

struct CheckedBlock {
  int64_t offset = 0;             // where the block starts in the slab
  int64_t size = 0;               // the request's size (bytes a request may use)
  std::vector<int32_t> overlaps;  // blocks sharing at least one byte with this one
  bool live = false;
};

// A plan with the checked kernel's table. Adapters derive from it to add the
// lookup of their request identity (request -> block).
struct CheckedPlan : PreparedPlan {
  std::vector<CheckedBlock> blocks;  // per buffer of the plan
};

class CheckedKernel {
 public:
  // Fills plan.blocks from the plan made of `agreed` (plan_profile's
  // offsets, shifts and request_of): block k holds request request_of[k].
  // Blocks of size 0 are taken as 1 byte long when overlaps are found.
  static void build_blocks(const Profile& agreed, CheckedPlan& plan);
  // Fills every block's overlaps from the blocks' offsets and sizes.
  static void link_overlaps(std::vector<CheckedBlock>& blocks);

  // The kernel serves from `slab` (the learner's).
  explicit CheckedKernel(const Slab& slab) : slab_(slab) {}

  // The learner's publish: serves `plan` from now on.
  void publish(CheckedPlan& plan);
  // The learner's withdraw: serves nothing, and looks up no frees, until the
  // next publish.
  void withdraw();
  CheckedPlan* plan() const { return plan_; }
  // A block of the served plan is live (the learner's slab_in_use).
  bool in_use() const { return live_count_ != 0; }

  struct Served {
    void* p = nullptr;    // the block, or nullptr: the request goes to the fallback
    bool larger = false;  // the request is larger than its block
    bool busy = false;    // the block, or one sharing its bytes, is live
  };
  // Serves block `block` of the served plan (there must be one) to a request
  // of `bytes`: at its planned offset when the bytes fit and neither it nor a
  // block sharing its bytes is live. Nothing changes when it does not serve.
  Served serve(int32_t block, uint64_t bytes);
  // Note [Refused requests]. What a request serve() refused counts, the same
  // for every adapter of this kernel: it is a fallback. A larger one is a
  // deviation, and the learner is told its size (observe_larger, Note
  // [Upper-bound plans]), even when its block is busy too: the plan must
  // grow whatever the order. One that fits but finds its block (or one
  // sharing its bytes) live is busy: the price of another order, not a
  // deviation. `request` is the request's index in the served plan's
  // profile. Returns whether the iteration deviated.
  static bool count_refused(const Served& got, uint32_t request, uint64_t bytes, Learner& learner);
  // Ends the live block that starts at p; false (nothing changed) when none does.
  bool free(const void* p);

  // The kernel serves `serving` (the learner's published plan, or nullptr);
  // every block lies inside the plan's arena, and its overlaps list exactly
  // the blocks that share a byte with it; each live block is indexed by its
  // offset in live_at, the live count counts them, no two share a byte, and
  // none ends past the slab's mapping; the slab's own invariants hold.
  Status check_invariants(const PreparedPlan* serving) const;
  // The iteration boundary (after the learner's end_iteration). With
  // MEMPLAN_EXPENSIVE_CHECKS: check_invariants, aborting if it fails;
  // otherwise nothing.
  void after_boundary(const PreparedPlan* serving) const;
  // How many times check_invariants ran under MEMPLAN_EXPENSIVE_CHECKS, in
  // every kernel of the process (0 in other builds).
  static uint64_t expensive_checks();

 private:
  void expensive_check(const PreparedPlan* serving, const char* where) const;

  const Slab& slab_;
  CheckedPlan* plan_ = nullptr;
  std::unordered_map<int64_t, int32_t> live_at_;  // offset -> live block of plan_
  int64_t live_count_ = 0;
};

}  // namespace memplan::runtime
