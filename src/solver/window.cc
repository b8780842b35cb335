// window.cc — windowed improvement: lower the arena of a valid plan of a large
// problem by re-solving, one at a time, the time windows that define its peak;
// and repair_by_bands (window.h), the offset bands alone, for small problems.
//
// Algorithm (improve_by_windows):
//   1. Validate the start plan. The proven lower bound is max(load, highest
//      fixed top); a plan that reaches it is optimal and the call ends.
//   2. Pick a peak buffer p (top == arena, not fixed by the problem), rotating
//      over them, and a window size level l (free buffers wanted: base << l).
//   3. Window: start from p's lifetime [t0, t1). Widen it symmetrically by the
//      largest tick margin d (binary search, O(n) per probe) such that at most
//      base << l movable buffers lie wholly inside. Then close it over the
//      peak: while a buffer that overlaps the window but crosses its edge has
//      top == arena, widen the window to its lifetime (such a buffer would pin
//      the window's height at the arena). A window past twice its target
//      falls back to a band (step 3b), else p moves to the next level.
//   3b. Band, for peaks that live too long for a time window: every movable
//      buffer at or above an offset floor b (about base << l of them, b below
//      every peak buffer and a multiple of every alignment) is free and stays
//      above b; buffers that straddle b keep their place, clipped to the band;
//      buffers below b cannot touch the band. The sub-problem is the band
//      shifted down by b (the "capacity profile" of everything under it).
//   4. Sub-problem: the free buffers, and as fixed buffers (current offsets)
//      those that cross the window's edges or are fixed by the problem and
//      live at the same time as some free buffer; every other buffer cannot
//      touch the window and is left out. solve_decision looks for a plan
//      under the cap arena − 1 (any such plan is progress) with half the
//      window's slice of time, then solve_minimize (heuristics, then search)
//      under the best cap known with the rest; both under a 64 MiB index limit.
//   5. A plan for the window replaces the free buffers' offsets; the whole plan
//      is re-validated (the validator is the oracle) and kept only when it is
//      better: a lower arena, or the same arena reached by fewer buffers (one
//      window clears one peak; peaks at other times need their own windows).
//      So the arena never grows.
//   6. When every peak buffer has failed at the largest level, a new pass
//      starts with other window sizes (base x 1.5, 2, 2.5: the windows' edges
//      fall elsewhere); when the last pass fails too, the call ends with
//      stats.windows_exhausted (more time would not help). Time running out
//      ends it too.
// Cost per window: O(n log span) to choose it, O(n log n) to build the
// sub-problem and to validate the splice, plus the exact search on the window
// (bounded by its time slice). Memory: O(n) plus the window's search index,
// which the sub-problem's memory limit bounds — the whole problem's overlap
// graph (43 M pairs on iopddl/S_1, over the 512 MiB cap) is never built.
#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <unordered_map>
#include <utility>

#include "core/saturating.h"
#include "memplan/bounds.h"
#include "memplan/exact.h"
#include "memplan/validate.h"
#include "solver/window.h"

namespace memplan {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kLevels = 5;  // window sizes base, 2 base, ..., 16 base free buffers
constexpr int kPasses = 4;  // passes with base, 1.5 base, 2 base, 2.5 base

bool stop_now(const ExactOptions& options, Clock::time_point deadline, bool has_deadline) {
  return (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) ||
         (has_deadline && Clock::now() >= deadline);
}

// Number of movable buffers lying wholly inside [t0, t1).
int64_t count_inside(const Problem& problem, const std::vector<char>& movable, int64_t t0, int64_t t1) {
  int64_t count = 0;
  for (size_t i = 0; i < problem.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    count += movable[i] && b.lower >= t0 && b.upper <= t1 ? 1 : 0;
  }
  return count;
}

struct Window {
  int64_t t0 = 0, t1 = 0;
  int64_t shift = 0;          // band windows: the band's floor (sub-problem offset 0)
  std::vector<size_t> free;   // buffers the sub-problem may move
  std::vector<size_t> fixed;  // buffers that keep their offsets
};

// Keeps only the fixed buffers that live at the same time as a free one: the
// union of the free lifetimes, merged, answers that by binary search.
void drop_untouched(const Problem& problem, Window* window) {
  std::vector<std::pair<int64_t, int64_t>> spans;
  spans.reserve(window->free.size());
  for (const size_t i : window->free) spans.emplace_back(problem.buffers[i].lower, problem.buffers[i].upper);
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, s.second);
    } else {
      merged.push_back(s);
    }
  }
  auto touches = [&](const Buffer& b) {
    // First merged span ending after b.lower; it overlaps b iff it starts before b.upper.
    auto it = std::upper_bound(merged.begin(), merged.end(), b.lower,
                               [](int64_t t, const std::pair<int64_t, int64_t>& s) { return t < s.second; });
    return it != merged.end() && it->first < b.upper;
  };
  std::erase_if(window->fixed, [&](size_t i) { return !touches(problem.buffers[i]); });
}

