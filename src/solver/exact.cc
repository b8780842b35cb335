// exact.cc — the decision and minimisation drivers around CanonicalSearch
// (the registered `exact` planner is src/planning/planning.cc over them).
//
// solve_decision:
//   1. Check the problem; buffers of size 0 take offset 0 (or their fixed
//      offset) and stay out of the search.
//   2. Lower bound = max(load, highest fixed top), rounded up to the granule
//      (the gcd of sizes and fixed offsets, when the alignments allow: every
//      canonical arena is a multiple of it). A capacity below it is refuted
//      without search; refutations round up the same way.
//   3. Run the canonical search at the capacity; validate any plan it returns.
//      A problem whose index (overlap graph and section memberships) would
//      exceed options.memory_limit_bytes is not searched: the heuristics' plan
//      answers it if it fits (stats.too_large).
// solve_minimize (anytime, closes the gap from both sides):
//   1. Lower bound as above. A short search at the lower bound: most problems
//      fit in their load, and then no heuristic is needed (skipped when the
//      index would not fit in memory; 40 % of the time on large ones).
//   2. Upper bound: options.start_plan if valid, else the heuristics' plan
//      (validated; `naive` if it fails), given a tenth of the time limit, at
//      most 2 s (a quarter on large problems, at most 30 s).
//   2b. Large problems (more than options.window_threshold buffers, or an
//      index over the memory limit): improve_by_windows (window.cc) spends the
//      time left on the windows around the peak, and the call ends.
//   2c. Descending probes at the middle of the gap with a quarter of the
//      dive's budget, while they find plans (or refute: that raises the
//      lower bound); the first probe that runs out of nodes ends them.
//   3. The capacity rounds (capacity_rounds.h): rounds with a node
//      budget that doubles each round, each spread over several capacities —
//      the lower bound (its own budget, balanced in time against the rest;
//      from 2^20 nodes without restarts, then the relaxed sub-problems of
//      options.subproblem_bounds with half its budget), just below the best
//      plan, bisection between the bounds, and a sweep across the gap that
//      decides every capacity as a decision would. Plans lower the upper
//      bound; complete refutations raise the lower bound (to the search's
//      next capacity: a jump, not +1); time-outs prove nothing.
//   3b. Repair (options.repair_share > 0): steps 2c and 3 stop at
//      (1 - share) of the time limit, and repair_by_bands (window.h) frees
//      the buffers at the top of the best plan, k at a time, and decides them
//      under arena - 1 with the rest fixed, with the time left; when a
//      whole sweep of band sizes fails first, step 3 resumes until half the
//      share is left, the bands run once more, and step 3 ends the call.
//   3c. Helpers (options.threads > 1, from after step 2 to the end):
//      threads - 1 threads of seeded decisions below the shared ceiling
//      (seeded_helpers.h); sync() trades bounds and plans with them at
//      every probe boundary of steps 2c-3b, and they are joined before
//      the call returns. With CaDiCaL built in, one of them is a SAT solver
//      instead (sat/sat_helper.h) when the problem's encoding is small.
//   4. Stop when the bounds meet (kOptimal), or on the time limit or cancel
//      with the best plan and the best proven lower bound (kTimedOut).
// Each decision costs what the search costs (exponential worst case); the
// number of decisions per round is O(log(upper - lower) + sweep points).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>

#include "memplan/bounds.h"
#include "memplan/exact.h"
#include "memplan/heuristics.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "solver/canonical_search.h"
#include "solver/capacity_rounds.h"
#include "solver/seeded_helpers.h"
#include "solver/subproblem_bounds.h"
#if MEMPLAN_WITH_CADICAL
#include "solver/sat/sat_helper.h"
#endif
#include "solver/window.h"

namespace memplan {
namespace {

using Clock = std::chrono::steady_clock;

// Node budget from which minimisation decides at its lower bound without
// restarts (see solve_minimize, step 3).
constexpr int64_t kProofBudget = int64_t{1} << 20;
// Node budget of one band decision of the repair (options.repair_share).
constexpr int64_t kRepairBudget = int64_t{1} << 18;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

solver::StopCondition stop_condition(const ExactOptions& options, Clock::time_point start) {
  solver::StopCondition stop;
  stop.cancel = options.cancel;
  if (options.time_limit_seconds > 0) {
    stop.has_deadline = true;
    stop.deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.time_limit_seconds));
  }
  return stop;
}

#if MEMPLAN_WITH_CADICAL
// The SAT helper's clause limit: kSatMaxClauses, or fewer when the memory
// limit is lower: CaDiCaL took 124 to 147 bytes a clause at its peak (the
// 200-buffer puzzle: 200 MB for 1.36 M clauses; F: 880 MB for 7.1 M).
int64_t sat_clause_limit(const ExactOptions& options) {
  return std::min(solver::kSatMaxClauses, options.memory_limit_bytes / 128);
}
#endif

