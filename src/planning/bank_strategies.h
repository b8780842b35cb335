// bank_strategies.h — the three ways plan_banks fills the banks (banks.h):
// (a) greedy spill, (b) by priority, and exact mode over a finished plan.
// Each returns a plan that plan_banks describes, compares and validates.
// Internal to src/planning/.
#pragma once

#include <span>

#include "memplan/banks.h"
#include "planning/bank_placement.h"

namespace memplan::banks {

// (a) Greedy spill. Fails (kCapacityExceeded) when a buffer finds no bank.
StatusOr<BankedPlan> greedy_spill(const Problem& problem, std::span<const Bank> banks, const Pins& pins);

// (b) By priority.
StatusOr<BankedPlan> by_priority(const Problem& problem, std::span<const Bank> banks, const Pins& pins,
                                 const BankOptions& options);

// What exact mode spent: the decisions run and how many found a plan.
struct ExactCounts {
  int64_t decisions = 0;
  int64_t fits = 0;
};

// Exact mode over every bank with a capacity but the last, starting from a
// valid banked plan, within `budget`; the banks whose buffers changed are
// planned again when the named planner packs what they hold tighter.
BankedPlan improve_exactly(const Problem& problem, std::span<const Bank> banks, const Pins& pins,
                           const BankOptions& options, const ExactBankBudget& budget, const BankedPlan& start,
                           ExactCounts* counts);

}  // namespace memplan::banks
