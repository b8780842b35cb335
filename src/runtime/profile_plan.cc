// profile_plan.cc — an agreed profile becomes a plan (profile.h,
// plan_profile): the problem of its planned requests, laid out as the
// adapter's BlockLayout says and coloured, planned by one run_planner call.
//
// Note [Address colouring]. With ReplayConfig::color_span_bytes = S > 0,
// the k-th planned block of at least 4 KiB starts (k * 37 mod S/64) * 64
// bytes (rounded down to its alignment) above its planned offset, so that
// slab blocks do not all share their address bits below the page size (4K
// aliasing between streams); the buffer grows by that shift, so the plan
// stays valid, at a cost of < S bytes per block. Record:
// docs/history/runtime.md, "The learner's rules: the record".
//
// Note [Aligned large blocks]. A planned block of at least
// kLargeBlockBytes (4 KiB) starts at a multiple of kLargeBlockAlignment
// (64 B, a cache line) whatever alignment its request asked for: the buffer
// is planned at that alignment and its header is that alignment's
// (BlockLayout::header_bytes), so offset + header + colour stays a multiple
// of it. Vector kernels over 16 B-aligned operands split loads across cache
// lines: over 256 KiB tensors torch's add ran 1.14-1.24x and its Adam step
// up to 1.12x slower than over 64 B-aligned ones (operand_placement_torch.py;
// docs/runtime.md, "Where blocks start"). Cost: under 96 B per large block
// that asked for 16 B (libtorch already asks for 64).
//
// Note [Page-optimal plans]. A slab is committed in whole pages, so
// greedy_by_size's plan (milliseconds) is kept, and the configured planner
// not run, when its arena takes at most ReplayConfig::plan_tolerance (1%)
// more pages than the load: run_planner's good-enough stop (GoodEnough,
// planning.h) with one page as its unit. Record: docs/history/runtime.md,
// "The learner's rules: the record".
//
// Note [One validation rule]. A plan is served only as run_planner returns
// it: validated there, once, whichever planner made it; no runtime file
// validates plans (a slab block handed out under an invalid plan would
// share bytes with another live block).
//
// Note [Planning budget]. Planning may take one full run
// (ReplayConfig::plan_time_limit_seconds) plus ReplayConfig::plan_time_share
// (5%) of the time since the process's first plan; past that a plan gets
// what is left, and below 2 ms greedy_by_size's plan alone
// (PlanningBudget, GoodEnough::shortest_run_seconds in planning.h). One
// budget per process: every unit of every allocator draws on it, from any
// thread. Record: docs/history/runtime.md, "Why planning has a budget".
#include <algorithm>
#include <string>
#include <utility>

#include "memplan/planner.h"
#include "memplan/planning.h"
#include "memplan/validate.h"
#include "runtime/os/os_memory.h"
#include "runtime/planner_thread.h"
#include "runtime/profile.h"