// The buffers the search places (size > 0), and how to map its offsets back.
struct SearchInput {
  std::vector<solver::CanonicalSearch::Item> items;
  std::vector<size_t> buffer_of_item;
  int64_t lower_bound = 0;  // max(load, highest fixed top), rounded up to the granule
  // Every canonical plan's arena is a multiple of this (see granule_of), so
  // lower bounds round up to it.
  int64_t granule = 1;
};

// g = gcd of the sizes and fixed offsets. A canonical offset is 0, a fixed
// offset, or an aligned top of another buffer; when every alignment a > 1
// divides g or is a multiple of it, rounding a multiple of g up to a is again
// a multiple of g, so by induction every canonical offset and top — and the
// optimal arena, the top of some buffer — is a multiple of g. Otherwise 1.
int64_t granule_of(const Problem& problem) {
  int64_t g = 0;
  for (const Buffer& b : problem.buffers) {
    if (b.size == 0) continue;
    g = std::gcd(g, b.size);
    if (b.offset) g = std::gcd(g, *b.offset);
  }
  if (g <= 1) return 1;
  for (size_t i = 0; i < problem.size(); ++i) {
    const int64_t a = problem.alignment_of(i);
    if (a > 1 && g % a != 0 && a % g != 0) return 1;
  }
  return g;
}

int64_t round_up_to(int64_t value, int64_t granule) {
  if (granule <= 1 || value > std::numeric_limits<int64_t>::max() - granule) return value;
  const int64_t r = value % granule;
  return r == 0 ? value : value + (granule - r);
}

SearchInput make_search_input(const Problem& problem) {
  SearchInput input;
  input.lower_bound = load(problem);
  for (size_t i = 0; i < problem.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.offset) input.lower_bound = std::max(input.lower_bound, *b.offset + b.size);
    if (b.size == 0) continue;
    input.items.push_back({.lower = b.lower,
                           .upper = b.upper,
                           .size = b.size,
                           .alignment = problem.alignment_of(i),
                           .fixed_offset = b.offset ? *b.offset : -1});
    input.buffer_of_item.push_back(i);
  }
  input.granule = granule_of(problem);
  input.lower_bound = round_up_to(input.lower_bound, input.granule);
  return input;
}

// The search's index: two neighbour entries per overlapping pair, and each
// section membership three times (the layout, the working copy, the slot map),
// 4 bytes each.
bool search_fits_in_memory(const SearchInput& input, const ExactOptions& options, int64_t copies = 1) {
  std::vector<int64_t> lower, upper;
  lower.reserve(input.items.size());
  upper.reserve(input.items.size());
  for (const auto& item : input.items) {
    lower.push_back(item.lower);
    upper.push_back(item.upper);
  }
  const solver::LayoutSize size = solver::measure_sections(lower, upper);
  const int64_t bytes = 4 * (2 * size.overlapping_pairs + 3 * size.memberships);
  return bytes <= options.memory_limit_bytes / std::max<int64_t>(copies, 1);
}

// The best heuristic plan within `cap` (validated; naive as the last resort),
// or nothing. seconds = 0 leaves plan_heuristics its own default.
std::optional<Plan> heuristic_plan(const Problem& problem, std::optional<int64_t> cap, double seconds,
                                   const std::atomic<bool>* cancel) {
  Problem uncapped = problem;
  uncapped.capacity.reset();
  PlanOptions options{.time_limit_seconds = seconds, .cancel = cancel};
  // plan_heuristics falls back to the naive plan itself.
  StatusOr<Plan> plan = plan_heuristics(uncapped, options);
  if (plan.ok() && validate(uncapped, *plan).ok() && (!cap || plan->arena <= *cap)) return std::move(*plan);
  return std::nullopt;
}

// The plan of a search's offsets (one per item), validated.
StatusOr<Plan> plan_from_search(const Problem& problem, const SearchInput& input,
                                const std::vector<int64_t>& item_offsets) {
  std::vector<int64_t> offsets(problem.size(), 0);
  for (size_t i = 0; i < problem.size(); ++i) {
    if (problem.buffers[i].offset) offsets[i] = *problem.buffers[i].offset;
  }
  for (size_t k = 0; k < input.items.size(); ++k) offsets[input.buffer_of_item[k]] = item_offsets[k];
  Plan plan = make_plan(problem, std::move(offsets));
  Problem unconstrained_capacity = problem;  // the capacity is the caller's to check
  unconstrained_capacity.capacity.reset();
  const ValidationResult check = validate(unconstrained_capacity, plan);
  if (!check.ok()) return Internal("exact search produced an invalid plan: " + check.message);
  return plan;
}

struct Decision {
  solver::SearchVerdict verdict;
  int64_t next_capacity = 0;  // after kExhausted
};

// One decision at `capacity` with a node limit (0 = none).
Decision decide(solver::CanonicalSearch& search, int64_t capacity, int64_t node_limit,
                const solver::StopCondition& stop, ExactStats* stats, bool allow_restarts = true, uint64_t seed = 0) {
  ++stats->decisions;
  const solver::SearchVerdict verdict = search.decide(capacity, node_limit, stop, stats, allow_restarts, 0, seed);
  return {verdict, search.next_capacity()};
}

}  // namespace

