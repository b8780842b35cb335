// validate.h — the independent oracle that says whether a plan is valid, and
// if not, why.
//
// Deliberately simple and independent of every planner: a sweep over time that
// keeps the byte ranges of the live buffers in order and compares each buffer,
// when it starts, with its neighbours there. O(n log n) for n buffers, however
// many are live at once. Every planner test uses it. The first violation found
// is reported (overlaps in order of the tick at which they begin):
//
//   kWrongBufferCount  the plan has a different number of offsets than buffers
//   kNegativeOffset    buffer `first` has an offset below 0
//   kMisaligned        buffer `first`'s offset is not a multiple of its alignment
//   kFixedOffsetMoved  buffer `first` has a fixed offset and the plan moved it
//   kExceedsCapacity   buffer `first` ends above the problem's capacity
//   kOverlap           buffers `first` and `second` are both live at `tick`
//                      and their byte ranges intersect (zero-size buffers
//                      occupy no bytes and never overlap)
//   kWrongArena        the plan's arena is not max(offset + size)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "memplan/plan.h"
#include "memplan/problem.h"

namespace memplan {

enum class Violation {
  kNone = 0,
  kWrongBufferCount,
  kNegativeOffset,
  kMisaligned,
  kFixedOffsetMoved,
  kExceedsCapacity,
  kOverlap,
  kWrongArena,
};

std::string_view violation_name(Violation v);

struct ValidationResult {
  Violation violation = Violation::kNone;
  size_t first = 0;     // index of the offending buffer
  size_t second = 0;    // the other buffer, for kOverlap
  int64_t tick = 0;     // a tick at which both are live, for kOverlap
  std::string message;  // human-readable, names buffers by id; empty when valid

  bool ok() const { return violation == Violation::kNone; }
};

ValidationResult validate(const Problem& problem, const Plan& plan);

}  // namespace memplan
