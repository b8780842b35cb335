// variants.cc — the variants a learning unit runs (learner.h): keyed
// parking and switching, prediction, and eviction of parked plans.
//
// Note [Keyed plans]. A boundary may name the variant of the iteration it
// starts (a key: memplan_mark_key; 0 for a plain mark). Each key is learnt
// on its own — profiles, agreement, plan, upper bound, growth — and the
// keys not running are parked with their plans; switching to a key with a
// plan publishes it at the boundary, provided no block of the served plan
// is live (else that iteration goes to the backing allocator and the
// switch is retried at the next boundary). All plans of a unit share its
// one slab, committed to the largest arena used so far. At most
// ReplayConfig::max_plans keys (8) and ReplayConfig::max_plan_bytes of
// arenas are kept; the least recently used key is evicted first. A plan no
// key refers to and that is not served is freed: it was withdrawn only
// when none of its blocks was live. Record: docs/history/runtime.md,
// "Keyed plans in the stress program".
//
// Note [Predicted variants]. A unit whose marks name no key (sequence
// identity, ReplayConfig::predict_variants) gets keys from the learner: the
// structure key of each iteration (Note [Structure hash], profile.cc),
// parked, planned and evicted as in Note [Keyed plans]; an explicit key wins
// at every mark. At each boundary the key of the iteration that ended is
// found (a profile's hash; a replayed one from the served plan's prefix
// hash up to where it deviated, then the hashed tail: the slow path only),
// and the next is predicted: the key that followed the longest run of
// latest keys (up to 16) the last time that run occurred among the last 64
// iterations, else the last one again, so every period of at most 16 is
// predicted exactly after its first period; a variant that has run once and
// has no plan may give way to one that has (Note [A one-off does not
// displace a plan]). A mispredicted profiled iteration is filed under its
// own key; a mispredicted replayed one is served from the predicted plan up
// to its first request the plan does not fit, and is not charged to that
// plan as a deviation. There is no switch in the middle of an iteration.
// Record: docs/history/runtime.md, "Predicted variants: the successor rule
// against the last-two rule".
//
// Note [Trim when predictable]. The trims (Notes [Trim before the slab],
// [Trim after adoption]) are skipped while more than 2 of the last 8
// predicted iterations were mispredicted: the backing allocator serves such
// iterations, and a trim only makes it fault its pages in again (the
// dynamic-batching loop: 1,766 minor faults a pass with a trim per plan,
// 1,413 without). Record: docs/history/runtime.md, "The learner's rules:
// the record".
//
// Note [Unpredictable streams]. While more than 4 of the last 8 predicted
// iterations were mispredicted, a variant needs one agreeing iteration more
// before it is planned: in such a stream most variants do not come back
// before they are evicted, and each plan costs the planner thread, a slab
// commit and a trim for nothing (the dynamic-batching loop's median pass:
// 1.06x the best allocator's without the rule, 1.04x with it). A variant
// that has come back after another ran is exempt: it recurs (a server's
// rotating shapes, whose first round makes the stream look unpredictable
// for the next eight iterations). Record: docs/history/runtime.md, "The
// learner's rules: the record".
#include <algorithm>
#include <bit>
#include <chrono>
#include <mutex>

#include "runtime/learner.h"
#include "runtime/os/os_memory.h"

