// bank_greedy_spill.cc — strategy (a) of banks.h, ExecuTorch's banked
// greedy: largest first, each into the first bank where first fit keeps it
// within capacity.
#include <algorithm>
#include <numeric>
#include <vector>

#include "core/buffer_name.h"
#include "memplan/units.h"
#include "planning/bank_strategies.h"

namespace memplan::banks {

StatusOr<BankedPlan> greedy_spill(const Problem& problem, std::span<const Bank> banks, const Pins& pins) {
  const size_t n = problem.size();
  const TimeSlots slots(problem);
  std::vector<OccupancyIndex> taken;
  for (size_t k = 0; k < banks.size(); ++k) taken.emplace_back(slots.size());
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const Buffer& a = problem.buffers[x];
    const Buffer& b = problem.buffers[y];
    if (a.offset.has_value() != b.offset.has_value()) return a.offset.has_value();
    if (a.size != b.size) return a.size > b.size;
    return a.lower < b.lower;
  });
  std::vector<int32_t> bank_of(n, -1);
  std::vector<int64_t> offsets(n, 0);
  std::vector<ByteRange> ranges;
  for (const size_t i : order) {
    const Buffer& b = problem.buffers[i];
    for (size_t k = 0; k < banks.size(); ++k) {
      if (pins[i] && *pins[i] != k) continue;
      if (!may_fit(problem, i, banks[k])) continue;
      const std::optional<int64_t> at = first_fit_in(problem, i, banks[k], slots, taken[k], &ranges);
      if (!at) continue;
      bank_of[i] = static_cast<int32_t>(k);
      offsets[i] = *at;
      taken[k].occupy(slots.of(i), {*at, *at + b.size});
      break;
    }
    if (bank_of[i] < 0) {
      return CapacityExceeded("greedy spill: " + buffer_name(problem, i) + " (" + format_bytes(b.size) +
                              ") fits in no bank it may go to");
    }
  }
  return make_banked_plan(problem, banks.size(), std::move(bank_of), std::move(offsets));
}

}  // namespace memplan::banks
