// subproblem_bounds.h — lower bounds above the load from relaxed sub-problems.
//
// Why a sub-problem bounds the whole. Pick a set S of sections (maximal sets
// of buffers live together, sections.h), keep the buffers live in at least
// one of them, and give each kept buffer the lifetime "the sections of S it
// is live in". A buffer's sections are consecutive, so in the compressed time
// where S's sections are ticks 0..|S|-1 that lifetime is again an interval.
// Two kept buffers overlap there only if they share a section of S, hence
// only if they overlap in the problem; so the offsets of any valid plan of the
// problem, restricted to the kept buffers, are a valid plan of the sub-problem
// (sizes, alignments and fixed offsets are kept). Its optimum is therefore at
// most the problem's, and a refutation of the sub-problem at capacity C (or
// its next capacity, canonical_search.h) is a lower bound on the problem's
// arena. Dropping sections drops the constraints between the buffers that
// met only there, which makes the sub-problem both smaller and easier to
// refute; keeping two distant tight sections keeps the buffers live in both
// at one offset in both, which a section-by-section bound (the load) ignores.
//
// Algorithm:
//   1. Build the whole problem's sections and their totals.
//   2. Candidates (distinct section sets, 2 <= |S| < all sections):
//      a. tight sets: the sections whose total is at least a level, for the
//         distinct totals in decreasing order (thinned so that consecutive
//         sets grow by a quarter): the sections that bind first;
//      b. time windows: each run of peak sections widened by w sections on
//         both sides, w = 1, 2, 4, ... until the window covers everything.
//      Each candidate's buffers and compressed lifetimes are O(n log |S|).
//      Sets keeping more than 7/8 of the buffers are dropped: nearly the
//      whole problem, about as hard to refute as it, and weaker.
//   3. raise(): each live candidate, smallest first, decides at the current
//      lower bound with a node budget. A plan retires it for good (a
//      sub-problem that fits at C fits at every larger C, and the bound only
//      rises); a refutation raises the bound to its next capacity (rounded up
//      to the granule) and the candidate is tried again at the new bound; a
//      spent budget leaves it for the next call, with a larger budget. A
//      candidate's first decision uses restarts even when the caller turns
//      them off: most candidates fit, and restarts find their plans soonest.
// Building: O(candidates x n log n) time, one candidate's index at a time is
// built lazily and kept while the candidate lives. Each decision costs what
// the canonical search costs (exponential in the worst case).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "memplan/exact.h"
#include "solver/canonical_search.h"

namespace memplan::solver {

// The candidate sub-problems of steps 1-2 (items with compressed lifetimes),
// fewest buffers first. Empty for problems with fewer than three sections.
std::vector<std::vector<CanonicalSearch::Item>> relaxed_subproblems(const std::vector<CanonicalSearch::Item>& items);

class SubproblemBounds {
 public:
  // items: the whole problem's search items; granule: every arena of the
  // whole problem is a multiple of it (refutations round up to it).
  SubproblemBounds(const std::vector<CanonicalSearch::Item>& items, int64_t granule, const ExactOptions& options);

  // Tries the live candidates at capacity *lower (then at each raised bound)
  // with `node_budget` nodes per decision, until *lower >= upper. Raises
  // *lower on refutations. Restarts only when allow_restarts. Returns false
  // when the stop condition ended it.
  bool raise(int64_t* lower, int64_t upper, int64_t node_budget, const StopCondition& stop, ExactStats* stats,
             bool allow_restarts);

  // Candidates not yet retired (for tests and statistics).
  size_t live() const;
  // The buffer counts of the candidates, in the order they are tried.
  std::vector<size_t> candidate_sizes() const;

 private:
  struct Candidate {
    std::vector<CanonicalSearch::Item> items;
    std::unique_ptr<CanonicalSearch> search;  // built on first use
    bool retired = false;
    bool screened = false;  // decided at least once (with restarts)
  };
  std::vector<Candidate> candidates_;
  int64_t granule_ = 1;
  ExactOptions options_;
};

}  // namespace memplan::solver
