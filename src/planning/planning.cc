// planning.cc — run_planner (planning.h): the default planner's path
// (heuristics, then the exact solver for a capacity or a time limit), the
// `exact` planner, validation, and plan_with over them.
//
// This layer sits above the heuristics (src/planners) and the solvers
// (src/solver); neither of them calls into it.
#include "memplan/planning.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "memplan/bounds.h"
#include "memplan/heuristics.h"
#include "memplan/units.h"
#include "memplan/validate.h"
#include "planning/validation_reserve.h"

namespace memplan {
namespace {

using Clock = std::chrono::steady_clock;

// The exact solver's budget when the caller gives no time limit: for the
// `exact` planner, and for deciding a capacity the heuristics did not fit.
constexpr double kDefaultExactSeconds = 10.0;
// The exact improvement of a heuristic plan starts only with at least this
// share of the time limit left: entering it costs a validation and an index
// of the start plan, which on large problems would overrun a small remainder.
constexpr double kMinExactShare = 0.25;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

bool is_cancelled(const PlanOptions& options) {
  return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed);
}

std::string bytes_text(int64_t bytes) { return std::to_string(bytes) + " B (" + format_bytes(bytes) + ")"; }

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

// The largest lower bound that needs no search: the load, and the top of
// every buffer with a fixed offset. `why` says which one it is.
int64_t simple_lower_bound(const Problem& problem, std::string* why) {
  const Bounds bounds = compute_bounds(problem, /*with_positional_maximums=*/false);
  int64_t bound = bounds.load;
  *why = "the load: the buffers live at tick " + std::to_string(bounds.load_tick) + " need " + bytes_text(bounds.load);
  for (const Buffer& b : problem.buffers) {
    if (b.offset && *b.offset + b.size > bound) {
      bound = *b.offset + b.size;
      *why = "the top of buffer '" + b.id + "' (fixed at offset " + std::to_string(*b.offset) + ", it ends at " +
             bytes_text(bound) + ")";
    }
  }
  return bound;
}

ExactOptions exact_options_for(const PlanOptions& options, double seconds) {
  ExactOptions exact;
  exact.time_limit_seconds = seconds;
  exact.cancel = options.cancel;
  exact.seed = options.seed;
  exact.threads = plan_threads(options);
  return exact;
}

// Moves an exact result's bound and statistics into `result`, and its plan
// too when `take_plan` (else the plan found before stays the best).
void take_exact(ExactResult solved, PlanningResult* result, bool take_plan = true) {
  result->lower_bound = std::max(result->lower_bound, solved.lower_bound);
  if (solved.plan && take_plan) {
    result->plan = std::move(solved.plan);
    result->made_by = "exact";
  }
  solved.plan.reset();
  result->exact = std::move(solved);
}

// The `exact` planner: a decision at the capacity, else minimisation.
Status run_exact(const Problem& problem, const PlanOptions& options, Clock::time_point start, PlanningResult* result) {
  const double seconds = options.time_limit_seconds > 0 ? options.time_limit_seconds : kDefaultExactSeconds;
  const ExactOptions exact = exact_options_for(options, seconds);
  StatusOr<ExactResult> solved =
      problem.capacity ? solve_decision(problem, *problem.capacity, exact) : solve_minimize(problem, exact);
  MEMPLAN_RETURN_IF_ERROR(solved.status());
  const ExactOutcome outcome = solved->outcome;
  const int64_t proven = solved->lower_bound;
  const int64_t nodes = solved->stats.nodes;
  take_exact(std::move(*solved), result);
  if (outcome == ExactOutcome::kInfeasible) {
    result->reason = problem.capacity
                         ? "the exact search proved that every plan needs at least " + bytes_text(proven) + " (" +
                               std::to_string(nodes) + " nodes, " + seconds_text(seconds_since(start)) + ")"
                         : "the fixed buffers conflict: no plan places them all";
  }
  return Status();
}

// The default planner: heuristics, then the exact solver (see planning.h).
Status run_default(const Problem& problem, const PlanOptions& options, Clock::time_point start,
                   PlanningResult* result) {
  Problem uncapped = problem;
  uncapped.capacity.reset();
  StatusOr<Plan> heuristic = plan_heuristics(uncapped, options);
  if (!heuristic.ok() && heuristic.status().code() != StatusCode::kCancelled) return heuristic.status();
  if (heuristic.ok()) {
    result->plan = std::move(*heuristic);
    result->made_by = "heuristics";
  }
  if (is_cancelled(options)) return Status();

  const double left = options.time_limit_seconds - seconds_since(start);
  if (problem.capacity) {
    const int64_t capacity = *problem.capacity;
    if (result->plan && result->plan->arena <= capacity) return Status();
    // (A capacity below the simple bound never gets here: run_planner refutes it.)
    const double seconds = options.time_limit_seconds > 0 ? left : kDefaultExactSeconds - seconds_since(start);
    if (seconds <= 0) return Status();
    StatusOr<ExactResult> solved = solve_decision(problem, capacity, exact_options_for(options, seconds));
    MEMPLAN_RETURN_IF_ERROR(solved.status());
    const bool refuted = solved->outcome == ExactOutcome::kInfeasible;
    const int64_t proven = solved->lower_bound;
    const int64_t nodes = solved->stats.nodes;
    // Without a plan or a proof, the heuristic plan stays the best found.
    take_exact(std::move(solved).value(), result, /*take_plan=*/true);
    if (refuted) {
      result->plan.reset();
      result->reason = "the exact search proved that every plan needs at least " + bytes_text(proven) + " (" +
                       std::to_string(nodes) + " nodes, " + seconds_text(seconds_since(start)) + ")";
    }
    return Status();
  }
  if (!result->plan || result->plan->arena <= result->load) return Status();
  // No capacity: an explicit time limit buys the exact solver's improvement
  // with the time left; without one, the default search's budget does, on
  // problems small enough for a short search to help.
  double seconds = 0;
  if (options.time_limit_seconds > 0) {
    if (left < kMinExactShare * options.time_limit_seconds) return Status();
    seconds = left;
  } else if (options.default_search_seconds > 0 && problem.size() <= kDefaultSearchMaxBuffers) {
    seconds = options.default_search_seconds;
    result->default_search_seconds = seconds;
  } else {
    return Status();
  }
  ExactOptions exact = exact_options_for(options, seconds);
  exact.capacity = result->plan->arena;
  exact.start_plan = &*result->plan;  // improved by windows on large problems
  StatusOr<ExactResult> solved = solve_minimize(problem, exact);
  if (!solved.ok()) return Status();  // the heuristic plan stands
  const bool better = solved->plan && solved->plan->arena < result->plan->arena;
  take_exact(std::move(solved).value(), result, better);
  return Status();
}

}  // namespace

