// canonical_search.h — the branch-and-bound decision search behind the exact
// planner: does a set of buffers fit below a capacity C?
//
// Canonical plans. Take any valid plan and let every buffer fall as far as it
// can (to the lowest aligned offset above the buffers that overlap it in time
// and lie below it). In the settled plan each buffer rests on the highest of
// those buffers, or on 0. Listing buffers by (offset, rank) for any fixed rank
// order, each one sits exactly at its "min offset": the aligned top of the
// buffers listed before it that overlap it in time. So it suffices to search
// sequences of buffers, each placed at its min offset, in non-decreasing
// (offset, rank) order: the canonical plans. Every feasible problem has one.
//
// Algorithm (one decision at capacity C):
//   1. Build the sections (maximal sets of buffers live together, see
//      sections.h) and split the problem at boundaries no buffer crosses.
//   2. For each part, depth-first search. A node lists the unplaced buffers
//      whose min offset is at or above the last placed one (same offset:
//      higher rank), drops those whose min offset is at or above the lowest
//      top any unplaced buffer can reach (dominance: that buffer could be
//      moved below them), and tries them by (min offset, rank).
//   3. Placing buffer u at offset o raises the min offset of its unplaced
//      neighbours to the aligned top of u, and removes u's size from the
//      unplaced total of each of its sections.
//   4. Prune when (a) some buffer's min offset + size > C, or (b) a section's
//      lowest unplaced min offset + its unplaced total > C (section
//      inference; with alignments, also the same with sizes rounded up to
//      each alignment g for the members aligned to g or more). And (c): every later buffer goes at or above the last
//      offset, and a buffer placed at o lifts the floor of each of its
//      sections to o + its size; so with U the largest unplaced total of a
//      section in the part, only candidates with min offset <= C - U can
//      succeed. Candidates are tried by offset, so (c) ends the loop.
//      (d) Overload (options.section_overload): an unplaced member b of
//      section s goes at or above x_b = max(its min offset, the last placed
//      offset), and the members of s are disjoint; so for every threshold x
//      among the x_b, the bytes of [0, x) that neither a placed member covers
//      nor an unplaced member with x_b < x can fill are lost, and their sum
//      must not exceed s's slack C - (total of s). Checked on the sections of
//      the placed buffer and of every neighbour it raised, in O(k log k + p)
//      for k unplaced and p placed members, O(k + p) where a pre-test decides
//      (most sections; section_overload.h). (b) is a weaker form of the lowest threshold; the others
//      are the overload sets of edge finding on a disjunctive resource, one
//      per section. It costs more per node than it saves on quick searches,
//      so a decision turns it on after options.overload_after_nodes nodes.
//   5. When every buffer crossing a boundary inside the part has been placed,
//      the unplaced buffers on each side are independent: search each side on
//      its own (decomposition); one side failing fails the node.
//   6. If a placed buffer has no unplaced neighbour, its offset is final and
//      no later sibling could place it in order: skip the remaining siblings.
//   6b. Twins (options.twins): movable buffers with the same run of sections
//      (two intervals overlap iff some section holds both, so twins overlap
//      the same buffers; the same lifetime is the common case), size and
//      alignment. Relabelling the twins of any plan so that their offsets
//      rise with their input index gives a plan whose canonical listing
//      places each twin after the ones before it in input order; so a twin
//      is a candidate only once its predecessor in its group is placed. The
//      rule does not depend on C, so refutations and their next capacity
//      stay sound.
//   7. Ranks: buffers are ordered by keys such as lifetime width, area and the
//      largest unplaced total of their sections, recomputed for each part when
//      the search splits (the totals have changed by then). Round robin over
//      several key orders with node budgets that double each round (restarts),
//      so that one unlucky order does not stall the search.
//
// Incremental state, undone on backtrack from trails (no allocation in the
// inner loop once the pools have grown): per buffer its min offset; per
// section its unplaced total, its unplaced members (a swap-remove list) and
// a holder: an unplaced member whose min offset passes the floor check (b),
// found by a scan that stops at the first one, or the lowest when none does
// (scanned again only when the holder moves or is placed); per boundary the
// number of unplaced buffers crossing it; per part the unplaced buffers in a
// swap-remove list.
//
// Cost per node: O(part size + sections in the part) to list candidates;
// per placement tried O(neighbours + span) for the updates and O(unplaced
// members) per section whose lowest min offset must be recomputed.
// Exponential in the worst case (the problem is NP-hard).
//
// Refutation and the next capacity: every pruning that depends on C compares
// some value v > C. When a search is exhausted, the smallest such v is the
// smallest capacity at which the search tree could differ, so no plan has an
// arena below it; solve_minimize uses this to raise its lower bound in jumps.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "memplan/exact.h"
#include "solver/section_overload.h"
#include "solver/sections.h"

