// learner.h — the iteration learner: the one learning cycle of every online
// allocator (DESIGN.md, "learner"). Private to memplan's runtime.
//
// A learning unit — one thread of the replay allocator, the whole libtorch
// allocator — goes round this cycle (learner.cc):
//
//   1. Profiling. Each request the backing allocator serves is recorded
//      (record): its key, size and alignment, and its lifetime
//      [tick, tick at its free) in ticks of the unit's allocation count in
//      the iteration. A block not freed within the iteration, freed by
//      another unit or realloc'ed escapes (upper = kEscaped). (profile.h)
//   2. Agreement (end_iteration). The iteration's profile is compared with
//      the agreed one: the same requests — keys, sizes, alignments — agree,
//      and their lifetimes are united (the earliest start, the latest end;
//      escaped in any profile is escaped). After
//      ReplayConfig::profile_iterations agreeing iterations the unit plans.
//      (Note [Upper-bound plans], learner.cc)
//   3. Planning (plan_profile, profile_plan.cc). Every request that did not
//      escape and is at least ReplayConfig::min_planned_size bytes becomes
//      a buffer laid out as the adapter's BlockLayout says, and one
//      run_planner call plans them (Notes [Page-optimal plans], [One
//      validation rule], [Planning budget]). On the boundary, or with
//      ReplayConfig::plan_in_background on a BackgroundPlanner thread
//      (planner_thread.h).
//   4. Commit. The unit's slab is committed to the arena (after the backing
//      allocator is trimmed: Note [Trim before the slab]) and the adapter
//      publishes its tables (Adapter::publish; learner_publish.cc). A plan that cannot be made
//      or held leaves the unit with the backing allocator for good.
//   5. Replay. The adapter serves requests on its own fast path and tells
//      the learner at the boundary whether the iteration deviated; after
//      ReplayConfig::deviations_to_reprofile deviating iterations in a row
//      the unit profiles again.
// Variants — keyed, predicted, parked, evicted — are variants.cc (Notes
// [Keyed plans], [Predicted variants]).
//
// What an adapter supplies: its request identity (RequestIdentity) — the
// drop-in's request is its index in the thread's sequence, the libtorch
// allocator's a key made of (operator, invocation, index) — its BlockLayout,
// and its PlanTables: the tables its fast path reads, built from a plan the
// learner made (profile → problem → run_planner, with the adapter's
// layout); and an Adapter to withdraw and publish those tables. Everything
// else — profiles, agreement, the filters, planning, the slab, counting —
// is here, once.
//
// Thread-safety: a Learner belongs to its unit and is not thread-safe (the
// replay allocator's per-thread record owns one; the libtorch allocator
// uses its one under its mutex). A BackgroundPlanner is shared by the units of
// one allocator; its functions are thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "memplan/backing_allocator.h"
#include "memplan/plan_file.h"
#include "memplan/replay_config.h"
#include "memplan/replay_stats.h"
#include "runtime/counter.h"
#include "runtime/mapped.h"
#include "runtime/planner_thread.h"
#include "runtime/profile.h"
#include "runtime/slab.h"

namespace memplan::runtime {

// The counters of one learning unit (memplan::ReplayStats), written by the
// unit's owner, read racily.
struct LearnerCounters {
  Counter iterations, profiled, served, unplanned, fallback, busy, deviations, plans_made, plans_loaded, reprofiles,
      plan_failures, slab_bytes, planned_buffers, plan_stall_ns, max_plan_stall_ns, variants, growths, arena_bytes,
      min_shape_load, max_shape_load, plans_held, plan_bytes, evictions, switches, predictions_right, predictions_wrong,
      small;
  // Adds these counters to `s` (the longest stall is a maximum, not a sum).
  void add_to(ReplayStats& s) const;
};

class Learner {
 public:
  // The adapter's side of a boundary.
  class Adapter {
   public:
    // A block of the published plan is still live in the slab.
    virtual bool slab_in_use() const = 0;
    // Stops serving (and looking up frees in) the published plan, before the
    // slab's mapping changes under it.
    virtual void withdraw() = 0;
    // Serves `plan` from now on; the slab holds its arena.
    virtual void publish(PreparedPlan& plan) = 0;

   protected:
    ~Adapter() = default;
  };
  // What a boundary may use to plan.
  struct Planning {
    const PlanTables& tables;              // the adapter's layout and fast-path tables (plan_with_tables)
    BackingAllocator& backing;             // trimmed before a slab is committed
    BackgroundPlanner* planner = nullptr;  // with plan_in_background; nullptr plans at the boundary
  };