int32_t plan_threads(const PlanOptions& options) {
  if (options.threads != 0) return std::max(options.threads, 1);
  const unsigned hardware = std::thread::hardware_concurrency();  // 0: unknown
  return static_cast<int32_t>(std::clamp<unsigned>(hardware, 1, kMaxPlanThreads));
}

std::string_view plan_verdict_name(PlanVerdict verdict) {
  switch (verdict) {
    case PlanVerdict::kPlanned:
      return "planned";
    case PlanVerdict::kFits:
      return "fits";
    case PlanVerdict::kDoesNotFit:
      return "does not fit";
    case PlanVerdict::kUnknown:
      return "unknown";
  }
  return "?";
}

std::string_view plan_ending_name(PlanEnding ending) {
  switch (ending) {
    case PlanEnding::kOptimal:
      return "optimal";
    case PlanEnding::kFits:
      return "fits";
    case PlanEnding::kDoesNotFit:
      return "does not fit";
    case PlanEnding::kBestAtTimeLimit:
      return "best found (time limit)";
    case PlanEnding::kBestAtSearchBudget:
      return "best found (default search budget)";
    case PlanEnding::kBestWindowsExhausted:
      return "best found (search exhausted its windows)";
    case PlanEnding::kBestHeuristic:
      return "best found (heuristics)";
    case PlanEnding::kCancelled:
      return "cancelled";
    case PlanEnding::kUnknown:
      return "unknown";
  }
  return "?";
}

