// learner.cc — the iteration learner (learner.h): profiles, agreement,
// planning, the slab's commit, deviation counting, and the planner thread.
#include "runtime/learner.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <utility>

#include "memplan/bounds.h"
#include "memplan/planner.h"
#include "memplan/planning.h"
#include "runtime/os/os_memory.h"

namespace memplan::runtime {

void Profile::clear() {
  requests.clear();
  uppers.clear();
  keys.clear();
  overflowed = false;
}

void Profile::release() {
  MappedVector<Request>().swap(requests);
  MappedVector<int64_t>().swap(uppers);
  MappedVector<RequestKey>().swap(keys);
  overflowed = false;
}

bool same_requests(const Profile& a, const Profile& b) {
  if (a.requests != b.requests || a.keys.size() != b.keys.size()) return false;
  for (size_t i = 0; i < a.keys.size(); ++i) {
    if (a.keys[i].key != b.keys[i].key) return false;
  }
  return true;
}

bool same_structure(const Profile& a, const Profile& b) {
  if (a.size() != b.size() || a.keys.size() != b.keys.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.requests[i].alignment != b.requests[i].alignment) return false;
  }
  for (size_t i = 0; i < a.keys.size(); ++i) {
    if (a.keys[i].key != b.keys[i].key) return false;
  }
  return true;
}

uint64_t profile_load(const Profile& p, const ReplayConfig& config) {
  std::vector<std::pair<int64_t, int64_t>> events;  // (tick, +size at its start / -size at its end)
  events.reserve(2 * p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    if (p.uppers[i] == kEscaped || static_cast<int64_t>(p.requests[i].size) < config.min_planned_size) continue;
    const int64_t size = static_cast<int64_t>(p.requests[i].size);
    events.push_back({p.lower(i), size});
    events.push_back({std::max(p.uppers[i], p.lower(i) + 1), -size});
  }
  std::sort(events.begin(), events.end());  // at one tick, ends (negative) before starts: half-open lives
  int64_t live = 0, most = 0;
  for (const auto& e : events) {
    live += e.second;
    most = std::max(most, live);
  }
  return static_cast<uint64_t>(most);
}

uint64_t structure_key_of(const Profile& p, bool with_sizes) {
  uint64_t h = kStructureSeed;
  for (size_t i = 0; i < p.size(); ++i) {
    h = structure_step(h, p.requests[i].size, p.requests[i].alignment, with_sizes);
    if (!p.keys.empty()) h = (h ^ p.keys[i].key) * 1099511628211ull;
  }
  return structure_key(h, p.size());
}

// A maximum raised by a growth gets 1/8 of headroom (rounded up to 16
// bytes), so that a size that creeps up a little each iteration costs a plan
// per 12.5% of growth, not one per iteration; the headroom is part of the
// upper bound's cost (arena against shape loads).
static uint64_t growth_size(uint64_t size) { return (size + size / 8 + 15) / 16 * 16; }

// Note [Address colouring]. Planned offsets are sums of tensor sizes, which
// are mostly multiples of 4 KiB, so without help most slab blocks share their
// address bits below the page size — unlike glibc's or tcmalloc's blocks. Two
// streams whose addresses agree modulo 4 KiB compete for the same L1 sets and
// make loads wait on unrelated stores (4K aliasing). With
// config.color_span_bytes = S > 0, the k-th planned block of at least 4 KiB
// starts (k * 37 mod S/64) * 64 bytes (rounded down to its alignment) above
// its planned offset: the plan's buffer grows by that shift, so the validator
// still sees disjoint blocks, at a cost of < S bytes per block.
static uint64_t color_shift(const ReplayConfig& config, size_t k, uint64_t size, uint64_t alignment) {
  if (config.color_span_bytes <= 0 || size < 4096) return 0;
  const uint64_t slots = static_cast<uint64_t>(config.color_span_bytes) / 64;
  const uint64_t shift = (static_cast<uint64_t>(k) * 37 % slots) * 64;
  return shift / alignment * alignment;
}

