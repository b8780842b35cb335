// banks.cc — the memory-bank model (banks.h): checking banks, a buffer's
// priority, a banked plan's arenas and one bank as an arena of its own.
#include "memplan/banks.h"

#include <algorithm>
#include <string>
#include <utility>

#include "memplan/plan.h"

namespace memplan {

Status check_banks(std::span<const Bank> banks) {
  if (banks.empty()) return InvalidArgument("no banks: give at least one");
  for (size_t k = 0; k < banks.size(); ++k) {
    const Bank& b = banks[k];
    if (b.name.empty()) return InvalidArgument("bank #" + std::to_string(k) + " has no name");
    for (size_t j = 0; j < k; ++j) {
      if (banks[j].name == b.name) return InvalidArgument("bank '" + b.name + "' is named twice");
    }
    if (b.capacity && *b.capacity < 0) return InvalidArgument("bank '" + b.name + "' has a negative capacity");
    if (!is_power_of_two(b.alignment)) {
      return InvalidArgument("bank '" + b.name + "': alignment " + std::to_string(b.alignment) +
                             " is not a power of two");
    }
  }
  return Status::Ok();
}

double priority_of(const Buffer& buffer) {
  if (buffer.priority) return static_cast<double>(*buffer.priority);
  return static_cast<double>(buffer.size) * static_cast<double>(buffer.upper - buffer.lower);
}

std::optional<size_t> find_bank(std::span<const Bank> banks, std::string_view name) {
  for (size_t k = 0; k < banks.size(); ++k) {
    if (banks[k].name == name) return k;
  }
  return std::nullopt;
}

BankedPlan make_banked_plan(const Problem& problem, size_t bank_count, std::vector<int32_t> bank_of,
                            std::vector<int64_t> offsets) {
  BankedPlan plan{
      .bank_of = std::move(bank_of), .offsets = std::move(offsets), .arenas = std::vector<int64_t>(bank_count, 0)};
  for (size_t i = 0; i < problem.size() && i < plan.bank_of.size() && i < plan.offsets.size(); ++i) {
    const int32_t k = plan.bank_of[i];
    if (k < 0 || static_cast<size_t>(k) >= bank_count) continue;
    plan.arenas[k] = std::max(plan.arenas[k], plan.offsets[i] + problem.buffers[i].size);
  }
  return plan;
}

BankArena bank_arena(const Problem& problem, std::span<const Bank> banks, const BankedPlan& plan, size_t k) {
  BankArena out;
  out.problem.capacity = banks[k].capacity;
  out.problem.alignment = std::max(problem.alignment, banks[k].alignment);
  std::vector<int64_t> offsets;
  for (size_t i = 0; i < problem.size(); ++i) {
    if (plan.bank_of[i] != static_cast<int32_t>(k)) continue;
    out.problem.buffers.push_back(problem.buffers[i]);
    out.buffers.push_back(i);
    offsets.push_back(plan.offsets[i]);
  }
  out.plan = make_plan(out.problem, std::move(offsets));
  return out;
}

}  // namespace memplan
