// best_fit_spatial.cc — XLA's GlobalDecreasingSizeBestFitHeap, spatial order.
//
// XLA's heap simulator plans a whole computation at once ("global"):
//   1. Buffers with a fixed offset are placed first, as obstacles.
//   2. The others are sorted by decreasing size; ties: longer lifetime first,
//      then lower index (XLA: buffer id) — XLA's kSpatial comparison.
//   3. Each buffer in turn gathers the free chunks between the placed buffers
//      that overlap it in time, plus the chunk between the highest of those
//      and the arena reached so far, and takes the smallest chunk that fits
//      (the lowest on ties), at its first aligned offset.
//   4. If none fits, it goes just above the highest overlapping buffer,
//      growing the arena.
// Step 3's last chunk is what sets it apart from TFLite's greedy_by_size:
// when the room under the current arena is tighter than every hole lower
// down, XLA takes it and leaves the hole to later buffers. No bound beyond
// that of any greedy. Cost O(n log n) plus one occupancy query and insertion
// per buffer (offset_placement.h).
#include "planners/offset_placement.h"
#include "planners/planners.h"

namespace memplan {

StatusOr<Plan> plan_best_fit_spatial(const Problem& problem, const PlanOptions& options) {
  const std::vector<size_t> order = order_by_decreasing_size(problem);
  return place_in_order(problem, order, FitPolicy::kBestFitInArena, options);
}

}  // namespace memplan