std::string_view exact_outcome_name(ExactOutcome outcome) {
  switch (outcome) {
    case ExactOutcome::kOptimal:
      return "optimal";
    case ExactOutcome::kFeasible:
      return "feasible";
    case ExactOutcome::kInfeasible:
      return "infeasible";
    case ExactOutcome::kTimedOut:
      return "timed out";
  }
  return "unknown";
}

std::string_view plan_source_name(PlanSource source) {
  switch (source) {
    case PlanSource::kDive:
      return "dive";
    case PlanSource::kStartPlan:
      return "start plan";
    case PlanSource::kHeuristics:
      return "heuristics";
    case PlanSource::kWindows:
      return "windows";
    case PlanSource::kDescending:
      return "descending probe";
    case PlanSource::kFloor:
      return "floor probe";
    case PlanSource::kCeiling:
      return "ceiling probe";
    case PlanSource::kBisection:
      return "bisection probe";
    case PlanSource::kSweep:
      return "sweep probe";
    case PlanSource::kSeeded:
      return "seeded restart";
    case PlanSource::kHelper:
      return "seeded restart (helper thread)";
    case PlanSource::kSat:
      return "SAT solver (helper thread)";
    case PlanSource::kRepair:
      return "band repair";
  }
  return "unknown";
}

StatusOr<ExactResult> solve_decision(const Problem& problem, int64_t capacity, const ExactOptions& options) {
  const Clock::time_point start = Clock::now();
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem));
  if (capacity < 0) return InvalidArgument("capacity must be >= 0, got " + std::to_string(capacity));
  const SearchInput input = make_search_input(problem);
  ExactResult result;
  result.lower_bound = input.lower_bound;
  if (capacity < input.lower_bound) {
    result.outcome = ExactOutcome::kInfeasible;
    result.stats.seconds = seconds_since(start);
    return result;
  }
  if (!search_fits_in_memory(input, options)) {
    // Too large to index: a heuristic plan that fits is the only answer.
    result.stats.too_large = true;
    result.plan = heuristic_plan(problem, capacity, options.time_limit_seconds, options.cancel);
    result.outcome = !result.plan                               ? ExactOutcome::kTimedOut
                     : result.plan->arena <= result.lower_bound ? ExactOutcome::kOptimal
                                                                : ExactOutcome::kFeasible;
    result.stats.cancelled = options.cancel != nullptr && options.cancel->load();
    result.stats.seconds = seconds_since(start);
    return result;
  }
  solver::StopCondition stop = stop_condition(options, start);
#if MEMPLAN_WITH_CADICAL
  // threads > 1: the SAT helper races the search on this capacity (sat/sat_helper.h);
  // the search's cancel flag is set when the helper ends, which the caller's
  // cancel and deadline also make it do.
  std::atomic<bool> sat_finished{false};
  std::optional<solver::SatHelper> sat;
  int64_t sat_unit = 0;
  if (options.threads > 1 && options.sat_helper && capacity < std::numeric_limits<int64_t>::max() &&
      solver::SatHelper::applies(input.items, capacity + 1, sat_clause_limit(options), &sat_unit)) {
    sat.emplace(input.items, sat_unit, stop, input.lower_bound, capacity + 1, std::vector<int64_t>{},
                solver::SatHelper::Mode::kDecide, &sat_finished);
    stop.cancel = &sat_finished;
  }
#endif
  solver::CanonicalSearch search(input.items, options);
  result.stats.partitions = search.partition_count();
  Decision d = decide(search, capacity, options.node_limit, stop, &result.stats, true, options.seed);
#if MEMPLAN_WITH_CADICAL
  if (sat) {
    sat->join();  // at once when the search answered first
    result.stats.sat_decisions = sat->stats().decisions;
    result.stats.sat_refutations = sat->stats().refutations;
    if (d.verdict == solver::SearchVerdict::kStopped) {
      if (std::optional<solver::SatHelper::Found> found = sat->take_better(capacity + 1)) {
        MEMPLAN_ASSIGN_OR_RETURN(Plan plan, plan_from_search(problem, input, found->offsets));
        result.outcome = plan.arena <= result.lower_bound ? ExactOutcome::kOptimal : ExactOutcome::kFeasible;
        result.plan = std::move(plan);
        result.stats.seconds = seconds_since(start);
        return result;
      }
      if (sat->floor() > capacity) {
        d = {.verdict = solver::SearchVerdict::kExhausted, .next_capacity = sat->floor()};
      }
    }
    stop.cancel = options.cancel;  // the caller's cancel alone says "cancelled"
  }
