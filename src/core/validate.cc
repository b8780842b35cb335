// validate.cc — the plan oracle. Kept simple on purpose: per-buffer checks,
// then a sweep in order of start tick that compares each buffer with every
// buffer still live at that tick. Cost O(n log n + sum of live-set sizes).
#include "memplan/validate.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace memplan {
namespace {

std::string name_of(const Problem& p, size_t i) {
  return "buffer '" + p.buffers[i].id + "' (#" + std::to_string(i) + ")";
}

ValidationResult fail(Violation v, size_t first, std::string message) {
  ValidationResult r;
  r.violation = v;
  r.first = first;
  r.message = std::move(message);
  return r;
}

}  // namespace

std::string_view violation_name(Violation v) {
  switch (v) {
    case Violation::kNone: return "valid";
    case Violation::kWrongBufferCount: return "wrong buffer count";
    case Violation::kNegativeOffset: return "negative offset";
    case Violation::kMisaligned: return "misaligned";
    case Violation::kFixedOffsetMoved: return "fixed offset moved";
    case Violation::kExceedsCapacity: return "exceeds capacity";
    case Violation::kOverlap: return "overlap";
    case Violation::kWrongArena: return "wrong arena";
  }
  return "unknown";
}

ValidationResult validate(const Problem& problem, const Plan& plan) {
  const size_t n = problem.size();
  if (plan.offsets.size() != n) {
    return fail(Violation::kWrongBufferCount, 0,
                "plan has " + std::to_string(plan.offsets.size()) + " offsets for " + std::to_string(n) + " buffers");
  }
  int64_t arena = 0;
  for (size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    const int64_t off = plan.offsets[i];
    if (off < 0) return fail(Violation::kNegativeOffset, i, name_of(problem, i) + " has negative offset " + std::to_string(off));
    const int64_t a = problem.alignment_of(i);
    if (off % a != 0) {
      return fail(Violation::kMisaligned, i,
                  name_of(problem, i) + " at offset " + std::to_string(off) + " is not aligned to " + std::to_string(a) + " bytes");
    }
    if (b.offset && *b.offset != off) {
      return fail(Violation::kFixedOffsetMoved, i,
                  name_of(problem, i) + " must stay at fixed offset " + std::to_string(*b.offset) + " but is at " + std::to_string(off));
    }
    if (off > (int64_t{1} << 62) - b.size) {
      return fail(Violation::kExceedsCapacity, i, name_of(problem, i) + " ends beyond 2^62 bytes");
    }
    if (problem.capacity && off + b.size > *problem.capacity) {
      return fail(Violation::kExceedsCapacity, i,
                  name_of(problem, i) + " ends at " + std::to_string(off + b.size) + " bytes, above the capacity of " +
                      std::to_string(*problem.capacity) + " bytes");
    }
    arena = std::max(arena, off + b.size);
  }

  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return problem.buffers[x].lower < problem.buffers[y].lower || (problem.buffers[x].lower == problem.buffers[y].lower && x < y);
  });
  std::vector<size_t> live;
  for (size_t i : order) {
    const Buffer& b = problem.buffers[i];
    // Drop buffers that ended at or before this one starts (half-open lifetimes).
    live.erase(std::remove_if(live.begin(), live.end(), [&](size_t j) { return problem.buffers[j].upper <= b.lower; }),
               live.end());
    const int64_t lo = plan.offsets[i], hi = lo + b.size;
    for (size_t j : live) {
      const int64_t jlo = plan.offsets[j], jhi = jlo + problem.buffers[j].size;
      // Zero-size buffers occupy no bytes and can never overlap anything.
      if (lo < jhi && jlo < hi && lo < hi && jlo < jhi) {
        ValidationResult r;
        r.violation = Violation::kOverlap;
        r.first = std::min(i, j);
        r.second = std::max(i, j);
        r.tick = b.lower;
        r.message = name_of(problem, r.first) + " and " + name_of(problem, r.second) + " are both live at tick " +
                    std::to_string(b.lower) + " and overlap in bytes [" + std::to_string(std::max(lo, jlo)) + ", " +
                    std::to_string(std::min(hi, jhi)) + ")";
        return r;
      }
    }
    live.push_back(i);
  }
  if (plan.arena != arena) {
    return fail(Violation::kWrongArena, 0,
                "plan says arena is " + std::to_string(plan.arena) + " bytes but its buffers end at " + std::to_string(arena) + " bytes");
  }
  return {};
}

}  // namespace memplan
