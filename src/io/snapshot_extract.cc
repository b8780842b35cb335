// snapshot_extract.cc — what is extracted from a reconstructed window (see
// snapshot.h): the window's and each iteration's problem, the iterations
// themselves, and the device trace the allocator models replay.
#include "memplan/snapshot.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "io/snapshot_numbers.h"

namespace memplan::snapshot {

namespace {

Buffer buffer_of(const WindowBlock& b, size_t index, int64_t lower, int64_t upper) {
  return Buffer{.id = std::to_string(index) + "@" + hex(b.address),
                .lower = lower,
                .upper = upper,
                .size = static_cast<int64_t>(round_block(b.size)),
                .alignment = kBlockAlignment};
}

}  // namespace

Problem window_problem(const Window& window) {
  Problem problem;
  problem.alignment = kBlockAlignment;
  problem.buffers.reserve(window.blocks.size());
  for (size_t i = 0; i < window.blocks.size(); ++i) {
    const WindowBlock& b = window.blocks[i];
    problem.buffers.push_back(buffer_of(b, i, b.alloc_tick, b.free_tick));
  }
  return problem;
}

Problem iteration_problem(const Window& window, const Iteration& iteration) {
  Problem problem;
  problem.alignment = kBlockAlignment;
  if (iteration.end_event <= iteration.first_event || iteration.end_event > window.tick_of_event.size()) return problem;
  const int64_t t0 = iteration.first_event == 0 ? 0 : window.tick_of_event[iteration.first_event - 1];
  const int64_t t1 = window.tick_of_event[iteration.end_event - 1];
  for (size_t i = 0; i < window.blocks.size(); ++i) {
    const WindowBlock& b = window.blocks[i];
    if (b.alloc_tick > t1 || b.free_tick <= t0) continue;
    const int64_t lower = std::max(b.alloc_tick, t0) - t0;
    const int64_t upper = std::min(b.free_tick, t1 + 1) - t0;
    if (lower < upper) problem.buffers.push_back(buffer_of(b, i, lower, upper));
  }
  return problem;
}

Iterations find_iterations(const Snapshot& snapshot, const Device& device, const Window& window) {
  Iterations result;
  const std::vector<Event>& events = device.events;
  auto has_alloc = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      if (events[i].action == Action::kAlloc) return true;
    }
    return false;
  };
  auto spans_between = [&](const std::vector<size_t>& boundaries, bool skip_marker) {
    std::vector<Iteration> spans;
    for (size_t k = 0; k + 1 < boundaries.size(); ++k) {
      const size_t from = boundaries[k] + (skip_marker ? 1 : 0);
      if (from < boundaries[k + 1] && has_alloc(from, boundaries[k + 1])) spans.push_back({from, boundaries[k + 1]});
    }
    return spans;
  };

  // 1. `snapshot` markers.
  std::vector<size_t> markers;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].action == Action::kSnapshot) markers.push_back(i);
  }
  if (markers.size() >= 2) {
    result.spans = spans_between(markers, true);
    if (!result.spans.empty()) {
      result.found_by = "snapshot markers";
      return result;
    }
  }

  // 2. ProfilerStep annotations, placed by time.
  std::vector<size_t> steps;
  for (const Annotation& a : snapshot.annotations) {
    if (!a.start || a.device != device.device || !a.name.starts_with("ProfilerStep#")) continue;
    const auto at = std::lower_bound(events.begin(), events.end(), a.time_us,
                                     [](const Event& e, int64_t t) { return e.time_us < t; });
    steps.push_back(static_cast<size_t>(at - events.begin()));
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  if (steps.size() >= 2) {
    result.spans = spans_between(steps, false);
    if (!result.spans.empty()) {
      result.found_by = "ProfilerStep annotations";
      return result;
    }
  }

  // 3. Repetition: the longest suffix of the alloc sequence that is periodic
  //    with at least two periods (prefix function of the reversed sequence).
  std::vector<size_t> alloc_at;
  std::vector<uint64_t> signature;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].action != Action::kAlloc) continue;
    alloc_at.push_back(i);
    signature.push_back(events[i].size * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(events[i].stream));
  }
  const size_t n = signature.size();
  if (n < 4) return result;
  std::reverse(signature.begin(), signature.end());
  std::vector<uint32_t> pi(n, 0);
  size_t best_length = 0, best_period = 0;
  for (size_t i = 1; i < n; ++i) {
    uint32_t k = pi[i - 1];
    while (k > 0 && signature[i] != signature[k]) k = pi[k - 1];
    if (signature[i] == signature[k]) ++k;
    pi[i] = k;
    const size_t length = i + 1, period = length - k;
    if (period >= 2 && length >= 2 * period && length > best_length) {
      best_length = length;
      best_period = period;
    }
  }
  if (best_period == 0) return result;
  // Cut where the fewest bytes are allocated: replay to the region's first period.
  const size_t region = n - best_length;
  std::vector<uint64_t> allocated_before(events.size() + 1, 0);
  {
    uint64_t allocated = window.start_allocated;
    std::unordered_map<uint64_t, uint64_t> sizes;
    for (size_t i = 0; i < events.size(); ++i) {
      allocated_before[i] = allocated;
      const Event& e = events[i];
      if (e.action == Action::kAlloc) {
        allocated += e.size;
        sizes[e.address] = e.size;
      } else if (e.action == Action::kFreeCompleted) {
        auto it = sizes.find(e.address);
        const uint64_t size = it != sizes.end() ? it->second : e.size;
        allocated -= std::min(allocated, size);
        if (it != sizes.end()) sizes.erase(it);
      }
    }
  }
  size_t phase = 0;
  for (size_t p = 1; p < best_period; ++p) {
    if (allocated_before[alloc_at[region + p]] < allocated_before[alloc_at[region + phase]]) phase = p;
  }
  for (size_t a = region + phase; a + best_period <= n; a += best_period) {
    const size_t end = a + best_period < n ? alloc_at[a + best_period] : events.size();
    result.spans.push_back({alloc_at[a], end});
  }
  if (result.spans.size() >= 2) {
    result.found_by = "repetition";
    result.period_allocs = best_period;
  } else {
    result.spans.clear();
  }
  return result;
}

