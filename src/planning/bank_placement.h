// bank_placement.h — the steps the bank strategies share (banks.h): which
// bank a buffer may go to, choosing buffers densest first within a load,
// first-fit placement beside a bank's buffers, and planning a bank's set.
// Internal to src/planning/.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/range_add_max.h"
#include "core/sweep.h"
#include "memplan/banks.h"
#include "planners/occupancy_index.h"

namespace memplan::banks {

// Each buffer's bank index from its pin (nullopt: unpinned).
using Pins = std::vector<std::optional<size_t>>;

// A banked plan being built: each buffer's bank (-1: none yet) and offset.
struct Assignment {
  std::vector<int32_t> bank_of;
  std::vector<int64_t> offsets;

  // Puts members[j] in bank k at offset at[j].
  void place(const std::vector<size_t>& members, std::span<const int64_t> at, size_t k) {
    for (size_t j = 0; j < members.size(); ++j) {
      bank_of[members[j]] = static_cast<int32_t>(k);
      offsets[members[j]] = at[j];
    }
  }
};

// Each buffer's bank index from its pin, or nullopt; kNotFound for a pin
// that names no bank.
StatusOr<Pins> resolve_pins(const Problem& problem, std::span<const Bank> banks);

// The larger of buffer i's and the bank's alignment.
int64_t alignment_in(const Problem& problem, size_t i, const Bank& bank);

// Whether buffer i may go to `bank` at all: within its capacity by size (and
// fixed offset), and a fixed offset aligned for it.
bool may_fit(const Problem& problem, size_t i, const Bank& bank);

// Each buffer's priority per byte (infinite for an empty buffer).
std::vector<double> priority_densities(const Problem& problem);

// Sorts `buffers` densest first, the larger first among equals (stable).
void sort_densest_first(const Problem& problem, const std::vector<double>& density, std::vector<size_t>* buffers);

// The total priority of `members`.
double priority_in(const Problem& problem, const std::vector<size_t>& members);

// The members that have a fixed offset.
std::vector<size_t> fixed_of(const Problem& problem, const std::vector<size_t>& members);

// Whether buffer i has a fixed offset that shares a byte with one of the
// fixed buffers `fixed` while both live: they cannot share a bank.
bool clashes_with_fixed(const Problem& problem, size_t i, const std::vector<size_t>& fixed);

// The bytes live in each time slot of a set of buffers being chosen.
class SlotLoad {
 public:
  explicit SlotLoad(size_t slots) : tree_(slots) {}
  int64_t peak(SlotRange r) const { return tree_.max(r.first, r.last); }
  void add(SlotRange r, int64_t bytes) { tree_.add(r.first, r.last, bytes); }

 private:
  RangeAddMax<int64_t> tree_;
};

// The buffers of `pool`, in its order, that join `base` while the most bytes
// live at once stays within `limit` and no fixed offsets clash: the load
// bound that every strategy chooses a bank's set by (a set whose load
// exceeds the capacity has no plan within it).
std::vector<size_t> choose_within_load(const Problem& problem, const TimeSlots& slots, const std::vector<size_t>& base,
                                       const std::vector<size_t>& pool, int64_t limit);

// Buffer i's first-fit offset in a bank beside the buffers `taken` holds
// (its fixed offset when it has one and that is clear), or nothing when it
// would end above `capacity` (default: the bank's) or clash. `ranges` is scratch.
std::optional<int64_t> first_fit_in(const Problem& problem, size_t i, const Bank& bank, const TimeSlots& slots,
                                    OccupancyIndex& taken, std::vector<ByteRange>* ranges,
                                    std::optional<int64_t> capacity = std::nullopt);

// Buffer i's first-fit offset beside the byte ranges `beside` (sorted by
// begin; the bytes held while it lives), its fixed offset when that is
// clear, or nothing when it would end above `capacity` or clash.
std::optional<int64_t> first_fit_beside(const Problem& problem, size_t i, const Bank& bank,
                                        const std::vector<ByteRange>& beside, std::optional<int64_t> capacity);

// Buffers `members` of `problem` as one arena's problem for `bank` (no
// capacity, pins cleared), in the order of `members`.
Problem subproblem(const Problem& problem, const std::vector<size_t>& members, const Bank& bank);

// Plans buffers `members` of `problem` as one arena for `bank` with the
// named planner (no capacity): their offsets, in the order of `members`.
StatusOr<Plan> plan_subset(const Problem& problem, const std::vector<size_t>& members, const Bank& bank,
                           const BankOptions& options);

// An OccupancyIndex of the buffers in bank k of (bank_of, offsets).
OccupancyIndex occupancy_of_bank(const Problem& problem, const TimeSlots& slots, const std::vector<int32_t>& bank_of,
                                 const std::vector<int64_t>& offsets, size_t k);

}  // namespace memplan::banks