namespace memplan::solver {

// When to give up: a wall-clock deadline and/or a cancel flag.
struct StopCondition {
  std::chrono::steady_clock::time_point deadline{};
  bool has_deadline = false;
  const std::atomic<bool>* cancel = nullptr;

  bool cancelled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }
  bool reached() const { return cancelled() || (has_deadline && std::chrono::steady_clock::now() >= deadline); }
};

enum class SearchVerdict {
  kFound,      // offsets() is a plan within the capacity
  kExhausted,  // proven: nothing fits; next_capacity() is a lower bound on the arena
  kStopped,    // deadline, cancel or the options' node limit
};

class CanonicalSearch {
 public:
  // One buffer to place; size > 0, lower < upper. fixed_offset < 0 = not fixed.
  struct Item {
    int64_t lower = 0;
    int64_t upper = 0;
    int64_t size = 0;
    int64_t alignment = 1;
    int64_t fixed_offset = -1;
  };

  CanonicalSearch(std::vector<Item> items, const ExactOptions& options);

  // Decides whether every item fits below `capacity`, giving up (kStopped)
  // after `node_limit` nodes when it is > 0. Accumulates nodes, backtracks,
  // restarts and splits into *stats. Restarts (when the options allow them)
  // find plans sooner but repeat work; a caller that expects a refutation
  // may turn them off for this call. first_order picks the key order the
  // search starts with (the only one without restarts; the restarts then
  // cycle through the others): the same capacity searched with another first
  // order is another tree. seed != 0 scales each buffer's keys by a factor in
  // [0.95, 1.05] drawn from the seed, new for every run (restart): many
  // short seeded decisions sample trees a fixed order never reaches (the
  // seeded restarts of capacity_rounds.h). Verdicts do not depend on the
  // order, only the nodes to reach them. A decision is deterministic in
  // (capacity, node_limit, allow_restarts, first_order, seed), and one with a
  // larger node limit repeats a smaller one's nodes first.
  SearchVerdict decide(int64_t capacity, int64_t node_limit, const StopCondition& stop, ExactStats* stats,
                       bool allow_restarts = true, int32_t first_order = 0, uint64_t seed = 0);
  // Number of key orders first_order chooses from.
  int32_t key_order_count() const { return static_cast<int32_t>(key_orders_.size()); }

  // After kFound: the offset of every item.
  const std::vector<int64_t>& offsets() const { return solution_; }
  // After kExhausted: no plan has arena < next_capacity() (> the capacity decided).
  int64_t next_capacity() const { return next_capacity_; }
  // Independent time partitions of the whole item set.
  int32_t partition_count() const { return partition_count_; }

 private:
  enum class Step { kFound, kExhausted, kStopped, kOutOfBudget };

  // A part of the problem being searched: sections [sec_begin, sec_end) and its
  // buffers pool_[begin, end), of which pool_[begin, live_end) are unplaced.
  struct Part {
    int32_t sec_begin = 0;
    int32_t sec_end = 0;
    size_t begin = 0;
    size_t live_end = 0;
  };
  struct MinOffsetUndo {
    int32_t buffer;
    int64_t min_offset;
  };
  struct FloorUndo {
    int32_t section;
    int32_t holder;
    int64_t floor;
  };