// Note [Page-optimal plans]. A slab is committed in whole pages, so a plan
// whose arena takes as many pages as the load (the bound every plan respects)
// cannot be beaten. greedy_by_size is tried first (milliseconds, little
// working memory) and kept when it is valid and page-optimal; otherwise the
// configured planner runs. On the torchvision runs the portfolio otherwise
// spent its whole time budget and up to 4 MiB of transient heap at the
// boundary for the same slab (docs/history/runtime.md, "Memory: what serving
// added to the RSS, and what was done"). Nearly page-optimal
// is kept too: within ReplayConfig::plan_tolerance (1%) more pages than the
// load. A resnet18 training step's greedy plan is one 4 KiB page above the
// portfolio's (33.18 MB against 33.18 MB, load 33.12 MB), and the 0.25 s
// the portfolio took for that page kept the loop profiling on the backing
// allocator for one or two more steps.
//
// Note [One validation rule]. Whichever planner made it, a plan is served
// only if memplan::validate accepts it: a slab block handed out under an
// invalid plan would share bytes with another live block. The check costs
// what the planner's own sweep costs, once per plan.
//
// Note [Planning budget]. The configured planner (the portfolio) spends its
// whole time limit whenever it cannot prove its plan optimal, usually to gain
// a few percent over greedy_by_size (0.02-3% on dynamic-batching
// iterations: docs/history/runtime.md, "Why planning has a budget"). For a
// program that plans once that is nothing; for one whose variants keep changing (a new batch composition
// every pass) it was a second core kept busy for plans seldom reused. So
// planning has a budget: one full run, plus ReplayConfig::plan_time_share of
// the time elapsed since the process's first plan. A plan gets the full
// limit while the budget has it, else what is left, and when that is under
// kShortestRun, greedy_by_size's plan alone (kept whenever it is no worse
// than the planner's: a short portfolio run may end on a worse plan).
// The budget is the process's (PlanningBudget::process()): every unit of
// every allocator draws on it, from any thread.
//
// Note [Planning at exit]. The drop-in's allocator is never destroyed, so its
// planner thread used to run on while exit() ran the process's exit handlers
// and static destructors, and a plan in progress read destroyed objects (a
// crash in 1 of ~50 runs of the transformer benchmark: the planner registry,
// a static, destroyed under a 0.25 s portfolio run). Now the registry is
// never destroyed, every plan polls g_exiting (PlanOptions::cancel), and
// when a planner thread takes its first job it registers an exit handler,
// BackgroundPlanner::stop_all_at_exit, which sets the flag and joins every
// planner thread of the process: a plan in progress is cancelled within
// milliseconds (the planners poll the flag every few hundred units of work)
// and is not adopted, and no planner thread runs once the handlers
// registered before it (the program's, its libraries' static destructors)
// run. Plans made after it, at the boundaries of exit-time code, are
// cancelled too: those iterations stay with the backing allocator.
namespace {
std::atomic<bool> g_exiting{false};
// The planner threads' states in this process (BackgroundPlanner::State*),
// for the exit handler; a slot is taken when a thread starts.
constexpr size_t kMaxPlannerThreads = 64;
std::atomic<void*> g_planner_states[kMaxPlannerThreads];
}  // namespace

PlanningBudget& process_planning_budget() {
  static PlanningBudget budget;
  return budget;
}

PlanOptions plan_options(const ReplayConfig& config, PlanningBudget* budget) {
  PlanOptions options;
  options.time_limit_seconds = config.plan_time_limit_seconds;
  options.budget = budget ? budget : &process_planning_budget();
  options.budget_share = config.plan_time_share;
  options.cancel = &g_exiting;
  options.good_enough = GoodEnough{.unit_bytes = static_cast<int64_t>(os::page_size()),
                                   .tolerance = config.plan_tolerance};
  return options;
}

Status plan_profile(const Profile& a, const ReplayConfig& config, const BlockLayout& layout, PreparedPlan& out) {
  Problem& problem = out.problem;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.uppers[i] == kEscaped) continue;
    const Request& r = a.requests[i];
    if (static_cast<int64_t>(r.size) < config.min_planned_size) continue;
    const uint64_t color = color_shift(config, problem.buffers.size(), r.size, r.alignment);
    const uint64_t shift = color + (layout.header_bytes ? layout.header_bytes(r.alignment) : 0);
    Buffer b;
    b.id = std::to_string(i);
    b.lower = a.lower(i);
    b.upper = std::max(a.uppers[i], b.lower + 1);
    // At least one byte, so that a request of 0 bytes gets a unique address.
    b.size = static_cast<int64_t>(shift + std::max<uint64_t>(r.size, 1));
    b.alignment = static_cast<int64_t>(r.alignment);
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
  StatusOr<Plan> plan = plan_with(config.planner, problem, plan_options(config));
  if (!plan.ok()) return plan.status();
  if (plan->arena < 0 || static_cast<uint64_t>(plan->arena) > layout.max_arena) {
    return CapacityExceeded("the plan's arena of " + std::to_string(plan->arena) + " B does not fit the slab");
  }
  out.plan = std::move(plan).value();
  out.arena = static_cast<uint64_t>(out.plan.arena);
  return Status::Ok();
}