// Band windows, for peaks that live too long for a time window: every
// movable buffer at or above a floor b is free (b: about `target` of them, at
// below the lowest peak buffer's offset, a multiple of every alignment), and
// free buffers stay at or above b. Buffers below b cannot touch them; those
// that straddle b (and fixed ones above it) keep their place, clipped to the
// band. The sub-problem is the band shifted down by b. False when the band
// would hold more than twice the target or a peak buffer cannot move.
bool choose_band(const Problem& problem, const Plan& plan, const std::vector<char>& movable, int64_t target,
                 Window* window) {
  int64_t lowest_peak = std::numeric_limits<int64_t>::max();
  int64_t max_alignment = 1;
  std::vector<int64_t> movable_offsets;
  for (size_t i = 0; i < problem.size(); ++i) {
    max_alignment = std::max(max_alignment, problem.alignment_of(i));
    if (problem.buffers[i].size == 0) continue;
    const bool at_peak = plan.offsets[i] + problem.buffers[i].size == plan.arena;
    if (at_peak && !movable[i]) return false;
    if (!movable[i]) continue;
    if (at_peak) lowest_peak = std::min(lowest_peak, plan.offsets[i]);
    movable_offsets.push_back(plan.offsets[i]);
  }
  if (movable_offsets.empty() || lowest_peak == std::numeric_limits<int64_t>::max()) return false;
  const size_t k = std::min(movable_offsets.size(), static_cast<size_t>(target)) - 1;
  std::nth_element(movable_offsets.begin(), movable_offsets.begin() + static_cast<ptrdiff_t>(k), movable_offsets.end(),
                   std::greater<>());
  // A floor at the lowest peak buffer's offset would pin it: nothing to gain.
  if (movable_offsets[k] >= lowest_peak) return false;
  int64_t floor = movable_offsets[k];
  floor -= floor % max_alignment;
  window->shift = floor;
  window->t0 = std::numeric_limits<int64_t>::min();
  window->t1 = std::numeric_limits<int64_t>::max();
  window->free.clear();
  window->fixed.clear();
  for (size_t i = 0; i < problem.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.size == 0 || plan.offsets[i] + b.size <= floor) continue;
    (movable[i] && plan.offsets[i] >= floor ? window->free : window->fixed).push_back(i);
  }
  if (window->free.empty() || static_cast<int64_t>(window->free.size()) > 2 * target) return false;
  drop_untouched(problem, window);
  return true;
}

