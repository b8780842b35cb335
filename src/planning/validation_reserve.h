// validation_reserve.h — how much of an explicit time limit run_planner keeps
// back from the planners, for validating their plan and for the latency with
// which they see their deadline.
#pragma once

#include <algorithm>
#include <cstddef>

namespace memplan {

// A tenth of the limit, at most kMaxValidationShareSeconds; or the
// validator's cost per buffer on dense problems (10^6 random buffers: 1.3 s)
// when that is more; never more than half the limit. (A tenth without the
// cap left the exact solver 54 s of 60, where validating its plan of a few
// hundred buffers takes under a millisecond.)
inline constexpr double kValidationShare = 0.1;
inline constexpr double kMaxValidationShareSeconds = 0.5;
inline constexpr double kValidationSecondsPerBuffer = 1.5e-6;

inline double validation_reserve_seconds(double time_limit_seconds, size_t buffers) {
  return std::min(0.5 * time_limit_seconds,
                  std::max(std::min(kValidationShare * time_limit_seconds, kMaxValidationShareSeconds),
                           kValidationSecondsPerBuffer * static_cast<double>(buffers)));
}

}  // namespace memplan
