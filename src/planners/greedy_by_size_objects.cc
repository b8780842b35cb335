// greedy_by_size_objects.cc — shared objects by size and time distance
// (TFLite GPU delegate's GREEDY_BY_SIZE strategy for objects, the "size and
// distance priority" of Pisarchyk & Lee 2020).
//
// The positional maximums (bounds.h) are the sizes of the objects of an ideal
// assignment: the k-th largest size live at any tick must fit in some k-th
// object. A buffer's position is the last k whose positional maximum is at
// least its size; buffers of lower position are placed first. Among them, the
// one closest in time to an object it can join goes first, so objects fill up
// with members that leave little idle time between them.
//
// The distance of a buffer x to an object is the idle time between x and the
// nearest member of the object (0 when adjacent), or infinity when some member
// overlaps x. Algorithm (buffers without a fixed offset; n of them):
//   1. Compute every buffer's position (objects::positions).
//   2. For each position p in increasing order, until its buffers are placed:
//        a. pick the unplaced buffer of position p with the smallest distance
//           to some object (ties: larger size, then lower index);
//        b. put it into that object (which grows if smaller), or into a new
//           object when its distance to every object is infinite.
//
// TFLite recomputes every distance after each placement, O(n^2) per step. Here
// the distance of x to an object is the smaller of its two slacks in the hole
// (gap between consecutive members) that contains it, so:
//   - "nearest hole" queries are two segment-tree descents over the holes,
//     keyed by the member that bounds them (tree `after` by the preceding
//     member's end, tree `before` by the following member's start);
//   - a priority queue holds, for every unplaced buffer, an entry whose key is
//     a lower bound of its distance. Placing y into hole (l, r) destroys that
//     hole (entries pointing at it are refreshed when they surface) and creates
//     holes (l, y.lower) and (y.upper, r); the only distances that shrink are
//     to these new holes, so each new hole gets two lazy "streams" that offer
//     the unplaced buffers fitting it in order of slack from either end
//     (segment trees over the position's buffers sorted by start and by end
//     find the next fitting one in O(log n)). An entry whose hole is alive is
//     exact, so the first live entry out of the queue is the true minimum.
//
// Ties between objects at the same distance go to the first found (preceding
// member before following member); TFLite's own tie order is unspecified.
//
// Complexity: O(n log n) for positions, group set-up and placements (each
// placement creates at most four streams, each queue operation and tree
// descent is O(log n)). Stale entries cost one more pop each: a stream whose
// head was placed elsewhere advances, an entry whose hole was split is
// recomputed. Their number is bounded by the holes a placed buffer fitted
// (at most the objects free around it), not by n^2; on iopddl/Y_1 (62k
// buffers) the queue sees 4.8 pops per buffer in all. Space O(n).
#include <algorithm>
#include <numeric>
#include <tuple>

#include "planners/planners.h"
#include "planners/shared_objects.h"
#include "planners/stop_condition.h"

namespace memplan {
namespace {

// A segment tree over positions 0..m-1, each absent or holding a value, that
// finds the first position (from the left or the right) whose value matches:
// >= q for kMax, <= q for !kMax.
template <bool kMax>
class MatchTree {
 public:
  explicit MatchTree(size_t m) : m_(std::max<size_t>(m, 1)), best_(4 * m_, 0), has_(4 * m_, false) {}

  void set(size_t i, int64_t v) { update(1, 0, m_, i, v, true); }
  void clear(size_t i) { update(1, 0, m_, i, 0, false); }
  // Smallest j >= from with a matching value, or -1.
  int64_t first_from(size_t from, int64_t q) const { return first(1, 0, m_, from, q); }
  // Largest j < to with a matching value, or -1.
  int64_t last_before(size_t to, int64_t q) const { return last(1, 0, m_, to, q); }

