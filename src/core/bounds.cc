// bounds.cc — load and positional-maximums bounds by one sweep over time.
//
// Events come from core/sweep.h: by tick, ends before starts (half-open
// lifetimes: a buffer ending at t and one starting at t are never live together).
#include "memplan/bounds.h"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <set>
#include <vector>

#include "core/sweep.h"

namespace memplan {

double gap(int64_t arena, int64_t load) {
  if (load <= 0) return arena > 0 ? 1e300 : 0.0;
  return static_cast<double>(arena) / static_cast<double>(load) - 1.0;
}

Bounds compute_bounds(const Problem& problem, bool with_positional_maximums) {
  Bounds bounds;
  const std::vector<LifetimeEvent> events = sorted_events(problem);

  // Alignment-aware load: track, for every alignment exponent k in use, how many
  // live buffers have it and the live sum of sizes rounded up to 2^k.
  int max_exp = 0;
  for (size_t i = 0; i < problem.size(); ++i) {
    max_exp = std::max(max_exp, std::countr_zero(static_cast<uint64_t>(problem.alignment_of(i))));
    bounds.total_size += problem.buffers[i].size;
  }
  std::array<int64_t, 64> count_with_exp{};
  std::array<int64_t, 64> rounded_sum{};
  int64_t live_bytes = 0;
  size_t live_count = 0;
  std::multiset<int64_t, std::greater<>> live_sizes;
  std::vector<int64_t> positional;

  for (size_t e = 0; e < events.size();) {
    const int64_t tick = events[e].tick;
    bool any_start = false;
    for (; e < events.size() && events[e].tick == tick; ++e) {
      const Buffer& b = problem.buffers[events[e].buffer];
      const int64_t sign = events[e].start ? 1 : -1;
      any_start |= events[e].start;
      live_bytes += sign * b.size;
      live_count = events[e].start ? live_count + 1 : live_count - 1;
      if (max_exp > 0) {
        count_with_exp[std::countr_zero(static_cast<uint64_t>(problem.alignment_of(events[e].buffer)))] += sign;
        for (int k = 0; k <= max_exp; ++k) rounded_sum[k] += sign * align_up(b.size, int64_t{1} << k);
      }
      if (with_positional_maximums) {
        if (events[e].start)
          live_sizes.insert(b.size);
        else
          live_sizes.erase(live_sizes.find(b.size));
      }
    }
    // Without alignment the live bytes only grow at start ticks. With it, an
    // end can raise the bound: when the last loosely aligned buffer leaves,
    // the rest must be padded to a larger alignment.
    if (!any_start && max_exp == 0) continue;
    int64_t need = live_bytes;
    if (max_exp > 0) {
      int g = 0;
      while (g <= max_exp && count_with_exp[g] == 0) ++g;
      if (g > 0 && g <= max_exp) need = std::max(need, rounded_sum[g] - ((int64_t{1} << g) - 1));
    }
    if (need > bounds.load) {
      bounds.load = need;
      bounds.load_tick = tick;
    }
    bounds.max_live_count = std::max(bounds.max_live_count, live_count);
    if (with_positional_maximums && any_start) {
      if (positional.size() < live_sizes.size()) positional.resize(live_sizes.size(), 0);
      size_t k = 0;
      for (int64_t s : live_sizes) {
        positional[k] = std::max(positional[k], s);
        ++k;
      }
    }
  }
  for (int64_t p : positional) bounds.positional_maximums += p;
  return bounds;
}

int64_t load(const Problem& problem) { return compute_bounds(problem, false).load; }

int64_t load(std::span<const int64_t> lower, std::span<const int64_t> upper, std::span<const int64_t> sizes) {
  int64_t live = 0, most = 0;
  for (const LifetimeEvent& e : sorted_events(lower, upper)) {
    live += e.start ? sizes[e.buffer] : -sizes[e.buffer];
    most = std::max(most, live);
  }
  return most;
}

}  // namespace memplan
