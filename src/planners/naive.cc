// naive.cc — no reuse: every buffer gets its own bytes (bump allocation).
//
// The baseline of the MemoMalloc thesis and TFLite Micro's linear planner:
//   1. Buffers with a fixed offset keep it; the bump pointer starts above the
//      highest of them.
//   2. Every other buffer, in input order, is placed at the bump pointer
//      rounded up to its alignment; the pointer moves past it.
// Arena = sum of sizes plus alignment padding. O(n) time, O(n) space.
#include <algorithm>

#include "planners/planners.h"

namespace memplan {

StatusOr<Plan> plan_naive(const Problem& problem, const PlanOptions& options) {
  // O(n): it honours a cancel raised before the call, and no time limit (it
  // is every composite planner's last resort).
  if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) {
    return Cancelled("naive was cancelled");
  }
  int64_t top = 0;
  for (const Buffer& b : problem.buffers) {
    if (b.offset) top = std::max(top, *b.offset + b.size);
  }
  std::vector<int64_t> offsets(problem.size(), 0);
  for (size_t i = 0; i < problem.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.offset) {
      offsets[i] = *b.offset;
      continue;
    }
    offsets[i] = align_up(top, problem.alignment_of(i));
    top = offsets[i] + b.size;
  }
  return make_plan(problem, std::move(offsets));
}

}  // namespace memplan