 private:
  bool match(size_t node, int64_t q) const { return has_[node] && (kMax ? best_[node] >= q : best_[node] <= q); }
  void update(size_t node, size_t lo, size_t hi, size_t i, int64_t v, bool present) {
    if (hi - lo == 1) {
      best_[node] = v;
      has_[node] = present;
      return;
    }
    const size_t mid = (lo + hi) / 2;
    if (i < mid)
      update(2 * node, lo, mid, i, v, present);
    else
      update(2 * node + 1, mid, hi, i, v, present);
    const size_t a = 2 * node, b = 2 * node + 1;
    has_[node] = has_[a] || has_[b];
    if (!has_[a])
      best_[node] = best_[b];
    else if (!has_[b])
      best_[node] = best_[a];
    else
      best_[node] = kMax ? std::max(best_[a], best_[b]) : std::min(best_[a], best_[b]);
  }
  int64_t first(size_t node, size_t lo, size_t hi, size_t from, int64_t q) const {
    if (hi <= from || !match(node, q)) return -1;
    if (hi - lo == 1) return static_cast<int64_t>(lo);
    const size_t mid = (lo + hi) / 2;
    const int64_t r = first(2 * node, lo, mid, from, q);
    return r >= 0 ? r : first(2 * node + 1, mid, hi, from, q);
  }
  int64_t last(size_t node, size_t lo, size_t hi, size_t to, int64_t q) const {
    if (lo >= to || !match(node, q)) return -1;
    if (hi - lo == 1) return static_cast<int64_t>(lo);
    const size_t mid = (lo + hi) / 2;
    const int64_t r = last(2 * node + 1, mid, hi, to, q);
    return r >= 0 ? r : last(2 * node, lo, mid, to, q);
  }

  size_t m_;
  std::vector<int64_t> best_;
  std::vector<bool> has_;
};

constexpr int64_t kInfinite = INT64_MAX;

// later - earlier (>= 0) for ticks anywhere in int64_t, saturated below
// kInfinite so that a real distance never reads as "no object".
int64_t distance(int64_t later, int64_t earlier) {
  int64_t d = 0;
  if (__builtin_sub_overflow(later, earlier, &d) || d >= kInfinite) return kInfinite - 1;
  return d;
}

enum class EntryKind : int8_t {
  kBuffer = 0,       // a buffer's best hole when last computed
  kAfterStream = 1,  // buffers fitting a hole, by slack after its start
  kBeforeStream = 2  // buffers fitting a hole, by slack before its end
};

struct Entry {
  int64_t distance = kInfinite;
  int64_t neg_size = 0;
  int32_t buffer = -1;
  EntryKind kind = EntryKind::kBuffer;
  objects::Hole hole;  // object -1: no hole (a new object)
  int32_t head = -1;   // streams: position of `buffer` in the stream's order

  auto key() const { return std::make_tuple(distance, neg_size, buffer, kind, hole.object, hole.left, hole.right); }
  bool operator>(const Entry& other) const { return key() > other.key(); }
};

class SizeDistancePlanner {
 public:
  SizeDistancePlanner(const Problem& problem, StopCondition& stop)
      : problem_(problem),
        buf_(problem.buffers),
        table_(problem.size()),
        schedules_(problem),
        after_(0),
        before_(0),
        stop_(stop) {}

  // The assignment, or the stop condition's status when it said stop.
  StatusOr<ObjectAssignment> run() && {
    if (stop_.should_stop()) return stop_.status();
    const std::vector<int32_t> parts = objects::participants(problem_);
    if (parts.empty()) return std::move(table_).take();
    const std::vector<int32_t> position = objects::positions(problem_, parts);

    // Hole trees: slot of each participant in end order and in start order.
    by_upper_ = parts;
    std::sort(by_upper_.begin(), by_upper_.end(),
              [&](int32_t a, int32_t b) { return std::tie(buf_[a].upper, a) < std::tie(buf_[b].upper, b); });
    by_lower_ = parts;
    std::sort(by_lower_.begin(), by_lower_.end(),
              [&](int32_t a, int32_t b) { return std::tie(buf_[a].lower, a) < std::tie(buf_[b].lower, b); });
    slot_after_.assign(problem_.size(), -1);
    slot_before_.assign(problem_.size(), -1);
    for (size_t i = 0; i < parts.size(); ++i) {
      slot_after_[by_upper_[i]] = static_cast<int32_t>(i);
      slot_before_[by_lower_[i]] = static_cast<int32_t>(i);
    }
    after_ = MatchTree<true>(parts.size());
    before_ = MatchTree<false>(parts.size());
    group_lower_pos_.assign(problem_.size(), -1);
    group_upper_pos_.assign(problem_.size(), -1);

    // Step 1: buffers grouped by position.
    std::vector<int32_t> by_position(parts.size());
    std::iota(by_position.begin(), by_position.end(), 0);
    std::stable_sort(by_position.begin(), by_position.end(),
                     [&](int32_t a, int32_t b) { return position[a] < position[b]; });
    for (size_t i = 0; i < by_position.size();) {
      std::vector<int32_t> group;
      const int32_t p = position[by_position[i]];
      for (; i < by_position.size() && position[by_position[i]] == p; ++i) group.push_back(parts[by_position[i]]);
      if (!place_group(group)) return stop_.status();
    }
    return std::move(table_).take();
  }

