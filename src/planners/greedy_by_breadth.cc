// greedy_by_breadth.cc — shared objects assigned around the widest ticks first
// (TFLite GPU delegate's GREEDY_BY_BREADTH strategy).
//
// The breadth of a tick is the sum of the sizes live at it. The widest ticks
// decide the arena, so their buffers choose objects first.
//
// Algorithm (buffers without a fixed offset; n of them):
//   1. Compute the breadth of every tick at which some buffer starts (a sweep
//      over sorted starts and ends). Other ticks never matter: the live set
//      at such a tick is a subset of the live set at the last start before it.
//   2. Rank these ticks by decreasing breadth (ties: earlier tick first).
//   3. Each buffer belongs to the best-ranked tick within its lifetime (a range
//      minimum over the ranks, by a sparse table): this is the first tick at
//      which TFLite's "visit ticks by breadth" loop would see it unassigned.
//   4. Visit buffers by (rank of their tick, decreasing size, index). For each:
//        a. among objects with no member overlapping it, take the smallest of
//           at least its size, else the largest one (which grows), else
//           create a new object;
//        b. among equal-size candidates, take the one whose free span (hole)
//           starts latest, i.e. fits tightest after the previous member.
//   5. Insert the buffer into the chosen object's schedule.
//
// Data structures: each object's members form a time-ordered list; the gaps
// between consecutive members are its holes (an object with k members has k+1
// holes). Holes are kept per size class (objects of one size) in a treap keyed
// by hole start and augmented with the maximum hole end, so "is some hole of
// this class a superset of [lower, upper)" is one O(log n) descent. Step 4a
// walks the non-empty classes upwards from the buffer's size, then downwards.
// A class walked past without a fit holds only objects that conflict with the
// buffer, so the walk is bounded by the overlapping buffers already placed.
//
// Complexity: O(n log n) for steps 1–3 and 5; step 4 costs O((c + 1) log n)
// per buffer, c being the number of size classes walked past, c <= min(number
// of distinct sizes, number of placed buffers overlapping it). An object that
// grows moves its holes to the new class, O(members · log n) per growth.
// Space O(n log n) for the sparse table, O(n) otherwise.
#include <algorithm>
#include <bit>
#include <numeric>

#include "core/splitmix.h"
#include "planners/planners.h"
#include "planners/shared_objects.h"
#include "planners/stop_condition.h"

namespace memplan {
namespace {

// Holes of one size class: a treap keyed by (hole start, node id) with the
// maximum hole end in each subtree. Nodes live in a pool shared by all
// classes; node ids are stable hole ids (see HoleId below).
class HoleTreaps {
 public:
  explicit HoleTreaps(size_t nodes)
      : start_(nodes), end_(nodes), max_end_(nodes), priority_(nodes), left_(nodes, -1), right_(nodes, -1) {
    SplitMix64 priorities{.state = 0x9e3779b97f4a7c15ULL};  // deterministic priorities
    for (size_t i = 0; i < nodes; ++i) priority_[i] = priorities.next();
  }

  void insert(int32_t& root, int32_t node, int64_t start, int64_t end) {
    start_[node] = start;
    end_[node] = end;
    max_end_[node] = end;
    left_[node] = right_[node] = -1;
    auto [lo, hi] = split(root, start, node);
    root = merge(merge(lo, node), hi);
  }

  void erase(int32_t& root, int32_t node) {
    auto [lo, rest] = split(root, start_[node], node);
    auto [mid, hi] = split(rest, start_[node], node + 1);
    (void)mid;  // == node
    root = merge(lo, hi);
  }

  // The node with the largest key whose start <= lower and end >= upper, or -1.
  int32_t latest_superset(int32_t t, int64_t lower, int64_t upper) const {
    if (t < 0 || max_end_[t] < upper) return -1;
    if (start_[t] > lower) return latest_superset(left_[t], lower, upper);
    const int32_t r = latest_superset(right_[t], lower, upper);
    if (r >= 0) return r;
    if (end_[t] >= upper) return t;
    return latest_superset(left_[t], lower, upper);
  }

