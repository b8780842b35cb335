// validate.cc — the plan oracle. Kept simple on purpose: per-buffer checks,
// then one sweep over the lifetime events (core/sweep.h: by tick, ends before
// starts) with the byte ranges of the live buffers in an ordered map. A
// starting buffer is compared with its two neighbours in that map only.
// Cost O(n log n) whatever the shape (the all-live case included).
#include "memplan/validate.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>

#include "core/sweep.h"

namespace memplan {
namespace {

std::string buffer_name(const Problem& p, size_t i) {
  return "buffer '" + p.buffers[i].id + "' (#" + std::to_string(i) + ")";
}

// Buffers i and j are both live at `tick` and their bytes intersect.
ValidationResult overlap(const Problem& p, const Plan& plan, size_t i, size_t j, int64_t tick) {
  ValidationResult r;
  r.violation = Violation::kOverlap;
  r.first = std::min(i, j);
  r.second = std::max(i, j);
  r.tick = tick;
  const int64_t lo = std::max(plan.offsets[i], plan.offsets[j]);
  const int64_t hi = std::min(plan.offsets[i] + p.buffers[i].size, plan.offsets[j] + p.buffers[j].size);
  r.message = buffer_name(p, r.first) + " and " + buffer_name(p, r.second) + " are both live at tick " +
              std::to_string(tick) + " and overlap in bytes [" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
  return r;
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
    case Violation::kNone:
      return "valid";
    case Violation::kWrongBufferCount:
      return "wrong buffer count";
    case Violation::kNegativeOffset:
      return "negative offset";
    case Violation::kMisaligned:
      return "misaligned";
    case Violation::kFixedOffsetMoved:
      return "fixed offset moved";
    case Violation::kExceedsCapacity:
      return "exceeds capacity";
    case Violation::kOverlap:
      return "overlap";
    case Violation::kWrongArena:
      return "wrong arena";
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
    if (off < 0)
      return fail(Violation::kNegativeOffset, i,
                  buffer_name(problem, i) + " has negative offset " + std::to_string(off));
    const int64_t a = problem.alignment_of(i);
    if (off % a != 0) {
      return fail(Violation::kMisaligned, i,
                  buffer_name(problem, i) + " at offset " + std::to_string(off) + " is not aligned to " +
                      std::to_string(a) + " bytes");
    }
    if (b.offset && *b.offset != off) {
      return fail(Violation::kFixedOffsetMoved, i,
                  buffer_name(problem, i) + " must stay at fixed offset " + std::to_string(*b.offset) + " but is at " +
                      std::to_string(off));
    }
    if (off > (int64_t{1} << 62) - b.size) {
      return fail(Violation::kExceedsCapacity, i, buffer_name(problem, i) + " ends beyond 2^62 bytes");
    }
    if (problem.capacity && off + b.size > *problem.capacity) {
      return fail(Violation::kExceedsCapacity, i,
                  buffer_name(problem, i) + " ends at " + std::to_string(off + b.size) +
                      " bytes, above the capacity of " + std::to_string(*problem.capacity) + " bytes");
    }
    arena = std::max(arena, off + b.size);
  }

  // The sweep. `live` maps the offset of every live buffer with bytes to the
  // buffer. Its ranges are disjoint (the sweep stops at the first overlap), so
  // a starting range [lo, hi) intersects one of them iff it intersects the
  // first range at or above lo or the last range below lo.
  std::map<int64_t, size_t> live;
  for (const LifetimeEvent& e : sorted_events(problem)) {
    const size_t i = e.buffer;
    const int64_t lo = plan.offsets[i], hi = lo + problem.buffers[i].size;
    if (lo == hi) continue;  // zero-size buffers occupy no bytes
    if (!e.start) {
      live.erase(lo);
      continue;
    }
    const auto above = live.lower_bound(lo);
    if (above != live.end() && above->first < hi) return overlap(problem, plan, i, above->second, e.tick);
    if (above != live.begin()) {
      const auto below = std::prev(above);
      if (below->first + problem.buffers[below->second].size > lo) {
        return overlap(problem, plan, i, below->second, e.tick);
      }
    }
    live.emplace_hint(above, lo, i);
  }
  if (plan.arena != arena) {
    return fail(Violation::kWrongArena, 0,
                "plan says arena is " + std::to_string(plan.arena) + " bytes but its buffers end at " +
                    std::to_string(arena) + " bytes");
  }
  return {};
}

}  // namespace memplan