 private:
  // Step 2 for one position; false when the stop condition said stop.
  bool place_group(const std::vector<int32_t>& group) {
    // Stream orders: by start (then larger size, then index) and by end
    // descending (same ties), so each stream yields entries in key order.
    group_by_lower_ = group;
    std::sort(group_by_lower_.begin(), group_by_lower_.end(), [&](int32_t a, int32_t b) {
      return std::make_tuple(buf_[a].lower, -buf_[a].size, a) < std::make_tuple(buf_[b].lower, -buf_[b].size, b);
    });
    group_by_upper_ = group;
    std::sort(group_by_upper_.begin(), group_by_upper_.end(), [&](int32_t a, int32_t b) {
      return std::make_tuple(-buf_[a].upper, -buf_[a].size, a) < std::make_tuple(-buf_[b].upper, -buf_[b].size, b);
    });
    lowers_.clear();
    uppers_desc_.clear();
    unplaced_upper_ = MatchTree<false>(group.size());
    unplaced_lower_ = MatchTree<true>(group.size());
    for (size_t i = 0; i < group.size(); ++i) {
      const int32_t a = group_by_lower_[i], b = group_by_upper_[i];
      group_lower_pos_[a] = static_cast<int32_t>(i);
      group_upper_pos_[b] = static_cast<int32_t>(i);
      lowers_.push_back(buf_[a].lower);
      uppers_desc_.push_back(buf_[b].upper);
      unplaced_upper_.set(i, buf_[a].upper);
      unplaced_lower_.set(i, buf_[b].lower);
    }
    queue_ = {};
    for (int32_t x : group) queue_.push(best_entry(x));

    size_t left = group.size();
    while (left > 0) {
      if (stop_.should_stop()) return false;
      Entry e = queue_.top();
      queue_.pop();
      if (e.kind == EntryKind::kBuffer) {
        if (table_.object_of(e.buffer) >= 0) continue;
        if (e.hole.object < 0) {
          open_object(e.buffer);
          --left;
        } else if (schedules_.alive(e.hole)) {
          fill(e.hole, e.buffer);
          --left;
        } else {
          queue_.push(best_entry(e.buffer));
        }
        continue;
      }
      if (!schedules_.alive(e.hole)) continue;
      if (table_.object_of(e.buffer) >= 0) {
        push_stream(e.kind, e.hole, e.head);  // the head was placed elsewhere: advance
        continue;
      }
      fill(e.hole, e.buffer);
      --left;
    }
    return true;
  }

  // The exact nearest hole for x among all live holes, as a buffer entry.
  Entry best_entry(int32_t x) const {
    const Buffer& b = buf_[x];
    Entry e{.distance = kInfinite, .neg_size = -b.size, .buffer = x, .kind = EntryKind::kBuffer};
    // Nearest preceding member m (largest m.upper <= x.lower) whose hole after reaches x.upper.
    const size_t to = std::upper_bound(by_upper_.begin(), by_upper_.end(), b.lower,
                                       [&](int64_t t, int32_t m) { return t < buf_[m].upper; }) -
                      by_upper_.begin();
    const int64_t a = after_.last_before(to, b.upper);
    if (a >= 0) {
      const int32_t m = by_upper_[a];
      e.distance = distance(b.lower, buf_[m].upper);
      e.hole = {table_.object_of(m), m, schedules_.next(m)};
    }
    // Nearest following member m (smallest m.lower >= x.upper) whose hole before starts by x.lower.
    const size_t from = std::lower_bound(by_lower_.begin(), by_lower_.end(), b.upper,
                                         [&](int32_t m, int64_t t) { return buf_[m].lower < t; }) -
                        by_lower_.begin();
    const int64_t c = before_.first_from(from, b.lower);
    if (c >= 0) {
      const int32_t m = by_lower_[c];
      if (distance(buf_[m].lower, b.upper) < e.distance) {
        e.distance = distance(buf_[m].lower, b.upper);
        e.hole = {table_.object_of(m), schedules_.prev(m), m};
      }
    }
    return e;
  }