 private:
  bool less(int32_t node, int64_t start, int32_t id) const {
    return start_[node] < start || (start_[node] == start && node < id);
  }
  void pull(int32_t t) {
    int64_t m = end_[t];
    if (left_[t] >= 0) m = std::max(m, max_end_[left_[t]]);
    if (right_[t] >= 0) m = std::max(m, max_end_[right_[t]]);
    max_end_[t] = m;
  }
  // Splits into keys < (start, id) and keys >= (start, id).
  std::pair<int32_t, int32_t> split(int32_t t, int64_t start, int32_t id) {
    if (t < 0) return {-1, -1};
    if (less(t, start, id)) {
      auto [lo, hi] = split(right_[t], start, id);
      right_[t] = lo;
      pull(t);
      return {t, hi};
    }
    auto [lo, hi] = split(left_[t], start, id);
    left_[t] = hi;
    pull(t);
    return {lo, t};
  }
  int32_t merge(int32_t a, int32_t b) {
    if (a < 0) return b;
    if (b < 0) return a;
    if (priority_[a] > priority_[b]) {
      right_[a] = merge(right_[a], b);
      pull(a);
      return a;
    }
    left_[b] = merge(a, left_[b]);
    pull(b);
    return b;
  }

  std::vector<int64_t> start_, end_, max_end_;
  std::vector<uint64_t> priority_;
  std::vector<int32_t> left_, right_;
};

// Minimum over ranges of a fixed array, O(1) per query after O(m log m).
class SparseMin {
 public:
  explicit SparseMin(std::vector<int32_t> values) {
    levels_.push_back(std::move(values));
    const size_t m = levels_[0].size();
    for (size_t w = 1; 2 * w <= m; w *= 2) {
      const std::vector<int32_t>& prev = levels_.back();
      std::vector<int32_t> next(m - 2 * w + 1);
      for (size_t i = 0; i < next.size(); ++i) next[i] = std::min(prev[i], prev[i + w]);
      levels_.push_back(std::move(next));
    }
  }
  // min of values[lo, hi), hi > lo.
  int32_t min(size_t lo, size_t hi) const {
    const int level = std::bit_width(hi - lo) - 1;
    return std::min(levels_[level][lo], levels_[level][hi - (size_t{1} << level)]);
  }

