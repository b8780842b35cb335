// validate_banked.cc — the independent check of a banked plan (banks.h),
// beside the single-arena validator it delegates each bank to: bank indices,
// pins and arenas are judged here, each bank's buffers by validate().
#include <array>
#include <string>
#include <utility>

#include "core/buffer_name.h"
#include "memplan/banks.h"
#include "memplan/validate.h"

namespace memplan {
namespace {

BankViolation bank_violation_of(Violation v) {
  switch (v) {
    case Violation::kNegativeOffset:
      return BankViolation::kNegativeOffset;
    case Violation::kMisaligned:
      return BankViolation::kMisaligned;
    case Violation::kFixedOffsetMoved:
      return BankViolation::kFixedOffsetMoved;
    case Violation::kExceedsCapacity:
      return BankViolation::kExceedsCapacity;
    case Violation::kOverlap:
      return BankViolation::kOverlap;
    default:
      return BankViolation::kWrongBufferCount;  // cannot happen: bank_arena builds the plan
  }
}

// The oracle's message names buffers by their index in the bank's arena; say
// the problem's.
std::string with_problem_indices(const ValidationResult& v, const BankArena& arena) {
  std::string message = v.message;
  for (const size_t j : {v.first, v.second}) {
    if (j >= arena.buffers.size()) continue;
    const std::string id = "'" + arena.problem.buffers[j].id + "' (#";
    const std::string local = id + std::to_string(j) + ")";
    if (const size_t at = message.find(local); at != std::string::npos) {
      message.replace(at, local.size(), id + std::to_string(arena.buffers[j]) + ")");
    }
  }
  return message;
}

}  // namespace

std::string_view bank_violation_name(BankViolation v) {
  // Indexed by BankViolation, in the order of its declaration.
  static constexpr std::array<std::string_view, 10> kNames{
      "none",       "wrong buffer count", "no such bank",     "pin ignored", "negative offset",
      "misaligned", "fixed offset moved", "exceeds capacity", "overlap",     "wrong arena"};
  static_assert(static_cast<size_t>(BankViolation::kWrongArena) + 1 == kNames.size());
  const size_t i = static_cast<size_t>(v);
  return i < kNames.size() ? kNames[i] : "unknown";
}

BankValidationResult validate_banked(const Problem& problem, std::span<const Bank> banks, const BankedPlan& plan) {
  BankValidationResult r;
  auto fail = [&](BankViolation v, size_t i, std::string message) {
    r.violation = v;
    r.first = i;
    r.message = std::move(message);
    return r;
  };
  const size_t n = problem.size();
  if (plan.bank_of.size() != n || plan.offsets.size() != n || plan.arenas.size() != banks.size()) {
    return fail(BankViolation::kWrongBufferCount, 0,
                "the plan has " + std::to_string(plan.bank_of.size()) + " banks and " +
                    std::to_string(plan.offsets.size()) + " offsets for " + std::to_string(n) + " buffers, and " +
                    std::to_string(plan.arenas.size()) + " arenas for " + std::to_string(banks.size()) + " banks");
  }
  for (size_t i = 0; i < n; ++i) {
    const int32_t k = plan.bank_of[i];
    if (k < 0 || static_cast<size_t>(k) >= banks.size()) {
      return fail(BankViolation::kNoSuchBank, i,
                  buffer_name(problem, i) + " is in bank #" + std::to_string(k) + ", and there are " +
                      std::to_string(banks.size()) + " banks");
    }
    const std::string& pin = problem.buffers[i].bank;
    if (!pin.empty() && pin != banks[k].name) {
      r.bank = k;
      return fail(BankViolation::kPinIgnored, i,
                  buffer_name(problem, i) + " is pinned to bank '" + pin + "' but placed in '" + banks[k].name + "'");
    }
  }
  // Each bank's buffers are a single-arena plan of their own: the plan oracle
  // (validate.h) judges it, with the bank's capacity and alignment.
  for (size_t k = 0; k < banks.size(); ++k) {
    const BankArena arena = bank_arena(problem, banks, plan, k);
    const ValidationResult v = validate(arena.problem, arena.plan);
    r.bank = k;
    if (!v.ok()) {
      r.second = v.violation == Violation::kOverlap ? arena.buffers[v.second] : 0;
      r.tick = v.tick;
      return fail(bank_violation_of(v.violation), arena.buffers[v.first],
                  "bank '" + banks[k].name + "': " + with_problem_indices(v, arena));
    }
    if (plan.arenas[k] != arena.plan.arena) {
      return fail(BankViolation::kWrongArena, 0,
                  "bank '" + banks[k].name + "' has arena " + std::to_string(plan.arenas[k]) +
                      " but its buffers reach " + std::to_string(arena.plan.arena));
    }
  }
  r.bank = 0;
  return r;
}

}  // namespace memplan