namespace {

// What a finished run ended in (planning.h), from its verdict, plan, bound and
// the exact solver's statistics.
PlanEnding ending_of(const PlanningResult& result) {
  if (result.verdict == PlanVerdict::kDoesNotFit) return PlanEnding::kDoesNotFit;
  if (result.plan && result.plan->arena <= result.lower_bound) return PlanEnding::kOptimal;
  if (result.cancelled) return PlanEnding::kCancelled;
  if (result.verdict == PlanVerdict::kFits) return PlanEnding::kFits;
  if (result.verdict == PlanVerdict::kUnknown || !result.plan) return PlanEnding::kUnknown;
  // Planned without a capacity and not proven optimal: why did it stop?
  if (!result.exact) return PlanEnding::kBestHeuristic;
  if (result.exact->stats.windows_exhausted) return PlanEnding::kBestWindowsExhausted;
  if (result.default_search_seconds > 0) return PlanEnding::kBestAtSearchBudget;
  return PlanEnding::kBestAtTimeLimit;
}

// Sets the ending and returns the result (every exit of run_planner).
PlanningResult with_ending(PlanningResult result) {
  result.ending = ending_of(result);
  return result;
}

// Steps 1-3 of run_planner (planning.h) for one named planner.
StatusOr<PlanningResult> run_named(std::string_view name, const Problem& problem, const PlanOptions& options) {
  const PlannerInfo* planner = find_planner(name);
  if (planner == nullptr) return NotFound("no planner named '" + std::string(name) + "' (see `memplan planners`)");
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem));

  PlanningResult result;
  result.planner = std::string(planner->name);
  result.load = load(problem);
  result.lower_bound = result.load;
  const Clock::time_point start = Clock::now();
  // The time limit covers planning and validation: the validator (n log n)
  // gets a tenth of an explicit limit, more on large problems (about 1.5 us
  // a buffer where many are live at once), at most half of it.
  // A capacity below the bound that needs no search is refuted before any
  // planner runs, whichever was named.
  if (problem.capacity) {
    std::string why;
    if (*problem.capacity < simple_lower_bound(problem, &why)) {
      result.verdict = PlanVerdict::kDoesNotFit;
      result.reason = "capacity " + bytes_text(*problem.capacity) + " is below " + why;
      return with_ending(std::move(result));
    }
  }
  PlanOptions planning = options;
  planning.time_limit_seconds =
      options.time_limit_seconds - validation_reserve_seconds(options.time_limit_seconds, problem.size());
  if (name == kDefaultPlanner) {
    MEMPLAN_RETURN_IF_ERROR(run_default(problem, planning, start, &result));
  } else if (name == "exact") {
    MEMPLAN_RETURN_IF_ERROR(run_exact(problem, planning, start, &result));
  } else {
    StatusOr<Plan> plan = planner->plan(problem, planning);
    if (plan.ok()) {
      result.plan = std::move(*plan);
      result.made_by = result.planner;
    } else if (plan.status().code() == StatusCode::kInfeasible) {
      result.reason = plan.status().message();  // the planner's proof (mip)
      result.verdict = PlanVerdict::kDoesNotFit;
    } else if (plan.status().code() != StatusCode::kCancelled) {
      return plan.status();
    }
  }
  result.cancelled = is_cancelled(options);
  result.planning_seconds = seconds_since(start);

  const Clock::time_point validation_start = Clock::now();
  if (result.plan) {
    Problem uncapped = problem;  // the capacity is judged below, with a verdict
    uncapped.capacity.reset();
    const ValidationResult check = validate(uncapped, *result.plan);
    if (!check.ok()) {
      return Internal("planner '" + result.planner + "' made an invalid plan: " + check.message +
                      " (please report this)");
    }
  }
  result.validation_seconds = seconds_since(validation_start);

  if (!problem.capacity) {
    result.verdict = result.plan ? PlanVerdict::kPlanned : PlanVerdict::kUnknown;
    if (!result.plan && result.reason.empty()) result.reason = "no plan was found before the work was cancelled";
    if (!result.plan && !result.cancelled && result.exact && result.exact->outcome == ExactOutcome::kInfeasible) {
      result.verdict = PlanVerdict::kDoesNotFit;
    }
    return with_ending(std::move(result));
  }
  const int64_t capacity = *problem.capacity;
  if (result.plan && result.plan->arena <= capacity) {
    result.verdict = PlanVerdict::kFits;
    result.reason.clear();
    return with_ending(std::move(result));
  }
  if (!result.reason.empty() && !result.cancelled && (result.verdict == PlanVerdict::kDoesNotFit || !result.plan)) {
    result.verdict = PlanVerdict::kDoesNotFit;  // a proof was given
    result.plan.reset();
    return with_ending(std::move(result));
  }
  result.verdict = PlanVerdict::kUnknown;
  result.reason =
      (result.cancelled ? "cancelled after " : "unknown after ") + seconds_text(result.planning_seconds) + ": " +
      (result.plan ? "the best plan found needs " + bytes_text(result.plan->arena) : "no plan found") +
      ", above the capacity of " + bytes_text(capacity) + "; proven lower bound " + bytes_text(result.lower_bound) +
      (name == "exact" || name == kDefaultPlanner ? "" : " (a heuristic result, not a proof that no plan fits)");
  return with_ending(std::move(result));
}

