// exit_codes.h — what `memplan`'s exit status means, for scripts and CI.
//
//   0  success (for `validate`: the plan is valid)
//   1  bad input or failure: unreadable or malformed file, unknown planner,
//      invalid plan given to `validate`, a planner that reported an error
//   2  the plan does not fit the requested capacity (or a planner proved that
//      no plan fits)
//   3  internal error: a planner produced an invalid plan (a memplan bug)
//   4  unknown: no plan within the capacity was found and none was proven
//      impossible (the time limit ran out first)
//   130 interrupted (SIGINT); the best plan found so far was written
// Usage errors found by the command-line parser use CLI11's codes (>= 100).
#pragma once

#include "memplan/status.h"

namespace memplan::cli {

inline constexpr int kExitFailure = 1;
inline constexpr int kExitDoesNotFit = 2;
inline constexpr int kExitInternal = 3;
inline constexpr int kExitUnknown = 4;

// The exit code for a library error.
inline int exit_code_for(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 0;
    case StatusCode::kInfeasible: return kExitDoesNotFit;
    case StatusCode::kCapacityExceeded: return kExitUnknown;  // a heuristic's failure, not a proof
    case StatusCode::kInternal: return kExitInternal;
    default: return kExitFailure;
  }
}

}  // namespace memplan::cli
