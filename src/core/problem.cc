// problem.cc — invariants of a Problem and the TFLite task-record edge.
#include "memplan/problem.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <unordered_set>

namespace memplan {
namespace {

// Total bytes of a problem must stay below 2^62 so that any stacking of all
// buffers (the naive plan, alignment padding included) fits in int64_t.
constexpr int64_t kMaxTotalBytes = int64_t{1} << 62;

std::string name_of(const Problem& p, size_t i) {
  return "buffer '" + p.buffers[i].id + "' (#" + std::to_string(i) + ")";
}

}  // namespace

Status check_problem(const Problem& problem, FixedOffsetScope scope) {
  if (!is_power_of_two(problem.alignment)) {
    return InvalidArgument("problem alignment " + std::to_string(problem.alignment) + " is not a power of two");
  }
  if (problem.capacity && *problem.capacity < 0) {
    return InvalidArgument("capacity " + std::to_string(*problem.capacity) + " is negative");
  }
  int64_t total = 0;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.size < 0) {
      return InvalidArgument(name_of(problem, i) + ": size " + std::to_string(b.size) + " is negative");
    }
    if (b.lower >= b.upper) {
      return InvalidArgument(name_of(problem, i) + ": lifetime [" + std::to_string(b.lower) + ", " +
                             std::to_string(b.upper) + ") is empty (lower must be < upper)");
    }
    if (!is_power_of_two(b.alignment)) {
      return InvalidArgument(name_of(problem, i) + ": alignment " + std::to_string(b.alignment) +
                             " is not a power of two");
    }
    if (b.priority && *b.priority < 0) {
      return InvalidArgument(name_of(problem, i) + ": priority " + std::to_string(*b.priority) + " is negative");
    }
    // Any stacking pads a buffer by less than its alignment, so size + a - 1
    // bounds what it can take (zero-size buffers with huge alignments included).
    const int64_t a = problem.alignment_of(i);
    if (b.size > kMaxTotalBytes - total - a) {
      return InvalidArgument(name_of(problem, i) + ": total size of all buffers exceeds 2^62 bytes");
    }
    total += b.size + a - 1;
    if (b.offset) {
      if (*b.offset < 0) {
        return InvalidArgument(name_of(problem, i) + ": fixed offset " + std::to_string(*b.offset) + " is negative");
      }
      if (*b.offset > kMaxTotalBytes - b.size) {
        return InvalidArgument(name_of(problem, i) + ": fixed offset + size exceeds 2^62 bytes");
      }
      if (*b.offset % a != 0) {
        return InvalidArgument(name_of(problem, i) + ": fixed offset " + std::to_string(*b.offset) +
                               " is not a multiple of its alignment " + std::to_string(a));
      }
    }
  }
  if (const std::optional<FixedOffsetClash> clash = find_fixed_offset_clash(problem, scope)) {
    return InvalidArgument(name_of(problem, clash->first) + " and " + name_of(problem, clash->second) +
                           " have fixed offsets that overlap: both hold bytes [" + std::to_string(clash->from) + ", " +
                           std::to_string(clash->to) + ") at tick " + std::to_string(clash->tick));
  }
  return Status::Ok();
}

// Sweep the fixed buffers by start; the live ones are kept by offset,
// disjoint, so a new one can only overlap its neighbours there.
// O(f log f) for f fixed buffers.
std::optional<FixedOffsetClash> find_fixed_offset_clash(const Problem& problem, FixedOffsetScope scope) {
  std::vector<size_t> fixed;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    if (problem.buffers[i].offset && problem.buffers[i].size > 0) fixed.push_back(i);
  }
  if (fixed.size() < 2) return std::nullopt;
  const auto& b = problem.buffers;
  if (scope == FixedOffsetScope::kPerBank) {
    // One sweep per bank name (the unpinned together); the first clash found.
    std::map<std::string, std::pair<Problem, std::vector<size_t>>> by_bank;
    for (const size_t i : fixed) {
      auto& [part, index] = by_bank[b[i].bank];
      part.buffers.push_back(b[i]);
      index.push_back(i);
    }
    for (auto& [name, entry] : by_bank) {
      auto& [part, index] = entry;
      if (std::optional<FixedOffsetClash> clash = find_fixed_offset_clash(part, FixedOffsetScope::kOneArena)) {
        clash->first = index[clash->first];
        clash->second = index[clash->second];
        return clash;
      }
    }
    return std::nullopt;
  }
  std::stable_sort(fixed.begin(), fixed.end(), [&](size_t x, size_t y) { return b[x].lower < b[y].lower; });
  std::map<int64_t, size_t> live;             // offset -> buffer, byte ranges disjoint
  using Ending = std::pair<int64_t, size_t>;  // (upper, buffer)
  std::priority_queue<Ending, std::vector<Ending>, std::greater<>> endings;
  for (const size_t i : fixed) {
    while (!endings.empty() && endings.top().first <= b[i].lower) {
      live.erase(*b[endings.top().second].offset);
      endings.pop();
    }
    const int64_t begin = *b[i].offset;
    const int64_t end = begin + b[i].size;
    auto clash = [&](size_t j) {
      return FixedOffsetClash{.first = j,
                              .second = i,
                              .tick = std::max(b[i].lower, b[j].lower),
                              .from = std::max(begin, *b[j].offset),
                              .to = std::min(end, *b[j].offset + b[j].size)};
    };
    auto next = live.lower_bound(begin);
    if (next != live.end() && next->first < end) return clash(next->second);
    if (next != live.begin()) {
      const size_t j = std::prev(next)->second;
      if (*b[j].offset + b[j].size > begin) return clash(j);
    }
    live.emplace(begin, i);
    endings.push({b[i].upper, i});
  }
  return std::nullopt;
}

StatusOr<Problem> problem_from_task_records(std::span<const TaskRecord> records) {
  Problem problem;
  problem.buffers.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const TaskRecord& r = records[i];
    const std::string where = "task record #" + std::to_string(i);
    if (r.size < 0) return InvalidArgument(where + ": size " + std::to_string(r.size) + " is negative");
    if (r.first_task < 0) return InvalidArgument(where + ": first_task is negative");
    if (r.last_task < r.first_task) {
      return InvalidArgument(where + ": last_task " + std::to_string(r.last_task) + " is before first_task " +
                             std::to_string(r.first_task));
    }
    if (r.last_task == std::numeric_limits<int64_t>::max()) {
      return InvalidArgument(where + ": last_task overflows when made exclusive");
    }
    problem.buffers.push_back(Buffer{.id = std::to_string(i),
                                     .lower = r.first_task,
                                     .upper = r.last_task + 1,  // inclusive -> half-open
                                     .size = r.size});
  }
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem));
  return problem;
}

}  // namespace memplan