// GoodEnough: the arena in whole units is at most the load's units plus the tolerated share of them.
bool is_good_enough(int64_t arena, int64_t load_bytes, const GoodEnough& good) {
  const auto unit = static_cast<uint64_t>(std::max<int64_t>(good.unit_bytes, 1));
  auto units = [unit](int64_t bytes) { return (static_cast<uint64_t>(std::max<int64_t>(bytes, 0)) + unit - 1) / unit; };
  const uint64_t floor_units = units(load_bytes);
  const auto tolerated = static_cast<uint64_t>(static_cast<double>(floor_units) * good.tolerance);
  return units(arena) <= floor_units + tolerated;
}

bool has_plan_in_capacity(const PlanningResult& r) {
  return r.plan && (r.verdict == PlanVerdict::kPlanned || r.verdict == PlanVerdict::kFits);
}

}  // namespace

double PlanningBudget::allowance(double limit_seconds, double share) {
  if (share >= 1 || limit_seconds <= 0) return limit_seconds;  // no budget; 0: the planner's own default
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  int64_t first = first_ns_.load(std::memory_order_relaxed);
  if (first == 0) {
    int64_t expected = 0;  // on failure: the clock another thread started
    first = first_ns_.compare_exchange_strong(expected, now, std::memory_order_relaxed) ? now : expected;
  }
  const double earned = share * 1e-9 * static_cast<double>(now - first) + limit_seconds;
  const double left = earned - 1e-9 * static_cast<double>(spent_ns_.load(std::memory_order_relaxed));
  return std::clamp(left, 0.0, limit_seconds);
}

void PlanningBudget::spend(int64_t ns) { spent_ns_.fetch_add(ns, std::memory_order_relaxed); }

StatusOr<PlanningResult> run_planner(std::string_view name, const Problem& problem, const PlanOptions& options) {
  const Clock::time_point start = Clock::now();
  struct Charge {  // the whole call's wall time, to the budget
    PlanningBudget* budget;
    Clock::time_point start;
    ~Charge() {
      if (budget) budget->spend(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
    }
  } charge{options.budget, start};
  PlanOptions run = options;
  run.good_enough.reset();
  run.budget = nullptr;
  if (options.budget)
    run.time_limit_seconds = options.budget->allowance(options.time_limit_seconds, options.budget_share);
  if (!options.good_enough || name == "greedy_by_size") return run_named(name, problem, run);

  // Good enough (planning.h): the quick plan first.
  const GoodEnough& good = *options.good_enough;
  StatusOr<PlanningResult> quick = run_named("greedy_by_size", problem, PlanOptions{});
  const bool have_quick = quick.ok() && has_plan_in_capacity(*quick);
  auto keep_quick = [&]() -> StatusOr<PlanningResult> {
    PlanningResult r = std::move(quick).value();
    r.planner = std::string(name);
    r.made_by = "greedy_by_size";
    r.planning_seconds = seconds_since(start) - r.validation_seconds;
    return r;
  };
  if (have_quick && is_good_enough(quick->plan->arena, quick->load, good)) return keep_quick();
  if (have_quick && options.time_limit_seconds > 0 && run.time_limit_seconds < good.shortest_run_seconds) {
    return keep_quick();
  }
  StatusOr<PlanningResult> named = run_named(name, problem, run);
  if (!have_quick) return named;
  if (named.ok() && has_plan_in_capacity(*named) && !named->cancelled && named->plan->arena < quick->plan->arena) {
    return named;
  }
  return keep_quick();
}

StatusOr<Plan> plan_with(std::string_view name, const Problem& problem, const PlanOptions& options) {
  MEMPLAN_ASSIGN_OR_RETURN(PlanningResult result, run_planner(name, problem, options));
  return plan_or_status(name, problem, std::move(result));
}

StatusOr<Plan> plan_or_status(std::string_view name, const Problem& problem, PlanningResult result) {
  if (result.cancelled) return Cancelled("planner '" + std::string(name) + "' was cancelled");
  switch (result.verdict) {
    case PlanVerdict::kPlanned:
    case PlanVerdict::kFits:
      return std::move(*result.plan);
    case PlanVerdict::kDoesNotFit:
      return Infeasible(result.reason);
    case PlanVerdict::kUnknown:
      break;
  }
  if (!problem.capacity) return DeadlineExceeded(result.reason);
  return CapacityExceeded(result.reason);
}

// The registry's entry points for the two planners this layer runs itself.
StatusOr<Plan> plan_default(const Problem& problem, const PlanOptions& options) {
  return plan_with(kDefaultPlanner, problem, options);
}
StatusOr<Plan> plan_exact(const Problem& problem, const PlanOptions& options) {
  return plan_with("exact", problem, options);
}

}  // namespace memplan
