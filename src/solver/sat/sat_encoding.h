// sat_encoding.h — "do these buffers fit in C units?" as a SAT problem for
// CaDiCaL (Debian libcadical-dev; built when CMake finds it, option
// MEMPLAN_WITH_CADICAL). Used by the exact solver's SAT helper thread
// (sat_helper.h) and by bench/bench_sat_bound.cc.
//
// The order encoding of no-overlap in (time x offset), after Soh, Inoue,
// Tamura, Banbara and Nabeshima's SAT encoding of two-dimensional strip
// packing (Constraints 15(1), 2010), with time fixed. Offsets are counted in
// units g with every size a multiple of g (an optimal plan exists with every
// offset a multiple of the gcd of the sizes: push buffers down). At capacity C:
//   y[i,k] <=> offset_i >= k, for k = 1 .. Cmax - s_i (y[i,k+1] -> y[i,k]);
//   for every pair i, j live at a common tick, below[i,j] (o_i + s_i <= o_j)
//     or below[j,i], and below[i,j] & y[i,k] -> y[j, k + s_i] for every k;
//   a selector fit[C] for each capacity floor..Cmax: fit[C] -> o_i <= C - s_i.
// Deciding C is one solve under the assumption fit[C], so clauses learnt at
// one capacity serve the next.
//
// Rules that cut the search (SatRules), each sound alone and together:
//   mirror  reflection (o_i -> C - s_i - o_i) maps plans to plans: the first
//           of the largest buffers lies in the lower half.
//   twins   buffers with the same lifetime and size are interchangeable: the
//           earlier lies below (the mirror's buffer is left out of this).
//   normal  every buffer rests on offset 0 or on the top of a buffer live
//           with it. Pushing buffers down (by offset, each to the highest top
//           below it) makes any plan so; it only lowers offsets, so the
//           mirror's buffer stays in the lower half, and relabelling twins
//           afterwards changes no shape.
//   cover   (redundant) a section whose sizes add up to exactly C leaves no
//           unit free.
// Checked against the exact planner on 79 problems whose optimum exceeds
// their load (tests/bench/sat_bound_gaps.sh; docs/history/exact.md, "No-overlap
// in (time x offset) as SAT").
#pragma once

#include <cadical.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "solver/sections.h"

namespace memplan::solver {

struct SatRules {
  bool mirror = true;
  bool twins = true;
  bool normal = true;
  bool cover = true;
};

// Ends a CaDiCaL solve at a point in time (when armed with one), or when
// `stop` says so (when given). CaDiCaL asks between its steps.
class SolveDeadline : public CaDiCaL::Terminator {
 public:
  using Clock = std::chrono::steady_clock;
  explicit SolveDeadline(std::function<bool()> stop = {}) : stop_(std::move(stop)) {}
  void arm(std::optional<Clock::time_point> at) { at_ = at; }
  bool terminate() override { return (at_ && Clock::now() >= *at_) || (stop_ && stop_()); }