// Steps 3 and 4 of the header for peak buffer p and `target` free buffers;
// false when the window cannot be built within twice the target.
bool choose_window(const Problem& problem, const Plan& plan, const std::vector<char>& movable, size_t p, int64_t target,
                   Window* window) {
  const Buffer& peak = problem.buffers[p];
  int64_t t0 = peak.lower, t1 = peak.upper;
  // Largest symmetric margin keeping at most `target` buffers inside.
  int64_t lo = 0, hi = 1;
  int64_t span_lo = std::numeric_limits<int64_t>::max(), span_hi = std::numeric_limits<int64_t>::min();
  for (const Buffer& b : problem.buffers) {
    span_lo = std::min(span_lo, b.lower);
    span_hi = std::max(span_hi, b.upper);
  }
  // Ticks may span all of int64: margins and window edges saturate.
  const int64_t max_margin = std::max<int64_t>(1, std::max(saturating_sub(t0, span_lo), saturating_sub(span_hi, t1)));
  auto inside = [&](int64_t margin) {
    return count_inside(problem, movable, saturating_sub(t0, margin), saturating_add(t1, margin));
  };
  while (hi < max_margin && inside(hi) <= target) hi = hi > max_margin / 2 ? max_margin : 2 * hi;
  hi = std::min(hi, max_margin);
  if (inside(hi) <= target) {
    lo = hi;
  } else {
    while (lo + 1 < hi) {  // invariant: margin lo fits, margin hi does not
      const int64_t mid = lo + (hi - lo) / 2;
      (inside(mid) <= target ? lo : hi) = mid;
    }
  }
  t0 = saturating_sub(t0, lo);
  t1 = saturating_add(t1, lo);
  // Close over buffers at the peak that cross the edges.
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < problem.size(); ++i) {
      const Buffer& b = problem.buffers[i];
      if (!movable[i] || b.size == 0 || plan.offsets[i] + b.size < plan.arena) continue;
      if (b.upper <= t0 || b.lower >= t1 || (b.lower >= t0 && b.upper <= t1)) continue;
      t0 = std::min(t0, b.lower);
      t1 = std::max(t1, b.upper);
      grew = true;
    }
  }
  window->t0 = t0;
  window->t1 = t1;
  window->free.clear();
  window->fixed.clear();
  for (size_t i = 0; i < problem.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.size == 0 || b.upper <= t0 || b.lower >= t1) continue;
    if (movable[i] && b.lower >= t0 && b.upper <= t1) {
      window->free.push_back(i);
    } else {
      window->fixed.push_back(i);
    }
  }
  if (window->free.empty() || static_cast<int64_t>(window->free.size()) > 2 * target) return false;
  drop_untouched(problem, window);
  return true;
}

// Peaks at different times need different windows, so progress is measured
// as (arena, number of buffers whose top is the arena), lexicographically.
int64_t buffers_at_arena(const Problem& problem, const Plan& plan) {
  int64_t count = 0;
  for (size_t i = 0; i < problem.size(); ++i) {
    count += problem.buffers[i].size > 0 && plan.offsets[i] + problem.buffers[i].size == plan.arena ? 1 : 0;
  }
  return count;
}

bool better(const Plan& candidate, const Plan& incumbent, const Problem& problem) {
  if (candidate.arena != incumbent.arena) return candidate.arena < incumbent.arena;
  return buffers_at_arena(problem, candidate) < buffers_at_arena(problem, incumbent);
}

Problem window_problem(const Problem& problem, const Plan& plan, const Window& window) {
  Problem sub;
  sub.buffers.reserve(window.free.size() + window.fixed.size());
  for (const size_t i : window.free) {
    Buffer b = problem.buffers[i];
    b.alignment = problem.alignment_of(i);
    sub.buffers.push_back(std::move(b));
  }
  for (const size_t i : window.fixed) {
    Buffer b = problem.buffers[i];
    // Clipped to the band: the part at or above the shift keeps its place.
    const int64_t bottom = std::max(plan.offsets[i], window.shift);
    b.size = plan.offsets[i] + b.size - bottom;
    b.offset = bottom - window.shift;
    b.alignment = 1;  // a fixed offset is not placed, only checked
    sub.buffers.push_back(std::move(b));
  }
  return sub;
}

// What both improvers start from, after checking the problem and that
// `start` is a valid plan of it: the problem without its capacity (plans
// above it are still plans to improve), the load (raised to every fixed
// buffer's top) as the lower bound, and which buffers may move.
struct Start {
  Problem uncapped;
  int64_t lower_bound = 0;
  std::vector<char> movable;
};

StatusOr<Start> checked_start(const Problem& problem, const Plan& plan) {
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem));
  Start start;
  start.uncapped = problem;
  start.uncapped.capacity.reset();
  if (plan.offsets.size() != problem.size()) {
    return InvalidArgument("start plan has " + std::to_string(plan.offsets.size()) + " offsets for " +
                           std::to_string(problem.size()) + " buffers");
  }
  const ValidationResult check = validate(start.uncapped, plan);
  if (!check.ok()) return InvalidArgument("start plan is invalid: " + check.message);
  start.lower_bound = load(problem);
  start.movable.assign(problem.size(), 0);
  for (size_t i = 0; i < problem.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.offset) start.lower_bound = std::max(start.lower_bound, *b.offset + b.size);
    start.movable[i] = !b.offset && b.size > 0;
  }
  return start;
}

}  // namespace

