// window.h — repair of a small problem's best plan by offset bands (used by
// solve_minimize when ExactOptions::repair_share > 0; implemented in
// window.cc next to improve_by_windows, whose band windows it shares).
//
// A band is every movable buffer whose offset is at or above a floor b, for
// the b that puts about k buffers in it (k = base, base + base / 2, ... up to
// every buffer, then from base again). The band's buffers are freed and the
// rest keep their offsets: those that straddle b become fixed buffers
// clipped to the band, those under it drop out (they cannot touch a buffer
// kept at or above b). One bounded decision (node_budget nodes) asks for the
// band under arena − 1 − b; a plan is spliced in, the whole plan validated,
// and kept (its arena is lower: every buffer at the peak was in the band).
// A band whose own load is over the cap is refuted without search.
//
//   b ─────────────────────────  arena      free: offset >= b
//       [ peak ]   [   ]                    fixed (clipped): straddles b
//   ─ ─[ ─ ─ ─ ─ ─ ─ ─ ─]─ ─ b               dropped: top <= b
//     [   ]   [     ]  [  ]
//
// Ends when the plan reaches the lower bound (max(load, highest fixed top)),
// on the time limit or cancel, or after a full sweep of k without a plan
// (stats.windows_exhausted). stats.windows counts bands decided,
// stats.windows_improved those spliced in. Memory: O(n) plus one band's
// index (64 MiB at most).
#pragma once

#include <cstdint>

#include "memplan/exact.h"

namespace memplan::solver {

// Errors: invalid problem or start plan.
StatusOr<ExactResult> repair_by_bands(const Problem& problem, const Plan& start, int64_t base, int64_t node_budget,
                                      const ExactOptions& options);

}  // namespace memplan::solver
