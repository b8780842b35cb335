// The section overload check (solver/section_overload.h) against its
// definition, on random sections: placed members at disjoint offsets, unplaced
// members with random thresholds.
#include "solver/section_overload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace memplan::solver {
namespace {

struct Section {
  std::vector<std::pair<int64_t, int64_t>> unplaced;  // (threshold, size)
  std::vector<std::pair<int64_t, int64_t>> placed;    // (offset, size), disjoint
  int64_t slack = 0;
};

// waste(x) at every distinct threshold, lowest first, straight from the
// definition: the first one above the slack, or nullopt.
struct Failure {
  int64_t threshold;
  int64_t waste;
};
std::optional<Failure> reference(const Section& s) {
  std::vector<int64_t> thresholds;
  for (const auto& [x, size] : s.unplaced) thresholds.push_back(x);
  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  for (const int64_t x : thresholds) {
    int64_t covered = 0;
    for (const auto& [offset, size] : s.placed) {
      covered += std::max<int64_t>(0, std::min(offset + size, x) - offset);
    }
    int64_t below = 0;
    for (const auto& [t, size] : s.unplaced) {
      if (t < x) below += size;
    }
    const int64_t waste = x - covered - below;
    if (waste > s.slack) return Failure{x, waste};
  }
  return std::nullopt;
}

std::optional<int64_t> checked(const Section& s, SectionOverloadScratch& scratch) {
  return section_overload_waste(
      static_cast<int32_t>(s.unplaced.size()), [&](int32_t i) { return s.unplaced[i].first; },
      [&](int32_t i) { return s.unplaced[i].second; }, static_cast<int32_t>(s.placed.size()),
      [&](int32_t j) { return s.placed[j]; }, s.slack, scratch);
}

// A section of an arena of `capacity` bytes: placed members fill a random part
// of it with gaps, the unplaced ones take (most of) what is left, and their
// thresholds lie around the placed region's top so that all three outcomes
// (the lowest threshold fails, a higher one fails, none fails) are common.
Section random_section(std::mt19937_64& rng) {
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Section s;
  const int64_t capacity = uniform(8, 200);
  int64_t at = 0, total = 0, covered = 0;
  const int placed = static_cast<int>(uniform(0, 8));
  for (int j = 0; j < placed && at < capacity; ++j) {
    at += uniform(0, 10);  // a gap
    const int64_t size = uniform(1, 20);
    if (at + size > capacity) break;
    s.placed.push_back({at, size});
    total += size;
    covered += size;
    at += size;
  }
  const int unplaced = static_cast<int>(uniform(1, 10));
  for (int i = 0; i < unplaced; ++i) {
    const int64_t size = uniform(1, 10);
    s.unplaced.push_back({uniform(0, std::max<int64_t>(at + 12, 1)), size});
    total += size;
  }
  // Often one member may go low, so that the lowest threshold passes and a
  // higher one has to be found.
  if (uniform(0, 1) == 0) s.unplaced[0].first = uniform(0, 3);
  // The slack decides the outcome; around the gaps' bytes all three occur.
  s.slack = std::min(capacity - total, at - covered) + uniform(-4, 16);
  // The search lists placed members latest first; any order must work.
  switch (uniform(0, 2)) {
    case 0:
      break;
    case 1:
      std::reverse(s.placed.begin(), s.placed.end());
      break;
    default:
      std::shuffle(s.placed.begin(), s.placed.end(), rng);
  }
  return s;
}

TEST(SectionOverload, AgreesWithTheDefinitionOnRandomSections) {
  std::mt19937_64 rng(20261125);
  SectionOverloadScratch scratch;  // reused, as in the search
  int passes = 0, lowest_fails = 0, higher_fails = 0;
  for (int n = 0; n < 50000; ++n) {
    const Section s = random_section(rng);
    const std::optional<Failure> want = reference(s);
    const std::optional<int64_t> got = checked(s, scratch);
    ASSERT_EQ(got.has_value(), want.has_value()) << "section " << n;
    if (!want) {
      ++passes;
      continue;
    }
    ASSERT_EQ(*got, want->waste) << "section " << n << ", failing threshold " << want->threshold;
    const int64_t lowest = std::min_element(s.unplaced.begin(), s.unplaced.end())->first;
    ++(want->threshold == lowest ? lowest_fails : higher_fails);
  }
  // Every path is taken many times: passes, failures at the lowest threshold
  // (the floor check) and failures only at a higher one (the sorted merge).
  EXPECT_GT(passes, 5000);
  EXPECT_GT(lowest_fails, 5000);
  EXPECT_GT(higher_fails, 1000);
}

// Hand-made: one placed member [0, 10); unplaced members of 4 bytes at or
// above 10 and of 6 bytes at or above 20. At x = 20 the bytes [14, 20) are
// lost whatever the order: waste 6.
TEST(SectionOverload, CountsTheBytesNoMemberCanFill) {
  Section s;
  s.placed = {{0, 10}};
  s.unplaced = {{10, 4}, {20, 6}};
  SectionOverloadScratch scratch;
  s.slack = 5;
  EXPECT_EQ(checked(s, scratch), std::optional<int64_t>(6));
  s.slack = 6;
  EXPECT_EQ(checked(s, scratch), std::nullopt);
  s.unplaced.clear();
  EXPECT_EQ(checked(s, scratch), std::nullopt);  // nothing left to place
}

}  // namespace
}  // namespace memplan::solver
