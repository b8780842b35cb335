// canonical_search.cc — depth-first search over canonical plans (the full
// description, with why each pruning is sound, is in canonical_search.h).
//
//   1. decide(): round robin over key orders with doubling node budgets (or
//      one unbounded search with the first order), each run from scratch.
//   2. run(): root checks, then one search per independent time partition.
//   3. search(): list candidates in (min offset, rank) order after the last
//      placement, drop dominated ones and those above C - (largest unplaced
//      section total), try each: place, check section floors, descend
//      (splitting into independent parts when a boundary is freed), undo.
// Per node O(part + sections in the part + work of the placements tried);
// exponential in the worst case.
#include "solver/canonical_search.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <numeric>
#include <tuple>

#include "core/saturating.h"
#include "core/splitmix.h"

namespace memplan::solver {
namespace {

constexpr int64_t kUnplaced = -1;
constexpr int64_t kInfinity = std::numeric_limits<int64_t>::max();

// The key orders tried in turn; each letter is a key, larger first:
// W = lifetime width, A = area (size x width), T = largest unplaced total of
// the buffer's sections when its part is ranked. Ties fall back to input order.
constexpr const char* kKeyOrders[] = {"WAT", "TAW", "TWA"};

// A seeded run scales every buffer's keys by a factor in [1 - kJitter, 1 + kJitter].
// Of 0.02, 0.05, 0.1, 0.2 and 0.5, 0.05 had the best worst case over three
// 30 s runs each on MiniMalloc's D and J (docs/history/exact.md, "Seeded
// restarts: budget, jitter and key order").
constexpr double kJitter = 0.05;

}  // namespace

CanonicalSearch::CanonicalSearch(std::vector<Item> items, const ExactOptions& options) : options_(options) {
  n_ = static_cast<int32_t>(items.size());
  std::vector<int64_t> lower(n_), upper(n_);
  size_.resize(n_);
  alignment_.resize(n_);
  fixed_.resize(n_);
  width_.resize(n_);
  area_.resize(n_);
  for (int32_t b = 0; b < n_; ++b) {
    lower[b] = items[b].lower;
    upper[b] = items[b].upper;
    size_[b] = items[b].size;
    alignment_[b] = items[b].alignment;
    fixed_[b] = items[b].fixed_offset;
    // A ranking key only: saturate for lifetimes spanning most of int64.
    width_[b] = saturating_sub(upper[b], lower[b]);
    area_[b] = static_cast<double>(size_[b]) * static_cast<double>(width_[b]);
  }
  layout_ = build_sections(lower, upper);
  const int32_t sections = layout_.section_count;
  initial_total_.assign(sections, 0);
  for (int32_t s = 0; s < sections; ++s) {
    for (const int32_t b : layout_.members_of(s)) initial_total_[s] += size_[b];
  }
  partition_count_ = sections > 0 ? 1 : 0;
  for (const int32_t c : layout_.crossing) partition_count_ += c == 0 ? 1 : 0;
  for (int32_t b = 0; b < n_; ++b) {
    if (alignment_[b] > 1) alignment_levels_.push_back(alignment_[b]);
  }
  std::sort(alignment_levels_.begin(), alignment_levels_.end());
  alignment_levels_.erase(std::unique(alignment_levels_.begin(), alignment_levels_.end()), alignment_levels_.end());
  for (const char* keys : kKeyOrders) key_orders_.push_back(keys);

  // Twins: movable buffers with the same run of sections (so the same
  // neighbours), size and alignment; each points at the one before it in
  // input order.
  twin_before_.assign(n_, -1);
  if (options_.twins) {
    std::vector<int32_t> order(n_);
    std::iota(order.begin(), order.end(), 0);
    auto key = [&](int32_t b) {
      return std::tuple(layout_.first_section[b], layout_.end_section[b], size_[b], alignment_[b]);
    };
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return key(a) != key(b) ? key(a) < key(b) : a < b; });
    for (size_t i = 1; i < order.size(); ++i) {
      const int32_t a = order[i - 1], b = order[i];
      if (fixed_[a] < 0 && fixed_[b] < 0 && key(a) == key(b)) twin_before_[b] = a;
    }
  }
  slot_base_.assign(n_ + 1, 0);
  for (int32_t b = 0; b < n_; ++b) {
    slot_base_[b + 1] = slot_base_[b] + (layout_.end_section[b] - layout_.first_section[b]);
  }
  member_slot_.resize(slot_base_[n_]);
  members_.resize(layout_.members.size());
  live_members_.resize(sections);
  rank_.assign(n_, 0);
  key_total_.assign(n_, 0);
  min_offset_.resize(n_);
  offset_.resize(n_);
  solution_.assign(n_, 0);
  position_.resize(n_);
  holds_.resize(n_);
  total_.resize(sections);
  floor_.resize(sections);
  holder_.resize(sections);
  dirty_stamp_.assign(sections, 0);
  overload_stamp_.assign(sections, 0);
  jitter_.assign(n_, 1.0);
  pool_.reserve(4 * static_cast<size_t>(n_) + 16);
  candidates_.reserve(4 * static_cast<size_t>(n_) + 16);
}

