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
//   100 usage error: the command line is wrong, whoever finds it (CLI11's
//       parser: an unknown option, a missing argument, a malformed value; or
//       the command: options that do not go together, an option that does
//       not apply to the kind of file given). Within CLI11's range (>= 100),
//       one code for all of them.
//   130 interrupted (SIGINT); the best plan found so far was written
// `memplan extract --predict --capacity` answers like `plan --capacity`: 2
// when no shape fits.
#pragma once

#include "memplan/status.h"

namespace memplan::cli {

inline constexpr int kExitFailure = 1;
inline constexpr int kExitDoesNotFit = 2;
inline constexpr int kExitInternal = 3;
inline constexpr int kExitUnknown = 4;
inline constexpr int kExitUsage = 100;

// The exit code for a library error.
inline int exit_code_for(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kInfeasible:
      return kExitDoesNotFit;
    case StatusCode::kCapacityExceeded:
      return kExitUnknown;  // a heuristic's failure, not a proof
    case StatusCode::kInternal:
      return kExitInternal;
    default:
      return kExitFailure;
  }
}

}  // namespace memplan::cli
