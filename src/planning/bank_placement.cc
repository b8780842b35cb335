// bank_placement.cc — the steps the bank strategies share (bank_placement.h).
#include "planning/bank_placement.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "core/buffer_name.h"
#include "memplan/planning.h"
#include "planners/offset_placement.h"

namespace memplan::banks {

StatusOr<Pins> resolve_pins(const Problem& problem, std::span<const Bank> banks) {
  Pins pins(problem.size());
  for (size_t i = 0; i < problem.size(); ++i) {
    const std::string& name = problem.buffers[i].bank;
    if (name.empty()) continue;
    pins[i] = find_bank(banks, name);
    if (!pins[i]) {
      std::string names;
      for (const Bank& b : banks) names += (names.empty() ? "" : ", ") + b.name;
      return NotFound(buffer_name(problem, i) + " is pinned to bank '" + name + "', which is not one of: " + names);
    }
  }
  return pins;
}

int64_t alignment_in(const Problem& problem, size_t i, const Bank& bank) {
  return std::max(problem.alignment_of(i), bank.alignment);
}

bool may_fit(const Problem& problem, size_t i, const Bank& bank) {
  const Buffer& b = problem.buffers[i];
  const int64_t top = (b.offset ? *b.offset : 0) + b.size;
  if (bank.capacity && top > *bank.capacity) return false;
  return !b.offset || *b.offset % alignment_in(problem, i, bank) == 0;
}

std::vector<double> priority_densities(const Problem& problem) {
  std::vector<double> density(problem.size());
  for (size_t i = 0; i < problem.size(); ++i) {
    const int64_t size = problem.buffers[i].size;
    density[i] = size == 0 ? std::numeric_limits<double>::infinity() : priority_of(problem.buffers[i]) / size;
  }
  return density;
}

void sort_densest_first(const Problem& problem, const std::vector<double>& density, std::vector<size_t>* buffers) {
  std::stable_sort(buffers->begin(), buffers->end(), [&](size_t x, size_t y) {
    if (density[x] != density[y]) return density[x] > density[y];
    return problem.buffers[x].size > problem.buffers[y].size;
  });
}

double priority_in(const Problem& problem, const std::vector<size_t>& members) {
  double sum = 0;
  for (const size_t i : members) sum += priority_of(problem.buffers[i]);
  return sum;
}

std::vector<size_t> fixed_of(const Problem& problem, const std::vector<size_t>& members) {
  std::vector<size_t> fixed;
  for (const size_t i : members) {
    if (problem.buffers[i].offset) fixed.push_back(i);
  }
  return fixed;
}

bool clashes_with_fixed(const Problem& problem, size_t i, const std::vector<size_t>& fixed) {
  const Buffer& a = problem.buffers[i];
  if (!a.offset || a.size == 0) return false;
  return std::any_of(fixed.begin(), fixed.end(), [&](size_t j) {
    const Buffer& b = problem.buffers[j];
    return b.size > 0 && a.lower < b.upper && b.lower < a.upper && *a.offset < *b.offset + b.size &&
           *b.offset < *a.offset + a.size;
  });
}

std::vector<size_t> choose_within_load(const Problem& problem, const TimeSlots& slots, const std::vector<size_t>& base,
                                       const std::vector<size_t>& pool, int64_t limit) {
  SlotLoad loads(slots.size());
  for (const size_t i : base) loads.add(slots.of(i), problem.buffers[i].size);
  std::vector<size_t> fixed = fixed_of(problem, base), chosen;
  for (const size_t i : pool) {
    const int64_t size = problem.buffers[i].size;
    if (loads.peak(slots.of(i)) + size > limit) continue;
    if (clashes_with_fixed(problem, i, fixed)) continue;
    loads.add(slots.of(i), size);
    chosen.push_back(i);
    if (problem.buffers[i].offset) fixed.push_back(i);
  }
  return chosen;
}

std::optional<int64_t> first_fit_beside(const Problem& problem, size_t i, const Bank& bank,
                                        const std::vector<ByteRange>& beside, std::optional<int64_t> capacity) {
  const Buffer& b = problem.buffers[i];
  int64_t offset = 0;
  if (b.offset) {
    offset = *b.offset;
    const bool clash = b.size > 0 && std::any_of(beside.begin(), beside.end(), [&](const ByteRange& r) {
                         return r.begin < offset + b.size && offset < r.end;
                       });
    if (clash) return std::nullopt;
  } else if (b.size > 0) {
    offset = choose_offset(beside, b.size, alignment_in(problem, i, bank), FitPolicy::kFirstFit, 0);
  }
  if (capacity && offset + b.size > *capacity) return std::nullopt;
  return offset;
}

std::optional<int64_t> first_fit_in(const Problem& problem, size_t i, const Bank& bank, const TimeSlots& slots,
                                    OccupancyIndex& taken, std::vector<ByteRange>* ranges,
                                    std::optional<int64_t> capacity) {
  taken.taken_during(slots.of(i), ranges);
  return first_fit_beside(problem, i, bank, *ranges, capacity ? capacity : bank.capacity);
}

Problem subproblem(const Problem& problem, const std::vector<size_t>& members, const Bank& bank) {
  Problem sub{.alignment = std::max(problem.alignment, bank.alignment)};
  sub.buffers.reserve(members.size());
  for (const size_t i : members) {
    sub.buffers.push_back(problem.buffers[i]);
    sub.buffers.back().bank.clear();
  }
  return sub;
}

StatusOr<Plan> plan_subset(const Problem& problem, const std::vector<size_t>& members, const Bank& bank,
                           const BankOptions& options) {
  const Problem sub = subproblem(problem, members, bank);
  MEMPLAN_ASSIGN_OR_RETURN(PlanningResult run, run_planner(options.planner, sub, options.plan));
  if (!run.plan) return Internal("planner '" + options.planner + "' returned no plan for bank '" + bank.name + "'");
  return std::move(*run.plan);
}

OccupancyIndex occupancy_of_bank(const Problem& problem, const TimeSlots& slots, const std::vector<int32_t>& bank_of,
                                 const std::vector<int64_t>& offsets, size_t k) {
  OccupancyIndex taken(slots.size());
  for (size_t i = 0; i < problem.size(); ++i) {
    if (bank_of[i] == static_cast<int32_t>(k)) {
      taken.occupy(slots.of(i), {offsets[i], offsets[i] + problem.buffers[i].size});
    }
  }
  return taken;
}

}  // namespace memplan::banks