void LearnerCounters::add_to(ReplayStats& s) const {
  s.iterations += iterations.get();
  s.profiled += profiled.get();
  s.served += served.get();
  s.unplanned += unplanned.get();
  s.fallback += fallback.get();
  s.busy += busy.get();
  s.deviations += deviations.get();
  s.plans += plans_made.get();
  s.reprofiles += reprofiles.get();
  s.plan_failures += plan_failures.get();
  s.slab_bytes += slab_bytes.get();
  s.planned_buffers += planned_buffers.get();
  s.plan_stall_ns += plan_stall_ns.get();
  s.max_plan_stall_ns = std::max(s.max_plan_stall_ns, max_plan_stall_ns.get());
  s.plans_held += plans_held.get();
  s.variants += variants.get();
  s.growths += growths.get();
  s.arena_bytes += arena_bytes.get();
  if (const uint64_t low = min_shape_load.get(); low != 0) {
    s.min_shape_load_bytes = s.min_shape_load_bytes == 0 ? low : std::min(s.min_shape_load_bytes, low);
  }
  s.max_shape_load_bytes = std::max(s.max_shape_load_bytes, max_shape_load.get());
  s.plan_bytes += plan_bytes.get();
  s.evictions += evictions.get();
  s.switches += switches.get();
  s.predictions_right += predictions_right.get();
  s.predictions_wrong += predictions_wrong.get();
  s.small += small.get();
}

// ---------------------------------------------------------------------------
// The learning cycle.

std::unique_ptr<PlanJob> Learner::restart(bool has_window, uint64_t key) {
  phase_ = has_window ? ReplayPhase::kProfiling : ReplayPhase::kBackingOnly;
  agreements_ = 0;
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
    // An explicit key wins; a plain mark gets the predicted one.
    const bool predicted = next_key == 0 && predicting();
    const uint64_t target = predicted ? predict() : next_key;
    if (target != key_) {
      switch_variant(target, adapter);
    } else if (waiting_ || (phase_ == ReplayPhase::kReplaying && serving_ != active_)) {
      activate(adapter);
    }
    key_implicit_ = predicted;
  } catch (...) {
    // Out of memory while bookkeeping: forget the profiles, keep serving safely.
    agreements_ = 0;
    agreed_.clear();
    if (phase_ == ReplayPhase::kProfiling) counters_.plan_failures.bump();
  }
  tick_ = 0;
  tail_begun_ = false;
  current_.clear();
  profiled_live_.clear();
}

// Note [Trim when predictable]. A trim returns every free page of the
// backing allocator to the OS (Notes [Trim before the slab], [Trim after
// adoption]), which pays when the plan then serves the iterations: the
// backing allocator's cached blocks are no longer needed. When most recent
// iterations were mispredicted, the backing allocator serves them, and a
// trim only makes it fault its pages in again: the dynamic-batching loop,
// whose every pass batches another number of requests (32 variants in 40
// passes, 37 mispredicted), made 1,766 minor faults a pass with a trim per
// plan and 1,413 without, against glibc's 1,460, and its median pass was
// 5% slower than glibc's instead of 2% faster. So the trims are skipped
// while more than two of the last eight predicted iterations were
// mispredicted; keyed iterations and a single variant are never predicted
// wrong.
bool Learner::worth_trimming() const {
  return config_.trim_backing && std::popcount(mispredicted_ & 0xffu) <= 2;
}