SearchVerdict CanonicalSearch::decide(int64_t capacity, int64_t node_limit, const StopCondition& stop,
                                      ExactStats* stats, bool allow_restarts, int32_t first_order, uint64_t seed) {
  const size_t orders = key_orders_.size();
  uint64_t run_seed = seed;
  // A seeded decision gives every run (restart) its own jitter.
  auto next_jitter = [&] {
    if (seed == 0) {
      jittered_ = false;
      return;
    }
    run_seed = splitmix64_mix(run_seed);
    jittered_ = true;
    for (int32_t b = 0; b < n_; ++b) {
      const double u = static_cast<double>(splitmix64_mix(run_seed ^ static_cast<uint64_t>(b)) >> 11) * 0x1.0p-53;
      jitter_[b] = 1.0 + kJitter * (2.0 * u - 1.0);
    }
  };
  const size_t first = static_cast<size_t>(std::max<int32_t>(first_order, 0)) % orders;
  capacity_ = capacity;
  stop_ = &stop;
  stats_ = stats;
  const int64_t hard_end = node_limit > 0 ? saturating_add(stats->nodes, node_limit) : kInfinity;
  auto finish = [](Step step) {
    switch (step) {
      case Step::kFound:
        return SearchVerdict::kFound;
      case Step::kExhausted:
        return SearchVerdict::kExhausted;
      default:
        return SearchVerdict::kStopped;
    }
  };
  const int64_t first_node = stats->nodes;
  const int64_t overload_after = std::max<int64_t>(options_.overload_after_nodes, 0);
  if (!options_.restarts || !allow_restarts) {
    keys_ = key_orders_[first];
    next_jitter();
    overload_active_ = options_.section_overload && overload_after == 0;
    if (options_.section_overload && overload_after > 0) {
      // A first run without the overload check, then the same search again
      // with it.
      const int64_t end = saturating_add(stats->nodes, overload_after);
      const Step step = run(std::min(end, hard_end));
      if (step != Step::kOutOfBudget || end >= hard_end) return finish(step);
      overload_active_ = true;
    }
    return finish(run(hard_end));
  }
  int64_t budget = std::max<int64_t>(n_, 1);
  while (true) {
    budget = budget > kInfinity / 4 ? kInfinity / 2 : budget * 2;
    for (size_t k = 0; k < orders; ++k) {
      keys_ = key_orders_[(first + k) % orders];
      next_jitter();
      // The overload check costs more per node than it saves on searches
      // that end quickly; it is switched on once a search has resisted.
      overload_active_ = options_.section_overload && stats->nodes - first_node >= overload_after;
      const int64_t end = saturating_add(stats->nodes, budget);
      const Step step = run(std::min(end, hard_end));
      if (step != Step::kOutOfBudget) return finish(step);
      if (end >= hard_end) return SearchVerdict::kStopped;  // the caller's node limit, not this round's
      ++stats->restarts;
    }
  }
}

