// shared_objects.h — the shared-objects family of planners (internal header):
// their assignment entry points and the machinery they share.
//
// A shared-objects strategy groups buffers into objects (an object is as big as
// its largest member; members must not overlap in time) and the objects are
// stacked into a plan by plan_from_objects. The strategies follow TFLite's GPU
// delegate (Pisarchyk & Lee 2020, "Efficient Memory Management for Deep Neural
// Net Inference"); each lives in its own file in this folder:
//
//   equality.cc                reuse a free object of exactly equal size
//   greedy_in_order.cc         in start order, best-fitting free object
//   greedy_by_breadth.cc       widest ticks first, biggest buffers first
//   greedy_by_size_objects.cc  positional-maximum / distance priority
//   greedy_best.cc             the better of the two previous
//   min_cost_flow.cc           chains of buffers from a min-cost flow
//
// Buffers with a fixed offset take part in none of them: their object_of is -1
// and plan_from_objects stacks the objects above them. Each assign_* function
// checks the problem and returns the assignment (tests read it directly); the
// matching plan_* function in planners.h stacks it.
//
// The shared machinery (namespace memplan::objects):
//   participants          the buffers a strategy places (no fixed offset)
//   ObjectTable           objects under construction, growing to their members
//   FreeObjectPool        free objects ordered by (size, id)
//   ReleaseQueue          objects in use, released when their member ends
//   Schedules             per-object members linked in time order, and the
//                         holes between them (where another member may go)
//   positions             each buffer's slot in the positional maximums
//
// Thread-compatible; no globals.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <set>
#include <utility>
#include <vector>

#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

// Each stops with kCancelled / kDeadlineExceeded when options.cancel is raised
// or options.time_limit_seconds runs out (stop_condition.h). min_cost_flow
// can only look before and after its network simplex, which LEMON gives no
// way to interrupt.
StatusOr<ObjectAssignment> assign_equality(const Problem& problem, const PlanOptions& options = {});
StatusOr<ObjectAssignment> assign_greedy_in_order(const Problem& problem, const PlanOptions& options = {});
StatusOr<ObjectAssignment> assign_greedy_by_breadth(const Problem& problem, const PlanOptions& options = {});
StatusOr<ObjectAssignment> assign_greedy_by_size_objects(const Problem& problem, const PlanOptions& options = {});
StatusOr<ObjectAssignment> assign_greedy_best(const Problem& problem, const PlanOptions& options = {});
StatusOr<ObjectAssignment> assign_min_cost_flow(const Problem& problem, const PlanOptions& options = {});

// Sum of object sizes that have at least one member (the arena of the stacked
// plan when no alignment padding is needed and no buffer is fixed).
int64_t total_object_size(const ObjectAssignment& objects);

namespace objects {

// Indices of the buffers without a fixed offset, in problem order.
std::vector<int32_t> participants(const Problem& problem);

// `participants` sorted by (lower, index): the order of a sweep over starts.
std::vector<int32_t> start_order(const Problem& problem);

// Objects being built: object_of starts at -1 for every buffer; assigning a
// buffer grows its object to the buffer's size.
class ObjectTable {
 public:
  explicit ObjectTable(size_t buffer_count) { result_.object_of.assign(buffer_count, -1); }

  int32_t create(int64_t size) {
    result_.object_sizes.push_back(size);
    return static_cast<int32_t>(result_.object_sizes.size() - 1);
  }
  void assign(int32_t buffer, int32_t object, int64_t buffer_size) {
    result_.object_of[buffer] = object;
    if (result_.object_sizes[object] < buffer_size) result_.object_sizes[object] = buffer_size;
  }
  int32_t object_of(int32_t buffer) const { return result_.object_of[buffer]; }
  int64_t size_of(int32_t object) const { return result_.object_sizes[object]; }
  size_t object_count() const { return result_.object_sizes.size(); }
  ObjectAssignment take() && { return std::move(result_); }

