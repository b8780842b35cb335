// replay_iteration.h — a planning problem turned into the request stream of
// one iteration, for the allocator benchmarks (bench_replay, bench_cuda_pool):
// walking the ticks in order, the buffers that end at a tick are freed before
// those that start there are allocated (ties in buffer order).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "memplan/problem.h"

namespace memplan::bench {

struct Event {
  bool allocate;
  uint32_t buffer;
};

struct Iteration {
  std::vector<size_t> sizes;
  std::vector<Event> events;
};

inline Iteration from_problem(const memplan::Problem& problem) {
  Iteration it;
  std::vector<std::pair<int64_t, int64_t>> keyed;  // (tick * 2 + kind, buffer): frees before allocations
  for (size_t i = 0; i < problem.size(); ++i) {
    it.sizes.push_back(static_cast<size_t>(std::max<int64_t>(problem.buffers[i].size, 1)));
    keyed.push_back({problem.buffers[i].lower * 2 + 1, static_cast<int64_t>(i)});
    keyed.push_back({problem.buffers[i].upper * 2, static_cast<int64_t>(i)});
  }
  std::sort(keyed.begin(), keyed.end());
  for (const auto& [key, buffer] : keyed) it.events.push_back({(key & 1) != 0, static_cast<uint32_t>(buffer)});
  return it;
}

}  // namespace memplan::bench
