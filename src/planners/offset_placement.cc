// offset_placement.cc — the shared place-at-a-gap loop (see offset_placement.h).
#include "planners/offset_placement.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "planners/stop_condition.h"

namespace memplan {
namespace {

// Lifetimes may use the whole int64_t range, so their length is unsigned.
uint64_t lifetime_length(const Buffer& b) { return static_cast<uint64_t>(b.upper) - static_cast<uint64_t>(b.lower); }

// Same bound as check_problem: any plan's bytes must stay below 2^62.
constexpr int64_t kMaxArena = int64_t{1} << 62;

// OK when `order` lists every buffer without a fixed offset exactly once
// (buffers with one may appear too); *listed is scratch.
Status check_order(const Problem& problem, std::span<const size_t> order, std::vector<char>* listed) {
  const size_t n = problem.size();
  listed->assign(n, 0);
  size_t free_count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (problem.buffers[i].offset)
      (*listed)[i] = 1;  // placed by step 1
    else
      ++free_count;
  }
  size_t listed_free = 0;
  for (size_t i : order) {
    if (i >= n)
      return InvalidArgument("placement order names buffer #" + std::to_string(i) + " of " + std::to_string(n));
    if (problem.buffers[i].offset) continue;
    if ((*listed)[i]) return InvalidArgument("placement order lists buffer #" + std::to_string(i) + " twice");
    (*listed)[i] = 1;
    ++listed_free;
  }
  if (listed_free != free_count) {
    return InvalidArgument("placement order lists " + std::to_string(listed_free) + " of the " +
                           std::to_string(free_count) + " buffers without a fixed offset");
  }
  return Status();
}

}  // namespace

int64_t choose_offset(std::span<const ByteRange> taken, int64_t size, int64_t alignment, FitPolicy policy,
                      int64_t arena) {
  int64_t cursor = 0;  // lowest byte above every range seen so far
  int64_t best = -1;
  int64_t best_room = std::numeric_limits<int64_t>::max();
  for (const ByteRange& r : taken) {
    if (r.begin > cursor) {
      const int64_t start = align_up(cursor, alignment);
      if (start <= r.begin - size) {
        if (policy == FitPolicy::kFirstFit) return start;
        // Room is measured from the aligned start, as XLA does; strict '<'
        // keeps the lowest gap on ties.
        const int64_t room = r.begin - start;
        if (room < best_room) {
          best_room = room;
          best = start;
        }
      }
    }
    cursor = std::max(cursor, r.end);
  }
  const int64_t top = align_up(cursor, alignment);
  if (policy == FitPolicy::kBestFitInArena && top <= arena - size && arena - top < best_room) return top;
  return best >= 0 ? best : top;
}

StatusOr<Plan> place_in_order(const Problem& problem, std::span<const size_t> order, FitPolicy policy,
                              const PlanOptions& options) {
  const size_t n = problem.size();
  std::vector<int64_t> offsets(n, 0);
  std::vector<char> listed;
  if (Status s = check_order(problem, order, &listed); !s.ok()) return s;

  StopCondition stop(options, "gap placement");
  if (stop.should_stop()) return stop.status();
  const TimeSlots slots(problem);
  OccupancyIndex index(slots.size());
  int64_t arena = 0;
  for (size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    if (!b.offset) continue;
    offsets[i] = *b.offset;
    index.occupy(slots.of(i), {*b.offset, *b.offset + b.size});
    arena = std::max(arena, *b.offset + b.size);
  }

  std::vector<ByteRange> taken;
  for (size_t i : order) {
    const Buffer& b = problem.buffers[i];
    if (b.offset) continue;
    if (stop.should_stop()) return stop.status();
    if (b.size == 0) continue;  // offset stays 0 (step 3)
    index.taken_during(slots.of(i), &taken);
    const int64_t offset = choose_offset(taken, b.size, problem.alignment_of(i), policy, arena);
    // Only reachable with fixed offsets near 2^62 and more bytes stacked above.
    if (offset > kMaxArena - b.size) {
      return InvalidArgument("placing buffer '" + b.id + "' needs an arena beyond 2^62 bytes");
    }
    offsets[i] = offset;
    index.occupy(slots.of(i), {offset, offset + b.size});
    arena = std::max(arena, offset + b.size);
  }
  return make_plan(problem, std::move(offsets));
}

RepeatedPlacement::RepeatedPlacement(const Problem& problem, FitPolicy policy)
    : problem_(problem), policy_(policy), slots_(problem) {}

// choose_offset over the ranges of the placed buffers that overlap `slots` in
// time, in one pass over placed_ (sorted by begin). A buffer that does not
// overlap counts as the range [0, 0), which never opens a gap (the cursor
// starts at 0) nor moves the cursor: so the loop has no branch on the time
// test. Two cut-offs that cannot change the answer: first fit takes the
// first gap that fits; best fit stops at a gap whose room equals the size,
// the least any fitting gap has (a later one must be strictly smaller to
// win, and so must the room under the arena).
int64_t RepeatedPlacement::scan_offset(SlotRange slots, int64_t size, int64_t alignment, int64_t arena) const {
  int64_t cursor = 0;
  int64_t best = -1;
  int64_t best_room = std::numeric_limits<int64_t>::max();
  for (const Placed& p : placed_) {
    // All ones when p overlaps in time, else 0 (a mask, not a branch: about
    // half the placed buffers overlap, so a branch would mispredict often).
    const int64_t mask = -static_cast<int64_t>(static_cast<uint32_t>(p.first < slots.last) &
                                               static_cast<uint32_t>(slots.first < p.last));
    const int64_t begin = p.begin & mask;
    const int64_t end = p.end & mask;
    if (begin > cursor) {
      const int64_t start = align_up(cursor, alignment);
      if (start <= begin - size) {
        if (policy_ == FitPolicy::kFirstFit) return start;
        const int64_t room = begin - start;
        if (room < best_room) {
          best_room = room;
          best = start;
          if (room == size) return start;
        }
      }
    }
    cursor = std::max(cursor, end);
  }
  const int64_t top = align_up(cursor, alignment);
  if (policy_ == FitPolicy::kBestFitInArena && top <= arena - size && arena - top < best_room) return top;
  return best >= 0 ? best : top;
}

