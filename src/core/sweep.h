// sweep.h — the time structure every sweep over ticks starts from (internal
// header): the ends of the lifetimes in tick order, and the time slots they
// cut (the distinct ticks, numbered).
//
// Half-open lifetimes decide the order at a tick: a buffer that ends at t and
// one that starts at t are never live together, so ends come before starts.
// Example, three buffers:
//
//     tick    0     2     5     9
//     a       [=====)                 a = [0,2)   slots [0, 1)
//     b             [=====)           b = [2,5)   slots [1, 2)
//     c       [=================)     c = [0,9)   slots [0, 3)
//     slots   | s0  | s1  | s2  |
//     events  0:start a, 0:start c, 2:end a, 2:start b, 5:end b, 9:end c
//
// Users: the bounds (core/bounds.cc), the validator (core/validate.cc), the
// occupancy index of the gap-placement planners (planners/occupancy_index.h)
// and the section layout of the exact solver (solver/sections.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "memplan/problem.h"

namespace memplan {

// One end of buffer `buffer`'s lifetime: its lower bound (start) or its upper
// bound (end). 16 bytes: the sort moves 2n of them. Buffer indices are 32-bit,
// as in TimeSlots (a problem of 2^32 buffers would need ~1 TiB to plan).
struct LifetimeEvent {
  int64_t tick = 0;
  uint32_t buffer = 0;
  bool start = false;
};

// The 2n events of the lifetimes [lower[i], upper[i]), sorted by tick, ends
// before starts at the same tick, then by buffer index (a total order, so the
// result does not depend on the sort). O(n log n).
std::vector<LifetimeEvent> sorted_events(std::span<const int64_t> lower, std::span<const int64_t> upper);
std::vector<LifetimeEvent> sorted_events(const Problem& problem);

// Half-open slot range [first, last) of a lifetime.
struct SlotRange {
  uint32_t first = 0;
  uint32_t last = 0;
};

// The slots of a problem: its distinct lifetime bounds, sorted; slot s is
// [tick(s), tick(s + 1)). A lifetime [lower, upper) is the slot range
// [slot of lower, slot of upper).
class TimeSlots {
 public:
  explicit TimeSlots(const Problem& problem);
  TimeSlots(std::span<const int64_t> lower, std::span<const int64_t> upper);

  // Number of slots (one fewer than the distinct bounds; 0 for no buffers).
  size_t size() const { return ticks_.size() < 2 ? 0 : ticks_.size() - 1; }
  // The slot range of buffer i of the problem the slots were built from.
  SlotRange of(size_t buffer) const { return ranges_[buffer]; }
  // The first tick of slot s (s <= size(): the end bound of the last slot too).
  int64_t tick(size_t s) const { return ticks_[s]; }

 private:
  std::vector<int64_t> ticks_;
  std::vector<SlotRange> ranges_;
};

}  // namespace memplan
