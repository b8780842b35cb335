// occupancy_index.cc — the segment tree of merged byte ranges
// (the structure and why it is exact are in occupancy_index.h).
#include "planners/occupancy_index.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>

namespace memplan {
namespace {

// std::vector<ByteRange> with RangeSet's replace(), for insert_merged.
struct VectorSet {
  std::vector<ByteRange>& v;
  ByteRange* data() { return v.data(); }
  size_t size() const { return v.size(); }
  void replace(size_t first, size_t last, ByteRange r) {
    if (first == last) {
      v.insert(v.begin() + static_cast<std::ptrdiff_t>(first), r);
      return;
    }
    v[first] = r;
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(first) + 1, v.begin() + static_cast<std::ptrdiff_t>(last));
  }
};

// Adds r to a sorted set of disjoint, non-adjacent ranges, merging every range
// it overlaps or touches. Returns false, leaving the set as it was, if one
// range of the set already holds r.
template <typename Set>
bool insert_merged(Set& set, ByteRange r) {
  ByteRange* const begin = set.data();
  ByteRange* const end = begin + set.size();
  // First range that ends at or after r.begin: the first one r can touch.
  ByteRange* first = std::lower_bound(begin, end, r.begin, [](const ByteRange& x, int64_t b) { return x.end < b; });
  const size_t at = static_cast<size_t>(first - begin);
  if (first == end || first->begin > r.end) {
    set.replace(at, at, r);
    return true;
  }
  if (first->begin <= r.begin && r.end <= first->end) return false;
  // One past the last range that begins at or before r.end.
  ByteRange* last = std::upper_bound(first, end, r.end, [](int64_t e, const ByteRange& x) { return e < x.begin; });
  r.begin = std::min(first->begin, r.begin);
  r.end = std::max((last - 1)->end, r.end);
  set.replace(at, static_cast<size_t>(last - begin), r);
  return true;
}

bool insert_merged(std::vector<ByteRange>& v, ByteRange r) {
  VectorSet set{v};
  return insert_merged(set, r);
}

// *out = the union of *out and `set` (both sorted, disjoint, non-adjacent),
// using `scratch` as the second buffer.
void unite(std::vector<ByteRange>* out, const RangeSet& set, std::vector<ByteRange>& scratch) {
  // A set much smaller than the union so far goes in range by range: a binary
  // search and a short move each, instead of a pass over the whole union.
  if (set.size() * 16 < out->size()) {
    for (const ByteRange& r : set) insert_merged(*out, r);
    return;
  }
  scratch.clear();
  auto x = out->begin(), x_end = out->end();
  auto y = set.begin(), y_end = set.end();
  while (x != x_end || y != y_end) {
    const ByteRange next = (y == y_end || (x != x_end && x->begin <= y->begin)) ? *x++ : *y++;
    if (!scratch.empty() && next.begin <= scratch.back().end) {
      scratch.back().end = std::max(scratch.back().end, next.end);
    } else {
      scratch.push_back(next);
    }
  }
  out->swap(scratch);
}

}  // namespace

RangeSet::RangeSet(RangeSet&& other) noexcept : size_(other.size_), capacity_(other.capacity_), inline_(other.inline_) {
  if (capacity_ != 1) heap_ = other.heap_;
  other.size_ = 0;
  other.capacity_ = 1;
}

RangeSet& RangeSet::operator=(RangeSet&& other) noexcept {
  if (this != &other) {
    this->~RangeSet();
    new (this) RangeSet(std::move(other));
  }
  return *this;
}

RangeSet::~RangeSet() {
  if (capacity_ != 1) std::free(heap_);
}

void RangeSet::replace(size_t first, size_t last, ByteRange r) {
  const size_t removed = last - first;
  if (removed == 0) {
    if (size_ == capacity_) {
      // Grow by doubling; the inline range moves to the heap block.
      const uint32_t capacity = capacity_ * 2;
      auto* block = static_cast<ByteRange*>(std::malloc(capacity * sizeof(ByteRange)));
      if (block == nullptr) throw std::bad_alloc();
      std::memcpy(block, data(), size_ * sizeof(ByteRange));
      if (capacity_ != 1) std::free(heap_);
      heap_ = block;
      capacity_ = capacity;
    }
    ByteRange* d = data();
    std::memmove(d + first + 1, d + first, (size_ - first) * sizeof(ByteRange));
    d[first] = r;
    ++size_;
    return;
  }
  ByteRange* d = data();
  d[first] = r;
  std::memmove(d + first + 1, d + last, (size_ - last) * sizeof(ByteRange));
  size_ -= static_cast<uint32_t>(removed - 1);
}

OccupancyIndex::OccupancyIndex(size_t slot_count)
    : leaves_(std::bit_ceil(std::max<size_t>(slot_count, 1))), own_(2 * leaves_), starts_(2 * leaves_) {}

void OccupancyIndex::occupy(SlotRange slots, ByteRange bytes) {
  if (slots.first >= slots.last || bytes.begin >= bytes.end) return;
  const size_t lo = slots.first + leaves_, hi = slots.last + leaves_;
  // The first slot's leaf and its ancestors, until one already holds the bytes.
  for (size_t v = lo; v >= 1 && insert_merged(starts_[v], bytes); v >>= 1) {
  }
  // Canonical nodes of the lifetime, bottom-up.
  for (size_t l = lo, h = hi; l < h; l >>= 1, h >>= 1) {
    if (l & 1) insert_merged(own_[l++], bytes);
    if (h & 1) insert_merged(own_[--h], bytes);
  }
}

void OccupancyIndex::taken_during(SlotRange slots, std::vector<ByteRange>* out) {
  out->clear();
  if (slots.first >= slots.last) return;
  // Gather the non-empty sets, then fold them into *out one at a time: the
  // sets repeat each other's bytes heavily, so that beats sorting their
  // concatenation. One root path plus two canonical nodes per level, 33 levels.
  const RangeSet* sets[3 * 33];
  size_t count = 0;
  auto gather = [&](const RangeSet& set) {
    if (!set.empty()) sets[count++] = &set;
  };
  const size_t lo = slots.first + leaves_, hi = slots.last + leaves_;
  // Live at the first slot.
  for (size_t v = lo; v >= 1; v >>= 1) gather(own_[v]);
  // Starting at a later slot of the lifetime.
  for (size_t l = lo + 1, h = hi; l < h; l >>= 1, h >>= 1) {
    if (l & 1) gather(starts_[l++]);
    if (h & 1) gather(starts_[--h]);
  }
  if (count == 0) return;

  // Largest first: it is usually most of the union already.
  size_t largest = 0;
  for (size_t k = 1; k < count; ++k) {
    if (sets[k]->size() > sets[largest]->size()) largest = k;
  }
  std::swap(sets[0], sets[largest]);
  out->assign(sets[0]->begin(), sets[0]->end());
  for (size_t k = 1; k < count; ++k) unite(out, *sets[k], scratch_);
}

}  // namespace memplan