StatusOr<ExactResult> improve_by_windows(const Problem& problem, const Plan& start, const ExactOptions& options) {
  const Clock::time_point begin = Clock::now();
  StatusOr<Start> checked = checked_start(problem, start);
  if (!checked.ok()) return checked.status();
  const Problem& uncapped = checked->uncapped;
  const std::vector<char>& movable = checked->movable;

  ExactResult result;
  result.lower_bound = checked->lower_bound;
  const bool has_deadline = options.time_limit_seconds > 0;
  const Clock::time_point deadline =
      begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.time_limit_seconds));
  Plan plan = start;
  std::unordered_map<size_t, int> level;  // per peak buffer: the window level to try next
  // Pass p uses windows of base_p << l free buffers, base_p = base (2 + p) / 2.
  const int64_t base0 = std::max<int64_t>(8, options.window_buffers);
  int pass = 0;
  size_t rotation = 0;

  while (plan.arena > result.lower_bound && !stop_now(options, deadline, has_deadline)) {
    std::vector<size_t> peaks;
    for (size_t i = 0; i < problem.size(); ++i) {
      if (movable[i] && plan.offsets[i] + problem.buffers[i].size == plan.arena) peaks.push_back(i);
    }
    std::vector<size_t> peaks_at_arena = peaks;
    // A fixed buffer alone at the arena: no window can lower it.
    std::erase_if(peaks, [&](size_t i) { return level[i] >= kLevels; });
    if (peaks.empty() && !peaks_at_arena.empty() && pass + 1 < kPasses) {
      // Every peak buffer failed at every level: another pass with other
      // window sizes puts the windows' edges elsewhere.
      ++pass;
      ++result.stats.window_passes;
      level.clear();
      peaks = std::move(peaks_at_arena);
    }
    if (peaks.empty()) {
      result.stats.windows_exhausted = true;
      break;
    }
    const size_t p = peaks[rotation++ % peaks.size()];
    const int l = level[p]++;
    const int64_t base = base0 * (2 + pass) / 2;
    Window window;
    // A time window first; a band when the peak lives too long for one.
    if (!choose_window(problem, plan, movable, p, base << l, &window) &&
        !choose_band(problem, plan, movable, base << l, &window)) {
      continue;
    }
    const Problem sub = window_problem(problem, plan, window);

    ExactOptions sub_options;
    sub_options.cancel = options.cancel;
    sub_options.capacity = plan.arena - 1 - window.shift;
    sub_options.memory_limit_bytes = std::min<int64_t>(options.memory_limit_bytes, int64_t{64} << 20);
    sub_options.window_threshold = std::numeric_limits<int64_t>::max();  // no windows inside windows
    // A window wants a lower plan, not a proof about itself: its time goes to plans.
    sub_options.subproblem_bounds = false;
    if (has_deadline) {
      const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (left <= 0) break;
      sub_options.time_limit_seconds = std::min(left, std::max(0.05, options.time_limit_seconds / 16));
    } else {
      sub_options.time_limit_seconds = 1.0;
    }
    ++result.stats.windows;
    // Any plan under the arena is progress, and a decision at a loose cap
    // finds one far sooner than minimisation, which would spend the slice
    // proving bounds near the window's load.
    const Clock::time_point window_start = Clock::now();
    const double slice = sub_options.time_limit_seconds;
    ExactOptions decision_options = sub_options;
    decision_options.time_limit_seconds = slice / 2;
    StatusOr<ExactResult> solved = solve_decision(sub, *sub_options.capacity, decision_options);
    if (!solved.ok()) return solved.status();
    // Then minimise under the best cap known with the rest of the slice: the
    // heuristics (which respect the fixed buffers) often pack a window far
    // tighter than the first plan the search meets.
    const double left_in_slice = slice - std::chrono::duration<double>(Clock::now() - window_start).count();
    if (solved->outcome != ExactOutcome::kOptimal && solved->outcome != ExactOutcome::kInfeasible &&
        left_in_slice > 0.01) {
      ExactOptions minimise_options = sub_options;
      minimise_options.time_limit_seconds = left_in_slice;
      if (solved->plan) minimise_options.capacity = solved->plan->arena;
      StatusOr<ExactResult> tighter = solve_minimize(sub, minimise_options);
      if (!tighter.ok()) return tighter.status();
      result.stats.nodes += tighter->stats.nodes;
      result.stats.backtracks += tighter->stats.backtracks;
      if (tighter->plan && (!solved->plan || tighter->plan->arena < solved->plan->arena)) {
        solved->plan = std::move(tighter->plan);
      }
    }
    result.stats.nodes += solved->stats.nodes;
    result.stats.backtracks += solved->stats.backtracks;
    result.stats.decisions += solved->stats.decisions;
    if (!solved->plan) continue;
    std::vector<int64_t> offsets = plan.offsets;
    for (size_t k = 0; k < window.free.size(); ++k) offsets[window.free[k]] = solved->plan->offsets[k] + window.shift;
    Plan candidate = make_plan(problem, std::move(offsets));
    if (!better(candidate, plan, problem) || !validate(uncapped, candidate).ok()) continue;
    plan = std::move(candidate);
    ++result.stats.windows_improved;
    result.stats.seconds_to_best = std::chrono::duration<double>(Clock::now() - begin).count();
    level.clear();  // a new peak: every buffer starts from the smallest window again
  }

  result.stats.cancelled = options.cancel != nullptr && options.cancel->load();
  result.outcome = plan.arena <= result.lower_bound ? ExactOutcome::kOptimal : ExactOutcome::kTimedOut;
  result.plan = std::move(plan);
  result.stats.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  return result;
}