#endif
  switch (d.verdict) {
    case solver::SearchVerdict::kFound: {
      MEMPLAN_ASSIGN_OR_RETURN(Plan plan, plan_from_search(problem, input, search.offsets()));
      result.outcome = plan.arena <= result.lower_bound ? ExactOutcome::kOptimal : ExactOutcome::kFeasible;
      result.plan = std::move(plan);
      break;
    }
    case solver::SearchVerdict::kExhausted:
      result.outcome = ExactOutcome::kInfeasible;
      result.lower_bound = round_up_to(std::max(result.lower_bound, d.next_capacity), input.granule);
      break;
    case solver::SearchVerdict::kStopped:
      result.outcome = ExactOutcome::kTimedOut;
      result.stats.cancelled = stop.cancelled();
      break;
  }
  result.stats.seconds = seconds_since(start);
  return result;
}

namespace {

// Seeded restarts (capacity_rounds.h, step 5): 64 nodes a buffer; on
// D and J 15k-30k nodes did about as well, 60k worse (docs/history/exact.md,
// "Seeded restarts: budget, jitter and key order").
// The first helper's dive at the floor (seeded_helpers.h): 2^20 nodes, at
// most half the time limit. MiniMalloc's E fits its load after 154,625
// nodes of that decision; under load the main thread may not get there.
constexpr int64_t kHelperFloorBudget = int64_t{1} << 20;
// One seeded decision in four at the floor (capacity_rounds.h, step 5b):
// OmniMalloc's pinwheel fits its load after a few thousand nodes of most
// seeds, while the seeded capacities near its ceiling stay 16 % above.
constexpr int32_t kSeededFloorEvery = 4;
// They get 32k nodes each (pinwheel: 6,464 nodes, 64 a buffer, rarely
// fit it), and the first helper runs 4 of them before its dive.
constexpr int32_t kSeededFloorFirst = 4;
constexpr int64_t kSeededFloorBudget = int64_t{1} << 15;
constexpr double kDiveShareWithStartPlan = 0.5;

Clock::time_point after_seconds(Clock::time_point from, double seconds) {
  return from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// One solve_minimize call: the bounds, the best plan and the record, shared
// by its steps (the numbered steps at the top of this file), each a member
// function run in order by solve_minimize.
class Minimization {
 public:
  Minimization(const Problem& problem, const ExactOptions& options, Clock::time_point start)
      : problem_(problem),
        options_(options),
        start_(start),
        cap_(options.capacity ? options.capacity : problem.capacity),
        input_(make_search_input(problem)),
        stop_(stop_condition(options, start)),
        search_stop_(stop_) {
    const bool fits = search_fits_in_memory(input_, options);
    windowed_ = !fits || static_cast<int64_t>(input_.items.size()) > options.window_threshold;
    result_.stats.too_large = !fits;
    if (fits) {
      search_.emplace(input_.items, options);
      result_.stats.partitions = search_->partition_count();
    }
    lower_ = input_.lower_bound;
    quick_budget_ = capped(std::max<int64_t>(1 << 16, 64 * static_cast<int64_t>(input_.items.size())));
    first_floor_budget_ = capped(std::max<int64_t>(int64_t{1} << 18, 2 * quick_budget_));
    seeded_budget_ = std::clamp<int64_t>(64 * static_cast<int64_t>(input_.items.size()), 4096, 1 << 17);
    running_ = !cap_ || lower_ <= *cap_;
  }

  Status dive();
  void bound_from_above();
  Status improve_by_windows_step();
  void prepare_search();
  void start_helpers();
  Status descending_probes();
  Status capacity_rounds(int phase);
  StatusOr<bool> repair(int phase);
  Status join_helpers();
  ExactResult finish();

 private:
  int64_t capped(int64_t budget) const {
    return options_.node_limit > 0 ? std::min(budget, options_.node_limit) : budget;
  }
  void improve(Plan plan, PlanSource source, double seconds = -1);
  StatusOr<bool> absorb(int64_t capacity, const Decision& d, PlanSource source);
  template <class Helper>
  Status trade(Helper& helper, PlanSource source);
  Status sync();
  StatusOr<solver::ProbeResult> probe(const solver::CapacityProbe& p, solver::CapacityBounds& bounds);
  StatusOr<bool> raise_floor(solver::CapacityBounds* b, int64_t budget,
                             std::optional<solver::SubproblemBounds>& subproblems);

  const Problem& problem_;
  const ExactOptions& options_;
  const Clock::time_point start_;
  const std::optional<int64_t> cap_;
  const SearchInput input_;
  const solver::StopCondition stop_;
  solver::StopCondition search_stop_;  // stop_, or earlier to leave time to the repair
  ExactResult result_;
  bool windowed_ = false;
  std::optional<solver::CanonicalSearch> search_;
  int64_t lower_ = 0;
  int64_t upper_ = std::numeric_limits<int64_t>::max();
  std::optional<Plan> best_;
  int64_t quick_budget_ = 0;
  int64_t first_floor_budget_ = 0;  // the dive (step 1): 2^18 nodes, past E's 154,625 in the main thread too
  int64_t seeded_budget_ = 0;
  bool running_ = true;
  bool repair_ = false;
  std::optional<solver::SeededHelpers> helpers_;
#if MEMPLAN_WITH_CADICAL
  std::optional<solver::SatHelper> sat_;
#endif
  bool helping_ = false;
};

// A plan better than the best so far: it becomes the best, and the record
// says when and where it was found (at `seconds`; now when negative). A
// plan found earlier than the last record (a helper's, taken after a band
// repair) was already better than the records after its time: they go.
void Minimization::improve(Plan plan, PlanSource source, double seconds) {
  if (seconds < 0) seconds = seconds_since(start_);
  upper_ = plan.arena;
  result_.stats.seconds_to_best = seconds;
  std::vector<Improvement>& record = result_.stats.improvements;
  while (!record.empty() && record.back().seconds > seconds) record.pop_back();
  record.push_back({.seconds = seconds, .arena = plan.arena, .source = source});
  best_ = std::move(plan);
}

// Folds one decision into the bounds; false when time or cancel stopped it.
StatusOr<bool> Minimization::absorb(int64_t capacity, const Decision& d, PlanSource source) {
  if (d.verdict == solver::SearchVerdict::kFound) {
    MEMPLAN_ASSIGN_OR_RETURN(Plan plan, plan_from_search(problem_, input_, search_->offsets()));
    if (plan.arena < upper_) improve(std::move(plan), source);
  } else if (d.verdict == solver::SearchVerdict::kExhausted) {
    lower_ = round_up_to(std::max(lower_, std::max(capacity + 1, d.next_capacity)), input_.granule);
  }
  return !stop_.reached();
}

// 1. Most problems fit in their load, and a short search at the load finds
//    such a plan faster than the heuristics run. On large problems a node
//    costs up to milliseconds, so the dive gets 40 % of the time.
Status Minimization::dive() {
  if (!running_ || !search_) return Status::Ok();
  solver::StopCondition quick_stop = stop_;
  if (windowed_ && options_.time_limit_seconds > 0) {
    quick_stop.deadline = after_seconds(start_, 0.4 * options_.time_limit_seconds);
  }
  // With a start plan (the default planner's heuristics) and a time limit,
  // the dive gets at most kDiveShareWithStartPlan of it: A-K that fit their
  // load do so within 0.13 s of a 1 s limit, while on D the 64k nodes took
  // ~0.8 s under load, left nothing after them (21 % above the load) and
  // kept the helpers, which start after step 2, waiting; capped, D ends
  // 5.3 % above the load. Half the limit: B and E fit after 102,659 and
  // 154,625 nodes, which under load took more than 0.3 s of a 1 s limit.
  // The floor step of the rounds probes the load again.
  if (options_.start_plan != nullptr && options_.time_limit_seconds > 0) {
    const Clock::time_point cap_at = after_seconds(start_, kDiveShareWithStartPlan * options_.time_limit_seconds);
    if (!quick_stop.has_deadline || cap_at < quick_stop.deadline) {
      quick_stop.deadline = cap_at;
      quick_stop.has_deadline = true;
    }
  }
  const Decision d = decide(*search_, lower_, first_floor_budget_, quick_stop, &result_.stats);
  MEMPLAN_ASSIGN_OR_RETURN(running_, absorb(lower_, d, PlanSource::kDive));
  return Status::Ok();
}

// 2. Upper bound: the caller's start plan, or the heuristics (validated;
//    naive is the fallback). The heuristics get a small share of the time
//    limit (all of it, bar the windows' share, on large problems) and never
//    hands over to this solver. Runs even after a cancel, so that a plan is
//    always returned (cancelled heuristics fall back to naive).
void Minimization::bound_from_above() {
  if (lower_ >= upper_) return;
  if (options_.start_plan != nullptr) {
    Problem uncapped = problem_;
    uncapped.capacity.reset();
    const Plan& given = *options_.start_plan;
    if (given.offsets.size() == problem_.size() && given.arena < upper_ && (!cap_ || given.arena <= *cap_) &&
        validate(uncapped, given).ok()) {
      improve(given, PlanSource::kStartPlan);
    }
  }
  if (!best_) {
    // Large problems: the heuristics' plan is what the windows start from,
    // and under load its run on S_1 (28,526 buffers) takes 3 s: a 2 s cap
    // left a plan 2.5 % above the load instead of 0.26 %.
    const double share = windowed_ ? 0.25 : 0.1;
    const double most = windowed_ ? 30.0 : 2.0;
    const double seconds =
        options_.time_limit_seconds > 0 ? std::max(1e-3, std::min(most, share * options_.time_limit_seconds)) : 0;
    if (std::optional<Plan> plan = heuristic_plan(problem_, cap_, seconds, options_.cancel);
        plan && plan->arena < upper_) {
      improve(std::move(*plan), PlanSource::kHeuristics);
    }
  }
  // Only plans with arena <= cap are wanted (a cap of INT64_MAX is no cap).
  if (!best_ && cap_ && *cap_ < std::numeric_limits<int64_t>::max()) upper_ = *cap_ + 1;
  running_ = running_ && !stop_.reached();
}

// 2b. Large problems: improve the plan window by window with the time left
// (the whole problem's search would cost milliseconds a node, or not fit).
Status Minimization::improve_by_windows_step() {
  if (!(windowed_ && best_ && lower_ < upper_ && running_)) return Status::Ok();
  ExactOptions window_options = options_;
  window_options.time_limit_seconds =
      options_.time_limit_seconds > 0 ? std::max(1e-3, options_.time_limit_seconds - seconds_since(start_)) : 0;
  StatusOr<ExactResult> windows = improve_by_windows(problem_, *best_, window_options);
  if (!windows.ok()) return windows.status();
  ExactResult& improved = *windows;
  result_.stats.nodes += improved.stats.nodes;
  result_.stats.backtracks += improved.stats.backtracks;
  result_.stats.decisions += improved.stats.decisions;
  result_.stats.windows += improved.stats.windows;
  result_.stats.windows_improved += improved.stats.windows_improved;
  result_.stats.windows_exhausted = improved.stats.windows_exhausted;
  result_.stats.window_passes += improved.stats.window_passes;
  if (improved.plan && improved.plan->arena < best_->arena) {
    improve(std::move(*improved.plan), PlanSource::kWindows,
            seconds_since(start_) - improved.stats.seconds + improved.stats.seconds_to_best);
  }
  running_ = false;
  return Status::Ok();
}

// Repair (options.repair_share): the search's probes stop early and leave
// the rest of the time to bands at the top of the best plan (step 4).
void Minimization::prepare_search() {
  running_ = running_ && search_.has_value();
  repair_ = running_ && options_.repair_share > 0 && options_.time_limit_seconds > 0;
  if (repair_) {
    const double share = std::min(1.0, options_.repair_share);
    search_stop_.deadline = after_seconds(start_, (1 - share) * options_.time_limit_seconds);
  }
}

// Helper threads (options.threads): seeded restarts beside the steps
// below, from the upper bound on. sync() hands them this thread's bounds
// and takes their floor and any plan of theirs below the best.
void Minimization::start_helpers() {
  const bool may_help =
      running_ && options_.threads > 1 && lower_ < upper_ && upper_ < std::numeric_limits<int64_t>::max();
  int32_t seeded_threads = options_.threads - 1;
#if MEMPLAN_WITH_CADICAL
  int64_t sat_unit = 0;
  if (may_help && options_.sat_helper &&
      solver::SatHelper::applies(input_.items, upper_, sat_clause_limit(options_), &sat_unit)) {
    std::vector<int64_t> hint;
    if (best_) {
      for (size_t k = 0; k < input_.items.size(); ++k) hint.push_back(best_->offsets[input_.buffer_of_item[k]]);
    }
    sat_.emplace(input_.items, sat_unit, stop_, lower_, upper_, std::move(hint));
    --seeded_threads;
  }
#endif
  if (may_help && seeded_threads > 0 && search_fits_in_memory(input_, options_, options_.threads)) {
    helpers_.emplace(input_.items, options_, stop_,
                     solver::SeededHelpers::Config{.threads = seeded_threads,
                                                   .node_budget = capped(seeded_budget_),
                                                   .seed = 1 + options_.seed * 7919 + (uint64_t{1} << 32),
                                                   .granule = input_.granule,
                                                   .floor_budget = capped(kHelperFloorBudget),
                                                   .floor_every = kSeededFloorEvery,
                                                   .floor_first = kSeededFloorFirst,
                                                   .floor_probe_budget = capped(kSeededFloorBudget)},
                     lower_, upper_);
  }
  helping_ = helpers_.has_value();
#if MEMPLAN_WITH_CADICAL
  helping_ = helping_ || sat_.has_value();
#endif
}

// Hands a helper this thread's bounds; takes its floor and its plan when
// better than the best.
template <class Helper>
Status Minimization::trade(Helper& helper, PlanSource source) {
  helper.publish(lower_, upper_);
  lower_ = std::max(lower_, helper.floor());
  if (auto found = helper.take_better(upper_)) {
    MEMPLAN_ASSIGN_OR_RETURN(Plan plan, plan_from_search(problem_, input_, found->offsets));
    if (plan.arena < upper_) {
      improve(std::move(plan), source, std::chrono::duration<double>(found->at - start_).count());
    }
  }
  return Status::Ok();
}

Status Minimization::sync() {
  if (helpers_) MEMPLAN_RETURN_IF_ERROR(trade(*helpers_, PlanSource::kHelper));
#if MEMPLAN_WITH_CADICAL
  if (sat_) MEMPLAN_RETURN_IF_ERROR(trade(*sat_, PlanSource::kSat));
#endif
  return Status::Ok();
}

// 2c. Descending probes: halve the gap from above with short searches while
//     they keep finding plans. Capacities well above the optimum are easy
//     (MiniMalloc's D: 11k nodes at 1 MiB, versus a 22 % gap left by the
//     heuristics), and the rounds below start at the lower bound, which on
//     the hardest problems takes the whole time limit.
Status Minimization::descending_probes() {
  if (!running_ || lower_ >= upper_) return Status::Ok();
  const int64_t probe_budget = std::max<int64_t>(quick_budget_ / 4, 1);
  while (running_ && lower_ < upper_ && upper_ - lower_ > 1) {  // lower may be INT64_MAX
    const int64_t probe = round_up_to(lower_ + (upper_ - lower_) / 2, input_.granule);
    if (probe >= upper_) break;
    const Decision d = decide(*search_, probe, probe_budget, search_stop_, &result_.stats);
    MEMPLAN_ASSIGN_OR_RETURN(running_, absorb(probe, d, PlanSource::kDescending));
    MEMPLAN_RETURN_IF_ERROR(sync());
    if (d.verdict == solver::SearchVerdict::kStopped) break;
  }
  return Status::Ok();
}

// One probe of the capacity rounds. The helpers' plans and refutations move
// the bounds between probes, and may have passed this one by (then it does
// not run).
StatusOr<solver::ProbeResult> Minimization::probe(const solver::CapacityProbe& p, solver::CapacityBounds& bounds) {
  if (helping_) {
    lower_ = std::max(lower_, bounds.floor());
    MEMPLAN_RETURN_IF_ERROR(sync());
    bounds.plan_found(upper_);
    if (lower_ > bounds.floor()) bounds.refuted(lower_ - 1, lower_);
    if (p.capacity >= bounds.ceiling() || p.capacity < bounds.floor()) return solver::ProbeResult{};
  }
  ++result_.stats.decisions;
  solver::StopCondition probe_stop = search_stop_;
  if (p.max_seconds > 0) {
    const Clock::time_point cap = after_seconds(Clock::now(), p.max_seconds);
    probe_stop.deadline = search_stop_.has_deadline ? std::min(search_stop_.deadline, cap) : cap;
    probe_stop.has_deadline = true;
  }
  const solver::SearchVerdict verdict = search_->decide(p.capacity, capped(p.node_budget), probe_stop, &result_.stats,
                                                        p.allow_restarts, p.first_order, p.seed);
  solver::ProbeResult out;
  if (verdict == solver::SearchVerdict::kFound) {
    MEMPLAN_ASSIGN_OR_RETURN(Plan plan, plan_from_search(problem_, input_, search_->offsets()));
    out = {.verdict = solver::ProbeVerdict::kPlan, .arena = plan.arena};
    if (plan.arena < upper_) improve(std::move(plan), p.step);
  } else if (verdict == solver::SearchVerdict::kExhausted) {
    out = {.verdict = solver::ProbeVerdict::kRefuted, .next_capacity = search_->next_capacity()};
  }
  return out;
}

// The rounds' floor step beyond the search: the relaxed sub-problems of
// options.subproblem_bounds share its budget.
StatusOr<bool> Minimization::raise_floor(solver::CapacityBounds* b, int64_t budget,
                                         std::optional<solver::SubproblemBounds>& subproblems) {
  if (!subproblems || subproblems->live() == 0) return !search_stop_.reached();
  int64_t floor = b->floor();
  const int64_t share = budget / static_cast<int64_t>(subproblems->live());
  const bool still = subproblems->raise(&floor, b->ceiling(), capped(std::max<int64_t>(share, 1)), search_stop_,
                                        &result_.stats, /*allow_restarts=*/false);
  if (floor > b->floor()) b->refuted(floor - 1, floor);
  return still;
}

// 3. The capacity rounds (capacity_rounds.h): rounds with a doubling
//    node budget over the lower bound, the capacity just below the best
//    plan, bisection between them and a sweep across the gap, each probe a
//    bounded decision; plans lower the ceiling, complete refutations raise
//    the floor.
Status Minimization::capacity_rounds(int phase) {
  if (!running_ || lower_ >= upper_) return Status::Ok();
  std::optional<solver::SubproblemBounds> subproblems;
  if (options_.subproblem_bounds) subproblems.emplace(input_.items, input_.granule, options_);
  solver::CapacityBounds bounds(lower_, upper_, input_.granule);
  const solver::DecideFn probe_fn = [&](const solver::CapacityProbe& p) { return probe(p, bounds); };
  const solver::RaiseFloorFn raise = [&](solver::CapacityBounds* b, int64_t budget) {
    return raise_floor(b, budget, subproblems);
  };
  solver::RoundSchedule schedule{.base_budget = capped(2 * quick_budget_),
                                 .proof_budget = kProofBudget,
                                 .max_budget = options_.node_limit,
                                 .orders = search_->key_order_count(),
                                 .seeded_budget = capped(seeded_budget_),
                                 .seeded_share = options_.seeded_share,
                                 .seeded_floor_every = kSeededFloorEvery,
                                 .seeded_floor_budget = capped(kSeededFloorBudget),
                                 .seed = 1 + options_.seed * 7919 + static_cast<uint64_t>(phase) * 1000003};
  const auto phase_over = [&] { return search_stop_.reached(); };
  MEMPLAN_ASSIGN_OR_RETURN(const solver::RoundStats rounds,
                           solver::run_capacity_rounds(&bounds, schedule, probe_fn, phase_over, raise,
                                                       [&] { return seconds_since(start_); }));
  result_.stats.capacity_probes += rounds.probes;
  result_.stats.seeded_probes += rounds.seeded_probes;
  result_.stats.seeded_plans += rounds.seeded_plans;
  lower_ = std::max(lower_, bounds.floor());
  return sync();
}

// 4. Repair: bands at the top of the best plan with the time left. When
//    every band size failed before the deadline, the capacity rounds (step 3)
//    resumes with the repaired plan as ceiling, until half of the share
//    is left; then a second repair, and the rounds again to the end.
//    Returns whether the rounds resume.
StatusOr<bool> Minimization::repair(int phase) {
  if (!(phase < 2 && repair_ && best_ && lower_ < upper_ && !stop_.reached())) return false;
  ExactOptions band_options = options_;
  band_options.time_limit_seconds = std::max(1e-3, options_.time_limit_seconds - seconds_since(start_));
  // The bands have their own node budget (node_limit caps the search's).
  StatusOr<ExactResult> repaired =
      solver::repair_by_bands(problem_, *best_, options_.repair_band_buffers, kRepairBudget, band_options);
  if (!repaired.ok()) return repaired.status();
  result_.stats.nodes += repaired->stats.nodes;
  result_.stats.backtracks += repaired->stats.backtracks;
  result_.stats.decisions += repaired->stats.decisions;
  result_.stats.windows += repaired->stats.windows;
  result_.stats.windows_improved += repaired->stats.windows_improved;
  // windows_exhausted is not passed on: the search stopped early for the
  // repair, so more time could still have helped.
  if (repaired->plan && repaired->plan->arena < best_->arena) {
    improve(std::move(*repaired->plan), PlanSource::kRepair,
            seconds_since(start_) - repaired->stats.seconds + repaired->stats.seconds_to_best);
  }
  MEMPLAN_RETURN_IF_ERROR(sync());
  const bool resume = repaired->stats.windows_exhausted && running_;
  if (phase == 0) {
    // The rounds resume until half of the repair's share is left,
    // then the bands try again from the best plan it has by then.
    const double share = std::min(1.0, options_.repair_share);
    search_stop_.deadline = after_seconds(start_, (1 - share / 2) * options_.time_limit_seconds);
  } else {
    search_stop_ = stop_;
  }
  return resume;
}

Status Minimization::join_helpers() {
  if (helpers_) {
    helpers_->join();
    MEMPLAN_RETURN_IF_ERROR(sync());
    const solver::SeededHelpers::Stats h = helpers_->stats();
    result_.stats.nodes += h.nodes;
    result_.stats.seeded_probes += h.probes;
    result_.stats.helper_probes = h.probes;
    result_.stats.seeded_plans += h.plans;
  }
#if MEMPLAN_WITH_CADICAL
  if (sat_) {
    sat_->join();
    MEMPLAN_RETURN_IF_ERROR(sync());
    const solver::SatHelper::Stats h = sat_->stats();
    result_.stats.sat_decisions = h.decisions;
    result_.stats.sat_refutations = h.refutations;
  }
#endif
  return Status::Ok();
}

// 4 (of the top of this file). The verdict: optimal when the bounds met.
ExactResult Minimization::finish() {
  result_.plan = std::move(best_);
  result_.lower_bound = result_.plan ? std::min(lower_, result_.plan->arena) : lower_;
  result_.stats.cancelled = stop_.cancelled();
  if (result_.plan) {
    result_.outcome = result_.plan->arena <= lower_ ? ExactOutcome::kOptimal : ExactOutcome::kTimedOut;
  } else {
    // lower == INT64_MAX: refuted at every capacity (fixed buffers that clash).
    const bool refuted = lower_ == std::numeric_limits<int64_t>::max() || (cap_ && lower_ > *cap_);
    result_.outcome = refuted ? ExactOutcome::kInfeasible : ExactOutcome::kTimedOut;
  }
  result_.stats.seconds = seconds_since(start_);
  return std::move(result_);
}

}  // namespace

StatusOr<ExactResult> solve_minimize(const Problem& problem, const ExactOptions& options) {
  const Clock::time_point start = Clock::now();
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem));
  Minimization run(problem, options, start);
  MEMPLAN_RETURN_IF_ERROR(run.dive());
  run.bound_from_above();
  MEMPLAN_RETURN_IF_ERROR(run.improve_by_windows_step());
  run.prepare_search();
  run.start_helpers();
  MEMPLAN_RETURN_IF_ERROR(run.descending_probes());
  for (int phase = 0; phase < 3; ++phase) {
    MEMPLAN_RETURN_IF_ERROR(run.capacity_rounds(phase));
    MEMPLAN_ASSIGN_OR_RETURN(const bool resume, run.repair(phase));
    if (!resume) break;
  }
  MEMPLAN_RETURN_IF_ERROR(run.join_helpers());
  return run.finish();
}

}  // namespace memplan
