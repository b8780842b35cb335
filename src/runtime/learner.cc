// learner.cc — the learning cycle (learner.h): profiling, agreement,
// deviation counting and growth. Making and publishing a plan (at the
// boundary or adopted from the planner thread, the slab's commit) is
// learner_publish.cc, variants variants.cc, the planner thread
// planner_thread.cc, profiles profile.cc and profile_plan.cc.
//
// Note [Upper-bound plans]. With ReplayConfig::upper_bound_plans (the
// default), agreement compares a profile's structure (same_structure: count,
// order, alignments, keys), not its sizes, and the agreed profile keeps the
// per-request maximum of the sizes seen and the union of lifetimes; its plan
// serves every iteration of that structure whose requests fit their
// blocks. A larger request is a deviation whose size the adapter reports
// (observe_larger); when the iteration made the plan's number of requests,
// the boundary raises the maxima, with 1/8 of headroom, and plans again (a
// growth). A plan never exceeds what one structure's maxima need, and one
// that does not fit the slab leaves the unit with the backing allocator;
// the cost of sharing is counted (min/max shape load against the arena).
// Record: docs/history/runtime.md, "Rotating shapes under `memplan run`".
//
// Note [Plans ahead of agreement]. With background planning, the boundary
// where a profile is one agreement short of ReplayConfig::profile_iterations
// (the first iteration of a variant, by default) queues its plan already;
// the boundary where the last agreeing iteration ends adopts it if it is
// done (its profile's structure is the agreed one; lifetimes or maxima that
// widened meanwhile are planned again as a growth), so a repeating loop is
// served from iteration K + 1, as when planning at the boundary, instead of
// K + 2. An iteration that does not agree drops the plan. The price: a
// plan of each variant seen once (Note [Unpredictable streams] delays that
// by an iteration too). A boundary that switches to a predicted variant
// (Note [Predicted variants]: its key is its request structure) adopts
// that variant's plan made ahead if it is done and planned the variant's
// agreed profile: the K-th iteration of a variant that alternates with
// others is served rather than profiled (resnet18 over six rotating
// shapes: served in full from pass 20 instead of pass 24-30). Nothing is
// served before K - 1 iterations agree; replay checks every request's size
// and the liveness of the blocks its block shares bytes with, so a K-th
// iteration that differs falls back where it stops fitting. Not for
// explicit keys: the iterations under one key may differ in structure (a
// shape's first pass makes torch's first-call requests), and a plan
// adopted before they agree deviated in every round.
//
#include "runtime/learner.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <utility>

