// banks.cc — plan_banks (banks.h), the one call of the memory-bank job: the
// input checks, the strategies' names and budget, the choice between the
// strategies' plans, and the validation of the plan it returns. The
// strategies are bank_greedy_spill.cc, bank_by_priority.cc and
// bank_exact.cc; the report bank_report.cc.
#include "memplan/banks.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/buffer_name.h"
#include "memplan/bounds.h"
#include "memplan/units.h"
#include "planning/bank_strategies.h"

namespace memplan {

namespace {

constexpr std::array<BankStrategyInfo, 4> kBankStrategies{{
    {BankStrategy::kBest, "best", "best", "the better of greedy and priority (the default)"},
    {BankStrategy::kGreedySpill, "greedy", "greedy spill",
     "ExecuTorch's spill: largest first, each into the first bank where first fit keeps it within capacity"},
    {BankStrategy::kByPriority, "priority", "by priority",
     "the densest priority first, each bank's set planned with the single-arena planner"},
    {BankStrategy::kExact, "exact", "exact",
     "best, then the exact decision solver moves more priority into each bounded bank, fastest first, within "
     "the time limit (1 s when unset, no search to speak of at 0); never behind best"},
}};

const BankStrategyInfo& info_of(BankStrategy strategy) {
  for (const BankStrategyInfo& info : kBankStrategies) {
    if (info.strategy == strategy) return info;
  }
  return kBankStrategies[0];
}

}  // namespace

std::span<const BankStrategyInfo> bank_strategies() { return kBankStrategies; }

std::optional<BankStrategy> bank_strategy_from_option(std::string_view option) {
  for (const BankStrategyInfo& info : kBankStrategies) {
    if (info.option == option) return info.strategy;
  }
  return std::nullopt;
}

std::string bank_strategy_options() {
  std::string out;
  for (const BankStrategyInfo& info : kBankStrategies) out += (out.empty() ? "" : ", ") + std::string(info.option);
  return out;
}

std::string_view bank_strategy_option(BankStrategy strategy) { return info_of(strategy).option; }

std::string_view bank_strategy_name(BankStrategy strategy) { return info_of(strategy).name; }

ExactBankBudget resolve_exact_budget(const BankOptions& options) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  if (!options.time_limit_seconds) {
    if (options.exact_node_limit > 0) return {.seconds = kNone, .node_limit = options.exact_node_limit};
    return {.seconds = kDefaultBankExactSeconds, .node_limit = 0};
  }
  if (*options.time_limit_seconds <= 0) {
    return {.seconds = kNone, .node_limit = options.exact_node_limit > 0 ? options.exact_node_limit : 1};
  }
  return {.seconds = *options.time_limit_seconds, .node_limit = options.exact_node_limit};
}