  Learner(const ReplayConfig& config, RequestIdentity identity)
      : config_(config), identity_(identity), key_implicit_(predicting()) {}
  Learner(const Learner&) = delete;
  Learner& operator=(const Learner&) = delete;

  // A new owner (a thread that claims a reused record): profiling when the
  // unit has a slab window, backing-only otherwise. Published plans stay
  // (their blocks may still be freed); a job in flight is handed back.
  // `key`: the variant of the iteration under way (Note [Keyed plans]).
  [[nodiscard]] std::unique_ptr<PlanJob> restart(bool has_window, uint64_t key = 0);

  ReplayPhase phase() const { return phase_; }
  void set_backing_only() { phase_ = ReplayPhase::kBackingOnly; }

  // Profiling: records a request the backing allocator served at `p`
  // (keyed identity: with `key`), at the next tick. Never throws; a request
  // that cannot be recorded makes the iteration unplannable.
  void record(uint64_t key, uint64_t size, uint64_t alignment, const void* p);
  // Profiling: the block at p ends now (escaped: it is realloc'ed or
  // otherwise kept from the plan). Unknown pointers are ignored.
  void record_end(const void* p, bool escaped);

  // The iteration boundary: agreement and planning after profiling,
  // deviation counting and re-profiling after replay. Never throws.
  // `requests`: how many requests the iteration made (replay only; an
  // observed growth is adopted only when it equals the plan's count).
  // `next_key`: the variant of the iteration that starts (Note [Keyed plans]).
  void end_iteration(bool deviated, const Planning& planning, Adapter& adapter, uint32_t requests = UINT32_MAX,
                     uint64_t next_key = 0);

  // Replay, upper-bound plans: request `index` of the serving plan asked for
  // `size` bytes, more than its block holds. No allocation, no lock: called
  // on the allocation path of a deviating iteration.
  void observe_larger(uint32_t index, uint64_t size) {
    if (index < pending_.size() && size > pending_[index]) {
      pending_[index] = size;
      pending_any_ = true;
    }
  }

  // Note [Predicted variants], replay: the iteration deviated at `tick` (the
  // rest goes to the backing allocator); from here its requests are hashed
  // (observe_request) so that the boundary can tell which variant it was.
  // No allocation, no lock: the slow path of a deviating iteration.
  void begin_tail(uint32_t tick) {
    if (!key_implicit_ || tail_begun_) return;
    tail_begun_ = true;
    const PreparedPlan* p = serving_;
    tail_hash_ = p && !p->prefix_hash.empty() ? p->prefix_hash[std::min<size_t>(tick, p->prefix_hash.size() - 1)]
                                              : kStructureSeed;
  }
  void observe_request(uint64_t size, uint64_t alignment) {
    if (tail_begun_) tail_hash_ = structure_step(tail_hash_, size, alignment, !config_.upper_bound_plans);
  }
  // The variant of the iteration under way, and whether the learner chose it.
  uint64_t key() const { return key_; }
  bool key_predicted() const { return key_implicit_; }

  // The unit's slab lives in `window` (set once, before the first request).
  // `memory`: who maps it (nullptr: the OS; a device's SlabMemory otherwise).
  void set_window(void* window, size_t window_bytes, SlabMemory* memory = nullptr) {
    slab_ = Slab(window, window_bytes, memory);
  }
  Slab& slab() { return slab_; }
  const Slab& slab() const { return slab_; }
  // The published plan, or nullptr.
  PreparedPlan* serving() const { return serving_; }
  // While replaying, the published plan is the running variant's (Note [Keyed plans]).
  bool serves_running_variant() const { return phase_ != ReplayPhase::kReplaying || serving_ == active_; }
  // Every plan this learner published (kept while their blocks may be freed).
  const std::vector<std::unique_ptr<PreparedPlan>>& plans() const { return plans_; }
  LearnerCounters& counters() { return counters_; }
  const LearnerCounters& counters() const { return counters_; }
  // Drops a job of another process (a fork child's copy): never destroyed.
  void forget_foreign_job(int64_t process);

