// range_add_max.h — a segment tree over positions [0, n): add a value to a
// range of positions, read the maximum over a range or over all of them, each
// in O(log n). The planners use it for the bytes (or buffers) live at each
// time slot of a set being chosen.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace memplan {

template <class T>
class RangeAddMax {
 public:
  explicit RangeAddMax(size_t n) : n_(std::max<size_t>(n, 1)), max_(4 * n_, T{0}), add_(4 * n_, T{0}) {}

  // Adds `delta` at every position of [lo, hi); an empty range changes nothing.
  void add(size_t lo, size_t hi, T delta) {
    if (lo < hi) add(1, 0, n_, lo, hi, delta);
  }
  // The maximum over all positions (0 before any add).
  T max() const { return max_[1]; }
  // The maximum over [lo, hi); 0 for an empty range.
  T max(size_t lo, size_t hi) const { return lo < hi ? query(1, 0, n_, lo, hi) : T{0}; }

 private:
  void add(size_t node, size_t nlo, size_t nhi, size_t lo, size_t hi, T delta) {
    if (hi <= nlo || nhi <= lo) return;
    if (lo <= nlo && nhi <= hi) {
      max_[node] += delta;
      add_[node] += delta;
      return;
    }
    const size_t mid = (nlo + nhi) / 2;
    add(2 * node, nlo, mid, lo, hi, delta);
    add(2 * node + 1, mid, nhi, lo, hi, delta);
    max_[node] = add_[node] + std::max(max_[2 * node], max_[2 * node + 1]);
  }
  T query(size_t node, size_t nlo, size_t nhi, size_t lo, size_t hi) const {
    if (hi <= nlo || nhi <= lo) return std::numeric_limits<T>::min();
    if (lo <= nlo && nhi <= hi) return max_[node];
    const size_t mid = (nlo + nhi) / 2;
    return add_[node] + std::max(query(2 * node, nlo, mid, lo, hi), query(2 * node + 1, mid, nhi, lo, hi));
  }

  size_t n_;
  std::vector<T> max_;  // max over the node's range, including add_[node]
  std::vector<T> add_;  // pending addition applied to the whole range
};

}  // namespace memplan