 private:
  ObjectAssignment result_;
};

// Free objects ordered by (size, id), so that the best fit for a size is one
// lower_bound away. Among equal sizes the lowest id wins.
class FreeObjectPool {
 public:
  void add(int32_t object, int64_t size) { free_.emplace(size, object); }
  void remove(int32_t object, int64_t size) { free_.erase({size, object}); }
  bool empty() const { return free_.empty(); }
  // The smallest free object of at least `size` bytes, or -1.
  int32_t smallest_at_least(int64_t size) const {
    auto it = free_.lower_bound({size, INT32_MIN});
    return it == free_.end() ? -1 : it->second;
  }
  // A free object of exactly `size` bytes, or -1.
  int32_t exactly(int64_t size) const {
    auto it = free_.lower_bound({size, INT32_MIN});
    return it == free_.end() || it->first != size ? -1 : it->second;
  }
  // The largest free object (lowest id among the largest), or -1.
  int32_t largest() const {
    if (free_.empty()) return -1;
    const int64_t top = free_.rbegin()->first;
    return free_.lower_bound({top, INT32_MIN})->second;
  }

 private:
  std::set<std::pair<int64_t, int32_t>> free_;
};

// Objects in use, each until the tick its current member ends. Half-open
// lifetimes: an object whose member ends at t is free for a buffer starting at t.
class ReleaseQueue {
 public:
  void hold(int32_t object, int64_t until) { in_use_.emplace(until, object); }
  // Calls on_free(object) for every object held until a tick <= `tick`, in
  // (tick, object id) order, and forgets them.
  template <typename OnFree>
  void release_up_to(int64_t tick, OnFree&& on_free) {
    while (!in_use_.empty() && in_use_.top().first <= tick) {
      const int32_t object = in_use_.top().second;
      in_use_.pop();
      on_free(object);
    }
  }

 private:
  using Entry = std::pair<int64_t, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> in_use_;
};

// A hole of an object: the free time between two consecutive members `left`
// and `right` (buffer indices; -1 means the object's start or end). A buffer
// fits in the hole iff left.upper <= lower and upper <= right.lower.
struct Hole {
  int32_t object = -1;
  int32_t left = -1;
  int32_t right = -1;
};

// The members of every object as doubly linked lists in time order (members
// of one object never overlap, so start order is also end order).
class Schedules {
 public:
  explicit Schedules(const Problem& problem)
      : problem_(problem), next_(problem.size(), -1), prev_(problem.size(), -1) {}

  // Starts a new object whose only member is `buffer`.
  int32_t start_object(int32_t buffer) {
    first_.push_back(buffer);
    next_[buffer] = prev_[buffer] = -1;
    return static_cast<int32_t>(first_.size() - 1);
  }
  // Puts `buffer` into `hole` (which must be alive and fit it).
  void fill(const Hole& hole, int32_t buffer) {
    prev_[buffer] = hole.left;
    next_[buffer] = hole.right;
    if (hole.left >= 0)
      next_[hole.left] = buffer;
    else
      first_[hole.object] = buffer;
    if (hole.right >= 0) prev_[hole.right] = buffer;
  }
  // A hole is alive while no member has been put into it since it was seen.
  bool alive(const Hole& hole) const {
    if (hole.left >= 0) return next_[hole.left] == hole.right;
    return first_[hole.object] == hole.right;
  }
  int64_t hole_lower(const Hole& hole) const { return hole.left >= 0 ? problem_.buffers[hole.left].upper : INT64_MIN; }
  int64_t hole_upper(const Hole& hole) const {
    return hole.right >= 0 ? problem_.buffers[hole.right].lower : INT64_MAX;
  }
  int32_t first(int32_t object) const { return first_[object]; }
  int32_t next(int32_t buffer) const { return next_[buffer]; }
  int32_t prev(int32_t buffer) const { return prev_[buffer]; }
  size_t object_count() const { return first_.size(); }

 private:
  const Problem& problem_;
  std::vector<int32_t> first_;  // first member of each object
  std::vector<int32_t> next_;   // next member in the same object, or -1
  std::vector<int32_t> prev_;   // previous member in the same object, or -1
};

// For each participant (indexed like `participants`), its position among the
// positional maximums: the largest k such that the k-th largest size live at
// some tick (0-based) is >= its size, i.e. (the most buffers of at least its
// size live at one tick) - 1. O(n log n) with a segment tree over ticks.
std::vector<int32_t> positions(const Problem& problem, const std::vector<int32_t>& participants);

// Stacks an assignment into a plan (plan_from_objects), passing errors through.
StatusOr<Plan> stack(const Problem& problem, StatusOr<ObjectAssignment> objects);

}  // namespace objects
}  // namespace memplan