namespace memplan::runtime {

bool Learner::worth_trimming() const { return config_.trim_backing && std::popcount(mispredicted_ & 0xffu) <= 2; }

int64_t Learner::agreements_needed() const {
  return config_.profile_iterations + (std::popcount(mispredicted_ & 0xffu) > 4 && !returned_ ? 1 : 0);
}

bool Learner::predicting() const { return config_.predict_variants && identity_ == RequestIdentity::kSequence; }

// Note [Predicted variants]: finds the variant of the iteration that ended
// (the served plan's prefix, then the hashed tail) and counts the
// prediction. Returns true when the iteration was mispredicted and has been
// dealt with here: a profile filed under its own variant, a replay's
// deviation not charged to the plan.
bool Learner::classify(bool deviated, uint32_t requests, const Planning& planning, Adapter& adapter) {
  (void)deviated;
  uint64_t actual = 0;
  if (phase_ == ReplayPhase::kProfiling) {
    if (current_.requests.empty() || current_.overflowed) return false;  // idle, or not plannable
    actual = structure_key_of(current_, !config_.upper_bound_plans);
  } else if (phase_ == ReplayPhase::kReplaying && serving_ && serving_ == active_ && requests != 0 &&
             requests != UINT32_MAX && !serving_->prefix_hash.empty()) {
    const std::vector<uint64_t>& prefix = serving_->prefix_hash;
    actual = structure_key(tail_begun_ ? tail_hash_ : prefix[std::min<size_t>(requests, prefix.size() - 1)], requests);
  } else {
    return false;  // backing-only, or waiting for the served plan's blocks: nothing seen
  }
  last_actual_ = actual;
  if (course_size_ < kMaxSavedCourse) course_[course_size_++] = actual;
  // Note [Plans from a file]: still on the loaded course?
  if (on_course_ != kOffCourse) {
    on_course_ = on_course_ < loaded_course_size_ && loaded_course_[on_course_] == actual ? on_course_ + 1 : kOffCourse;
  }
  history_[history_next_] = actual;
  history_next_ = (history_next_ + 1) % kHistory;
  history_size_ = std::min(history_size_ + 1, kHistory);
  if (key_ == 0) {
    key_ = actual;  // the unit's first variant: nothing was predicted, its state is this variant's
    if (first_key_ == 0) {
      first_key_ = actual;
      if (!config_.save_plans_file.empty()) first_profile_ = current_;  // Note [Plans from a file]
    }
    return false;
  }
  mispredicted_ = (mispredicted_ << 1) | (actual == key_ ? 0u : 1u);
  if (actual == key_) {
    counters_.predictions_right.bump();
    return false;
  }
  counters_.predictions_wrong.bump();
  if (phase_ == ReplayPhase::kProfiling) {
    enter(actual);
    evict_to_bounds(adapter);
    // Its variant profiles: the profile joins its agreement. A variant with a
    // plan has no use for it; its plan is published (or waits) now, so that
    // a replaying learner always serves its running variant's plan.
    if (phase_ == ReplayPhase::kProfiling) {
      finish_profile(planning, adapter);
    } else {
      activate(adapter);
    }
  } else {
    std::fill(pending_.begin(), pending_.end(), 0);  // sizes of another variant: no growth
    pending_any_ = false;
  }
  return true;
}

// The variant that followed the longest run of recent variants the last
// time that run was seen (up to kLongestContext variants, within the last
// kHistory): every periodic pattern whose period is at most kLongestContext
// is predicted exactly once one period has been seen — rotations of several
// shapes, and training steps with an evaluation pass every N steps, whose
// order-2 context (step, step) is followed by a step or by an evaluation.
// With no earlier occurrence of even the latest variant, the latest again.
// At most kLongestContext x kHistory comparisons per boundary, most of them
// ending at the first key.
// Note [A one-off does not displace a plan]: what this returns is then
// checked against the plans held.
uint64_t Learner::successor() const {
  if (history_size_ == 0) return key_;
  const size_t longest = std::min(kLongestContext, history_size_ - 1);
  for (size_t length = longest; length >= 1; --length) {
    // An earlier occurrence of the latest `length` variants, ending `age`
    // iterations ago, most recent first; what followed it is at age - 1.
    for (size_t age = 1; age + length <= history_size_; ++age) {
      size_t i = 0;
      while (i < length && history_at(age + i) == history_at(i)) ++i;
      if (i == length) return history_at(age - 1);
    }
  }
  return history_at(0);
}

bool Learner::holds_plan(uint64_t key) const {
  if (key == key_) return active_ != nullptr;
  return std::any_of(parked_.begin(), parked_.end(), [key](const Parked& v) { return v.key == key && v.plan; });
}

// Note [A one-off does not displace a plan]. The successor rule trusts a
// context seen once, and falls back on the latest variant when even that
// has not been seen before; a unit's first period is often not its period.
// The first training step makes the optimizer's state and is a variant of
// its own, so a loop with an evaluation pass after every third step shows
// first, step, step, eval: the successor rule then predicts the evaluation
// after it (the latest again), after one step and after two, and those
// three steps run unserved as the evaluation's variant, which has no plan.
// So a predicted variant that has run once so far and has no plan gives
// way to the most recent other variant of the history when that one holds
// a plan and has followed itself there. Once the variant has run twice it
// is predicted as the successor rule says and profiled as before: a
// one-off costs the repeating variant nothing, and a new variant that
// stays is planned one iteration later. A rotation of shapes, whose
// variants never follow themselves, is predicted as before. Record:
// docs/history/runtime.md, "A one-off in the first period".
uint64_t Learner::predict() const {
  const uint64_t next = successor();
  if (history_size_ == 0 || holds_plan(next) || times_run(next) != 1) return next;
  size_t age = 0;
  while (age < history_size_ && history_at(age) == next) ++age;
  if (age == history_size_) return next;
  const uint64_t other = history_at(age);
  if (!holds_plan(other)) return next;
  for (size_t a = age; a + 1 < history_size_; ++a) {
    if (history_at(a) == other && history_at(a + 1) == other) return other;
  }
  return next;
}

// Parks the running variant and runs `key`'s, publishing its plan if it has one.
void Learner::switch_variant(uint64_t key, Adapter& adapter) {
  enter(key);
  evict_to_bounds(adapter);
  activate(adapter);
}

// Parks the running variant and makes `key`'s the running one (its phase,
// profile, job and plan), publishing nothing.
void Learner::enter(uint64_t key) {
  Parked out;
  out.key = key_;
  out.last_use = uses_;
  out.phase = waiting_ ? ReplayPhase::kReplaying : phase_;
  out.agreements = agreements_;
  out.returned = returned_;
  std::swap(out.agreed, agreed_);
  out.generation = generation_;
  out.job = std::move(job_);
  out.plan = active_;
  out.growing = growing_;
  out.shape_load_min = shape_load_min_;
  out.shape_load_max = shape_load_max_;
  out.after = agreed_after_;
  Parked in;
  auto found = std::find_if(parked_.begin(), parked_.end(), [key](const Parked& v) { return v.key == key; });
  if (found != parked_.end()) {
    in = std::move(*found);
    parked_.erase(found);
    in.returned |= in.agreements > 0;
  } else {
    in.key = key;
    in.generation = generation_ + 1;
    // A unit without a slab window never profiles, whichever its key.
    in.phase = slab_.base() ? ReplayPhase::kProfiling : ReplayPhase::kBackingOnly;
  }
  if (out.plan || out.agreements > 0 || out.job) parked_.push_back(std::move(out));
  key_ = in.key;
  phase_ = in.phase;
  agreements_ = in.agreements;
  returned_ = in.returned;
  std::swap(agreed_, in.agreed);
  generation_ = in.generation;
  job_ = std::move(in.job);
  active_ = in.plan;
  growing_ = in.growing;
  shape_load_min_ = in.shape_load_min;
  shape_load_max_ = in.shape_load_max;
  agreed_after_ = in.after;
  deviating_run_ = 0;
  pending_any_ = false;
  waiting_ = false;
}

// Serves the running variant's plan, if it has one and the slab is free of
// the served plan's blocks; else its iteration goes to the backing allocator
// and this is tried again at the next boundary.
void Learner::activate(Adapter& adapter) {
  waiting_ = false;
  if (!active_) {
    if (phase_ == ReplayPhase::kReplaying) phase_ = ReplayPhase::kProfiling;
    return;
  }
  if (serving_ != active_) {
    if (serving_ && adapter.slab_in_use()) {
      waiting_ = true;
      phase_ = ReplayPhase::kBackingOnly;
      return;
    }
    // A planner thread is growing the slab: serve this iteration from the
    // backing allocator and publish at the next boundary.
    std::unique_lock<std::mutex> mapping(slab_mutex_, std::try_to_lock);
    if (!mapping.owns_lock()) {
      waiting_ = true;
      phase_ = ReplayPhase::kBackingOnly;
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    if (serving_) withdraw(adapter);
    const bool committed = slab_.commit(static_cast<size_t>(active_->arena), config_.huge_pages).ok();
    // The commit is a no-op when the plan's job grew the slab already; it is
    // counted as a stall either way.
    const auto stall = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    counters_.plan_stall_ns.set(counters_.plan_stall_ns.get() + stall);
    if (stall > counters_.max_plan_stall_ns.get()) counters_.max_plan_stall_ns.set(stall);
    if (!committed) {
      counters_.plan_failures.bump();
      counters_.slab_bytes.set(slab_.mapped_bytes());
      active_ = nullptr;
      phase_ = ReplayPhase::kBackingOnly;
      count_held();
      return;
    }
    serving_ = active_;
    fit_slab();  // Note [The slab fits its plans]: no block is live in it
    adapter.publish(*active_);
    counters_.switches.bump();
    counters_.planned_buffers.set(active_->problem.size());
    counters_.slab_bytes.set(slab_.mapped_bytes());
    counters_.arena_bytes.set(active_->arena);
  }
  phase_ = ReplayPhase::kReplaying;
  pending_any_ = false;
  if (config_.upper_bound_plans && agreed_.size() > 0) {
    pending_.assign(agreed_.size(), 0);
  } else {
    pending_.clear();
  }
}

// Evicts the least recently used parked variants until the unit keeps at
// most max_plans variants and max_plan_bytes of plan arenas.
void Learner::evict_to_bounds(Adapter& adapter) {
  (void)adapter;
  const int64_t process = os::process_id();
  auto bytes = [this] {
    uint64_t total = active_ ? active_->arena : 0;
    for (const Parked& v : parked_) total += v.plan ? v.plan->arena : 0;
    return total;
  };
  while (!parked_.empty() && (static_cast<int64_t>(parked_.size()) + 1 > config_.max_plans ||
                              bytes() > static_cast<uint64_t>(config_.max_plan_bytes))) {
    auto lru = std::min_element(parked_.begin(), parked_.end(),
                                [](const Parked& a, const Parked& b) { return a.last_use < b.last_use; });
    if (lru->job) {
      if (lru->job->process != process) {
        (void)lru->job.release();  // a fork child's copy: may be in use in the parent
      } else if (!lru->job->done.load(std::memory_order_acquire)) {
        orphans_.push_back(std::move(lru->job));
      }
    }
    parked_.erase(lru);
    counters_.evictions.bump();
  }
  prune_plans();
}

// Frees the plans no variant refers to and that are not served (see Note
// [Keyed plans] for why that is safe).
void Learner::prune_plans() {
  std::erase_if(plans_, [this](const std::unique_ptr<PreparedPlan>& p) {
    if (p.get() == serving_ || p.get() == active_) return false;
    for (const Parked& v : parked_) {
      if (v.plan == p.get()) return false;
    }
    return true;
  });
  count_held();
}

// Note [The slab fits its plans]. A slab is mapped to the largest arena its
// unit has planned, and a plan made in the background maps its arena before
// it is adopted; an adoption faults in the adopted plan's arena only. Where
// a plan is published while no block is live in the slab (a switch, an
// adoption), the pages past the largest arena of the plans still held go
// back to the kernel: a variant evicted, or a background plan never adopted,
// no longer keeps its pages resident for the rest of the run (the
// dynamic-batching loop: a 53.7 MB mapping for one held plan of 2.5 MB). A
// held plan, or one made ahead for a held variant, keeps its pages, and
// nothing goes while such a plan is being made: its adoption would map and
// fault in its arena on the boundary (rotating keyed shapes: the longest
// stall 1.7-7.2 ms instead of 0.2-0.4). A plan made later maps its own
// again.
void Learner::fit_slab() {
  uint64_t largest = active_ ? active_->arena : 0;
  // A plan made ahead maps its arena off the boundary so that its adoption
  // maps nothing: its pages stay, and nothing goes while one is planning.
  auto keeps = [&largest](const std::unique_ptr<PlanJob>& job) {
    if (!job) return true;
    if (!job->done.load(std::memory_order_acquire)) return false;
    if (job->prepared && job->prepared->ok()) largest = std::max<uint64_t>(largest, (**job->prepared)->arena);
    return true;
  };
  if (!keeps(job_)) return;
  for (const Parked& v : parked_) {
    if (v.plan) largest = std::max<uint64_t>(largest, v.plan->arena);
    if (!keeps(v.job)) return;
  }
  slab_.shrink(static_cast<size_t>(largest));
}

void Learner::count_held() {
  uint64_t held = active_ ? 1 : 0;
  uint64_t bytes = active_ ? active_->arena : 0;
  for (const Parked& v : parked_) {
    if (v.plan) {
      ++held;
      bytes += v.plan->arena;
    }
  }
  counters_.plans_held.set(held);
  counters_.plan_bytes.set(bytes);
}

}  // namespace memplan::runtime