namespace {

using banks::Pins;

Status check_options(const BankOptions& options) {
  if (options.time_limit_seconds && !(*options.time_limit_seconds >= 0)) {
    return InvalidArgument("time limit: " + std::to_string(*options.time_limit_seconds) + " s is negative");
  }
  if (options.exact_node_limit < 0) {
    return InvalidArgument("node limit: " + std::to_string(options.exact_node_limit) + " is negative");
  }
  return Status::Ok();
}

// The bytes live at the busiest tick among the buffers pinned to each bank
// fit its capacity, and every unpinned buffer fits some bank.
Status check_pins_fit(const Problem& problem, std::span<const Bank> banks, const Pins& pins) {
  for (size_t k = 0; k < banks.size(); ++k) {
    if (!banks[k].capacity) continue;
    std::vector<int64_t> lower, upper, sizes;
    for (size_t i = 0; i < problem.size(); ++i) {
      if (pins[i] != k) continue;
      const Buffer& b = problem.buffers[i];
      if (!banks::may_fit(problem, i, banks[k])) {
        return Infeasible(buffer_name(problem, i) + " is pinned to bank '" + banks[k].name + "' but needs " +
                          format_bytes(b.offset.value_or(0) + b.size) + (b.offset ? " at its fixed offset" : "") +
                          ", and the bank holds " + format_bytes(*banks[k].capacity) +
                          (b.offset ? " (or its fixed offset is misaligned for it)" : ""));
      }
      lower.push_back(b.lower);
      upper.push_back(b.upper);
      sizes.push_back(b.size);
    }
    const int64_t needed = load(lower, upper, sizes);
    if (needed > *banks[k].capacity) {
      return Infeasible("the " + std::to_string(sizes.size()) + " buffers pinned to bank '" + banks[k].name +
                        "' need at least " + format_bytes(needed) + " (the most live at once), and it holds " +
                        format_bytes(*banks[k].capacity));
    }
  }
  for (size_t i = 0; i < problem.size(); ++i) {
    if (pins[i]) continue;
    const bool fits_somewhere = std::any_of(banks.begin(), banks.end(), [&](const Bank& b) {
      return !b.capacity || problem.buffers[i].size <= *b.capacity;
    });
    if (!fits_somewhere) {
      return Infeasible(buffer_name(problem, i) + " (" + format_bytes(problem.buffers[i].size) +
                        ") is larger than every bank");
    }
  }
  return Status::Ok();
}

// Whether plan x beats plan y: more priority in bank 0, then 1, ...; then the
// smaller total arena.
bool better(const BankedPlanningResult& x, const BankedPlanningResult& y) {
  for (size_t k = 0; k < x.banks.size(); ++k) {
    if (x.banks[k].priority != y.banks[k].priority) return x.banks[k].priority > y.banks[k].priority;
  }
  int64_t ax = 0, ay = 0;
  for (size_t k = 0; k < x.banks.size(); ++k) {
    ax += x.banks[k].arena;
    ay += y.banks[k].arena;
  }
  return ax < ay;
}

BankedPlanningResult described(const Problem& problem, std::span<const Bank> banks, BankedPlan plan,
                               BankStrategy strategy) {
  BankedPlanningResult result{.plan = std::move(plan), .strategy = strategy};
  describe_banked_plan(problem, banks, &result);
  return result;
}

// Strategies (a) and (b), as options.strategy says (kBest: the better).
StatusOr<BankedPlanningResult> plan_heuristically(const Problem& problem, std::span<const Bank> banks, const Pins& pins,
                                                  const BankOptions& options) {
  std::optional<BankedPlanningResult> greedy;
  Status greedy_status;
  if (options.strategy != BankStrategy::kByPriority) {
    StatusOr<BankedPlan> plan = banks::greedy_spill(problem, banks, pins);
    if (plan.ok()) {
      greedy = described(problem, banks, std::move(*plan), BankStrategy::kGreedySpill);
      greedy->greedy_priority = greedy->banks[0].priority;
    } else {
      greedy_status = plan.status();
    }
    if (options.strategy == BankStrategy::kGreedySpill) {
      if (!greedy) return greedy_status;
      return std::move(*greedy);
    }
  }
  StatusOr<BankedPlan> plan = banks::by_priority(problem, banks, pins, options);
  if (!plan.ok()) {
    if (greedy) return std::move(*greedy);
    return plan.status();
  }
  BankedPlanningResult result = described(problem, banks, std::move(*plan), BankStrategy::kByPriority);
  if (greedy) {
    result.greedy_priority = greedy->greedy_priority;
    if (better(*greedy, result)) return std::move(*greedy);
  }
  return result;
}

// Exact mode: the heuristics' plan, then the exact decision solver per bank;
// the better of the two.
StatusOr<BankedPlanningResult> plan_exactly(const Problem& problem, std::span<const Bank> banks, const Pins& pins,
                                            const BankOptions& options) {
  BankOptions heuristics = options;
  heuristics.strategy = BankStrategy::kBest;
  MEMPLAN_ASSIGN_OR_RETURN(BankedPlanningResult best, plan_heuristically(problem, banks, pins, heuristics));
  best.heuristic_priority = best.banks[0].priority;
  banks::ExactCounts counts;
  BankedPlan plan =
      banks::improve_exactly(problem, banks, pins, options, resolve_exact_budget(options), best.plan, &counts);
  best.exact_decisions = counts.decisions;
  best.exact_fits = counts.fits;
  BankedPlanningResult result = described(problem, banks, std::move(plan), BankStrategy::kExact);
  result.greedy_priority = best.greedy_priority;
  result.heuristic_priority = best.heuristic_priority;
  result.exact_decisions = best.exact_decisions;
  result.exact_fits = best.exact_fits;
  if (!better(result, best)) return best;
  return result;
}

double bank_seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

StatusOr<BankedPlanningResult> plan_banks(const Problem& problem, std::span<const Bank> banks,
                                          const BankOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(check_options(options));
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem, FixedOffsetScope::kPerBank));
  MEMPLAN_RETURN_IF_ERROR(check_banks(banks));
  MEMPLAN_ASSIGN_OR_RETURN(const Pins pins, banks::resolve_pins(problem, banks));
  MEMPLAN_RETURN_IF_ERROR(check_pins_fit(problem, banks, pins));
  // The time limit bounds each run of the planner outside exact mode; in
  // exact mode it is the decisions' budget alone.
  BankOptions effective = options;
  if (options.strategy != BankStrategy::kExact && options.time_limit_seconds) {
    effective.plan.time_limit_seconds = *options.time_limit_seconds;
  }
  const auto start = std::chrono::steady_clock::now();
  MEMPLAN_ASSIGN_OR_RETURN(BankedPlanningResult result, options.strategy == BankStrategy::kExact
                                                            ? plan_exactly(problem, banks, pins, effective)
                                                            : plan_heuristically(problem, banks, pins, effective));
  result.planning_seconds = bank_seconds_since(start);
  const auto validation_start = std::chrono::steady_clock::now();
  const BankValidationResult check = validate_banked(problem, banks, result.plan);
  result.validation_seconds = bank_seconds_since(validation_start);
  if (!check.ok()) {
    return Internal("the banked plan made by " + std::string(bank_strategy_name(result.strategy)) +
                    " is invalid (a bug): " + check.message);
  }
  return result;
}

}  // namespace memplan