 private:
  std::vector<std::vector<int32_t>> levels_;
};

}  // namespace

StatusOr<ObjectAssignment> assign_greedy_by_breadth(const Problem& problem, const PlanOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem));
  StopCondition stop(options, "greedy_by_breadth");
  if (stop.should_stop()) return stop.status();
  const std::vector<int32_t> parts = objects::participants(problem);
  const size_t n = problem.size();
  objects::ObjectTable table(n);
  if (parts.empty()) return std::move(table).take();
  const auto& buf = problem.buffers;

  // Step 1: breadth at every start tick.
  std::vector<int32_t> by_lower = parts, by_upper = parts;
  std::sort(by_lower.begin(), by_lower.end(), [&](int32_t a, int32_t b) { return buf[a].lower < buf[b].lower; });
  std::sort(by_upper.begin(), by_upper.end(), [&](int32_t a, int32_t b) { return buf[a].upper < buf[b].upper; });
  std::vector<int64_t> starts;
  std::vector<int64_t> breadth;
  {
    int64_t live = 0;
    size_t e = 0;
    for (size_t s = 0; s < by_lower.size();) {
      const int64_t t = buf[by_lower[s]].lower;
      for (; s < by_lower.size() && buf[by_lower[s]].lower == t; ++s) live += buf[by_lower[s]].size;
      for (; e < by_upper.size() && buf[by_upper[e]].upper <= t; ++e) live -= buf[by_upper[e]].size;
      starts.push_back(t);
      breadth.push_back(live);
    }
  }
  // Step 2: rank start ticks by decreasing breadth.
  std::vector<int32_t> tick_by_rank(starts.size());
  std::iota(tick_by_rank.begin(), tick_by_rank.end(), 0);
  std::stable_sort(tick_by_rank.begin(), tick_by_rank.end(),
                   [&](int32_t a, int32_t b) { return breadth[a] > breadth[b]; });
  std::vector<int32_t> rank(starts.size());
  for (size_t r = 0; r < tick_by_rank.size(); ++r) rank[tick_by_rank[r]] = static_cast<int32_t>(r);

  // Step 3: each buffer's best-ranked start tick within its lifetime.
  const SparseMin best_rank(rank);
  std::vector<int32_t> owner_rank(n, 0);
  for (int32_t b : parts) {
    const size_t lo = std::lower_bound(starts.begin(), starts.end(), buf[b].lower) - starts.begin();
    const size_t hi = std::lower_bound(starts.begin(), starts.end(), buf[b].upper) - starts.begin();
    owner_rank[b] = best_rank.min(lo, hi);
  }
  // Step 4 order.
  std::vector<int32_t> order = parts;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    if (owner_rank[a] != owner_rank[b]) return owner_rank[a] < owner_rank[b];
    if (buf[a].size != buf[b].size) return buf[a].size > buf[b].size;
    return a < b;
  });

  // Size classes: every object's size is some buffer's size.
  std::vector<int64_t> class_size;
  for (int32_t b : parts) class_size.push_back(buf[b].size);
  std::sort(class_size.begin(), class_size.end());
  class_size.erase(std::unique(class_size.begin(), class_size.end()), class_size.end());
  auto class_of = [&](int64_t size) {
    return static_cast<int32_t>(std::lower_bound(class_size.begin(), class_size.end(), size) - class_size.begin());
  };

  // Hole ids: the hole after member m is node m; the hole before an object's
  // first member is node n + object.
  objects::Schedules schedules(problem);
  HoleTreaps treaps(2 * n);
  std::vector<int32_t> root(class_size.size(), -1);
  std::vector<int32_t> holes_in_class(class_size.size(), 0);
  std::set<int32_t> nonempty;
  auto hole_node = [&](const objects::Hole& h) { return h.left >= 0 ? h.left : static_cast<int32_t>(n) + h.object; };
  auto add_hole = [&](const objects::Hole& h, int32_t cls) {
    treaps.insert(root[cls], hole_node(h), schedules.hole_lower(h), schedules.hole_upper(h));
    if (holes_in_class[cls]++ == 0) nonempty.insert(cls);
  };
  auto remove_hole = [&](const objects::Hole& h, int32_t cls) {
    treaps.erase(root[cls], hole_node(h));
    if (--holes_in_class[cls] == 0) nonempty.erase(cls);
  };
  // The holes of object k, from its start to its end.
  auto for_each_hole = [&](int32_t k, auto&& fn) {
    int32_t m = schedules.first(k);
    fn(objects::Hole{k, -1, m});
    for (; m >= 0; m = schedules.next(m)) fn(objects::Hole{k, m, schedules.next(m)});
  };
  // hole_of_node inverts hole_node for nodes found in a treap.
  auto hole_of_node = [&](int32_t node) {
    if (node >= static_cast<int32_t>(n)) {
      const int32_t k = node - static_cast<int32_t>(n);
      return objects::Hole{k, -1, schedules.first(k)};
    }
    return objects::Hole{table.object_of(node), node, schedules.next(node)};
  };

  for (int32_t b : order) {
    if (stop.should_stop()) return stop.status();
    const Buffer& x = buf[b];
    const int32_t cls = class_of(x.size);
    int32_t found = -1;
    for (auto it = nonempty.lower_bound(cls); it != nonempty.end() && found < 0; ++it) {
      found = treaps.latest_superset(root[*it], x.lower, x.upper);
    }
    for (auto it = nonempty.lower_bound(cls); it != nonempty.begin() && found < 0;) {
      --it;
      found = treaps.latest_superset(root[*it], x.lower, x.upper);
    }
    if (found < 0) {
      const int32_t k = table.create(x.size);
      schedules.start_object(b);
      table.assign(b, k, x.size);
      add_hole({k, -1, b}, cls);
      add_hole({k, b, -1}, cls);
      continue;
    }
    const objects::Hole hole = hole_of_node(found);
    const int32_t k = hole.object;
    const int32_t old_cls = class_of(table.size_of(k));
    remove_hole(hole, old_cls);
    schedules.fill(hole, b);
    table.assign(b, k, x.size);
    const int32_t new_cls = class_of(table.size_of(k));
    if (new_cls != old_cls) {
      // The object grew: every hole moves to the new class, the two new ones included.
      for_each_hole(k, [&](const objects::Hole& h) {
        if ((h.left == hole.left && h.right == b) || (h.left == b && h.right == hole.right)) return;
        remove_hole(h, old_cls);
      });
      for_each_hole(k, [&](const objects::Hole& h) { add_hole(h, new_cls); });
    } else {
      add_hole({k, hole.left, b}, new_cls);
      add_hole({k, b, hole.right}, new_cls);
    }
  }
  return std::move(table).take();
}

StatusOr<Plan> plan_greedy_by_breadth(const Problem& problem, const PlanOptions& options) {
  return objects::stack(problem, assign_greedy_by_breadth(problem, options));
}

}  // namespace memplan
