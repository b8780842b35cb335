// greedy_by_size_first_fit.cc — TensorFlow Lite Micro's GreedyMemoryPlanner.
//
// The same order as greedy_by_size with first fit instead of best fit:
//   1. Buffers with a fixed offset are placed first, as obstacles (TFLite
//      Micro's "offline planned" tensors).
//   2. The others are sorted by decreasing size; ties: longer lifetime first,
//      then lower index.
//   3. Each buffer in turn scans, from offset 0 upwards, the buffers already
//      placed that overlap it in time, and takes the first gap that fits it at
//      an aligned offset.
//   4. If no gap fits, it goes just above the highest of those buffers.
// First fit keeps buffers low and is what the microcontroller runtime ships;
// it can leave a small buffer in a big hole that a later, bigger buffer
// needed. No bound beyond that of any greedy. Cost as greedy_by_size:
// O(n log n) plus one occupancy query and insertion per buffer.
#include "planners/offset_placement.h"
#include "planners/planners.h"

namespace memplan {

StatusOr<Plan> plan_greedy_by_size_first_fit(const Problem& problem, const PlanOptions& options) {
  const std::vector<size_t> order = order_by_decreasing_size(problem);
  return place_in_order(problem, order, FitPolicy::kFirstFit, options);
}

}  // namespace memplan