  // Note [Plans from a file] (learner_saved.cc): the variants this unit has
  // plans for, as a plan file holds them (at most kMaxSavedVariants), the
  // variant it ran first first.
  // Read while no other thread uses the unit.
  std::vector<SavedVariant> saved_variants() const;
  // The unit as a plan file holds it under `name`: saved_variants() and the
  // variants of its first iterations, in order (SavedUnit::course). No
  // variants: nothing to save.
  SavedUnit saved_unit(std::string name) const;
  // Serves the unit's variants from the iteration that starts now: each is
  // planned (its saved offsets where the validator accepts them) and parked
  // as a variant with a plan, and the first published as the running one.
  // Variants of the other request identity, or that cannot be planned, are
  // skipped. Its course guides the predictions while the unit's iterations
  // follow it. Call at a boundary or before the unit's first request.
  // Returns how many variants were taken.
  size_t seed(const SavedUnit& unit, const Planning& planning, Adapter& adapter);
  // In the unit's first iteration, or a later one while no seeded plan has
  // served a request yet, after a deviation of a seeded plan while none of
  // its blocks is live: drops every seeded plan and gives the slab
  // back (Note [Plans from a file]); the rest of the iteration goes to the
  // backing allocator and the next one profiles. False, changing nothing,
  // in any other state.
  bool drop_seed(Adapter& adapter);

 private:
  void finish_profile(const Planning& planning, Adapter& adapter);
  void plan_now(const Planning& planning, Adapter& adapter, PlanJob* job);
  void try_plan(const Planning& planning, Adapter& adapter, PlanJob* job);
  void plan_in_background(const Planning& planning, Adapter& adapter);
  void plan_ahead(const Planning& planning);
  void queue_job(const Planning& planning);
  void withdraw(Adapter& adapter);
  void note_shape(const Profile& p);
  void switch_variant(uint64_t key, Adapter& adapter);
  void adopt_on_switch(const Planning& planning, Adapter& adapter);  // Note [Plans ahead of agreement]
  void enter(uint64_t key);
  bool classify(bool deviated, uint32_t requests, const Planning& planning, Adapter& adapter);
  uint64_t predict() const;
  uint64_t successor() const;           // Note [Predicted variants]: by the longest context
  bool holds_plan(uint64_t key) const;  // the variant `key` has a plan (running or parked)
  void fit_slab();                      // Note [The slab fits its plans] (variants.cc); the caller holds slab_mutex_
  bool predicting() const;
  // The agreed profile stays while replaying (its maxima grow): upper-bound
  // plans, with either identity (the keyed adapters check sizes and liveness
  // when they serve, so a plan of a narrower profile is safe to adopt).
  bool keeps_agreed() const;
  void activate(Adapter& adapter);
  void evict_to_bounds(Adapter& adapter);
  void prune_plans();
  void count_held();
  void replan(const Planning& planning, Adapter& adapter);
  bool adopt_growth(uint32_t requests);

  const ReplayConfig& config_;
  RequestIdentity identity_;
  ReplayPhase phase_ = ReplayPhase::kProfiling;
  int64_t agreements_ = 0;     // consecutive iterations equal to agreed_
  bool returned_ = false;      // Note [Unpredictable streams]: the variant came back after another ran
  int64_t deviating_run_ = 0;  // consecutive deviating iterations
  uint32_t tick_ = 0;          // requests recorded in this iteration
  Profile current_;
  Profile agreed_;                  // with upper-bound plans: kept while replaying (the maxima)
  MappedVector<uint64_t> pending_;  // replay: per request, the largest size seen above its block this iteration
  bool pending_any_ = false;
  bool growing_ = false;              // agreed_ holds raised maxima not planned yet
  uint64_t variant_hashes_[32] = {};  // size signatures seen (the first 32)
  uint32_t variant_count_ = 0;
  uint64_t shape_load_min_ = 0, shape_load_max_ = 0;  // loads of the profiles merged into agreed_