CanonicalSearch::Step CanonicalSearch::run(int64_t node_budget_end) {
  node_budget_end_ = node_budget_end;
  next_capacity_ = kInfinity;
  const int32_t sections = layout_.section_count;
  for (int32_t b = 0; b < n_; ++b) {
    offset_[b] = kUnplaced;
    holds_[b] = 0;
    min_offset_[b] = fixed_[b] >= 0 ? fixed_[b] : 0;
    if (min_offset_[b] + size_[b] > capacity_) {
      note_excess(min_offset_[b] + size_[b]);
      return Step::kExhausted;
    }
  }
  std::copy(initial_total_.begin(), initial_total_.end(), total_.begin());
  std::copy(layout_.members.begin(), layout_.members.end(), members_.begin());
  for (int32_t s = 0; s < sections; ++s) {
    live_members_[s] = layout_.member_start[s + 1] - layout_.member_start[s];
    for (int32_t i = layout_.member_start[s]; i < layout_.member_start[s + 1]; ++i) {
      const int32_t b = members_[i];
      member_slot_[slot_base_[b] + (s - layout_.first_section[b])] = i;
    }
  }
  crossing_ = layout_.crossing;
  pool_.clear();
  candidates_.clear();
  cut_boundaries_.clear();
  min_offset_trail_.clear();
  floor_trail_.clear();
  rank_trail_.clear();
  for (int32_t s = 0; s < sections; ++s) {
    holder_[s] = -1;
    recompute_floor(s);
    if (options_.section_inference && holder_[s] >= 0 && floor_[s] + total_[s] > capacity_) {
      note_excess(floor_[s] + total_[s]);
      return Step::kExhausted;
    }
  }

  // Independent partitions: runs of sections between boundaries nobody crosses.
  int32_t start = 0;
  for (int32_t s = 0; s < sections; ++s) {
    if (s + 1 < sections && crossing_[s] > 0) continue;
    Part part{.sec_begin = start, .sec_end = s + 1, .begin = pool_.size(), .live_end = 0};
    for (int32_t b = 0; b < n_; ++b) {
      if (layout_.first_section[b] >= start && layout_.first_section[b] <= s) {
        position_[b] = pool_.size();
        pool_.push_back(b);
      }
    }
    part.live_end = pool_.size();
    rank_part(part.begin, part.live_end);
    const Step step = search(part, 0, -1);
    pool_.resize(part.begin);
    if (step != Step::kFound) return step;
    start = s + 1;
  }
  return Step::kFound;
}

void CanonicalSearch::rank_part(size_t begin, size_t end) {
  rank_scratch_.assign(pool_.begin() + static_cast<ptrdiff_t>(begin), pool_.begin() + static_cast<ptrdiff_t>(end));
  for (const int32_t b : rank_scratch_) {
    int64_t most = 0;
    for (int32_t s = layout_.first_section[b]; s < layout_.end_section[b]; ++s) most = std::max(most, total_[s]);
    key_total_[b] = most;
  }
  const char* keys = keys_;
  // Exact integer keys, or (a seeded run) each scaled by the buffer's jitter.
  auto by_keys = [&](int32_t a, int32_t b) {
    for (const char* k = keys; *k != '\0'; ++k) {
      switch (*k) {
        case 'W':
          if (width_[a] != width_[b]) return width_[a] > width_[b];
          break;
        case 'A':
          if (area_[a] != area_[b]) return area_[a] > area_[b];
          break;
        case 'T':
          if (key_total_[a] != key_total_[b]) return key_total_[a] > key_total_[b];
          break;
        default:
          break;
      }
    }
    return a < b;
  };
  auto by_jittered_keys = [&](int32_t a, int32_t b) {
    for (const char* k = keys; *k != '\0'; ++k) {
      double x = 0, y = 0;
      switch (*k) {
        case 'W':
          x = static_cast<double>(width_[a]), y = static_cast<double>(width_[b]);
          break;
        case 'A':
          x = area_[a], y = area_[b];
          break;
        case 'T':
          x = static_cast<double>(key_total_[a]), y = static_cast<double>(key_total_[b]);
          break;
        default:
          break;
      }
      x *= jitter_[a], y *= jitter_[b];
      if (x != y) return x > y;
    }
    return a < b;
  };
  if (jittered_) {
    std::sort(rank_scratch_.begin(), rank_scratch_.end(), by_jittered_keys);
  } else {
    std::sort(rank_scratch_.begin(), rank_scratch_.end(), by_keys);
  }
  for (size_t i = 0; i < rank_scratch_.size(); ++i) {
    const int32_t b = rank_scratch_[i];
    rank_trail_.push_back({b, rank_[b]});
    rank_[b] = static_cast<int32_t>(i);
  }
}

