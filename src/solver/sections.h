// sections.h — the time structure the exact search works on: sections (the
// maximal sets of buffers live together), each buffer's run of sections, the
// number of buffers crossing each boundary, and the time-overlap graph.
//
// A section is a maximal clique of the interval graph: a stretch of time where
// some buffer has just started and none has ended yet, so that no later or
// earlier tick has a strict superset of its live buffers. Only these matter for
// bounds: the bytes live at any tick are a subset of some section's. Because
// lifetimes are intervals, the sections a buffer belongs to are consecutive.
// Example (ticks on x):
//
//     tick   0   1   2   3   4   5
//     a      [=======)                  a: sections 0..0
//     b      [===========)              b: sections 0..1
//     c              [===========)      c: sections 1..2
//     d                  [===========)  d: sections 2..2
//     sections: {a,b} during [0,2), {b,c} during [2,3), {c,d} during [3,5)
//     crossing: boundary 0|1 is crossed by b, boundary 1|2 by c
//
// A boundary that no buffer crosses splits the problem into parts that can be
// planned independently: that is the decomposition the search exploits, both
// up front and whenever the buffers crossing a boundary have all been placed.
//
// Internal to src/solver; indices are int32 (a problem the search can handle
// has far fewer than 2^31 buffers).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace memplan::solver {

struct SectionLayout {
  int32_t section_count = 0;
  // Per buffer: the half-open run [first_section, end_section) it is live in.
  std::vector<int32_t> first_section;
  std::vector<int32_t> end_section;
  // Members of section s: members[member_start[s] .. member_start[s + 1]).
  std::vector<int32_t> member_start;
  std::vector<int32_t> members;
  // crossing[k]: buffers live in both section k and section k + 1
  // (section_count - 1 entries; empty when there are no sections).
  std::vector<int32_t> crossing;
  // Buffers live at the same time as buffer b:
  // neighbors[neighbor_start[b] .. neighbor_start[b + 1]).
  std::vector<int32_t> neighbor_start;
  std::vector<int32_t> neighbors;

  std::span<const int32_t> members_of(int32_t s) const {
    return {members.data() + member_start[s], members.data() + member_start[s + 1]};
  }
  std::span<const int32_t> neighbors_of(int32_t b) const {
    return {neighbors.data() + neighbor_start[b], neighbors.data() + neighbor_start[b + 1]};
  }
};

// Builds the layout of buffers with lifetimes [lower[i], upper[i]) (lower < upper).
// O(n log n + sum of section sizes + number of overlapping pairs).
SectionLayout build_sections(std::span<const int64_t> lower, std::span<const int64_t> upper);

// What build_sections would store, counted in O(n log n) time and O(n) space
// so that a caller can refuse problems whose index would not fit in memory.
struct LayoutSize {
  int64_t overlapping_pairs = 0;  // each appears in two neighbour lists
  int64_t memberships = 0;        // sum over buffers of their sections
};
LayoutSize measure_sections(std::span<const int64_t> lower, std::span<const int64_t> upper);

}  // namespace memplan::solver
