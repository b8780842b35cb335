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

#include "core/sweep.h"
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

// Many placements of one problem with one policy, each of an order that
// shares a prefix with an order placed before (the portfolio's improvement
// phase perturbs one order at a time). place() returns exactly the plan of
// place_in_order(problem, order, policy, options), but:
//   - the time slots are built once, not per placement;
//   - the buffers of the prefix `order` shares with `base_order` go straight
//     to their offsets in `base` (placement is deterministic, so they land
//     where they landed in `base`), and only the rest are placed;
//   - on problems of at most kScanMaxBuffers buffers, the bytes taken during
//     a lifetime come from one scan of the placed buffers kept sorted by
//     offset (O(placed) cheap comparisons, no allocation, fused with the
//     choice of the gap and cut short where the choice is made) instead of the
//     occupancy index (O(log n) merged sets per query and insertion). The
//     scan lists the ranges of every placed buffer that overlaps in time,
//     sorted by begin; choose_offset sees the same gaps in that list as in
//     their union, which the index returns.
// `base` must be place_in_order(problem, base_order, policy) (or this class's
// plan for it). Not thread-safe.
class RepeatedPlacement {
 public:
  static constexpr size_t kScanMaxBuffers = 2048;

  RepeatedPlacement(const Problem& problem, FitPolicy policy);

  StatusOr<Plan> place(std::span<const size_t> order, std::span<const size_t> base_order, const Plan& base,
                       const PlanOptions& options = {});

 private:
  // A placed buffer for the scan: its bytes and its slots.
  struct Placed {
    int64_t begin;
    int64_t end;
    uint32_t first;
    uint32_t last;
  };

  int64_t scan_offset(SlotRange slots, int64_t size, int64_t alignment, int64_t arena) const;

  const Problem& problem_;
  FitPolicy policy_;
  TimeSlots slots_;
  std::vector<char> listed_;
  std::vector<Placed> placed_;  // scan path: sorted by begin
  std::vector<ByteRange> taken_;
};

// Orderings shared by the planners and the portfolio; ties broken by index, so
// every ordering is a deterministic permutation of all buffers.
// Decreasing size, then longer lifetime (TFLite's greedy by size, XLA spatial).
std::vector<size_t> order_by_decreasing_size(const Problem& problem);
// Longer lifetime, then decreasing size (XLA temporal).
std::vector<size_t> order_by_decreasing_lifetime(const Problem& problem);

}  // namespace memplan