CanonicalSearch::Step CanonicalSearch::search(Part& part, int64_t after_offset, int32_t after_rank) {
  ExactStats& stats = *stats_;
  if (++stats.nodes >= node_budget_end_) return Step::kOutOfBudget;
  if ((stats.nodes & 63) == 0 && stop_->reached()) return Step::kStopped;
  if (part.live_end == part.begin) return Step::kFound;

  // (c) of the header: a candidate at offset o lifts the floors of its
  // sections to o + its size, and later buffers go above o, so o + the largest
  // unplaced section total must fit.
  int64_t highest_offset = kInfinity;
  int64_t largest_total = 0;
  if (options_.canonical_only) {
    for (int32_t s = part.sec_begin; s < part.sec_end; ++s) largest_total = std::max(largest_total, total_[s]);
    highest_offset = capacity_ - largest_total;
  }

  const size_t first = candidates_.size();
  int64_t lowest_top = kInfinity;
  for (size_t i = part.begin; i < part.live_end; ++i) {
    const int32_t b = pool_[i];
    const int64_t m = min_offset_[b];
    lowest_top = std::min(lowest_top, m + size_[b]);
    if (options_.canonical_only && (m < after_offset || (m == after_offset && rank_[b] < after_rank))) continue;
    if (twin_before_[b] >= 0 && offset_[twin_before_[b]] == kUnplaced) continue;  // 6b: its twin goes first
    candidates_.push_back(b);
  }
  size_t last = first;
  int64_t lowest_excess = kInfinity;
  for (size_t i = first; i < candidates_.size(); ++i) {
    const int32_t b = candidates_[i];
    if (options_.dominance && min_offset_[b] >= lowest_top) continue;
    if (min_offset_[b] > highest_offset) {
      lowest_excess = std::min(lowest_excess, min_offset_[b] + largest_total);
      continue;
    }
    candidates_[last++] = b;
  }
  if (lowest_excess != kInfinity) note_excess(lowest_excess);
  candidates_.resize(last);
  std::sort(candidates_.begin() + static_cast<ptrdiff_t>(first), candidates_.end(), [&](int32_t a, int32_t b) {
    return min_offset_[a] != min_offset_[b] ? min_offset_[a] < min_offset_[b] : rank_[a] < rank_[b];
  });

  Step result = Step::kExhausted;
  for (size_t i = first; i < last; ++i) {
    bool hatless = false;
    const Step step = place_and_descend(part, candidates_[i], &hatless);
    if (step != Step::kExhausted) {
      result = step;
      break;
    }
    if (options_.canonical_only && hatless) break;
  }
  if (result == Step::kExhausted) ++stats.backtracks;
  candidates_.resize(first);
  return result;
}

CanonicalSearch::Step CanonicalSearch::place_and_descend(Part& part, int32_t u, bool* hatless) {
  const int64_t offset = min_offset_[u];
  const size_t min_offset_mark = min_offset_trail_.size();
  const size_t floor_mark = floor_trail_.size();
  bool ok = place(part, u, offset, hatless);
  if (ok && options_.section_inference) ok = refresh_floors(offset);
  Step step = Step::kExhausted;
  if (ok) step = options_.decomposition ? split_and_search(part, u, offset) : search(part, offset, rank_[u]);
  unplace(part, u, min_offset_mark, floor_mark);
  return step;
}

bool CanonicalSearch::place(Part& part, int32_t u, int64_t offset, bool* hatless) {
  offset_[u] = offset;
  solution_[u] = offset;
  {  // Swap u out of the part's unplaced list.
    const size_t i = position_[u];
    const size_t j = --part.live_end;
    const int32_t other = pool_[j];
    pool_[i] = other;
    position_[other] = i;
    pool_[j] = u;
    position_[u] = j;
  }
  if (++stamp_ == 0) {  // wrapped: clear stale marks once every 2^32 placements
    std::fill(dirty_stamp_.begin(), dirty_stamp_.end(), 0);
    std::fill(overload_stamp_.begin(), overload_stamp_.end(), 0);
    stamp_ = 1;
  }
  dirty_.clear();
  overload_dirty_.clear();
  const bool track_floors = options_.section_inference;
  const bool overload = track_floors && overload_active_;
  auto mark_overload = [&](int32_t s) {
    if (overload_stamp_[s] != stamp_) {
      overload_stamp_[s] = stamp_;
      overload_dirty_.push_back(s);
    }
  };
  auto mark_dirty = [&](int32_t s) {
    if (dirty_stamp_[s] != stamp_) {
      dirty_stamp_[s] = stamp_;
      dirty_.push_back(s);
    }
  };
  const int64_t top = offset + size_[u];
  bool ok = true;
  *hatless = true;
  for (const int32_t w : layout_.neighbors_of(u)) {
    if (offset_[w] != kUnplaced) continue;
    *hatless = false;
    if (!ok) continue;
    const int64_t a = alignment_[w];
    const int64_t raised = (top + a - 1) & ~(a - 1);
    if (min_offset_[w] >= raised) continue;
    min_offset_trail_.push_back({w, min_offset_[w]});
    min_offset_[w] = raised;
    if (fixed_[w] >= 0) {
      ok = false;  // a fixed buffer cannot move up; its min offset was its offset
      continue;
    }
    if (raised + size_[w] > capacity_) {
      note_excess(raised + size_[w]);
      ok = false;
      continue;
    }
    if (overload) {
      for (int32_t s = layout_.first_section[w]; s < layout_.end_section[w]; ++s) mark_overload(s);
    }
    if (track_floors && holds_[w] > 0) {
      // holds_ counts them exactly, so the scan ends at the last one.
      int32_t left = holds_[w];
      for (int32_t s = layout_.first_section[w]; left > 0; ++s) {
        if (holder_[s] == w) {
          mark_dirty(s);
          --left;
        }
      }
    }
  }
  // Leave u's sections: their totals drop and u leaves their unplaced lists.
  const int32_t first = layout_.first_section[u];
  for (int32_t s = first; s < layout_.end_section[u]; ++s) {
    total_[s] -= size_[u];
    const int32_t i = member_slot_[slot_base_[u] + (s - first)];
    const int32_t j = layout_.member_start[s] + --live_members_[s];
    const int32_t other = members_[j];
    members_[i] = other;
    member_slot_[slot_base_[other] + (s - layout_.first_section[other])] = i;
    members_[j] = u;
    member_slot_[slot_base_[u] + (s - first)] = j;
    // With alignments the padded bound depends on every member, so any
    // section u leaves is worth a fresh look.
    if (track_floors && (holder_[s] == u || !alignment_levels_.empty())) mark_dirty(s);
    if (overload) mark_overload(s);
  }
  return ok;
}