StatusOr<Plan> RepeatedPlacement::place(std::span<const size_t> order, std::span<const size_t> base_order,
                                        const Plan& base, const PlanOptions& options) {
  const Problem& problem = problem_;
  const size_t n = problem.size();
  if (Status s = check_order(problem, order, &listed_); !s.ok()) return s;
  StopCondition stop(options, "gap placement");
  if (stop.should_stop()) return stop.status();
  if (base.offsets.size() != n)
    return InvalidArgument("base plan has " + std::to_string(base.offsets.size()) + " offsets for " +
                           std::to_string(n) + " buffers");
  // The prefix placed exactly as in `base`.
  size_t shared = 0;
  while (shared < order.size() && shared < base_order.size() && order[shared] == base_order[shared]) ++shared;

  std::vector<int64_t> offsets(n, 0);
  int64_t arena = 0;
  const bool scan = n <= kScanMaxBuffers;
  std::optional<OccupancyIndex> index;
  if (!scan) index.emplace(slots_.size());
  placed_.clear();
  // As OccupancyIndex::occupy: empty byte or slot ranges take nothing.
  auto occupy = [&](size_t i, int64_t offset) {
    const SlotRange r = slots_.of(i);
    const int64_t end = offset + problem.buffers[i].size;
    if (r.first >= r.last || offset >= end) return;
    if (scan)
      placed_.push_back({offset, end, r.first, r.last});
    else
      index->occupy(r, {offset, end});
  };
  for (size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    if (!b.offset) continue;
    offsets[i] = *b.offset;
    occupy(i, *b.offset);
    arena = std::max(arena, *b.offset + b.size);
  }
  for (size_t k = 0; k < shared; ++k) {
    const size_t i = order[k];
    const Buffer& b = problem.buffers[i];
    if (b.offset || b.size == 0) continue;
    offsets[i] = base.offsets[i];
    occupy(i, offsets[i]);
    arena = std::max(arena, offsets[i] + b.size);
  }
  auto by_begin = [](const Placed& x, const Placed& y) { return x.begin < y.begin; };
  if (scan) std::sort(placed_.begin(), placed_.end(), by_begin);

  for (size_t k = shared; k < order.size(); ++k) {
    const size_t i = order[k];
    const Buffer& b = problem.buffers[i];
    if (b.offset) continue;
    if (stop.should_stop()) return stop.status();
    if (b.size == 0) continue;  // offset stays 0 (step 3)
    const SlotRange r = slots_.of(i);
    int64_t offset = 0;
    if (scan) {
      offset = scan_offset(r, b.size, problem.alignment_of(i), arena);
    } else {
      index->taken_during(r, &taken_);
      offset = choose_offset(taken_, b.size, problem.alignment_of(i), policy_, arena);
    }
    if (offset > kMaxArena - b.size) {
      return InvalidArgument("placing buffer '" + b.id + "' needs an arena beyond 2^62 bytes");
    }
    offsets[i] = offset;
    if (scan) {
      if (r.first < r.last) {
        const Placed p{offset, offset + b.size, r.first, r.last};
        placed_.insert(std::upper_bound(placed_.begin(), placed_.end(), p, by_begin), p);
      }
    } else {
      index->occupy(r, {offset, offset + b.size});
    }
    arena = std::max(arena, offset + b.size);
  }
  return make_plan(problem, std::move(offsets));
}

namespace {

// Sorts buffer indices by (primary desc, secondary desc, index asc). The keys
// are copied next to the index first: comparing through problem.buffers
// would miss the cache on every comparison of a large problem.
std::vector<size_t> order_by_keys(const Problem& problem, uint64_t (*primary)(const Buffer&),
                                  uint64_t (*secondary)(const Buffer&)) {
  struct Key {
    uint64_t primary;
    uint64_t secondary;
    size_t index;
  };
  std::vector<Key> keys(problem.size());
  for (size_t i = 0; i < problem.size(); ++i) {
    keys[i] = {primary(problem.buffers[i]), secondary(problem.buffers[i]), i};
  }
  std::sort(keys.begin(), keys.end(), [](const Key& x, const Key& y) {
    if (x.primary != y.primary) return x.primary > y.primary;
    if (x.secondary != y.secondary) return x.secondary > y.secondary;
    return x.index < y.index;
  });
  std::vector<size_t> order(problem.size());
  for (size_t k = 0; k < keys.size(); ++k) order[k] = keys[k].index;
  return order;
}

uint64_t size_key(const Buffer& b) { return static_cast<uint64_t>(b.size); }  // sizes are >= 0

}  // namespace

std::vector<size_t> order_by_decreasing_size(const Problem& problem) {
  return order_by_keys(problem, size_key, lifetime_length);
}

std::vector<size_t> order_by_decreasing_lifetime(const Problem& problem) {
  return order_by_keys(problem, lifetime_length, size_key);
}

}  // namespace memplan