  // Note [Keyed plans]: the running variant's key and plan, and the others, parked.
  struct Parked {
    uint64_t key = 0;
    uint64_t last_use = 0;
    ReplayPhase phase = ReplayPhase::kProfiling;
    int64_t agreements = 0;
    bool returned = false;
    Profile agreed;
    uint64_t generation = 0;
    std::unique_ptr<PlanJob> job;
    PreparedPlan* plan = nullptr;
    bool growing = false;
    uint64_t shape_load_min = 0, shape_load_max = 0;
    uint64_t after = 0;  // Note [Plans from a file]: as agreed_after_
  };
  uint64_t key_ = 0;
  uint64_t first_key_ = 0;  // the key of the unit's first iteration (saved first: Note [Plans from a file])
  // Note [Plans from a file]: the first iteration's profile, kept (with
  // save_plans_file, predicted variants) so that a file serves a later
  // process's first iteration too, which often differs from the rest.
  Profile first_profile_;
  // Note [Plans from a file]: with save_plans_file, the profile of each
  // variant's first run that followed another variant, kept whether or not
  // the variant's later runs agree with it (a shape's first run makes its
  // state, and its key never comes back): saved, without offsets, for the
  // keys no agreed profile is saved for. At most kMaxSavedVariants.
  struct FirstRun {
    uint64_t key = 0;
    uint64_t after = 0;
    Profile profile;
  };
  std::vector<FirstRun> first_runs_;
  uint64_t seeded_next_ = 0;  // Note [Plans from a file]: the prediction after a seeded unit's first iteration
  // Note [Plans from a file]: the variant that ran before the running
  // variant's first run, when its agreed profile includes that first run
  // (else 0); the variant of the last iteration that ran; and the variants
  // seen so far with how many iterations each ran (Note [A one-off does not
  // displace a plan]; the first kMaxSeen variants; beyond them every variant
  // counts as seen, its runs uncounted).
  uint64_t agreed_after_ = 0;
  uint64_t last_ran_ = 0;
  static constexpr size_t kMaxSeen = 256;
  struct Seen {
    uint64_t key = 0;
    uint32_t runs = 0;  // saturating
  };
  std::vector<Seen> seen_;
  // How many iterations of `key` have run: 0 for none, UINT32_MAX when it
  // is not among the first kMaxSeen variants (not counted).
  uint32_t times_run(uint64_t key) const {
    const auto found = std::find_if(seen_.begin(), seen_.end(), [key](const Seen& s) { return s.key == key; });
    if (found != seen_.end()) return found->runs;
    return seen_.size() >= kMaxSeen ? UINT32_MAX : 0;
  }
  bool seen_before(uint64_t key) const { return times_run(key) != 0; }
  void note_ran(uint64_t key);
  std::vector<SavedVariant> seeds_waiting_;  // Note [Plans from a file]: loaded, adopted at their first iteration
  uint64_t last_actual_ = 0;                 // Note [Predicted variants]: the key classify found, 0 for none
  void adopt_seed(uint64_t key, const Planning& planning, Adapter& adapter);
  // A saved variant's plan (its offsets where the validator accepts them),
  // held in plans_ and counted as loaded, and its profile in `agreed`; nullptr
  // when it is not this unit's identity or cannot be planned.
  PreparedPlan* plan_seed(const SavedVariant& v, const Planning& planning, Profile& agreed);
  // Note [Predicted variants]: key_ was chosen by the learner; the hash of a
  // deviating replayed iteration's structure; and the variants of the last
  // kHistory iterations, a ring (history_at(0): the latest).
  bool key_implicit_ = false;
  bool tail_begun_ = false;
  uint64_t tail_hash_ = 0;
  static constexpr size_t kHistory = 64;
  static constexpr size_t kLongestContext = 16;
  uint64_t history_[kHistory] = {};
  size_t history_size_ = 0;  // at most kHistory
  size_t history_next_ = 0;  // where the next key goes
  uint64_t history_at(size_t age) const { return history_[(history_next_ + kHistory - 1 - age) % kHistory]; }
  // Note [Plans from a file]: the variants of the unit's first iterations
  // (saved as its course); a loaded course and how many of this process's
  // iterations have followed it (kOffCourse once one did not).
  uint64_t course_[kMaxSavedCourse] = {};
  size_t course_size_ = 0;
  uint64_t loaded_course_[kMaxSavedCourse] = {};
  size_t loaded_course_size_ = 0;
  static constexpr size_t kOffCourse = ~size_t{0};
  size_t on_course_ = kOffCourse;
  // Note [Trim when predictable]: bit i set when the i-th latest predicted
  // iteration was mispredicted.
  uint32_t mispredicted_ = 0;
  bool worth_trimming() const;
  int64_t agreements_needed() const;  // Note [Unpredictable streams]
  uint64_t uses_ = 0;                 // boundaries so far: the LRU clock
  PreparedPlan* active_ = nullptr;    // the running variant's plan (the one served while replaying)
  bool waiting_ = false;              // active_ waits for the served plan's blocks to be freed
  std::vector<Parked> parked_;
  std::vector<std::unique_ptr<PlanJob>> orphans_;  // jobs of evicted variants, dropped once done
  uint64_t generation_ = 0;                        // bumped whenever agreed_ changes (requests or lifetimes)
  std::unique_ptr<PlanJob> job_;                   // the planner thread's job, if any
  PointerTickMap profiled_live_;                   // backing pointer -> tick, this iteration (off the backing heap too)
  // Held while the slab's mapping changes: by a planner thread growing it for
  // a job, by the owner (try_lock only: a boundary never waits) committing or
  // releasing it.
  std::mutex slab_mutex_;
  PreparedPlan* serving_ = nullptr;
  std::vector<std::unique_ptr<PreparedPlan>> plans_;
  Slab slab_;
  LearnerCounters counters_;
};

}  // namespace memplan::runtime
