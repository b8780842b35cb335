// problem.cc — invariants of a Problem and the TFLite task-record edge.
#include "memplan/problem.h"

#include <limits>
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

Status check_problem(const Problem& problem) {
  if (!is_power_of_two(problem.alignment)) {
    return InvalidArgument("problem alignment " + std::to_string(problem.alignment) +
                           " is not a power of two");
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
    // Any stacking pads a buffer by less than its alignment, so size + a - 1
    // bounds what it can take (zero-size buffers with huge alignments included).
    const int64_t a = problem.alignment_of(i);
    if (b.size > kMaxTotalBytes - total - a) {
      return InvalidArgument(name_of(problem, i) + ": total size of all buffers exceeds 2^62 bytes");
    }
    total += b.size + a - 1;
    if (b.offset) {
      if (*b.offset < 0) {
        return InvalidArgument(name_of(problem, i) + ": fixed offset " + std::to_string(*b.offset) +
                               " is negative");
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
  return Status::Ok();
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
      return InvalidArgument(where + ": last_task " + std::to_string(r.last_task) +
                             " is before first_task " + std::to_string(r.first_task));
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