  // Pushes the next unplaced buffer of `hole`'s stream at or after `from`.
  // An after-stream exists only for holes with a left member (finite start),
  // a before-stream only for holes with a right member (finite end).
  void push_stream(EntryKind kind, const objects::Hole& hole, size_t from) {
    const int64_t lo = schedules_.hole_lower(hole), hi = schedules_.hole_upper(hole);
    if (kind == EntryKind::kAfterStream) {
      const int64_t i = unplaced_upper_.first_from(from, hi);
      if (i < 0) return;
      const int32_t x = group_by_lower_[i];
      queue_.push({distance(buf_[x].lower, lo), -buf_[x].size, x, kind, hole, static_cast<int32_t>(i)});
    } else {
      const int64_t i = unplaced_lower_.first_from(from, lo);
      if (i < 0) return;
      const int32_t x = group_by_upper_[i];
      queue_.push({distance(hi, buf_[x].upper), -buf_[x].size, x, kind, hole, static_cast<int32_t>(i)});
    }
  }

  // New hole: streams from each finite end.
  void open_streams(const objects::Hole& hole) {
    const int64_t lo = schedules_.hole_lower(hole), hi = schedules_.hole_upper(hole);
    if (hole.left >= 0) {
      const size_t from = std::lower_bound(lowers_.begin(), lowers_.end(), lo) - lowers_.begin();
      push_stream(EntryKind::kAfterStream, hole, from);
    }
    if (hole.right >= 0) {
      const size_t from =
          std::lower_bound(uppers_desc_.begin(), uppers_desc_.end(), hi, std::greater<>()) - uppers_desc_.begin();
      push_stream(EntryKind::kBeforeStream, hole, from);
    }
  }

  // Only buffers of the current position are ever placed.
  void mark_placed(int32_t x) {
    unplaced_upper_.clear(group_lower_pos_[x]);
    unplaced_lower_.clear(group_upper_pos_[x]);
  }

  void open_object(int32_t x) {
    const int32_t k = table_.create(buf_[x].size);
    schedules_.start_object(x);
    table_.assign(x, k, buf_[x].size);
    mark_placed(x);
    after_.set(slot_after_[x], INT64_MAX);
    before_.set(slot_before_[x], INT64_MIN);
    open_streams({k, -1, x});
    open_streams({k, x, -1});
  }

  void fill(const objects::Hole& hole, int32_t x) {
    schedules_.fill(hole, x);
    table_.assign(x, hole.object, buf_[x].size);
    mark_placed(x);
    const Buffer& b = buf_[x];
    if (hole.left >= 0) after_.set(slot_after_[hole.left], b.lower);
    after_.set(slot_after_[x], hole.right >= 0 ? buf_[hole.right].lower : INT64_MAX);
    if (hole.right >= 0) before_.set(slot_before_[hole.right], b.upper);
    before_.set(slot_before_[x], hole.left >= 0 ? buf_[hole.left].upper : INT64_MIN);
    open_streams({hole.object, hole.left, x});
    open_streams({hole.object, x, hole.right});
  }

  const Problem& problem_;
  const std::vector<Buffer>& buf_;
  objects::ObjectTable table_;
  objects::Schedules schedules_;
  // Holes, by the member that bounds them.
  std::vector<int32_t> by_upper_, by_lower_;
  std::vector<int32_t> slot_after_, slot_before_;
  MatchTree<true> after_;    // slot of m (end order): end of the hole after m
  MatchTree<false> before_;  // slot of m (start order): start of the hole before m
  // The current position's unplaced buffers.
  std::vector<int32_t> group_by_lower_, group_by_upper_;
  std::vector<int32_t> group_lower_pos_, group_upper_pos_;  // index in the two orders above
  std::vector<int64_t> lowers_, uppers_desc_;
  MatchTree<false> unplaced_upper_{0};  // by start order: upper of each unplaced buffer
  MatchTree<true> unplaced_lower_{0};   // by end order: lower of each unplaced buffer
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue_;
  StopCondition& stop_;
};

}  // namespace

StatusOr<ObjectAssignment> assign_greedy_by_size_objects(const Problem& problem, const PlanOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem));
  StopCondition stop(options, "greedy_by_size_objects");
  return SizeDistancePlanner(problem, stop).run();
}

StatusOr<Plan> plan_greedy_by_size_objects(const Problem& problem, const PlanOptions& options) {
  return objects::stack(problem, assign_greedy_by_size_objects(problem, options));
}

}  // namespace memplan
