// xorshift.h — a deterministic generator for tests (xorshift64), so that a
// failing stream replays from its seed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memplan::test_support {

struct Xorshift {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

}  // namespace memplan::test_support
