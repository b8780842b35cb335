// replay_stats.h — what every online allocator reports to the program it
// serves: the phase of learning it is in (ReplayPhase), its counters
// (ReplayStats), and the guard that marks the end of an iteration.
//
// Both online allocators — the replay allocator (memplan/replay.h, and its
// LD_PRELOAD drop-in) and the libtorch allocator
// (src/torch/torch_allocator.h) — run the same learner
// (src/runtime/learner.h): profile iterations, wait until
// ReplayConfig::profile_iterations of them agree, plan, serve from a slab,
// and profile again after ReplayConfig::deviations_to_reprofile deviating
// iterations. The types below describe that cycle, so they are the same for
// both; a counter an adapter has no use for stays 0.
#pragma once

#include <cstdint>

namespace memplan {

// Where a learning unit (a thread of the replay allocator, the whole libtorch
// allocator) stands.
enum class ReplayPhase {
  kProfiling,   // requests go to the backing allocator and are recorded
  kReplaying,   // requests are served from the slab as planned
  kBackingOnly  // no slab (none left, or no usable plan): the backing allocator serves everything
};

// Counters, summed over learning units; each is exact once the program is quiet.
struct ReplayStats {
  uint64_t threads = 0;          // per-thread records in use or kept for reuse (replay allocator)
  uint64_t iterations = 0;       // iteration boundaries, summed over learning units
  uint64_t profiled = 0;         // allocations passed to the backing allocator while profiling
  uint64_t served = 0;           // allocations served from a slab
  uint64_t unplanned = 0;        // allocations in replay left to the backing allocator by the plan
  uint64_t fallback = 0;         // allocations in replay sent to the backing allocator by a deviation
  uint64_t small = 0;            // allocations below ReplayConfig::min_sequenced_size left to the backing allocator
  uint64_t pooled = 0;           // allocations below min_sequenced_size served from the small-request pool
  uint64_t pool_bytes = 0;       // bytes committed for small-request pools now
  uint64_t busy = 0;             // of those, requests whose block (or one sharing its bytes) was live
  uint64_t deviations = 0;       // iterations that deviated
  uint64_t plans = 0;            // plans made
  uint64_t background_plans = 0; // plans the planner thread finished, adopted or not (plan_in_background)
  uint64_t reprofiles = 0;       // returns from replay to profiling
  uint64_t plan_failures = 0;    // planning attempts that gave no usable plan (or had to wait)
  uint64_t invalid_frees = 0;    // frees into a slab window that matched no live block (ignored)
  uint64_t slab_bytes = 0;       // bytes mapped for slabs now
  uint64_t planned_buffers = 0;  // buffers in the plans in use now
  uint64_t operators = 0;        // operator invocations seen (libtorch allocator)
  // Time spent stopped at boundaries for planning (the planner, the slab's
  // commit and pre-fault, the plan's tables), summed over learning units, and
  // the longest such stall.
  uint64_t plan_stall_ns = 0;
  uint64_t max_plan_stall_ns = 0;
  // Variants and upper-bound plans (docs/runtime.md, "Variants").
  uint64_t plans_held = 0;        // plans kept now for variants (Note [Keyed plans])
  uint64_t plan_bytes = 0;        // arenas of those plans (bytes; they share each thread's one slab)
  uint64_t evictions = 0;         // variants evicted (least recently used first)
  uint64_t switches = 0;          // boundaries that published another variant's plan
  // Predicted variants (unkeyed marks): iterations whose variant was, or was
  // not, the one the learner predicted at the boundary before them.
  uint64_t predictions_right = 0;
  uint64_t predictions_wrong = 0;
  uint64_t variants = 0;          // distinct request-size signatures profiled, summed over units
  uint64_t growths = 0;           // upper-bound plans re-made after a request outgrew its block
  uint64_t arena_bytes = 0;       // arenas of the plans being served now (bytes)
  // The smallest and largest load (bytes, requests' own sizes) of one profiled
  // iteration that went into the plans being served: what each shape would
  // need on its own, against arena_bytes for the upper bound.
  uint64_t min_shape_load_bytes = 0;
  uint64_t max_shape_load_bytes = 0;
};

// Marks an iteration boundary when it goes out of scope, on any allocator
// with a mark(): one guard per iteration,
// `for (...) { IterationGuard guard(allocator); run(); }`.
template <class Allocator>
class IterationGuard {
 public:
  explicit IterationGuard(Allocator& allocator) : allocator_(allocator) {}
  ~IterationGuard() { allocator_.mark(); }
  IterationGuard(const IterationGuard&) = delete;
  IterationGuard& operator=(const IterationGuard&) = delete;

 private:
  Allocator& allocator_;
};

}  // namespace memplan
