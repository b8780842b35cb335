// boundary_config.h — the online allocators' configuration in tests that
// count iterations (the libtorch and the device allocator): two agreeing iterations plan, two deviating ones
// re-profile, a 64 MiB slab, greedy_by_size, and plans adopted at the
// boundary that agreed (not on a planner thread).
#pragma once

#include <cstdint>

#include "memplan/replay_config.h"

namespace memplan::torch_serving {

inline ReplayConfig boundary_config() {
  ReplayConfig config;
  config.profile_iterations = 2;
  config.deviations_to_reprofile = 2;
  config.max_slab_bytes = int64_t{64} << 20;
  config.planner = "greedy_by_size";
  config.plan_in_background = false;
  return config;
}

}  // namespace memplan::torch_serving