// Note [Unpredictable streams]. While more than half of the last eight
// predicted iterations were mispredicted, a variant needs one agreeing
// iteration more before it is planned. In such a stream most variants do not
// come back before they are evicted, and each plan made for one costs the
// planner thread, a slab commit and a trim for nothing: the dynamic-batching
// loop (32 variants in 40 passes, none served from the slab) ran its median
// pass 1.06x the best allocator's on 2 threads, 1.01x with
// MEMPLAN_PROFILE_ITERATIONS=3 for every variant (4 rounds each), 1.04x with
// this rule (2 rounds). Keyed and well-predicted streams plan after
// MEMPLAN_PROFILE_ITERATIONS as before.
int64_t Learner::agreements_needed() const {
  return config_.profile_iterations + (std::popcount(mispredicted_ & 0xffu) > 4 ? 1 : 0);
}

bool Learner::keeps_agreed() const { return config_.upper_bound_plans; }

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
  history_[history_next_] = actual;
  history_next_ = (history_next_ + 1) % kHistory;
  history_size_ = std::min(history_size_ + 1, kHistory);
  if (key_ == 0) {
    key_ = actual;  // the unit's first variant: nothing was predicted, its state is this variant's
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
uint64_t Learner::predict() const {
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

// Keyed identity: sorts the profile by (key, first tick) and keeps each key
// made more than once as one escaped record of size 0 (ambiguous: which of
// its requests a later one is cannot be told).
void Learner::canonicalise(Profile& p) const {
  std::vector<uint32_t> order(p.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&p](uint32_t a, uint32_t b) {
    return p.keys[a].key != p.keys[b].key ? p.keys[a].key < p.keys[b].key : p.keys[a].lower < p.keys[b].lower;
  });
  Profile sorted;
  sorted.requests.reserve(p.size());
  sorted.uppers.reserve(p.size());
  sorted.keys.reserve(p.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && p.keys[order[j]].key == p.keys[order[i]].key) ++j;
    const uint32_t first = order[i];
    if (j - i == 1) {
      sorted.requests.push_back(p.requests[first]);
      sorted.uppers.push_back(p.uppers[first]);
    } else {
      sorted.requests.push_back({0, p.requests[first].alignment});
      sorted.uppers.push_back(kEscaped);
    }
    sorted.keys.push_back(p.keys[first]);
    i = j;
  }
  std::swap(p.requests, sorted.requests);
  std::swap(p.uppers, sorted.uppers);
  std::swap(p.keys, sorted.keys);
}

