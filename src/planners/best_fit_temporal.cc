// best_fit_temporal.cc — XLA's GlobalDecreasingSizeBestFitHeap, temporal order.
//
//   1. Buffers with a fixed offset are placed first, as obstacles.
//   2. The others are sorted by decreasing lifetime length (upper - lower);
//      ties: larger size first, then lower index (XLA: buffer id) — XLA's
//      kTemporal comparison.
//   3. Each buffer in turn gathers the free chunks between the placed buffers
//      that overlap it in time, plus the chunk between the highest of those
//      and the arena reached so far, and takes the smallest chunk that fits
//      (the lowest on ties), at its first aligned offset.
//   4. If none fits, it goes just above the highest overlapping buffer.
// Long-lived buffers first lays down the weights-like, whole-run buffers as a
// floor and lets the short-lived ones fill around them; it loses to the
// spatial order when sizes vary a lot. No bound beyond that of any greedy.
// Cost O(n log n) plus one occupancy query and insertion per buffer
// (offset_placement.h).
#include "planners/offset_placement.h"
#include "planners/planners.h"

namespace memplan {

StatusOr<Plan> plan_best_fit_temporal(const Problem& problem, const PlanOptions& options) {
  const std::vector<size_t> order = order_by_decreasing_lifetime(problem);
  return place_in_order(problem, order, FitPolicy::kBestFitInArena, options);
}

}  // namespace memplan