namespace memplan::runtime {

// Note [Upper-bound plans]: a maximum raised by a growth gets 1/8 of
// headroom (rounded up to 16 bytes), so that a size that creeps up a little
// each iteration costs a plan per 12.5% of growth, not one per iteration.
static uint64_t growth_size(uint64_t size) { return (size + size / 8 + 15) / 16 * 16; }

void LearnerCounters::add_to(ReplayStats& s) const {
  ReplayStats mine;
  mine.iterations = iterations.get();
  mine.profiled = profiled.get();
  mine.served = served.get();
  mine.unplanned = unplanned.get();
  mine.fallback = fallback.get();
  mine.busy = busy.get();
  mine.deviations = deviations.get();
  mine.plans = plans_made.get();
  mine.plans_loaded = plans_loaded.get();
  mine.reprofiles = reprofiles.get();
  mine.plan_failures = plan_failures.get();
  mine.slab_bytes = slab_bytes.get();
  mine.planned_buffers = planned_buffers.get();
  mine.plan_stall_ns = plan_stall_ns.get();
  mine.max_plan_stall_ns = max_plan_stall_ns.get();
  mine.plans_held = plans_held.get();
  mine.variants = variants.get();
  mine.growths = growths.get();
  mine.arena_bytes = arena_bytes.get();
  mine.min_shape_load_bytes = min_shape_load.get();
  mine.max_shape_load_bytes = max_shape_load.get();
  mine.plan_bytes = plan_bytes.get();
  mine.evictions = evictions.get();
  mine.switches = switches.get();
  mine.predictions_right = predictions_right.get();
  mine.predictions_wrong = predictions_wrong.get();
  mine.small = small.get();
  merge_replay_stats(s, mine);  // each counter by its rule (kReplayCounters): sums, the longest stall, ...
}

// ---------------------------------------------------------------------------
// The learning cycle.

std::unique_ptr<PlanJob> Learner::restart(bool has_window, uint64_t key) {
  phase_ = has_window ? ReplayPhase::kProfiling : ReplayPhase::kBackingOnly;
  agreements_ = 0;
  returned_ = false;
  deviating_run_ = 0;
  tick_ = 0;
  current_.clear();
  agreed_.clear();
  profiled_live_.clear();
  pending_.clear();
  pending_any_ = false;
  growing_ = false;
  ++generation_;
  // The previous owner's variants go; their jobs are kept until done.
  for (Parked& v : parked_) {
    if (v.job) orphans_.push_back(std::move(v.job));
  }
  parked_.clear();
  key_ = key;
  first_key_ = key;
  first_profile_.release();
  seeded_next_ = 0;
  seeds_waiting_.clear();
  agreed_after_ = 0;
  last_ran_ = 0;
  seen_.clear();
  key_implicit_ = key == 0 && predicting();
  tail_begun_ = false;
  history_size_ = 0;
  mispredicted_ = 0;
  history_next_ = 0;
  active_ = nullptr;
  waiting_ = false;
  count_held();
  return std::move(job_);
}

void Learner::record(uint64_t key, uint64_t size, uint64_t alignment, const void* p) {
  const uint32_t t = tick_++;
  counters_.profiled.bump();
  Profile& c = current_;
  if (c.overflowed || c.requests.size() >= static_cast<size_t>(config_.max_requests)) {
    c.overflowed = true;
    return;
  }
  try {
    c.requests.push_back({size, alignment});
    c.uppers.push_back(kEscaped);
    if (identity_ == RequestIdentity::kKeyed) c.keys.push_back({key, t});
    profiled_live_.insert(reinterpret_cast<uintptr_t>(p), static_cast<uint32_t>(c.requests.size() - 1));
  } catch (...) {
    c.overflowed = true;  // out of memory for the profile: this iteration is not planned
  }
}

void Learner::record_end(const void* p, bool escaped) {
  const int64_t index = profiled_live_.take(reinterpret_cast<uintptr_t>(p));
  if (index < 0) return;
  if (!escaped && !current_.overflowed) current_.uppers[static_cast<size_t>(index)] = tick_;
}

void Learner::end_iteration(bool deviated, const Planning& planning, Adapter& adapter, uint32_t requests,
                            uint64_t next_key) {
  counters_.iterations.bump();
  ++uses_;
  try {
    std::erase_if(orphans_, [](const std::unique_ptr<PlanJob>& j) { return j->done.load(std::memory_order_acquire); });
    // The variant of the iteration that ended, when it ran (Note [Plans
    // from a file]: a seed waiting for it is adopted below).
    const uint64_t ran =
        !key_implicit_ && phase_ == ReplayPhase::kProfiling && !current_.requests.empty() ? key_ : uint64_t{0};
    // The same for a replayed iteration (explicit keys): what follows it.
    const bool replayed = phase_ == ReplayPhase::kReplaying && requests != 0 && requests != UINT32_MAX;
    const uint64_t explicit_ran = ran != 0 ? ran : !key_implicit_ && replayed ? key_ : uint64_t{0};
    last_actual_ = 0;
    // Note [Predicted variants]: a mispredicted iteration is handled there.
    const bool handled = key_implicit_ && classify(deviated, requests, planning, adapter);
    switch (handled ? ReplayPhase::kBackingOnly : phase_) {
      case ReplayPhase::kProfiling:
        finish_profile(planning, adapter);
        break;
      case ReplayPhase::kReplaying:
        if (deviated) counters_.deviations.bump();
        if (adopt_growth(requests) || growing_) {
          // A deviation that a larger plan answers does not count towards re-profiling.
          replan(planning, adapter);
          deviating_run_ = 0;
          break;
        }
        if (deviated) {
          ++deviating_run_;
        } else {
          deviating_run_ = 0;
        }
        if (deviating_run_ >= config_.deviations_to_reprofile) {
          phase_ = ReplayPhase::kProfiling;
          counters_.reprofiles.bump();
          agreements_ = 0;
          returned_ = false;
          deviating_run_ = 0;
          agreed_.clear();
          growing_ = false;
          active_ = nullptr;
          std::unique_lock<std::mutex> mapping(slab_mutex_, std::try_to_lock);
          if (!config_.keep_slab && serving_ && !adapter.slab_in_use() && mapping.owns_lock()) {
            withdraw(adapter);  // stale frees into the window then find no plan, not unmapped memory
            slab_.release();
            counters_.slab_bytes.set(0);
            counters_.planned_buffers.set(0);
          }
        }
        break;
      case ReplayPhase::kBackingOnly:
        break;
    }
    const uint64_t just_ran = key_implicit_ ? last_actual_ : explicit_ran;
    if (just_ran != 0) note_ran(just_ran);  // before the prediction, which counts its runs
    if (!seeds_waiting_.empty()) {
      const uint64_t sighted = key_implicit_ ? last_actual_ : ran;
      if (sighted != 0) adopt_seed(sighted, planning, adapter);
    }
    // Note [Plans from a file]: a saved variant whose first run followed the
    // variant that just ran, and agreed with its later runs, serves the
    // iteration that starts.
    uint64_t follows = 0;
    if (just_ran != 0) {
      for (const SavedVariant& v : seeds_waiting_) {
        if (v.after == just_ran) {
          follows = v.key;
          break;
        }
      }
    }
    // An explicit key wins; a plain mark gets the predicted one.
    const bool predicted = next_key == 0 && predicting();
    uint64_t target = next_key;
    if (predicted && on_course_ < loaded_course_size_) {  // kOffCourse is never below it
      // Note [Plans from a file]: the saving process's next variant, while
      // this one has run the same variants so far.
      target = loaded_course_[on_course_];
      seeded_next_ = 0;
    } else if (predicted && follows != 0) {
      target = follows;
      seeded_next_ = 0;
    } else if (predicted) {
      target = seeded_next_ != 0 ? std::exchange(seeded_next_, 0) : predict();
    }
    if (target != key_) {
      switch_variant(target, adapter);
      if (predicted && target != follows) adopt_on_switch(planning, adapter);
    } else if (waiting_ || (phase_ == ReplayPhase::kReplaying && serving_ != active_)) {
      activate(adapter);
    }
    if (follows != 0 && target == follows) adopt_seed(follows, planning, adapter);
    key_implicit_ = predicted;
  } catch (...) {
    // Out of memory while bookkeeping: forget the profiles, keep serving safely.
    agreements_ = 0;
    returned_ = false;
    agreed_.clear();
    if (phase_ == ReplayPhase::kProfiling) counters_.plan_failures.bump();
  }
  tick_ = 0;
  tail_begun_ = false;
  current_.clear();
  profiled_live_.clear();
}

// Note [Plans ahead of agreement]: the switch to a variant adopts its plan
// made ahead once it is done.
void Learner::adopt_on_switch(const Planning& planning, Adapter& adapter) {
  if (phase_ != ReplayPhase::kProfiling || !job_ || !config_.plan_in_background || !planning.planner) return;
  if (job_->process != os::process_id() || !job_->done.load(std::memory_order_acquire)) return;
  if (job_->generation != generation_ || agreements_ + 1 < agreements_needed()) return;
  if (serving_ && adapter.slab_in_use()) return;  // the served plan's blocks are live: the agreeing boundary adopts
  plan_now(planning, adapter, job_.get());
  if (job_ && !job_->prepared) job_.reset();
}

bool Learner::keeps_agreed() const { return config_.upper_bound_plans; }

void Learner::finish_profile(const Planning& planning, Adapter& adapter) {
  Profile& c = current_;
  if (c.requests.empty()) return;  // an idle iteration says nothing about this unit's pattern
  if (c.overflowed) {
    agreements_ = 0;
    returned_ = false;
    agreed_.clear();
    ++generation_;
    return;
  }
  if (identity_ == RequestIdentity::kKeyed) canonicalise(c);
  const bool first_run = !seen_before(key_);  // Note [Plans from a file]
  const bool agrees =
      agreements_ > 0 && (config_.upper_bound_plans ? same_structure(agreed_, c) : same_requests(agreed_, c));
  if (!agrees) shape_load_min_ = shape_load_max_ = 0;
  note_shape(c);
  if (agrees) {
    bool widened = false;
    for (size_t i = 0; i < c.size(); ++i) {
      uint64_t& size = agreed_.requests[i].size;
      if (c.requests[i].size > size) {
        size = c.requests[i].size;  // Note [Upper-bound plans]: the per-request maximum
        widened = true;
      }
      int64_t& u = agreed_.uppers[i];
      const int64_t merged = (u == kEscaped || c.uppers[i] == kEscaped) ? kEscaped : std::max(u, c.uppers[i]);
      widened |= merged != u;
      u = merged;
      if (!c.keys.empty() && c.keys[i].lower < agreed_.keys[i].lower) {
        agreed_.keys[i].lower = c.keys[i].lower;
        widened = true;
      }
    }
    if (widened) ++generation_;  // a plan made in the background for the narrower lifetimes is stale
    ++agreements_;
  } else {
    std::swap(agreed_, c);
    agreements_ = 1;
    returned_ = false;
    ++generation_;
    agreed_after_ = first_run ? last_ran_ : 0;
    if (agreed_after_ != 0 && !config_.save_plans_file.empty() && first_runs_.size() < kMaxSavedVariants &&
        agreed_.size() <= kMaxSavedRequests) {
      first_runs_.push_back({.key = key_, .after = agreed_after_, .profile = agreed_});
    }
  }
  if (agreements_ < agreements_needed()) {
    // Note [Plans ahead of agreement]
    if (agreements_ + 1 == agreements_needed() && config_.plan_in_background && planning.planner) {
      plan_ahead(planning);
    }
    return;
  }
  if (config_.plan_in_background && planning.planner) {
    plan_in_background(planning, adapter);
  } else {
    plan_now(planning, adapter, nullptr);
  }
}

// Note [Plans from a file]: `key` ran an iteration.
void Learner::note_ran(uint64_t key) {
  last_ran_ = key;
  const auto found = std::find_if(seen_.begin(), seen_.end(), [key](const Seen& s) { return s.key == key; });
  if (found != seen_.end()) {
    if (found->runs != UINT32_MAX) ++found->runs;
  } else if (seen_.size() < kMaxSeen) {
    seen_.push_back({.key = key, .runs = 1});
  }
}

// Counts the profile's size signature as a variant if it is new (the first
// 32 are told apart), and its load among the shapes of the agreed profile.
void Learner::note_shape(const Profile& p) {
  uint64_t h = (1469598103934665603ull ^ p.size()) * 1099511628211ull ^ key_;
  for (size_t i = 0; i < p.size(); ++i) h = (h ^ p.requests[i].size) * 1099511628211ull;
  bool seen = false;
  for (uint32_t v = 0; v < variant_count_; ++v) seen |= variant_hashes_[v] == h;
  if (!seen && variant_count_ < std::size(variant_hashes_)) {
    variant_hashes_[variant_count_++] = h;
    counters_.variants.set(variant_count_);
  }
  const uint64_t load = profile_load(p, config_);
  shape_load_min_ = shape_load_min_ == 0 ? load : std::min(shape_load_min_, load);
  shape_load_max_ = std::max(shape_load_max_, load);
}

// Note [Upper-bound plans]: the iteration that just ended outgrew some
// blocks of the serving plan; when it made the plan's number of requests
// (the same structure, as far as the replay can tell) its sizes raise the
// agreed maxima. Returns true when the maxima changed.
bool Learner::adopt_growth(uint32_t requests) {
  if (!pending_any_) return false;
  bool raised = false;
  if (requests == agreed_.size() && pending_.size() == agreed_.size()) {
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (pending_[i] > agreed_.requests[i].size) {
        agreed_.requests[i].size = growth_size(pending_[i]);
        raised = true;
      }
    }
  }
  std::fill(pending_.begin(), pending_.end(), 0);
  pending_any_ = false;
  if (raised) {
    growing_ = true;
    ++generation_;
  }
  return raised;
}

}  // namespace memplan::runtime
