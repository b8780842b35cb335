// bounds.h — lower bounds on the arena of any valid plan.
//
// load: max over ticks t of the bytes live at t. With alignment, the bytes a
//   set of live buffers needs is at least their sizes each rounded up to g (the
//   smallest alignment among them, since every offset is a multiple of g),
//   less the padding of the topmost one (< g); load takes the larger of that
//   and the plain sum. Every offsets-form plan has arena >= load.
// positional maximums (shared-objects form, Pisarchyk & Lee 2020, "Efficient
//   Memory Management for Deep Neural Net Inference"): sort the sizes live at
//   each tick in decreasing order; the k-th positional maximum is the largest
//   k-th size over all ticks; their sum bounds the total size of any object
//   assignment. It is >= load and is a bound for the objects form only.
#pragma once

#include <cstdint>
#include <span>

#include "memplan/problem.h"

namespace memplan {

struct Bounds {
  int64_t load = 0;                 // bytes; bound for every plan
  int64_t load_tick = 0;            // a tick at which the load is reached
  int64_t positional_maximums = 0;  // bytes; bound for the shared-objects form
  size_t max_live_count = 0;        // most buffers live at one tick
  int64_t total_size = 0;           // sum of all sizes (what naive needs without padding)
};

// load alone: O(n log n).
int64_t load(const Problem& problem);

// The plain load of lifetimes [lower[i], upper[i]) of sizes[i] bytes (no
// alignment): the most bytes live at one tick. For callers that hold
// lifetimes but no Problem (the runtime's profiles). O(n log n).
int64_t load(std::span<const int64_t> lower, std::span<const int64_t> upper, std::span<const int64_t> sizes);

// All bounds. The positional-maximums part costs O(sum over start ticks of
// live-set size · log) and is skipped (left 0) if `with_positional_maximums` is false.
Bounds compute_bounds(const Problem& problem, bool with_positional_maximums = true);

// gap = arena / load - 1 (0 when load is 0 and arena is 0).
double gap(int64_t arena, int64_t load);

}  // namespace memplan