void Learner::finish_profile(const Planning& planning, Adapter& adapter) {
  Profile& c = current_;
  if (c.requests.empty()) return;  // an idle iteration says nothing about this unit's pattern
  if (c.overflowed) {
    agreements_ = 0;
    agreed_.clear();
    ++generation_;
    return;
  }
  if (identity_ == RequestIdentity::kKeyed) canonicalise(c);
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
    ++generation_;
  }
  if (agreements_ < agreements_needed()) return;
  if (config_.plan_in_background && planning.planner) {
    plan_in_background(planning, adapter);
  } else {
    plan_now(planning, adapter, nullptr);
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
      job ? std::move(*job->prepared) : planning.preparer.prepare(agreed_);
  if (job) job->prepared.reset();
  // Note [Trim before the slab]. The planner's working memory is freed by now,
  // and so are the profiled iterations' blocks; the backing allocator would
  // keep both resident under the slab that takes their place. A plan made in
  // the background was followed by its trim there.
  //
  // Note [Trim after adoption]. A plan made in the background was trimmed
  // after on the planner thread, but the unit was then in the middle of
  // another profiled iteration, whose blocks (a whole training step's) the
  // backing allocator still held when the plan was adopted, and kept cached
  // under the slab from then on: resnet18 training sat 15 MB (4%) higher than
  // with planning at the boundary. So adopting a background plan asks the
  // planner thread to trim once more, off the boundary: by then the last
  // profiled iteration's blocks are free.
  //
  // Note [Pre-fault after adoption]. The planner thread maps a background
  // plan's slab without faulting its pages in: pre-faulted there, the slab
  // was resident while the iteration being profiled still held its blocks in
  // the backing allocator, so the two were resident at once. A mobilenet_v2
  // training step (52 MB arena) peaked at 389 MiB at that moment, against
  // 341 MiB before and after it and glibc's 345 MiB. The job that adoption
  // queues (PlanJob::prefault_only) trims first and then faults the slab's
  // pages in (MADV_POPULATE_WRITE, which keeps their contents, so the
  // owner's first served iteration may run meanwhile and fault the pages it
  // reaches first).
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
  adapter.publish(*published);
  if (job && planning.planner) {  // Notes [Trim after adoption], [Pre-fault after adoption]
    auto prefault = std::make_unique<PlanJob>();
    prefault->prefault_only = true;
    prefault->slab = &slab_;
    prefault->slab_mutex = &slab_mutex_;
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

// Background planning, step by step, at each boundary where the unit's
// last K iterations agree:
//   1. no job: copy the agreed profile into a job and queue it for the
//      planner thread; the unit keeps profiling (the plan is not awaited).
//      Where this process has no planner thread (before the first mark, in a
//      fork child, or when none could be started), plan at the boundary;
//   2. a job not done: keep profiling;
//   3. a job done: if it planned the current agreed profile (same generation:
//      the same requests and lifetimes since it was queued), adopt the plan
//      the planner thread prepared with try_plan, which commits the slab and
//      publishes — the only stall; else drop it and go to 1;
//   4. a job queued by another process (this is a fork child; the planner
//      thread stayed in the parent, and may be using it there): leave it,
//      never destroyed, and go to 1.
// Costs per plan: one copy of the profile, one lock and one wake-up.
void Learner::plan_in_background(const Planning& planning, Adapter& adapter) {
  const int64_t process = os::process_id();
  if (job_) {
    PlanJob& job = *job_;
    if (job.process != process) {
      (void)job_.release();
    } else if (!job.done.load(std::memory_order_acquire)) {
      return;
    } else if (job.generation == generation_ ||
               (keeps_agreed() && job.structure == structure_key_of(agreed_, !config_.upper_bound_plans))) {
      // A plan of the agreed profile before its lifetimes widened or its
      // maxima grew (the first runs of a shape often free a little later) is
      // still safe to serve — replay checks sizes and liveness — so it is
      // adopted rather than dropped, and the widened profile is planned
      // again at once, as a growth (Note [Upper-bound plans]).
      const bool stale = job.generation != generation_;
      if (serving_ && adapter.slab_in_use()) {
        counters_.plan_failures.bump();  // the old slab still holds live blocks: adopt at a later boundary
        return;
      }
      // try_plan consumes the prepared plan unless the slab is being grown for
      // another job (then the job waits for a later boundary).
      plan_now(planning, adapter, job_.get());
      if (job_ && !job_->prepared) job_.reset();
      if (stale && phase_ == ReplayPhase::kReplaying) growing_ = true;
      return;
    } else {
      job_.reset();
    }
  }
  if (!planning.planner->running_here()) {
    plan_now(planning, adapter, nullptr);
    return;
  }
  auto job = std::make_unique<PlanJob>();
  job->profile = agreed_;
  job->structure = structure_key_of(agreed_, !config_.upper_bound_plans);
  job->slab = &slab_;
  job->slab_mutex = &slab_mutex_;
  job->huge_pages = config_.huge_pages;
  job->trim = worth_trimming();
  job->generation = generation_;
  job->process = process;
  planning.planner->submit(job.get());
  job_ = std::move(job);
}

void Learner::forget_foreign_job(int64_t process) {
  if (job_ && job_->process != process) (void)job_.release();
  for (Parked& v : parked_) {
    if (v.job && v.job->process != process) (void)v.job.release();
  }
  for (std::unique_ptr<PlanJob>& j : orphans_) {
    if (j && j->process != process) (void)j.release();
  }
}

// ---------------------------------------------------------------------------
// Keyed plans (Note [Keyed plans]).

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
  std::swap(out.agreed, agreed_);
  out.generation = generation_;
  out.job = std::move(job_);
  out.plan = active_;
  out.growing = growing_;
  out.shape_load_min = shape_load_min_;
  out.shape_load_max = shape_load_max_;
  Parked in;
  auto found = std::find_if(parked_.begin(), parked_.end(), [key](const Parked& v) { return v.key == key; });
  if (found != parked_.end()) {
    in = std::move(*found);
    parked_.erase(found);
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
  std::swap(agreed_, in.agreed);
  generation_ = in.generation;
  job_ = std::move(in.job);
  active_ = in.plan;
  growing_ = in.growing;
  shape_load_min_ = in.shape_load_min;
  shape_load_max_ = in.shape_load_max;
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

// ---------------------------------------------------------------------------
// The planner thread.

struct BackgroundPlanner::State {
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<PlanJob*> queue;  // under mutex
  bool stop = false;            // under mutex
  int64_t process = 0;          // the process the thread runs in
  std::thread thread;
};

BackgroundPlanner::BackgroundPlanner(const PlanPreparer& preparer, BackingAllocator& backing,
                                     void (*on_thread_start)())
    : preparer_(preparer),
      backing_(backing),
      on_thread_start_(on_thread_start),
      creator_process_(os::process_id()) {}

BackgroundPlanner::~BackgroundPlanner() {
  State* s = state_.load(std::memory_order_acquire);
  if (!s || s->process != os::process_id()) return;  // a fork child's copy: never destroyed
  for (std::atomic<void*>& slot : g_planner_states) {
    void* expected = s;
    if (slot.compare_exchange_strong(expected, nullptr)) break;
  }
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->stop = true;
  }
  s->wake.notify_one();
  if (s->thread.joinable()) s->thread.join();  // stop_all_at_exit may have joined it
  delete s;
}

void BackgroundPlanner::stop_all_at_exit() {
  g_exiting.store(true, std::memory_order_release);
  const int64_t process = os::process_id();
  for (std::atomic<void*>& slot : g_planner_states) {
    auto* s = static_cast<State*>(slot.load(std::memory_order_acquire));
    if (!s || s->process != process) continue;
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->stop = true;
    }
    s->wake.notify_one();
    if (s->thread.joinable() && s->thread.get_id() != std::this_thread::get_id()) s->thread.join();
  }
}

void BackgroundPlanner::ensure_started() {
  const int64_t process = os::process_id();
  if (process != creator_process_ || state_.load(std::memory_order_acquire)) return;
  auto fresh = std::make_unique<State>();
  fresh->process = process;
  try {
    fresh->thread = std::thread([this, s = fresh.get()] { run(*s); });
  } catch (...) {
    return;  // no thread: boundaries plan synchronously
  }
  for (std::atomic<void*>& slot : g_planner_states) {
    void* expected = nullptr;
    if (slot.compare_exchange_strong(expected, fresh.get())) break;
  }
  state_.store(fresh.release(), std::memory_order_release);
}

bool BackgroundPlanner::running_here() const {
  const State* s = state_.load(std::memory_order_acquire);
  return s && s->process == os::process_id();
}

void BackgroundPlanner::submit(PlanJob* job) {
  State& s = *state_.load(std::memory_order_acquire);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.queue.push_back(job);
  }
  s.wake.notify_one();
}