void CanonicalSearch::unplace(Part& part, int32_t u, size_t min_offset_mark, size_t floor_mark) {
  for (size_t i = floor_trail_.size(); i > floor_mark; --i) {
    const FloorUndo& undo = floor_trail_[i - 1];
    set_holder(undo.section, undo.holder, undo.floor);
  }
  floor_trail_.resize(floor_mark);
  for (size_t i = min_offset_trail_.size(); i > min_offset_mark; --i) {
    const MinOffsetUndo& undo = min_offset_trail_[i - 1];
    min_offset_[undo.buffer] = undo.min_offset;
  }
  min_offset_trail_.resize(min_offset_mark);
  // Placements undo in LIFO order, so u sits right behind every unplaced list
  // it left: growing the lists by one restores it.
  for (int32_t s = layout_.first_section[u]; s < layout_.end_section[u]; ++s) {
    total_[s] += size_[u];
    ++live_members_[s];
  }
  offset_[u] = kUnplaced;
  ++part.live_end;
}

void CanonicalSearch::set_holder(int32_t s, int32_t holder, int64_t floor) {
  if (holder_[s] >= 0) --holds_[holder_[s]];
  holder_[s] = holder;
  floor_[s] = floor;
  if (holder >= 0) ++holds_[holder];
}

void CanonicalSearch::recompute_floor(int32_t s) {
  // The floor check asks only whether some unplaced member's min offset is at
  // most capacity - unplaced total, so the first such member found (a
  // witness) ends the scan; the lowest min offset is needed only when there
  // is none, for the pruning and its excess. A witness stays one while its
  // min offset holds, as the total only falls deeper in the tree; when it is
  // raised or placed the section is scanned again. Where the lowest is found
  // the prunings are those of tracking the lowest min offset itself.
  const int64_t limit = capacity_ - total_[s];
  int64_t best = kInfinity;
  int32_t holder = -1;
  const int32_t* member = members_.data() + layout_.member_start[s];
  for (int32_t i = 0, live = live_members_[s]; i < live; ++i) {
    const int32_t b = member[i];
    const int64_t m = min_offset_[b];
    if (m <= limit) {
      set_holder(s, b, m);
      return;
    }
    if (m < best) {
      best = m;
      holder = b;
    }
  }
  set_holder(s, holder, best);
}

bool CanonicalSearch::overload_ok(int32_t s, int64_t last_offset) {
  // Every unplaced member b of s goes at or above x_b = max(min offset, last
  // offset); section_overload.h checks every such threshold. The placed
  // members sit behind the unplaced ones in s's member list, latest first,
  // and the search places by ascending offset, so reading them backwards
  // usually lists them by offset (not always: after a split, a side's search
  // starts again from its own lowest offset).
  const int32_t* member = members_.data() + layout_.member_start[s];
  const int32_t live = live_members_[s];
  const int32_t placed = layout_.member_start[s + 1] - layout_.member_start[s] - live;
  const std::optional<int64_t> waste = section_overload_waste(
      live, [&](int32_t i) { return std::max(min_offset_[member[i]], last_offset); },
      [&](int32_t i) { return size_[member[i]]; }, placed,
      [&](int32_t j) {
        const int32_t p = member[live + placed - 1 - j];
        return std::pair<int64_t, int64_t>{offset_[p], size_[p]};
      },
      capacity_ - initial_total_[s], overload_scratch_);
  if (!waste) return true;
  note_excess(initial_total_[s] + *waste);
  return false;
}

