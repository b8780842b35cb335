// test_size.h — how many cases an expensive test runs.
//
// The property tests draw MEMPLAN_PROPERTY_ITERATIONS random problems per
// case (default 200). Tests that compare the exact solver with a brute force
// over many seeds take the same share of their full count: all of it by
// default (the Release stage of scripts/test.sh), a quarter where the
// variable asks for 50 (its sanitizer stage, which looks for memory errors,
// not for more verdicts), never fewer than a floor the test names.
//
//   for (uint64_t seed = 1; seed <= scaled_count(60, 12); ++seed) ...
//   for (uint64_t seed : scaled_sample(kGapSeeds, 2)) ...   (spread over the list)
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <type_traits>
#include <vector>

namespace memplan::test_support {

inline uint64_t scaled_count(uint64_t full, uint64_t at_least) {
  const char* env = std::getenv("MEMPLAN_PROPERTY_ITERATIONS");
  const long long asked = env != nullptr ? std::atoll(env) : 0;
  if (asked <= 0) return full;
  const uint64_t share = static_cast<uint64_t>(std::min<long long>(asked, 200)) * full / 200;
  return std::clamp(share, std::min(at_least, full), full);
}

// The first, the last and evenly spaced items between them, scaled_count of
// them in all (every item by default), in the list's order: a reduced run
// still covers both ends of a list ordered by size or difficulty.
template <class List>
auto scaled_sample(const List& all, uint64_t at_least) {
  std::vector<std::decay_t<decltype(*std::begin(all))>> picked;
  const uint64_t n = std::size(all);
  const uint64_t k = scaled_count(n, at_least);
  for (uint64_t i = 0; i < k; ++i) {
    picked.push_back(*(std::begin(all) + (k == 1 ? 0 : i * (n - 1) / (k - 1))));
  }
  return picked;
}

}  // namespace memplan::test_support