namespace memplan::runtime {
namespace {

PlanningBudget& process_planning_budget() {
  static PlanningBudget budget;
  return budget;
}

// Note [Aligned large blocks]: the alignment a request's block is planned at.
uint64_t block_alignment(const Request& r) {
  return r.size >= kLargeBlockBytes ? std::max<uint64_t>(r.alignment, kLargeBlockAlignment) : r.alignment;
}

// Note [Address colouring]: the shift of the k-th planned block.
uint64_t color_shift(const ReplayConfig& config, size_t k, uint64_t size, uint64_t alignment) {
  if (config.color_span_bytes <= 0 || size < 4096) return 0;
  const uint64_t slots = static_cast<uint64_t>(config.color_span_bytes) / 64;
  const uint64_t shift = (static_cast<uint64_t>(k) * 37 % slots) * 64;
  return shift / alignment * alignment;
}

}  // namespace

PlanOptions plan_options(const ReplayConfig& config, PlanningBudget* budget) {
  PlanOptions options;
  options.time_limit_seconds = config.plan_time_limit_seconds;
  options.budget = budget ? budget : &process_planning_budget();
  options.budget_share = config.plan_time_share;
  options.cancel = &planning_cancelled_at_exit();
  options.good_enough =
      GoodEnough{.unit_bytes = static_cast<int64_t>(os::page_size()), .tolerance = config.plan_tolerance};
  return options;
}

Status plan_profile(const Profile& a, const ReplayConfig& config, const BlockLayout& layout, PreparedPlan& out,
                    const std::vector<int64_t>* saved) {
  Problem& problem = out.problem;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.uppers[i] == kEscaped) continue;
    const Request& r = a.requests[i];
    if (static_cast<int64_t>(r.size) < config.min_planned_size) continue;
    const uint64_t alignment = block_alignment(r);
    const uint64_t color = color_shift(config, problem.buffers.size(), r.size, alignment);
    const uint64_t shift = color + (layout.header_bytes ? layout.header_bytes(alignment) : 0);
    Buffer b;
    b.id = std::to_string(i);
    b.lower = a.lower(i);
    b.upper = std::max(a.uppers[i], b.lower + 1);
    // At least one byte, so that a request of 0 bytes gets a unique address.
    b.size = static_cast<int64_t>(shift + std::max<uint64_t>(r.size, 1));
    b.alignment = static_cast<int64_t>(alignment);
    problem.buffers.push_back(std::move(b));
    out.request_of.push_back(static_cast<uint32_t>(i));
    out.shift_of.push_back(static_cast<uint32_t>(shift));
  }
  out.prefix_hash.resize(a.size() + 1);
  uint64_t h = kStructureSeed;
  for (size_t i = 0; i < a.size(); ++i) {
    out.prefix_hash[i] = h;
    h = structure_step(h, a.requests[i].size, a.requests[i].alignment, !config.upper_bound_plans);
  }
  out.prefix_hash[a.size()] = h;
  // Note [Plans from a file] (learner_saved.cc): saved offsets are served
  // only as the validator accepts them for the problem built here.
  if (saved && saved->size() == a.size()) {
    std::vector<int64_t> offsets;
    offsets.reserve(problem.size());
    for (uint32_t request : out.request_of) offsets.push_back((*saved)[request]);
    if (std::all_of(offsets.begin(), offsets.end(), [](int64_t o) { return o >= 0; })) {
      Plan loaded{.offsets = std::move(offsets), .arena = 0};
      loaded.arena = arena_of(problem, loaded.offsets);
      if (validate(problem, loaded).ok() && static_cast<uint64_t>(loaded.arena) <= layout.max_arena) {
        out.plan = std::move(loaded);
        out.arena = static_cast<uint64_t>(out.plan.arena);
        out.from_saved = true;
        return Status::Ok();
      }
    }
  }
  StatusOr<Plan> plan = plan_with(config.planner, problem, plan_options(config));
  if (!plan.ok()) return plan.status();
  if (plan->arena < 0 || static_cast<uint64_t>(plan->arena) > layout.max_arena) {
    return CapacityExceeded("the plan's arena of " + std::to_string(plan->arena) + " B does not fit the slab");
  }
  out.plan = std::move(plan).value();
  out.arena = static_cast<uint64_t>(out.plan.arena);
  return Status::Ok();
}

StatusOr<std::unique_ptr<PreparedPlan>> plan_with_tables(const Profile& agreed, const ReplayConfig& config,
                                                         const PlanTables& tables, const std::vector<int64_t>* saved) {
  std::unique_ptr<PreparedPlan> plan = tables.new_plan();
  MEMPLAN_RETURN_IF_ERROR(plan_profile(agreed, config, tables.layout(), *plan, saved));
  MEMPLAN_RETURN_IF_ERROR(tables.build_tables(agreed, *plan));
  return plan;
}

}  // namespace memplan::runtime
