// greedy_by_size.cc — TensorFlow Lite's greedy-by-size offset calculation.
//
// The offsets strategy of TFLite's GPU delegate memory planner
// (GreedyBySizeAssignment), here on half-open lifetimes and with alignment:
//   1. Buffers with a fixed offset are placed first, as obstacles.
//   2. The others are sorted by decreasing size; ties: longer lifetime first,
//      then lower index.
//   3. Each buffer in turn looks at the buffers already placed that overlap it
//      in time and goes to the smallest gap between them that fits it (the
//      lowest such gap on ties), at the gap's first aligned offset.
//   4. If no gap fits, it goes just above the highest of those buffers.
// Big buffers first leaves small holes to small buffers; nothing bounds the
// result in general (the arena can exceed the load by any factor on
// adversarial inputs), but on inference graphs it is usually within a few
// percent. Cost O(n log n) plus one occupancy query and insertion per buffer
// (offset_placement.h), never the O(n^2) scan of the original.
#include "planners/offset_placement.h"
#include "planners/planners.h"

namespace memplan {

StatusOr<Plan> plan_greedy_by_size(const Problem& problem, const PlanOptions& options) {
  const std::vector<size_t> order = order_by_decreasing_size(problem);
  return place_in_order(problem, order, FitPolicy::kBestFit, options);
}

}  // namespace memplan
