// sweep.cc — sorted lifetime events and time slots (see sweep.h). Both read
// the bounds through an accessor, so that a Problem and a pair of spans (the
// exact solver's form) share one implementation without copying.
#include "core/sweep.h"

#include <algorithm>

namespace memplan {
namespace {

template <typename Lower, typename Upper>
std::vector<LifetimeEvent> sort_events(size_t n, Lower lower, Upper upper) {
  std::vector<LifetimeEvent> events(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const auto buffer = static_cast<uint32_t>(i);
    events[2 * i] = {.tick = lower(i), .buffer = buffer, .start = true};
    events[2 * i + 1] = {.tick = upper(i), .buffer = buffer, .start = false};
  }
  std::sort(events.begin(), events.end(), [](const LifetimeEvent& x, const LifetimeEvent& y) {
    if (x.tick != y.tick) return x.tick < y.tick;
    if (x.start != y.start) return !x.start;  // ends first
    return x.buffer < y.buffer;
  });
  return events;
}

}  // namespace

std::vector<LifetimeEvent> sorted_events(std::span<const int64_t> lower, std::span<const int64_t> upper) {
  return sort_events(
      lower.size(), [&](size_t i) { return lower[i]; }, [&](size_t i) { return upper[i]; });
}

std::vector<LifetimeEvent> sorted_events(const Problem& problem) {
  const std::vector<Buffer>& b = problem.buffers;
  return sort_events(
      b.size(), [&](size_t i) { return b[i].lower; }, [&](size_t i) { return b[i].upper; });
}

namespace {

// Numbers the distinct bounds in one pass over them sorted by tick alone (the
// order of equal ticks does not matter here, and the planners build slots on
// every run: a lighter sort than sorted_events'). No binary search per bound.
template <typename Lower, typename Upper>
void number_ticks(size_t n, Lower lower, Upper upper, std::vector<int64_t>* ticks, std::vector<SlotRange>* ranges) {
  struct Bound {
    int64_t tick;
    size_t at;  // 2 * buffer + (0 for lower, 1 for upper)
  };
  std::vector<Bound> bounds(2 * n);
  for (size_t i = 0; i < n; ++i) {
    bounds[2 * i] = {lower(i), 2 * i};
    bounds[2 * i + 1] = {upper(i), 2 * i + 1};
  }
  std::sort(bounds.begin(), bounds.end(), [](const Bound& x, const Bound& y) { return x.tick < y.tick; });
  ranges->resize(n);
  for (const Bound& bound : bounds) {
    if (ticks->empty() || ticks->back() != bound.tick) ticks->push_back(bound.tick);
    const auto slot = static_cast<uint32_t>(ticks->size() - 1);
    if (bound.at % 2 == 0)
      (*ranges)[bound.at / 2].first = slot;
    else
      (*ranges)[bound.at / 2].last = slot;
  }
}

}  // namespace

TimeSlots::TimeSlots(const Problem& problem) {
  const std::vector<Buffer>& b = problem.buffers;
  number_ticks(
      b.size(), [&](size_t i) { return b[i].lower; }, [&](size_t i) { return b[i].upper; }, &ticks_, &ranges_);
}

TimeSlots::TimeSlots(std::span<const int64_t> lower, std::span<const int64_t> upper) {
  number_ticks(
      lower.size(), [&](size_t i) { return lower[i]; }, [&](size_t i) { return upper[i]; }, &ticks_, &ranges_);
}

}  // namespace memplan
