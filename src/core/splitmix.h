// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): the one deterministic mixer the planners and the
// exact solver use for perturbations, priorities and seeds.
#pragma once

#include <cstdint>

namespace memplan {

// The mix of one state: a well-spread 64-bit value for each input.
constexpr uint64_t splitmix64_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A stream: each call advances the state and returns the next value.
struct SplitMix64 {
  uint64_t state = 0;
  uint64_t next() {
    const uint64_t value = splitmix64_mix(state);
    state += 0x9e3779b97f4a7c15ULL;
    return value;
  }
  // Uniform enough in [0, n) for perturbations (0 when n is 0).
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
};

}  // namespace memplan
