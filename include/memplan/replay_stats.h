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

#include <cstddef>
#include <cstdint>

namespace memplan {

// Where a learning unit (a thread of the replay allocator, the whole libtorch
// allocator) stands.
enum class ReplayPhase {
  kProfiling,   // requests go to the backing allocator and are recorded
  kReplaying,   // requests are served from the slab as planned
  kBackingOnly  // no slab (none left, or no usable plan): the backing allocator serves everything
};

// Counters, combined over learning units; each is exact once the program is
// quiet. What each one counts, how it is printed and how units combine is in
// kReplayCounters below, the one table every printer and the docs read.
struct ReplayStats {
  uint64_t threads = 0;
  uint64_t iterations = 0;
  uint64_t profiled = 0;
  uint64_t served = 0;
  uint64_t unplanned = 0;
  uint64_t fallback = 0;
  uint64_t small = 0;
  uint64_t pooled = 0;
  uint64_t pool_bytes = 0;
  uint64_t busy = 0;
  uint64_t deviations = 0;
  uint64_t plans = 0;
  uint64_t plans_loaded = 0;
  uint64_t background_plans = 0;
  uint64_t reprofiles = 0;
  uint64_t plan_failures = 0;
  uint64_t invalid_frees = 0;
  uint64_t slab_bytes = 0;
  uint64_t planned_buffers = 0;
  uint64_t operators = 0;
  uint64_t plan_stall_ns = 0;
  uint64_t max_plan_stall_ns = 0;
  uint64_t plans_held = 0;
  uint64_t plan_bytes = 0;
  uint64_t evictions = 0;
  uint64_t switches = 0;
  uint64_t predictions_right = 0;
  uint64_t predictions_wrong = 0;
  uint64_t variants = 0;
  uint64_t growths = 0;
  uint64_t arena_bytes = 0;
  uint64_t min_shape_load_bytes = 0;
  uint64_t max_shape_load_bytes = 0;
};

// How the values of several learning units make one (merge_replay_stats).
enum class CounterMerge {
  kSum,        // added
  kMax,        // the largest
  kMinNonzero  // the smallest of those that are not 0 (0: none)
};

// One counter of ReplayStats. The printed line (format_replay_stats) is each
// row's `label`, the value, then its `suffix`; a row that `continues` the
// previous one is printed right after it, else after ", ". For example the
// rows plan_stall_ns {"plan stall ", " ms"} and max_plan_stall_ns
// {" (longest ", " ms)", continues} print "plan stall 1.500 ms (longest
// 0.900 ms)"; a kNanoseconds counter is printed in milliseconds.
struct ReplayCounter {
  enum class Unit { kCount, kBytes, kNanoseconds };
  const char* name;  // the member's name: the key wherever counters are named
  uint64_t ReplayStats::*member;
  const char* label;        // printed before the value
  const char* suffix = "";  // printed after the value
  bool continues = false;   // printed right after the previous row, no ", " between
  Unit unit = Unit::kCount;
  CounterMerge merge = CounterMerge::kSum;
  const char* description = "";  // one sentence: what is counted, and by which adapter
};

// Every counter of ReplayStats, in the order printed. The first row's label
// is the learning unit's word, which format_replay_stats lets an adapter
// name ("threads" on the host, "streams" on a CUDA device).
inline constexpr ReplayCounter kReplayCounters[] = {
    {"threads", &ReplayStats::threads, "threads ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "learning units: per-thread records in use or kept for reuse (replay allocator), streams (device allocator)"},
    {"iterations", &ReplayStats::iterations, "iterations ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "iteration boundaries, summed over learning units"},
    {"profiled", &ReplayStats::profiled, "profiled ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "allocations passed to the backing allocator while profiling"},
    {"served", &ReplayStats::served, "served ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "allocations served from a slab"},
    {"unplanned", &ReplayStats::unplanned, "unplanned ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "allocations in replay left to the backing allocator by the plan"},
    {"fallback", &ReplayStats::fallback, "fallback ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "allocations in replay sent to the backing allocator by a deviation"},
    {"busy", &ReplayStats::busy, " (busy ", ")", true, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "of the fallbacks, requests that fit their block but found it (or one sharing its bytes) live: not deviations"},
    {"small", &ReplayStats::small, "small ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "allocations below ReplayConfig::min_sequenced_size left to the backing allocator"},
    {"pooled", &ReplayStats::pooled, "pooled ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "allocations below min_sequenced_size served from the small-request pool"},
    {"pool_bytes", &ReplayStats::pool_bytes, "pool bytes ", "", false, ReplayCounter::Unit::kBytes, CounterMerge::kSum,
     "bytes committed for small-request pools now"},
    {"deviations", &ReplayStats::deviations, "deviations ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "iterations that deviated"},
    {"background_plans", &ReplayStats::background_plans, "background plans ", "", false, ReplayCounter::Unit::kCount,
     CounterMerge::kSum, "plans the planner thread finished, adopted or not (plan_in_background)"},
    {"plans", &ReplayStats::plans, "plans ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum, "plans made"},
    {"plans_loaded", &ReplayStats::plans_loaded, "plans loaded ", "", false, ReplayCounter::Unit::kCount,
     CounterMerge::kSum,
     "of the plans, those taken from a plan file (MEMPLAN_PLANS) before the unit's first iteration"},
    {"reprofiles", &ReplayStats::reprofiles, "reprofiles ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "returns from replay to profiling"},
    {"plan_failures", &ReplayStats::plan_failures, "plan failures ", "", false, ReplayCounter::Unit::kCount,
     CounterMerge::kSum, "planning attempts that gave no usable plan (or had to wait)"},
    {"invalid_frees", &ReplayStats::invalid_frees, "invalid frees ", "", false, ReplayCounter::Unit::kCount,
     CounterMerge::kSum, "frees into a slab window that matched no live block (ignored)"},
    {"slab_bytes", &ReplayStats::slab_bytes, "slab bytes ", "", false, ReplayCounter::Unit::kBytes, CounterMerge::kSum,
     "bytes mapped for slabs now"},
    {"planned_buffers", &ReplayStats::planned_buffers, "planned buffers ", "", false, ReplayCounter::Unit::kCount,
     CounterMerge::kSum, "buffers in the plans in use now"},
    {"operators", &ReplayStats::operators, "operators ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "operator invocations seen (libtorch allocator)"},
    {"plan_stall_ns", &ReplayStats::plan_stall_ns, "plan stall ", " ms", false, ReplayCounter::Unit::kNanoseconds,
     CounterMerge::kSum,
     "time stopped at boundaries for planning (the planner, the slab's commit and pre-fault, the plan's tables)"},
    {"max_plan_stall_ns", &ReplayStats::max_plan_stall_ns, " (longest ", " ms)", true,
     ReplayCounter::Unit::kNanoseconds, CounterMerge::kMax, "the longest such stall"},
    {"plans_held", &ReplayStats::plans_held, "plans held ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "plans kept now for variants (Note [Keyed plans])"},
    {"variants", &ReplayStats::variants, "variants ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "distinct request-size signatures profiled, summed over units"},
    {"growths", &ReplayStats::growths, "growths ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "upper-bound plans re-made after a request outgrew its block"},
    {"arena_bytes", &ReplayStats::arena_bytes, "arena ", " B", false, ReplayCounter::Unit::kBytes, CounterMerge::kSum,
     "arenas of the plans being served now"},
    {"min_shape_load_bytes", &ReplayStats::min_shape_load_bytes, "shape loads ", "", false, ReplayCounter::Unit::kBytes,
     CounterMerge::kMinNonzero,
     "the smallest load (requests' own sizes) of one profiled iteration that went into the plans being served"},
    {"max_shape_load_bytes", &ReplayStats::max_shape_load_bytes, "..", " B", true, ReplayCounter::Unit::kBytes,
     CounterMerge::kMax, "the largest such load: what each shape would need on its own, against the arena"},
    {"plan_bytes", &ReplayStats::plan_bytes, "plan bytes ", "", false, ReplayCounter::Unit::kBytes, CounterMerge::kSum,
     "arenas of the plans held for variants (they share each unit's one slab)"},
    {"evictions", &ReplayStats::evictions, "evictions ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "variants evicted (least recently used first)"},
    {"switches", &ReplayStats::switches, "switches ", "", false, ReplayCounter::Unit::kCount, CounterMerge::kSum,
     "boundaries that published another variant's plan"},
    {"predictions_right", &ReplayStats::predictions_right, "predictions ", " right", false, ReplayCounter::Unit::kCount,
     CounterMerge::kSum,
     "iterations whose variant was the one the learner predicted at the boundary before them (unkeyed marks)"},
    {"predictions_wrong", &ReplayStats::predictions_wrong, " ", " wrong", true, ReplayCounter::Unit::kCount,
     CounterMerge::kSum, "iterations whose variant was not the one predicted"},
};

// Every member of ReplayStats is a row, once: a counter added to the struct
// and not to the table fails to compile.
static_assert(sizeof(ReplayStats) == sizeof(kReplayCounters) / sizeof(kReplayCounters[0]) * sizeof(uint64_t),
              "every ReplayStats member needs a row in kReplayCounters");
consteval bool replay_counters_are_distinct() {
  constexpr size_t n = sizeof(kReplayCounters) / sizeof(kReplayCounters[0]);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (kReplayCounters[i].member == kReplayCounters[j].member) return false;
    }
  }
  return !kReplayCounters[0].continues;
}
static_assert(replay_counters_are_distinct(), "a ReplayStats member has two rows in kReplayCounters");

// Combines `from` into `into`, counter by counter, by each row's merge rule.
void merge_replay_stats(ReplayStats& into, const ReplayStats& from);

// Every request an adapter has seen: profiled, served, unplanned, fallback,
// and those below min_sequenced_size (pooled or not).
uint64_t replay_requests(const ReplayStats& s);

// The one statistics line: "<prefix>: threads 2, iterations 9, ...,
// predictions 3 right 1 wrong, served fraction 0.250, pooled fraction
// 0.000\n", every row of kReplayCounters in order with `unit_word` for the
// first row's label, then the fractions of replay_requests served from slabs
// and from pools. Written into `out` (at most `capacity` bytes with the
// terminating 0, cut short if longer); returns the line's full length.
// Allocates nothing: the drop-in prints it at exit with its interposer in place.
size_t format_replay_stats(const ReplayStats& s, const char* prefix, const char* unit_word, char* out, size_t capacity);

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