 private:
  std::function<bool()> stop_;
  std::optional<Clock::time_point> at_;
};

// The number of clauses the pairs take at Cmax = cmax units, the bulk of the
// encoding: about 2 (cmax - s) per pair and direction. For a size check
// before building.
int64_t sat_pair_clauses(const SectionLayout& layout, const std::vector<int32_t>& size, int32_t cmax);

class SatEncoding {
 public:
  // Adds the clauses to `solver` as it builds them. size[i] in units (> 0),
  // layout = build_sections(lower, upper); capacities floor..cmax (units).
  SatEncoding(CaDiCaL::Solver& solver, const SectionLayout& layout, std::vector<int32_t> size,
              std::vector<int64_t> lower, std::vector<int64_t> upper, int32_t cmax, int32_t floor,
              const SatRules& rules)
      : solver_(solver),
        size_(std::move(size)),
        lower_(std::move(lower)),
        upper_(std::move(upper)),
        cmax_(cmax),
        floor_(floor) {
    const int32_t n = static_cast<int32_t>(size_.size());
    // Order variables: buffer i has Cmax - s_i of them.
    first_.resize(n + 1);
    first_[0] = 1;
    for (int32_t i = 0; i < n; ++i) first_[i + 1] = first_[i] + std::max(0, range(i));
    next_var_ = first_[n];
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t k = 1; k < range(i); ++k) clause({-y(i, k + 1), y(i, k)});
    }
    // The mirror's buffer: the first of the largest (its twins stay unordered).
    mirror_buffer_ = -1;
    if (rules.mirror) {
      for (int32_t i = 0; i < n; ++i) {
        if (mirror_buffer_ < 0 || size_[i] > size_[mirror_buffer_]) mirror_buffer_ = i;
      }
    }
    // Pairs live at a common tick.
    std::vector<std::vector<int32_t>> neighbours(n);
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t j : layout.neighbors_of(i)) {
        neighbours[i].push_back(j);
        if (i < j) add_pair(i, j, rules.twins);
      }
    }
    if (rules.normal) add_normal_form(neighbours);
    // Capacity selectors.
    for (int32_t c = floor_; c <= cmax_; ++c) {
      const int32_t f = next_var_++;
      fit_.push_back(f);
      for (int32_t i = 0; i < n; ++i) {
        if (size_[i] > c) {
          clause({-f});
          break;
        }
        if (c - size_[i] + 1 <= range(i)) clause({-f, -y(i, c - size_[i] + 1)});
      }
      if (mirror_buffer_ >= 0 && size_[mirror_buffer_] <= c) {
        const int32_t half = (c - size_[mirror_buffer_]) / 2;
        if (half + 1 <= range(mirror_buffer_)) clause({-f, -y(mirror_buffer_, half + 1)});
      }
      if (rules.cover) add_cover(layout, c, f);
    }
  }

  int32_t range(int32_t i) const { return cmax_ - size_[i]; }  // largest offset
  // y(i, k) for 1 <= k <= range(i).
  int32_t y(int32_t i, int32_t k) const { return first_[i] + k - 1; }
  int32_t fit(int32_t c) const { return fit_[c - floor_]; }
  int32_t variables() const { return next_var_ - 1; }
  int64_t clauses() const { return clause_count_; }
  int64_t pairs() const { return pairs_; }
  int64_t twin_pairs() const { return twin_pairs_; }
  int32_t mirror_buffer() const { return mirror_buffer_; }
  int64_t tight_sections() const { return tight_sections_; }

  std::vector<int32_t> offsets(CaDiCaL::Solver& s) const {
    const int32_t n = static_cast<int32_t>(size_.size());
    std::vector<int32_t> out(n, 0);
    for (int32_t i = 0; i < n; ++i) {
      int32_t k = 0;
      while (k < range(i) && s.val(y(i, k + 1)) > 0) ++k;
      out[i] = k;
    }
    return out;
  }

  // Phases that reproduce a plan (offsets in units).
  void set_phases(CaDiCaL::Solver& s, const std::vector<int32_t>& offset) const {
    for (size_t i = 0; i < size_.size(); ++i) {
      const int32_t r = range(static_cast<int32_t>(i));
      for (int32_t k = 1; k <= r; ++k) s.phase(offset[i] >= k ? y(i, k) : -y(i, k));
    }
    for (const auto& p : pair_vars_) {
      s.phase(offset[p.i] + size_[p.i] <= offset[p.j] ? p.below_ij : -p.below_ij);
      s.phase(offset[p.j] + size_[p.j] <= offset[p.i] ? p.below_ji : -p.below_ji);
    }
  }

 private:
  struct PairVars {
    int32_t i, j, below_ij, below_ji;
  };

  void clause(std::initializer_list<int32_t> lits) {
    for (int32_t lit : lits) solver_.add(lit);
    solver_.add(0);
    ++clause_count_;
  }

  // below -> o_j >= o_i + s_i.
  void add_below(int32_t below, int32_t i, int32_t j) {
    // o_j >= s_i (k = 0).
    if (size_[i] > range(j)) {
      clause({-below});
      return;
    }
    clause({-below, y(j, size_[i])});
    for (int32_t k = 1; k <= range(i); ++k) {
      if (k + size_[i] > range(j)) {
        clause({-below, -y(i, k)});  // and every larger k follows by the order clauses
        break;
      }
      clause({-below, -y(i, k), y(j, k + size_[i])});
    }
  }

  // Every buffer at offset k > 0 rests on a buffer live with it that ends at k:
  //   (o_i = k) -> OR_j at[j, k - s_j],   at[j, m] -> (o_j = m).
  void add_normal_form(const std::vector<std::vector<int32_t>>& neighbours) {
    const int32_t n = static_cast<int32_t>(size_.size());
    std::vector<std::vector<int32_t>> at(n);  // at[j][m], created on first use
    auto at_var = [&](int32_t j, int32_t m) {
      if (at[j].empty()) at[j].assign(range(j) + 1, 0);
      int32_t& v = at[j][m];
      if (v == 0) {
        v = next_var_++;
        if (m > 0) clause({-v, y(j, m)});
        if (m < range(j)) clause({-v, -y(j, m + 1)});
      }
      return v;
    };
    std::vector<int32_t> lits;
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t k = 1; k <= range(i); ++k) {
        lits.clear();
        lits.push_back(-y(i, k));
        if (k < range(i)) lits.push_back(y(i, k + 1));
        for (int32_t j : neighbours[i]) {
          const int32_t m = k - size_[j];
          if (m >= 0 && m <= range(j)) lits.push_back(at_var(j, m));
        }
        for (int32_t lit : lits) solver_.add(lit);
        solver_.add(0);
        ++clause_count_;
      }
    }
  }

  // A section whose buffers add up to exactly c leaves no unit of [0, c) free
  // at capacity c: fit[c] -> OR_{i in S} covers[i, u] for every unit u, with
  // covers[i, u] -> o_i <= u < o_i + s_i. (Implied by the pairs, but only
  // through every ordering of the section; said directly it propagates.)
  void add_cover(const SectionLayout& layout, int32_t c, int32_t f) {
    for (int32_t s = 0; s < layout.section_count; ++s) {
      const auto members = layout.members_of(s);
      int64_t total = 0;
      for (int32_t i : members) total += size_[i];
      if (total != c) continue;
      ++tight_sections_;
      std::vector<int32_t> lits;
      for (int32_t u = 0; u < c; ++u) {
        lits.assign(1, -f);
        for (int32_t i : members) {
          if (u - size_[i] + 1 > range(i)) continue;  // i cannot reach unit u
          lits.push_back(covers(i, u));               // may add the definition's clauses: not inside this one
        }
        for (int32_t lit : lits) solver_.add(lit);
        solver_.add(0);
        ++clause_count_;
      }
    }
  }

  int32_t covers(int32_t i, int32_t u) {
    if (cover_.empty()) cover_.resize(size_.size());
    if (cover_[i].empty()) cover_[i].assign(cmax_, 0);
    int32_t& v = cover_[i][u];
    if (v == 0) {
      v = next_var_++;
      if (u + 1 <= range(i)) clause({-v, -y(i, u + 1)});                // o_i <= u
      if (u - size_[i] + 1 >= 1) clause({-v, y(i, u - size_[i] + 1)});  // o_i > u - s_i
    }
    return v;
  }

  void add_pair(int32_t i, int32_t j, bool twins) {
    ++pairs_;
    const int32_t ij = next_var_++;
    const int32_t ji = next_var_++;
    pair_vars_.push_back({i, j, ij, ji});
    clause({ij, ji});
    add_below(ij, i, j);
    add_below(ji, j, i);
    const bool twin = lower_[i] == lower_[j] && upper_[i] == upper_[j] && size_[i] == size_[j];
    if (twins && twin && i != mirror_buffer_ && j != mirror_buffer_) {
      ++twin_pairs_;
      clause({ij});
    }
  }

  CaDiCaL::Solver& solver_;
  std::vector<int32_t> size_;
  std::vector<int64_t> lower_, upper_;
  int32_t cmax_, floor_;
  std::vector<int32_t> first_;
  int32_t next_var_ = 1;
  std::vector<int32_t> fit_;
  std::vector<PairVars> pair_vars_;
  int64_t clause_count_ = 0;
  int64_t pairs_ = 0;
  int64_t twin_pairs_ = 0;
  int32_t mirror_buffer_ = -1;
  std::vector<std::vector<int32_t>> cover_;  // covers(i, u), created on first use
  int64_t tight_sections_ = 0;
};

}  // namespace memplan::solver
