// bank_report.cc — what a banked plan serves (banks.h): per bank its
// buffers, bytes, arena and priority, and each buffer that missed a faster
// bank, with the reason.
#include "memplan/banks.h"
#include "planning/bank_placement.h"

namespace memplan {

std::string_view spill_reason_name(SpillReason reason) {
  switch (reason) {
    case SpillReason::kPinned:
      return "pinned elsewhere";
    case SpillReason::kTooLarge:
      return "larger than the bank";
    case SpillReason::kNoRoom:
      return "no room";
  }
  return "unknown";
}

void describe_banked_plan(const Problem& problem, std::span<const Bank> banks, BankedPlanningResult* result) {
  const BankedPlan& plan = result->plan;
  result->banks.assign(banks.size(), BankStats{});
  result->spills.clear();
  result->total_priority = 0;
  for (size_t k = 0; k < banks.size(); ++k) result->banks[k].arena = plan.arenas[k];
  for (size_t i = 0; i < problem.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    const size_t bank = static_cast<size_t>(plan.bank_of[i]);
    BankStats& s = result->banks[bank];
    ++s.buffers;
    s.bytes += b.size;
    s.priority += priority_of(b);
    result->total_priority += priority_of(b);
    for (size_t k = 0; k < bank; ++k) {
      SpillReason reason = SpillReason::kNoRoom;
      if (!b.bank.empty()) {
        reason = SpillReason::kPinned;
      } else if (!banks::may_fit(problem, i, banks[k])) {
        reason = SpillReason::kTooLarge;
      }
      result->spills.push_back({.buffer = i, .from_bank = k, .reason = reason});
      ++result->banks[k].spilled[static_cast<size_t>(reason)];
    }
  }
}

}  // namespace memplan
