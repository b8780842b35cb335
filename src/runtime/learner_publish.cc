// learner_publish.cc — the learner's planning step (learner.h): a plan made
// at the boundary or adopted from the planner thread, the slab committed to
// its arena, its tables published to the adapter, and the time the unit
// stood still for it. The cycle that decides when to plan is learner.cc.
//
// Note [Trim before the slab]. Before a plan made at the boundary is
// committed, the backing allocator returns its free memory to the OS (when
// ReplayConfig::trim_backing, Note [Trim when predictable]): the planner's
// working memory and the profiled iterations' blocks are free by then, and
// would otherwise stay resident under the slab that takes their place.
// Record: docs/history/runtime.md, "Memory: what serving added to the RSS,
// and what was done".
#include <chrono>
#include <memory>
#include <mutex>
#include <utility>

#include "runtime/learner.h"

namespace memplan::runtime {

// Plans the raised maxima, at the boundary or in the background; serving
// goes on with the old plan until the new one is published.
void Learner::replan(const Planning& planning, Adapter& adapter) {
  const PreparedPlan* before = serving_;
  if (config_.plan_in_background && planning.planner) {
    plan_in_background(planning, adapter);
  } else {
    plan_now(planning, adapter, nullptr);
  }
  if (serving_ != before || phase_ != ReplayPhase::kReplaying) {
    if (growing_ && serving_ != before) counters_.growths.bump();
    growing_ = false;
  }
}

void Learner::plan_now(const Planning& planning, Adapter& adapter, PlanJob* job) {
  const auto start = std::chrono::steady_clock::now();
  try_plan(planning, adapter, job);
  const auto stall = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  counters_.plan_stall_ns.set(counters_.plan_stall_ns.get() + stall);
  if (stall > counters_.max_plan_stall_ns.get()) counters_.max_plan_stall_ns.set(stall);
}

void Learner::withdraw(Adapter& adapter) {
  adapter.withdraw();
  serving_ = nullptr;
}

void Learner::try_plan(const Planning& planning, Adapter& adapter, PlanJob* job) {
  if (serving_ && adapter.slab_in_use()) {
    counters_.plan_failures.bump();  // the old slab still holds live blocks: retry at the next boundary
    return;
  }
  // A planner thread is growing the slab for another job: retry at the next boundary.
  std::unique_lock<std::mutex> mapping(slab_mutex_, std::try_to_lock);
  if (!mapping.owns_lock()) {
    counters_.plan_failures.bump();
    return;
  }
  // A job was prepared in the background from this very profile: it is
  // adopted only while the agreed profile is the one it was given.
  StatusOr<std::unique_ptr<PreparedPlan>> prepared =
      job ? std::move(*job->prepared) : plan_with_tables(agreed_, config_, planning.tables);
  if (job) job->prepared.reset();
  // Note [Trim before the slab]; a plan made in the background was trimmed
  // after on the planner thread (Note [Trim after adoption]).
  if (!job && worth_trimming()) planning.backing.release_free_memory();
  // Frees must not read the slab while its mapping changes under them.
  if (serving_) withdraw(adapter);
  if (!prepared.ok() || !slab_.commit(static_cast<size_t>((*prepared)->arena), config_.huge_pages).ok()) {
    // No plan, or one this unit cannot hold: stay with the backing allocator for good.
    counters_.plan_failures.bump();
    counters_.slab_bytes.set(slab_.mapped_bytes());  // a failed commit leaves nothing mapped
    counters_.planned_buffers.set(0);
    phase_ = ReplayPhase::kBackingOnly;
    return;
  }
  PreparedPlan* published = prepared->get();
  plans_.push_back(std::move(prepared).value());
  serving_ = published;
  active_ = published;
  fit_slab();  // Note [The slab fits its plans]: no block is live in it
  adapter.publish(*published);
  if (job && planning.planner) {  // Notes [Trim after adoption], [Pre-fault after adoption]
    auto prefault = std::make_unique<PlanJob>();
    prefault->prefault_only = true;
    prefault->slab = &slab_;
    prefault->slab_mutex = &slab_mutex_;
    prefault->prefault_bytes = static_cast<size_t>(published->arena);
    prefault->trim = worth_trimming();
    prefault->process = job->process;
    planning.planner->submit(prefault.get());
    orphans_.push_back(std::move(prefault));  // dropped once done, as an evicted variant's job
  }
  phase_ = ReplayPhase::kReplaying;
  deviating_run_ = 0;
  counters_.plans_made.bump();
  counters_.planned_buffers.set(published->problem.size());
  counters_.slab_bytes.set(slab_.mapped_bytes());
  counters_.arena_bytes.set(published->arena);
  prune_plans();
  if (shape_load_max_ != 0) {
    counters_.min_shape_load.set(shape_load_min_);
    counters_.max_shape_load.set(shape_load_max_);
  }
  // Replaying needs no profile until the unit profiles again; with
  // upper-bound plans the agreed profile stays: its maxima are raised by
  // growths (Note [Upper-bound plans]).
  current_.release();
  profiled_live_.release();
  pending_any_ = false;
  if (config_.upper_bound_plans) {
    pending_.assign(agreed_.size(), 0);
  } else {
    agreed_.release();
    pending_.clear();
  }
}

}  // namespace memplan::runtime