simulate::DeviceTrace device_trace(const Window& window, const Device& device, bool failed_requests) {
  simulate::DeviceTrace trace;
  trace.device = window.device;
  trace.start = window.start_segments;
  std::unordered_set<uint64_t> live;
  for (const simulate::StartSegment& s : trace.start) {
    for (const simulate::StartBlock& b : s.blocks) {
      if (b.allocated) live.insert(s.address + b.offset);
    }
  }
  using Kind = simulate::Request::Kind;
  bool in_release = false;
  uint64_t failed = 0;  // out-of-memory requests added
  trace.requests.reserve(window.alloc_events + window.free_events);
  for (const Event& e : device.events) {
    const bool release = e.action == Action::kSegmentFree || e.action == Action::kSegmentUnmap;
    if (release && !in_release) trace.requests.push_back({.kind = Kind::kEmptyCache, .stream = e.stream});
    in_release = release;
    if (e.action == Action::kAlloc) {
      if (live.count(e.address) != 0)
        trace.requests.push_back({.kind = Kind::kFree, .id = e.address, .stream = e.stream});
      live.insert(e.address);
      trace.requests.push_back({.kind = Kind::kAlloc, .id = e.address, .size = e.size, .stream = e.stream});
    } else if (e.action == Action::kFreeCompleted) {
      if (live.erase(e.address) != 0)
        trace.requests.push_back({.kind = Kind::kFree, .id = e.address, .stream = e.stream});
    } else if (e.action == Action::kOom && failed_requests && e.size > 0) {
      const uint64_t id = kFailedRequestIds + failed++;
      trace.requests.push_back({.kind = Kind::kAlloc, .id = id, .size = e.size, .stream = e.stream});
      trace.requests.push_back({.kind = Kind::kFree, .id = id, .stream = e.stream});
    }
  }
  return trace;
}

}  // namespace memplan::snapshot
