// saturating.h — 64-bit addition and subtraction that clamp to the int64
// range instead of overflowing: for ranking keys and tick arithmetic on
// lifetimes that may span most of int64 (check_problem allows any lower <
// upper).
#pragma once

#include <cstdint>
#include <limits>

namespace memplan {

inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t saturating_sub(int64_t a, int64_t b) {
  int64_t difference = 0;
  if (!__builtin_sub_overflow(a, b, &difference)) return difference;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

}  // namespace memplan
