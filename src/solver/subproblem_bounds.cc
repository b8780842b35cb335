// subproblem_bounds.cc — lower bounds from relaxed sub-problems (why they are
// sound, and the algorithm, are in subproblem_bounds.h).
//
//   1. Sections of the whole problem and their totals.
//   2. Candidate section sets: tight levels, then peak windows; duplicates
//      and sets that are a single section or all of them are dropped.
//   3. Per candidate: the kept buffers with compressed lifetimes; sorted by
//      buffer count so that the cheapest sub-problems are tried first.
//   4. raise(): decide each live candidate at the bound, see the header.
// O(candidates x n log n) to build; decisions cost what the search costs.
#include "solver/subproblem_bounds.h"

#include <algorithm>
#include <limits>

#include "solver/sections.h"

namespace memplan::solver {
namespace {

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
// Tight levels: each kept set has at least a quarter more sections than the
// previous one, so that a problem with many distinct totals gets O(log)
// levels, not one per total.
constexpr int32_t kLevelGrowthDivisor = 4;
// Candidates keeping more than 7/8 of the buffers are dropped (see below).
constexpr size_t kKeptBufferNumerator = 7;
constexpr size_t kKeptBufferDenominator = 8;
// Runs of peak sections widened into windows (the first ones in time).
constexpr size_t kMaxPeakRuns = 4;

int64_t round_up_to(int64_t value, int64_t granule) {
  if (granule <= 1 || value > kUnbounded - granule) return value;
  const int64_t r = value % granule;
  return r == 0 ? value : value + (granule - r);
}

}  // namespace

std::vector<std::vector<CanonicalSearch::Item>> relaxed_subproblems(const std::vector<CanonicalSearch::Item>& items) {
  std::vector<std::vector<CanonicalSearch::Item>> result;
  const size_t n = items.size();
  std::vector<int64_t> lower(n), upper(n);
  for (size_t b = 0; b < n; ++b) {
    lower[b] = items[b].lower;
    upper[b] = items[b].upper;
  }
  const SectionLayout layout = build_sections(lower, upper);
  const int32_t k = layout.section_count;
  if (k < 3) return result;  // a proper subset of two sections or fewer is one clique: the load bounds it
  std::vector<int64_t> total(k, 0);
  for (int32_t s = 0; s < k; ++s) {
    for (const int32_t b : layout.members_of(s)) total[s] += items[b].size;
  }

  std::vector<std::vector<int32_t>> sets;
  auto add_set = [&](std::vector<int32_t> set) {
    if (set.size() >= 2 && static_cast<int32_t>(set.size()) < k) sets.push_back(std::move(set));
  };
  // 2a. Tight levels.
  std::vector<int64_t> levels(total.begin(), total.end());
  std::sort(levels.begin(), levels.end(), std::greater<>());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  size_t last_size = 0;
  for (const int64_t level : levels) {
    std::vector<int32_t> set;
    for (int32_t s = 0; s < k; ++s) {
      if (total[s] >= level) set.push_back(s);
    }
    if (set.size() < last_size + std::max<size_t>(1, last_size / kLevelGrowthDivisor)) continue;
    last_size = set.size();
    add_set(std::move(set));
  }
  // 2b. Windows around the runs of peak sections.
  const int64_t peak = levels.front();
  size_t runs = 0;
  for (int32_t s = 0; s < k && runs < kMaxPeakRuns; ++s) {
    if (total[s] != peak || (s > 0 && total[s - 1] == peak)) continue;
    ++runs;
    int32_t end = s;
    while (end < k && total[end] == peak) ++end;
    for (int32_t w = 1;; w *= 2) {
      const int32_t from = std::max(0, s - w);
      const int32_t to = std::min(k, end + w);
      std::vector<int32_t> set(to - from);
      for (int32_t i = from; i < to; ++i) set[i - from] = i;
      add_set(std::move(set));
      if (from == 0 && to == k) break;
    }
  }
  std::sort(sets.begin(), sets.end());
  sets.erase(std::unique(sets.begin(), sets.end()), sets.end());

  // 3. Kept buffers, lifetimes compressed to positions in the set.
  for (const std::vector<int32_t>& set : sets) {
    std::vector<CanonicalSearch::Item> kept;
    for (size_t b = 0; b < n; ++b) {
      const auto first = std::lower_bound(set.begin(), set.end(), layout.first_section[b]) - set.begin();
      const auto end = std::lower_bound(set.begin(), set.end(), layout.end_section[b]) - set.begin();
      if (first == end) continue;
      CanonicalSearch::Item item = items[b];
      item.lower = first;
      item.upper = end;
      kept.push_back(item);
    }
    result.push_back(std::move(kept));
  }
  std::stable_sort(result.begin(), result.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
  // A set that keeps nearly every buffer is about as hard to refute as the
  // whole problem, which the caller searches anyway, and is weaker: skip it
  // (on MiniMalloc's D the sets of 200 to 212 of 213 buffers all resist the
  // refutation as long as the problem does).
  std::erase_if(result, [n](const std::vector<CanonicalSearch::Item>& c) {
    return c.size() * kKeptBufferDenominator > n * kKeptBufferNumerator;
  });
  return result;
}

SubproblemBounds::SubproblemBounds(const std::vector<CanonicalSearch::Item>& items, int64_t granule,
                                   const ExactOptions& options)
    : granule_(granule), options_(options) {
  for (std::vector<CanonicalSearch::Item>& kept : relaxed_subproblems(items)) {
    candidates_.push_back({.items = std::move(kept)});
  }
}

bool SubproblemBounds::raise(int64_t* lower, int64_t upper, int64_t node_budget, const StopCondition& stop,
                             ExactStats* stats, bool allow_restarts) {
  for (Candidate& c : candidates_) {
    if (c.retired) continue;
    if (c.search == nullptr) c.search = std::make_unique<CanonicalSearch>(c.items, options_);
    while (*lower < upper) {
      if (stop.reached()) return false;
      ++stats->decisions;
      // The first decision of a candidate restarts regardless: most
      // candidates fit, and restarts find their plans soonest (on
      // MiniMalloc's D, three of them need over 2^20 nodes without).
      const SearchVerdict verdict = c.search->decide(*lower, node_budget, stop, stats, allow_restarts || !c.screened);
      c.screened = true;
      if (verdict == SearchVerdict::kFound) {
        // Fits at the bound, hence at every larger one: it can never raise it.
        c.retired = true;
        c.search.reset();
        break;
      }
      if (verdict == SearchVerdict::kStopped) break;
      ++stats->subproblem_refutations;
      *lower = round_up_to(std::max(*lower + 1, c.search->next_capacity()), granule_);
    }
    if (*lower >= upper) break;
  }
  return !stop.reached();
}

size_t SubproblemBounds::live() const {
  return static_cast<size_t>(
      std::count_if(candidates_.begin(), candidates_.end(), [](const Candidate& c) { return !c.retired; }));
}

std::vector<size_t> SubproblemBounds::candidate_sizes() const {
  std::vector<size_t> sizes;
  for (const Candidate& c : candidates_) sizes.push_back(c.items.size());
  return sizes;
}

}  // namespace memplan::solver