void BackgroundPlanner::run(State& s) {
  if (on_thread_start_) on_thread_start_();
  std::unique_lock<std::mutex> lock(s.mutex);
  while (true) {
    s.wake.wait(lock, [&s] { return s.stop || !s.queue.empty(); });
    if (s.stop) return;  // queued jobs stay not done; their learners are going away too
    PlanJob* j = s.queue.front();
    s.queue.erase(s.queue.begin());
    lock.unlock();
    if (j->prefault_only) {  // Notes [Trim after adoption], [Pre-fault after adoption]
      if (j->trim) backing_.release_free_memory();
      {
        std::lock_guard<std::mutex> mapping(*j->slab_mutex);
        j->slab->prefault();
      }
      j->done.store(true, std::memory_order_release);
      lock.lock();
      continue;
    }
    static std::once_flag exit_handler;  // Note [Planning at exit]
    std::call_once(exit_handler, [] { std::atexit(&BackgroundPlanner::stop_all_at_exit); });
    try {
      j->prepared.emplace(preparer_.prepare(j->profile));
      j->profile = Profile{};
      // Note [Trim before the slab], off the owner's boundary: by now the
      // planner's memory and the profiled blocks are free.
      if (j->trim) backing_.release_free_memory();
      // The slab's commit, off the owner's boundary too: only the pages past
      // its mapping, which nothing is served from, and not faulted in until
      // the plan is adopted (Note [Pre-fault after adoption]).
      if (j->slab && j->prepared->ok()) {
        std::lock_guard<std::mutex> mapping(*j->slab_mutex);
        (void)j->slab->commit(static_cast<size_t>((**j->prepared)->arena), j->huge_pages, /*prefault=*/false);
      }
    } catch (...) {
      j->prepared.emplace(Internal("out of memory while planning in the background"));
    }
    j->done.store(true, std::memory_order_release);
    lock.lock();
  }
}

}  // namespace memplan::runtime
