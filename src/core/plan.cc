// plan.cc — arena computation and stacking of shared objects into a Plan.
#include "memplan/plan.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace memplan {

int64_t arena_of(const Problem& problem, const std::vector<int64_t>& offsets) {
  int64_t arena = 0;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    arena = std::max(arena, offsets[i] + problem.buffers[i].size);
  }
  return arena;
}

Plan make_plan(const Problem& problem, std::vector<int64_t> offsets) {
  Plan plan;
  plan.arena = arena_of(problem, offsets);
  plan.offsets = std::move(offsets);
  return plan;
}

StatusOr<Plan> plan_from_objects(const Problem& problem, const ObjectAssignment& objects) {
  const size_t n = problem.size();
  if (objects.object_of.size() != n) {
    return InvalidArgument("object assignment has " + std::to_string(objects.object_of.size()) + " entries for " +
                           std::to_string(n) + " buffers");
  }
  const size_t m = objects.object_sizes.size();
  std::vector<int64_t> object_alignment(m, 1);
  std::vector<std::vector<size_t>> members(m);
  int64_t base = 0;  // objects are stacked above every fixed buffer
  for (size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    const int32_t k = objects.object_of[i];
    if (b.offset) {
      if (k != -1)
        return InvalidArgument("buffer '" + b.id + "' has a fixed offset but is in object " + std::to_string(k));
      base = std::max(base, *b.offset + b.size);
      continue;
    }
    if (k < 0 || static_cast<size_t>(k) >= m) {
      return InvalidArgument("buffer '" + b.id + "' is in object " + std::to_string(k) + " of " + std::to_string(m));
    }
    if (objects.object_sizes[k] < b.size) {
      return InvalidArgument("object " + std::to_string(k) + " (" + std::to_string(objects.object_sizes[k]) +
                             " bytes) is smaller than its member '" + b.id + "' (" + std::to_string(b.size) +
                             " bytes)");
    }
    object_alignment[k] = std::max(object_alignment[k], problem.alignment_of(i));
    members[k].push_back(i);
  }
  for (size_t k = 0; k < m; ++k) {
    auto& mem = members[k];
    std::sort(mem.begin(), mem.end(),
              [&](size_t a, size_t b) { return problem.buffers[a].lower < problem.buffers[b].lower; });
    for (size_t j = 1; j < mem.size(); ++j) {
      const Buffer& prev = problem.buffers[mem[j - 1]];
      const Buffer& cur = problem.buffers[mem[j]];
      if (prev.upper > cur.lower) {
        return InvalidArgument("buffers '" + prev.id + "' and '" + cur.id + "' share object " + std::to_string(k) +
                               " but are both live at tick " + std::to_string(cur.lower));
      }
    }
  }
  std::vector<int64_t> object_offset(m, 0);
  int64_t top = base;
  for (size_t k = 0; k < m; ++k) {
    if (members[k].empty()) continue;  // unused objects take no space
    object_offset[k] = align_up(top, object_alignment[k]);
    top = object_offset[k] + objects.object_sizes[k];
  }
  std::vector<int64_t> offsets(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    offsets[i] = b.offset ? *b.offset : object_offset[objects.object_of[i]];
  }
  return make_plan(problem, std::move(offsets));
}

}  // namespace memplan
