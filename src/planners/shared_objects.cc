// shared_objects.cc — machinery shared by the shared-objects planners.
#include "planners/shared_objects.h"

#include <algorithm>
#include <numeric>

#include "core/range_add_max.h"

namespace memplan {

int64_t total_object_size(const ObjectAssignment& objects) {
  std::vector<bool> used(objects.object_sizes.size(), false);
  for (int32_t k : objects.object_of) {
    if (k >= 0 && static_cast<size_t>(k) < used.size()) used[k] = true;
  }
  int64_t total = 0;
  for (size_t k = 0; k < used.size(); ++k) {
    if (used[k]) total += objects.object_sizes[k];
  }
  return total;
}

namespace objects {

std::vector<int32_t> participants(const Problem& problem) {
  std::vector<int32_t> out;
  out.reserve(problem.size());
  for (size_t i = 0; i < problem.size(); ++i) {
    if (!problem.buffers[i].offset) out.push_back(static_cast<int32_t>(i));
  }
  return out;
}

std::vector<int32_t> start_order(const Problem& problem) {
  std::vector<int32_t> order = participants(problem);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return problem.buffers[a].lower < problem.buffers[b].lower; });
  return order;
}

std::vector<int32_t> positions(const Problem& problem, const std::vector<int32_t>& participants) {
  const size_t n = participants.size();
  std::vector<int64_t> ticks;
  ticks.reserve(2 * n);
  for (int32_t b : participants) {
    ticks.push_back(problem.buffers[b].lower);
    ticks.push_back(problem.buffers[b].upper);
  }
  std::sort(ticks.begin(), ticks.end());
  ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  auto index_of = [&](int64_t t) {
    return static_cast<size_t>(std::lower_bound(ticks.begin(), ticks.end(), t) - ticks.begin());
  };

  // Elementary segment k is [ticks[k], ticks[k+1]); a buffer covers the
  // segments from its lower up to (not including) its upper.
  RangeAddMax<int32_t> live(ticks.size());
  std::vector<size_t> by_size(n);
  std::iota(by_size.begin(), by_size.end(), 0);
  std::sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    return problem.buffers[participants[a]].size > problem.buffers[participants[b]].size;
  });
  std::vector<int32_t> out(n, 0);
  for (size_t i = 0; i < n;) {
    // Buffers of equal size count each other: insert the whole run, then read.
    size_t j = i;
    const int64_t size = problem.buffers[participants[by_size[i]]].size;
    for (; j < n && problem.buffers[participants[by_size[j]]].size == size; ++j) {
      const Buffer& b = problem.buffers[participants[by_size[j]]];
      live.add(index_of(b.lower), index_of(b.upper), 1);
    }
    for (; i < j; ++i) out[by_size[i]] = live.max() - 1;
  }
  return out;
}

StatusOr<Plan> stack(const Problem& problem, StatusOr<ObjectAssignment> objects) {
  if (!objects.ok()) return objects.status();
  return plan_from_objects(problem, *objects);
}

}  // namespace objects
}  // namespace memplan
