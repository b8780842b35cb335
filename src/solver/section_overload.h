// section_overload.h — the overload check of one section (canonical_search.h,
// pruning rule (d)), apart from the search's state so that it can be tested
// against its definition.
//
// A section's members are live together, so their offset ranges are pairwise
// disjoint and their sizes sum to the section's total; the slack is the
// capacity minus that total. Each unplaced member b will go at or above its
// threshold x_b. For a threshold x, the bytes of [0, x) that no placed member
// covers and that no unplaced member with x_b < x can fill are lost:
//
//   waste(x) = x - (placed bytes below x) - (sizes of unplaced b with x_b < x)
//
// and no plan exists below the capacity if waste(x) > slack for some x among
// the thresholds.
//
// Cost: O(k + p) for k unplaced and p placed members when one of the
// pre-tests below decides, which is most calls in a search; otherwise
// O(k log k + p) (plus O(p log p) when the placed members do not come in
// offset order).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace memplan::solver {

struct SectionOverloadScratch {
  std::vector<std::pair<int64_t, int64_t>> unplaced;  // (threshold, size)
  std::vector<std::pair<int64_t, int64_t>> placed;    // (offset, size)
};

// The waste at the lowest threshold where it exceeds the slack, or nullopt
// when there is none. threshold(i) and unplaced_size(i) describe unplaced
// member i < unplaced_count; placed(j) returns (offset, size) of placed member
// j < placed_count, best listed by ascending offset (any order is correct).
template <class Threshold, class UnplacedSize, class Placed>
std::optional<int64_t> section_overload_waste(int32_t unplaced_count, Threshold threshold, UnplacedSize unplaced_size,
                                              int32_t placed_count, Placed placed, int64_t slack,
                                              SectionOverloadScratch& scratch) {
  if (unplaced_count == 0) return std::nullopt;
  int64_t lowest = std::numeric_limits<int64_t>::max(), highest = std::numeric_limits<int64_t>::min();
  for (int32_t i = 0; i < unplaced_count; ++i) {
    const int64_t x = threshold(i);
    lowest = std::min(lowest, x);
    highest = std::max(highest, x);
  }
  // The placed bytes below the lowest and below the highest threshold.
  int64_t covered_low = 0, covered_high = 0;
  for (int32_t j = 0; j < placed_count; ++j) {
    const auto [bottom, size] = placed(j);
    const int64_t top = bottom + size;
    if (bottom < lowest) covered_low += std::min(top, lowest) - bottom;
    if (bottom < highest) covered_high += std::min(top, highest) - bottom;
  }
  // No unplaced member lies below the lowest threshold.
  if (lowest - covered_low > slack) return lowest - covered_low;
  // f(x) = x - (placed bytes below x) never falls as x grows (the placed
  // bytes grow by at most the step), and waste(x) <= f(x). So no threshold
  // fails if f(highest) <= slack, and none x <= covered_low + slack can,
  // since waste(x) <= f(x) <= x - covered_low there. The members with x_b at
  // or below that bound only add their sizes to the unplaced bytes of every
  // later threshold, so only the others need sorting, and none of them fails
  // either when f(highest) minus those sizes is within the slack.
  if (highest - covered_high <= slack) return std::nullopt;
  const int64_t safe_up_to = covered_low + slack;
  int64_t unplaced_below = 0;
  scratch.unplaced.clear();
  for (int32_t i = 0; i < unplaced_count; ++i) {
    const int64_t x = threshold(i);
    if (x <= safe_up_to) {
      unplaced_below += unplaced_size(i);
    } else {
      scratch.unplaced.push_back({x, unplaced_size(i)});
    }
  }
  if (highest - covered_high - unplaced_below <= slack) return std::nullopt;
  std::sort(scratch.unplaced.begin(), scratch.unplaced.end());
  // Disjoint placed members listed by offset have ascending tops too, so the
  // placed bytes below ascending thresholds are one merge: the members wholly
  // below x plus the part of the one that x cuts.
  scratch.placed.clear();
  for (int32_t j = 0; j < placed_count; ++j) scratch.placed.push_back(placed(j));
  if (!std::is_sorted(scratch.placed.begin(), scratch.placed.end())) {
    std::sort(scratch.placed.begin(), scratch.placed.end());
  }
  size_t next_placed = 0;
  int64_t covered_whole = 0;  // sizes of the placed members wholly below x
  const auto& pending = scratch.unplaced;
  for (size_t k = 0; k < pending.size(); ++k) {
    const int64_t x = pending[k].first;
    if (k == 0 || x != pending[k - 1].first) {
      while (next_placed < scratch.placed.size() &&
             scratch.placed[next_placed].first + scratch.placed[next_placed].second <= x) {
        covered_whole += scratch.placed[next_placed++].second;
      }
      int64_t covered = covered_whole;
      if (next_placed < scratch.placed.size() && scratch.placed[next_placed].first < x) {
        covered += x - scratch.placed[next_placed].first;
      }
      const int64_t waste = x - covered - unplaced_below;
      if (waste > slack) return waste;
    }
    unplaced_below += pending[k].second;
  }
  return std::nullopt;
}

}  // namespace memplan::solver
