// sections.cc — maximal cliques of the interval graph by one sweep over ticks.
//
//   1. Number the distinct ticks at which lifetimes start or end (the time
//      slots of core/sweep.h).
//   2. The elementary interval [t_k, t_k+1) is a section iff some buffer starts
//      at t_k and some buffer ends at t_k+1: its live set grew at its start and
//      shrinks right after it, so no neighbouring interval contains it.
//   3. A buffer's sections are those whose start tick lies in its lifetime:
//      two binary searches among the section ticks.
//   4. Members, boundary crossings (a difference array) and the overlap graph
//      (a sweep in order of start with the set of still-live buffers) follow.
// O(n log n + sum of section sizes + overlapping pairs) time and space.
#include "solver/sections.h"

#include <algorithm>
#include <cassert>
#include <numeric>

#include "core/sweep.h"

namespace memplan::solver {

SectionLayout build_sections(std::span<const int64_t> lower, std::span<const int64_t> upper) {
  const int32_t n = static_cast<int32_t>(lower.size());
  SectionLayout layout;
  layout.first_section.assign(n, 0);
  layout.end_section.assign(n, 0);
  layout.neighbor_start.assign(n + 1, 0);
  layout.member_start.assign(1, 0);
  if (n == 0) return layout;

  // Tick indices are the slot numbers of core/sweep.h: slot k starts at the
  // k-th distinct tick, and a lifetime is the slot range [lo, hi).
  const TimeSlots slots(lower, upper);
  const size_t tick_count = slots.size() + 1;
  std::vector<char> starts_at(tick_count, 0), ends_at(tick_count, 0);
  for (int32_t b = 0; b < n; ++b) {
    starts_at[slots.of(b).first] = 1;
    ends_at[slots.of(b).last] = 1;
  }
  // Tick index at which each section starts, increasing.
  std::vector<uint32_t> section_tick;
  for (size_t k = 0; k + 1 < tick_count; ++k) {
    if (starts_at[k] && ends_at[k + 1]) section_tick.push_back(static_cast<uint32_t>(k));
  }
  layout.section_count = static_cast<int32_t>(section_tick.size());

  for (int32_t b = 0; b < n; ++b) {
    const SlotRange r = slots.of(b);
    layout.first_section[b] = static_cast<int32_t>(std::lower_bound(section_tick.begin(), section_tick.end(), r.first) -
                                                   section_tick.begin());
    layout.end_section[b] =
        static_cast<int32_t>(std::lower_bound(section_tick.begin(), section_tick.end(), r.last) - section_tick.begin());
    assert(layout.first_section[b] < layout.end_section[b] && "every buffer lies in at least one section");
  }

  const int32_t sections = layout.section_count;
  layout.member_start.assign(sections + 1, 0);
  std::vector<int32_t> crossing_delta(sections + 1, 0);
  for (int32_t b = 0; b < n; ++b) {
    for (int32_t s = layout.first_section[b]; s < layout.end_section[b]; ++s) ++layout.member_start[s + 1];
    // Boundaries first..end-2 (between s and s+1) are crossed by b.
    ++crossing_delta[layout.first_section[b]];
    --crossing_delta[layout.end_section[b] - 1];
  }
  std::partial_sum(layout.member_start.begin(), layout.member_start.end(), layout.member_start.begin());
  layout.members.resize(layout.member_start.back());
  {
    std::vector<int32_t> fill(layout.member_start.begin(), layout.member_start.end() - 1);
    for (int32_t b = 0; b < n; ++b) {
      for (int32_t s = layout.first_section[b]; s < layout.end_section[b]; ++s) layout.members[fill[s]++] = b;
    }
  }
  layout.crossing.assign(sections > 0 ? sections - 1 : 0, 0);
  int32_t running = 0;
  for (int32_t k = 0; k + 1 < sections; ++k) {
    running += crossing_delta[k];
    layout.crossing[k] = running;
  }

  // Overlap graph: sweep buffers in order of start, keeping those still live;
  // once to count each buffer's neighbours, once to fill the lists (no
  // temporary edge list: on large problems it would double the peak memory).
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return lower[a] != lower[b] ? lower[a] < lower[b] : a < b; });
  std::vector<int32_t> live;
  auto sweep = [&](auto&& visit) {
    live.clear();
    for (const int32_t b : order) {
      live.erase(std::remove_if(live.begin(), live.end(), [&](int32_t a) { return upper[a] <= lower[b]; }), live.end());
      for (const int32_t a : live) visit(a, b);
      live.push_back(b);
    }
  };
  sweep([&](int32_t a, int32_t b) {
    ++layout.neighbor_start[a + 1];
    ++layout.neighbor_start[b + 1];
  });
  std::partial_sum(layout.neighbor_start.begin(), layout.neighbor_start.end(), layout.neighbor_start.begin());
  layout.neighbors.resize(layout.neighbor_start.back());
  std::vector<int32_t> fill(layout.neighbor_start.begin(), layout.neighbor_start.end() - 1);
  sweep([&](int32_t a, int32_t b) {
    layout.neighbors[fill[a]++] = b;
    layout.neighbors[fill[b]++] = a;
  });
  return layout;
}

LayoutSize measure_sections(std::span<const int64_t> lower, std::span<const int64_t> upper) {
  const size_t n = lower.size();
  if (n == 0) return {};
  // Overlapping pairs: at each start, every buffer still live.
  int64_t live = 0, pairs = 0;
  std::vector<char> starts_at, ends_at;
  std::vector<int64_t> ticks;
  for (const LifetimeEvent& e : sorted_events(lower, upper)) {
    if (ticks.empty() || ticks.back() != e.tick) {
      ticks.push_back(e.tick);
      starts_at.push_back(0);
      ends_at.push_back(0);
    }
    if (e.start) {
      pairs += live;
      ++live;
      starts_at.back() = 1;
    } else {
      --live;
      ends_at.back() = 1;
    }
  }
  // Section memberships: sections inside each lifetime (as in build_sections).
  std::vector<int64_t> section_tick;
  for (size_t k = 0; k + 1 < ticks.size(); ++k) {
    if (starts_at[k] && ends_at[k + 1]) section_tick.push_back(ticks[k]);
  }
  int64_t members = 0;
  for (size_t b = 0; b < n; ++b) {
    members += std::lower_bound(section_tick.begin(), section_tick.end(), upper[b]) -
               std::lower_bound(section_tick.begin(), section_tick.end(), lower[b]);
  }
  return {.overlapping_pairs = pairs, .memberships = members};
}

}  // namespace memplan::solver
