// equality.cc — shared objects reused only by buffers of exactly equal size
// (TFLite GPU delegate's EQUALITY strategy).
//
// Algorithm:
//   1. Visit the buffers without a fixed offset in order of start (ties: index).
//   2. Before placing a buffer starting at tick t, release every object whose
//      current member ends at or before t into the free pool (half-open
//      lifetimes).
//   3. If a free object has exactly the buffer's size (lowest id among them),
//      the buffer joins it; otherwise it gets a new object of its size.
//   4. The object is held until the buffer ends.
// Objects never grow, so no byte is wasted inside an object; the price is that
// buffers of different sizes never share. Useful when a network repeats the
// same shapes (e.g. a stack of identical blocks).
//
// Complexity: O(n log n) time (a sort, a heap of objects in use, an ordered
// pool of free objects), O(n) space.
#include "planners/planners.h"
#include "planners/shared_objects.h"
#include "planners/stop_condition.h"

namespace memplan {

StatusOr<ObjectAssignment> assign_equality(const Problem& problem, const PlanOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem));
  StopCondition stop(options, "equality");
  objects::ObjectTable table(problem.size());
  objects::FreeObjectPool pool;
  objects::ReleaseQueue in_use;
  for (int32_t b : objects::start_order(problem)) {
    if (stop.should_stop()) return stop.status();
    const Buffer& buffer = problem.buffers[b];
    in_use.release_up_to(buffer.lower, [&](int32_t k) { pool.add(k, table.size_of(k)); });
    int32_t k = pool.exactly(buffer.size);
    if (k >= 0) {
      pool.remove(k, table.size_of(k));
    } else {
      k = table.create(buffer.size);
    }
    table.assign(b, k, buffer.size);
    in_use.hold(k, buffer.upper);
  }
  return std::move(table).take();
}

StatusOr<Plan> plan_equality(const Problem& problem, const PlanOptions& options) {
  return objects::stack(problem, assign_equality(problem, options));
}

}  // namespace memplan