bool CanonicalSearch::refresh_floors(int64_t last_offset) {
  for (const int32_t s : dirty_) {
    floor_trail_.push_back({s, holder_[s], floor_[s]});
    recompute_floor(s);
    if (holder_[s] >= 0 && floor_[s] + total_[s] > capacity_) {
      note_excess(floor_[s] + total_[s]);
      return false;
    }
    if (!alignment_levels_.empty() && holder_[s] >= 0) {
      const int64_t need = padded_need(s);
      if (need > capacity_) {
        note_excess(need);
        return false;
      }
    }
  }
  for (const int32_t s : overload_dirty_) {
    if (!overload_ok(s, last_offset)) return false;
  }
  return true;
}

int64_t CanonicalSearch::padded_need(int32_t s) const {
  // For each alignment g in use, the unplaced members aligned to g or more all
  // start at multiples of g, so each but the topmost one takes its size rounded
  // up to g: height >= lowest of their min offsets + sum of rounded sizes -
  // the largest rounding of one of them.
  int64_t need = 0;
  const int32_t* member = members_.data() + layout_.member_start[s];
  const int32_t live = live_members_[s];
  for (const int64_t g : alignment_levels_) {
    int64_t lowest = kInfinity, rounded = 0, largest_pad = 0;
    for (int32_t i = 0; i < live; ++i) {
      const int32_t b = member[i];
      if (alignment_[b] < g) continue;
      const int64_t r = (size_[b] + g - 1) & ~(g - 1);
      lowest = std::min(lowest, min_offset_[b]);
      rounded += r;
      largest_pad = std::max(largest_pad, r - size_[b]);
    }
    if (lowest != kInfinity) need = std::max(need, lowest + rounded - largest_pad);
  }
  return need;
}

CanonicalSearch::Step CanonicalSearch::split_and_search(Part& part, int32_t u, int64_t offset) {
  const size_t cuts_first = cut_boundaries_.size();
  for (int32_t k = layout_.first_section[u]; k + 1 < layout_.end_section[u]; ++k) {
    if (--crossing_[k] == 0) cut_boundaries_.push_back(k);
  }
  const size_t cuts = cut_boundaries_.size() - cuts_first;
  Step step = Step::kFound;
  if (cuts == 0) {
    step = search(part, offset, rank_[u]);
  } else {
    ++stats_->splits;
    // Each side is ranked and searched afresh (its own canonical order from
    // offset 0): the sides share no buffer and no section, so they are
    // independent, and one side without a plan fails the node.
    const size_t rank_mark = rank_trail_.size();
    int32_t sec_begin = part.sec_begin;
    for (size_t c = 0; c <= cuts && step == Step::kFound; ++c) {
      const int32_t sec_end = c < cuts ? cut_boundaries_[cuts_first + c] + 1 : part.sec_end;
      Part side{.sec_begin = sec_begin, .sec_end = sec_end, .begin = pool_.size(), .live_end = 0};
      for (size_t i = part.begin; i < part.live_end; ++i) {
        const int32_t b = pool_[i];
        const int32_t f = layout_.first_section[b];
        if (f >= sec_begin && f < sec_end) {
          position_[b] = pool_.size();
          pool_.push_back(b);
        }
      }
      side.live_end = pool_.size();
      if (side.live_end > side.begin) {
        rank_part(side.begin, side.live_end);
        step = search(side, 0, -1);
      }
      pool_.resize(side.begin);
      sec_begin = sec_end;
    }
    for (size_t i = rank_trail_.size(); i > rank_mark; --i) rank_[rank_trail_[i - 1].buffer] = rank_trail_[i - 1].rank;
    rank_trail_.resize(rank_mark);
    for (size_t i = part.begin; i < part.live_end; ++i) position_[pool_[i]] = i;
  }
  for (int32_t k = layout_.first_section[u]; k + 1 < layout_.end_section[u]; ++k) ++crossing_[k];
  cut_boundaries_.resize(cuts_first);
  return step;
}

}  // namespace memplan::solver
