// occupancy_index.h — which bytes are taken during a lifetime, for planners
// that place buffers one at a time (internal header).
//
// Placement by gaps (TFLite's greedy by size, XLA's best-fit heap, first fit)
// asks, for every buffer, which byte ranges the already placed buffers that
// overlap it in time occupy. Enumerating those buffers costs O(k) per query
// with k up to the live-set size: thousands on real graphs (iopddl Y_1 has
// 180 million overlapping pairs). The gaps depend only on the UNION of their
// byte ranges, and placed buffers pack tightly, so that union is usually a
// handful of ranges. This index therefore stores and returns unions.
//
// Time slots (core/sweep.h). The distinct lifetime bounds of a problem, sorted,
// cut time into slots: slot s is [tick_s, tick_{s+1}). A lifetime [lower, upper)
// is the slot range [slot(lower), slot(upper)). Example, three buffers:
//
//     tick    0     2     5     9
//     a       [=====)                 slots [0, 1)
//     b             [===========)     slots [1, 3)
//     c       [=================)     slots [0, 3)
//     slots   | s0  | s1  | s2  |
//
// The index. A buffer meets a lifetime W = slots [a, b) iff it is live at
// slot a or it starts at a slot in (a, b). Two segment trees over slots, whose
// node v spans a dyadic range of slots, answer the two halves; each node keeps
// a merged, sorted set of byte ranges:
//   own(v)     bytes of placed buffers for which v is one of the O(log n)
//              canonical nodes of their lifetime (the buffer is live on all of
//              v). The buffers live at slot a are those in own() of the nodes
//              on the root path of a's leaf — O(log n) sets.
//   starts(v)  bytes of placed buffers whose first slot lies in v. The
//              buffers that start in (a, b) are those in starts() of the
//              canonical nodes of [a + 1, b) — O(log n) sets.
// Occupying inserts the bytes into own() of the lifetime's canonical nodes and
// into starts() of its first slot's leaf and that leaf's ancestors. The bytes
// of starts(parent) hold those of starts(child), so that climb stops at the
// first node that already holds the bytes; near the root, where starts() is
// about the whole arena, that is almost at once. Every buffer is found once
// per query (live at a, or starting later), which keeps the sets gathered
// small: they only repeat each other's bytes, never each other's buffers.
//
// Cost, with m slots (m < 2n) and r the size of the sets touched: occupy is
// O(log m) set insertions, each O(log r + r) (a merge into a sorted vector);
// taken_during is O(log m + G + s·R) for s <= 3 log m non-empty sets holding G
// ranges in all, whose union has R ranges. Memory O(m) set headers plus the
// ranges, which merge as buffers pack. (On iopddl Y_1, where up to 9,331
// buffers are live at once, a query folds ~13 sets, ~290 ranges, into ~84.)
//
// Not thread-safe: taken_during, too, writes to a scratch buffer it reuses.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/sweep.h"
#include "memplan/problem.h"

namespace memplan {

// Half-open byte range [begin, end).
struct ByteRange {
  int64_t begin = 0;
  int64_t end = 0;
};

// A sorted set of disjoint, non-adjacent byte ranges, with room for one range
// inline: most nodes of the index hold one or two ranges, and a heap block
// per node would cost more than the tree itself.
class RangeSet {
 public:
  RangeSet() : inline_{} {}
  RangeSet(RangeSet&& other) noexcept;
  RangeSet& operator=(RangeSet&& other) noexcept;
  RangeSet(const RangeSet&) = delete;
  RangeSet& operator=(const RangeSet&) = delete;
  ~RangeSet();

  ByteRange* data() { return capacity_ == 1 ? &inline_ : heap_; }
  const ByteRange* data() const { return capacity_ == 1 ? &inline_ : heap_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const ByteRange* begin() const { return data(); }
  const ByteRange* end() const { return data() + size_; }

  // Replaces ranges [first, last) (first <= last <= size) by the single range r.
  void replace(size_t first, size_t last, ByteRange r);

 private:
  uint32_t size_ = 0;
  uint32_t capacity_ = 1;
  union {
    ByteRange inline_;
    ByteRange* heap_;
  };
};

class OccupancyIndex {
 public:
  // An empty index over `slot_count` slots.
  explicit OccupancyIndex(size_t slot_count);

  // Marks bytes [bytes.begin, bytes.end) as taken during `slots`. Empty byte
  // or slot ranges are ignored.
  void occupy(SlotRange slots, ByteRange bytes);

  // The bytes taken during `slots`, as disjoint, non-adjacent ranges sorted by
  // begin, written to *out (cleared first).
  void taken_during(SlotRange slots, std::vector<ByteRange>* out);

 private:
  size_t leaves_ = 1;  // power of two >= slot count; node 1 is the root
  std::vector<RangeSet> own_;
  std::vector<RangeSet> starts_;
  std::vector<ByteRange> scratch_;  // reused by taken_during
};

}  // namespace memplan
