// offset_placement.h — placing buffers one at a time at a gap (internal header).
//
// Every offsets-form heuristic of the TFLite / XLA family is the same loop
// with a different order and a different choice of gap:
//   1. Buffers with a fixed offset are placed first, at their offsets.
//   2. The other buffers are taken in the given order. For each, the byte
//      ranges taken during its lifetime by the buffers placed so far are
//      looked up (OccupancyIndex), and the buffer goes to a gap between them
//      chosen by the FitPolicy, at the gap's first offset that respects the
//      buffer's alignment; if no gap fits, just above the highest of them.
//   3. Zero-size buffers go to offset 0: they occupy no bytes, and 0 cannot
//      fall strictly inside another buffer.
// The portfolio reuses place_in_order with its own orderings.
//
// Cost: O(n log n) for the slots plus, per buffer, one OccupancyIndex query
// and one insertion — O(log n + R log R) with R the number of disjoint byte
// ranges around its lifetime, not the number of buffers live with it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "memplan/planner.h"
#include "planners/occupancy_index.h"

namespace memplan {

enum class FitPolicy {
  // The lowest gap that fits (TFLite Micro's GreedyMemoryPlanner).
  kFirstFit,
  // The smallest gap between taken ranges that fits, the lowest on ties; if
  // none fits, above the highest taken range (TFLite's greedy by size).
  kBestFit,
  // As kBestFit, but the room between the highest taken range and the arena
  // reached so far also counts as a gap (XLA's best-fit heap: growing the
  // arena is the last resort, not every tall gap's).
  kBestFitInArena,
};

// The offset at which a buffer of `size` bytes with `alignment` goes, given
// `taken`: the byte ranges taken during its lifetime, sorted by begin (they
// may overlap or touch). `arena` is the arena reached so far (used by
// kBestFitInArena only). size >= 0, alignment a power of two.
int64_t choose_offset(std::span<const ByteRange> taken, int64_t size, int64_t alignment, FitPolicy policy,
                      int64_t arena);

// Places every buffer of `problem` (steps 1-3 above). `order` must list every
// buffer without a fixed offset exactly once; buffers with a fixed offset may
// appear too and are skipped. Fails with kInvalidArgument on a bad order, with
// kCancelled if options.cancel is raised or kDeadlineExceeded when
// options.time_limit_seconds runs out (polled before the first buffer and then
// every few hundred, stop_condition.h), and never otherwise for a problem
// that passes check_problem. The problem's capacity is not enforced: the plan
// is returned and the validator reports it if the arena exceeds it.
StatusOr<Plan> place_in_order(const Problem& problem, std::span<const size_t> order, FitPolicy policy,
                              const PlanOptions& options = {});

// Orderings shared by the planners and the portfolio; ties broken by index, so
// every ordering is a deterministic permutation of all buffers.
// Decreasing size, then longer lifetime (TFLite's greedy by size, XLA spatial).
std::vector<size_t> order_by_decreasing_size(const Problem& problem);
// Longer lifetime, then decreasing size (XLA temporal).
std::vector<size_t> order_by_decreasing_lifetime(const Problem& problem);

}  // namespace memplan