namespace solver {

StatusOr<ExactResult> repair_by_bands(const Problem& problem, const Plan& start, int64_t base, int64_t node_budget,
                                      const ExactOptions& options) {
  const Clock::time_point begin = Clock::now();
  StatusOr<Start> checked = checked_start(problem, start);
  if (!checked.ok()) return checked.status();
  const Problem& uncapped = checked->uncapped;
  const std::vector<char>& movable = checked->movable;
  const auto movable_count = static_cast<int64_t>(std::count(movable.begin(), movable.end(), 1));

  ExactResult result;
  result.lower_bound = checked->lower_bound;
  const bool has_deadline = options.time_limit_seconds > 0;
  const Clock::time_point deadline =
      begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.time_limit_seconds));
  base = std::max<int64_t>(1, base);
  const int64_t step = std::max<int64_t>(1, base / 2);
  Plan plan = start;
  int64_t k = base;
  int64_t failures_in_a_row = 0;  // bands decided since the last plan
  // A sweep is every k from base up to all movable buffers.
  const int64_t sweep = 1 + std::max<int64_t>(0, movable_count - base + step - 1) / step;

  while (plan.arena > result.lower_bound && !stop_now(options, deadline, has_deadline)) {
    if (failures_in_a_row >= sweep) {
      result.stats.windows_exhausted = true;
      break;
    }
    const int64_t target = k;
    k = k + step > movable_count ? base : k + step;
    ++failures_in_a_row;
    Window band;
    if (!choose_band(problem, plan, movable, target, &band)) continue;
    const Problem sub = window_problem(problem, plan, band);
    ExactOptions sub_options;
    sub_options.cancel = options.cancel;
    sub_options.node_limit = node_budget;
    sub_options.memory_limit_bytes = std::min<int64_t>(options.memory_limit_bytes, int64_t{64} << 20);
    if (has_deadline) {
      const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (left <= 0) break;
      sub_options.time_limit_seconds = left;
    }
    ++result.stats.windows;
    StatusOr<ExactResult> solved = solve_decision(sub, plan.arena - 1 - band.shift, sub_options);
    if (!solved.ok()) return solved.status();
    result.stats.nodes += solved->stats.nodes;
    result.stats.backtracks += solved->stats.backtracks;
    result.stats.decisions += solved->stats.decisions;
    if (!solved->plan) continue;
    std::vector<int64_t> offsets = plan.offsets;
    for (size_t j = 0; j < band.free.size(); ++j) offsets[band.free[j]] = solved->plan->offsets[j] + band.shift;
    Plan candidate = make_plan(problem, std::move(offsets));
    if (candidate.arena >= plan.arena || !validate(uncapped, candidate).ok()) continue;
    plan = std::move(candidate);
    ++result.stats.windows_improved;
    result.stats.seconds_to_best = std::chrono::duration<double>(Clock::now() - begin).count();
    failures_in_a_row = 0;
  }

  result.stats.cancelled = options.cancel != nullptr && options.cancel->load();
  result.outcome = plan.arena <= result.lower_bound ? ExactOutcome::kOptimal : ExactOutcome::kTimedOut;
  result.plan = std::move(plan);
  result.stats.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  return result;
}

}  // namespace solver

}  // namespace memplan