  Step run(int64_t node_budget_end);
  Step search(Part& part, int64_t after_offset, int32_t after_rank);
  Step place_and_descend(Part& part, int32_t u, bool* hatless);
  Step split_and_search(Part& part, int32_t u, int64_t offset);
  bool place(Part& part, int32_t u, int64_t offset, bool* hatless);
  void unplace(Part& part, int32_t u, size_t min_offset_mark, size_t floor_mark);
  bool refresh_floors(int64_t last_offset);
  // The overload check of ExactOptions::section_overload on section s.
  bool overload_ok(int32_t s, int64_t last_offset);
  void recompute_floor(int32_t s);
  // Bytes section s needs above its floors once alignment padding is counted.
  int64_t padded_need(int32_t s) const;
  void set_holder(int32_t s, int32_t holder, int64_t floor);
  // Ranks the buffers pool_[begin, end) by the current key order (saving the
  // old ranks on rank_trail_).
  void rank_part(size_t begin, size_t end);
  void note_excess(int64_t value) {
    if (value < next_capacity_) next_capacity_ = value;
  }

  // --- fixed for the object's lifetime ---
  ExactOptions options_;
  int32_t n_ = 0;
  std::vector<int64_t> size_, alignment_, fixed_;
  SectionLayout layout_;
  std::vector<int64_t> initial_total_;     // per section: sum of member sizes
  std::vector<int64_t> width_;             // per buffer: upper - lower
  std::vector<double> area_;               // per buffer: size x width (a ranking key only)
  std::vector<int32_t> slot_base_;         // per buffer: start of its run in member_slot_
  std::vector<int32_t> twin_before_;       // per buffer: its twin just before it in input order, or -1
  std::vector<const char*> key_orders_;    // the key orders the restarts cycle through
  std::vector<int64_t> alignment_levels_;  // distinct alignments > 1, increasing
  int32_t partition_count_ = 0;

  // --- per decision ---
  int64_t capacity_ = 0;
  int64_t next_capacity_ = 0;
  const StopCondition* stop_ = nullptr;
  ExactStats* stats_ = nullptr;
  int64_t node_budget_end_ = 0;  // stats_->nodes value at which the current run gives up

  // --- search state ---
  const char* keys_ = "";         // the key order of the current run
  bool jittered_ = false;         // the current run ranks by jittered keys (a seeded decision)
  std::vector<double> jitter_;    // per buffer: its key factor in the current run
  bool overload_active_ = false;  // the current run uses the overload check
  std::vector<int32_t> rank_;
  std::vector<int64_t> key_total_;  // scratch for rank_part
  std::vector<int32_t> rank_scratch_;
  struct RankUndo {
    int32_t buffer;
    int32_t rank;
  };
  std::vector<RankUndo> rank_trail_;
  std::vector<int64_t> min_offset_;
  std::vector<int64_t> offset_;  // kUnplaced or the placed offset
  std::vector<int64_t> solution_;
  std::vector<int64_t> total_;         // per section: unplaced bytes
  std::vector<int64_t> floor_;         // per section: the holder's min offset
  std::vector<int32_t> holder_;        // per section: an unplaced member whose min offset passes the floor check (a
                                       // witness), else the one with the lowest; -1: none left
  std::vector<int32_t> holds_;         // per buffer: sections it is the holder of
  std::vector<int32_t> members_;       // per section, unplaced members first (see live_members_)
  std::vector<int32_t> live_members_;  // per section: number of unplaced members
  std::vector<int32_t> member_slot_;   // per (buffer, section of its run): index in members_
  std::vector<int32_t> crossing_;
  std::vector<int32_t> pool_;     // buffer lists of the parts on the recursion stack
  std::vector<size_t> position_;  // index of each buffer in its innermost part's list
  std::vector<int32_t> candidates_;
  SectionOverloadScratch overload_scratch_;
  std::vector<int32_t> cut_boundaries_;
  std::vector<MinOffsetUndo> min_offset_trail_;
  std::vector<FloorUndo> floor_trail_;
  std::vector<int32_t> dirty_;  // sections whose floor must be recomputed
  std::vector<uint32_t> dirty_stamp_;
  std::vector<int32_t> overload_dirty_;  // sections for the overload check (section_overload)
  std::vector<uint32_t> overload_stamp_;
  uint32_t stamp_ = 0;
};

}  // namespace memplan::solver
