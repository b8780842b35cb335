// learner.h — the iteration learner: the one learning cycle of every online
// allocator (DESIGN.md, "learner"). Private to memplan's runtime.
//
// A learning unit — one thread of the replay allocator, the whole libtorch
// allocator — goes round this cycle:
//
//   1. Profiling. Each request the backing allocator serves is recorded
//      (record): its key, size and alignment, and its lifetime
//      [tick, tick at its free) in ticks of the unit's allocation count in
//      the iteration. A block not freed within the iteration, freed by
//      another unit or realloc'ed escapes (upper = kEscaped).
//   2. Agreement (end_iteration). The iteration's profile is compared with
//      the agreed one: the same requests — keys, sizes, alignments — agree,
//      and their lifetimes are united (the earliest start, the latest end;
//      escaped in any profile is escaped). After
//      ReplayConfig::profile_iterations agreeing iterations the unit plans.
//   3. Planning (plan_profile, plan_of). Every request that did not escape
//      and is at least ReplayConfig::min_planned_size bytes becomes a
//      buffer; the adapter's BlockLayout says how many bytes precede the
//      block in its buffer (a header; the colour shift of Note [Address
//      colouring] is added here for every adapter). Note [Page-optimal
//      plans] picks the planner; Note [One validation rule] decides whether
//      the plan is served. On the boundary, or with
//      ReplayConfig::plan_in_background on a BackgroundPlanner thread.
//   4. Commit. The unit's slab is committed to the arena (after the backing
//      allocator is trimmed: Note [Trim before the slab]) and the adapter
//      publishes its tables (Adapter::publish). A plan that cannot be made
//      or held leaves the unit with the backing allocator for good.
//   5. Replay. The adapter serves requests on its own fast path and tells
//      the learner at the boundary whether the iteration deviated; after
//      ReplayConfig::deviations_to_reprofile deviating iterations in a row
//      the unit profiles again.
//
// What an adapter supplies: its request identity (RequestIdentity) — the
// drop-in's request is its index in the thread's sequence, the libtorch
// allocator's a key made of (operator, invocation, index) — its BlockLayout,
// a PlanPreparer that turns a PreparedPlan into the tables its fast path
// reads, and an Adapter to withdraw and publish those tables. Everything
// else — profiles, agreement, the filters, the planner, validation, the
// slab, counting — is here, once.
//
// Note [Upper-bound plans]. With ReplayConfig::upper_bound_plans (the
// default), agreement compares a profile's structure — request count and
// order, alignments, keys — and not its sizes: iterations of one model at
// several batch sizes or sequence lengths agree, and the agreed profile keeps
// the per-request maximum of the sizes seen (and the union of lifetimes).
// The plan made from it serves every such iteration: a request no larger
// than its planned block is served in place. A larger request is a
// deviation; the adapter reports its size (observe_larger) and how many
// requests the iteration made, and when that count is the plan's, the
// boundary raises the maxima and plans again (a growth) — the rest of that
// iteration went to the backing allocator. Memory stays bounded: a plan is
// never larger than what the maxima of one structure need, and a plan that
// would not fit the slab leaves the unit with the backing allocator. The
// cost of sharing — the arena against each shape's own load — is counted
// (LearnerCounters: min/max shape load, arena).
//
// Note [Keyed plans]. A boundary may name the variant of the iteration it
// starts (a key: memplan_mark_key; 0 for a plain mark). Each key is learnt
// on its own — its own profiles, agreement, plan, upper bound and growth —
// and the learner keeps the state of the keys not running now parked, with
// their plans: switching to a key with a plan publishes that plan at the
// boundary (no profiling, no planning), provided no block of the plan being
// served is live (else that key's iteration goes to the backing allocator,
// and the switch is retried at the next boundary). All plans of a unit share
// its one slab, committed to the largest arena used so far. The parked set
// is bounded: at most ReplayConfig::max_plans keys, and the arenas of their
// plans at most ReplayConfig::max_plan_bytes; the least recently used key is
// evicted (its profile and plan dropped) first.
//
// Note [Predicted variants]. A unit whose marks name no key (memplan_mark,
// ReplayConfig::predict_variants, sequence identity) gets keys from the
// learner: an iteration's key is a hash of its request structure — the
// request count and each request's alignment (and size, without upper-bound
// plans) — with the top bit set. Such keys are learnt, parked, planned and
// evicted exactly like keys of Note [Keyed plans], in the same bounded set;
// an explicit key wins over a predicted one at every mark.
//   At each boundary the learner finds the key of the iteration that ended:
// a profiled iteration from its profile; a replayed one from the served
// plan (PreparedPlan::prefix_hash: the structure hash of the plan's first t
// requests) up to the tick where it deviated, then from the requests it made
// after that (begin_tail, observe_request: the slow path only, the fast path
// is unchanged), so an iteration that another plan served for a while is
// still told apart. That key equal to the predicted one is a right
// prediction. A wrong one: a profiled iteration is filed under its own key
// (its variant's agreement goes on there); a replayed one is not counted as
// its plan's deviation (no re-profiling, no growth). Then the next iteration
// is predicted: the key that followed the longest run of latest keys (up to
// 16) the last time that run occurred among the last 64 iterations, else the
// last one again (Learner::predict): every periodic pattern with a period of
// at most 16 — rotations, A A B, training steps with an evaluation pass
// every third step — is predicted exactly after its first period.
// The predicted variant's plan is published at the boundary as for a keyed
// switch (only with no block of the served plan live); one without a plan
// profiles. A mispredicted iteration is served from the predicted plan up to
// its first request that the plan does not fit (larger, other alignment, a
// tick past the plan, a block freed late: Note [Replay fallback]); the rest
// goes to the backing allocator. There is no switch to another plan in the
// middle of an iteration: blocks of the mispredicted plan are live then, and
// the backing allocator is always safe.
//
// A plan no key refers to and that is not being served is freed: it was
// withdrawn only when none of its blocks was live, so only an invalid
// (double or stale) free could still look it up.
//
// Thread-safety: a Learner belongs to its unit and is not thread-safe (the
// replay allocator's per-thread record owns one; the libtorch allocator
// uses its one under its mutex). A BackgroundPlanner is shared by the units of
// one allocator; its functions are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "memplan/backing_allocator.h"
#include "memplan/iteration.h"
#include "memplan/plan.h"
#include "memplan/planning.h"
#include "memplan/problem.h"
#include "memplan/replay_config.h"
#include "memplan/status.h"
#include "runtime/counter.h"
#include "runtime/mapped.h"
#include "runtime/slab.h"

namespace memplan::runtime {

// Profile upper of a block that escaped the iteration (or whose key was
// ambiguous): never planned.
constexpr int64_t kEscaped = -1;

// How an adapter names a request, so that requests of two iterations can be
// matched.
enum class RequestIdentity {
  // The request's index in its unit's sequence (the drop-in: per thread).
  // Keys are implicit (key = lower = index); two iterations agree when they
  // make the same sequence.
  kSequence,
  // A key the adapter computes (the libtorch allocator: operator, invocation,
  // index in the invocation). At the boundary the profile is sorted by key; a
  // key made more than once in one iteration is ambiguous and kept as one
  // escaped record of size 0, so that two iterations agree when they make
  // the same keys with the same sizes, in any order.
  kKeyed,
};

struct Request {
  uint64_t size = 0;
  uint64_t alignment = 16;
  bool operator==(const Request&) const = default;
};

// Keyed identity only: a request's key and its first tick.
struct RequestKey {
  uint64_t key = 0;
  int64_t lower = 0;
};

// One iteration of one unit, as the backing allocator served it. Its arrays
// are mappings of their own, never blocks of the backing allocator's heap
// (Note [Profiles off the backing heap], runtime/mapped.h).
struct Profile {
  MappedVector<Request> requests;  // by tick (sequence) or by key (keyed, after the boundary)
  MappedVector<int64_t> uppers;    // per request: tick count when freed, or kEscaped
  MappedVector<RequestKey> keys;   // keyed identity only: per request
  bool overflowed = false;         // more than max_requests, or out of memory: not plannable

  size_t size() const { return requests.size(); }
  uint64_t key(size_t i) const { return keys.empty() ? i : keys[i].key; }
  int64_t lower(size_t i) const { return keys.empty() ? static_cast<int64_t>(i) : keys[i].lower; }
  void clear();
  // clear, and give the arrays' memory back to the kernel.
  void release();
};

// True when two (canonical) profiles make the same requests.
bool same_requests(const Profile& a, const Profile& b);
// True when two (canonical) profiles make the same requests but for their
// sizes (Note [Upper-bound plans]).
bool same_structure(const Profile& a, const Profile& b);
// The load of a profile's planned requests (min_planned_size, not escaped):
// the most bytes live at once, by the requests' own sizes.
uint64_t profile_load(const Profile& p, const ReplayConfig& config);

// A plan made from an agreed profile: what every adapter needs. Adapters
// derive from it to add the tables their fast paths read.
struct PreparedPlan {
  virtual ~PreparedPlan() = default;
  Problem problem;  // the buffers planned (sizes include the header and colour), kept for check_invariants
  Plan plan;
  uint64_t arena = 0;                // bytes of slab the plan uses
  std::vector<uint32_t> request_of;  // per buffer: its request's index in the profile
  std::vector<uint32_t> shift_of;    // per buffer: bytes from its planned offset to the block (header + colour)
  // Note [Predicted variants]: per tick t (0..requests), the structure hash
  // of the profile's first t requests.
  std::vector<uint64_t> prefix_hash;
};

// Note [Predicted variants]: the structure hash, one request at a time from
// kStructureSeed, and the key of an iteration of `requests` requests whose
// hash is `h` (never 0: the top bit is set).
constexpr uint64_t kStructureSeed = 1469598103934665603ull;
inline uint64_t structure_step(uint64_t h, uint64_t size, uint64_t alignment, bool with_sizes) {
  h = (h ^ alignment) * 1099511628211ull;
  if (with_sizes) h = (h ^ size) * 1099511628211ull;
  return h;
}
inline uint64_t structure_key(uint64_t h, uint64_t requests) {
  h = (h ^ requests) * 1099511628211ull;
  h ^= h >> 29;
  return h | (uint64_t{1} << 63);
}
// The key of a profile. A keyed profile's request keys are hashed too, so
// that two keyed profiles share a key only when they make the same keys
// (a background plan of a narrower profile is adopted only then).
uint64_t structure_key_of(const Profile& p, bool with_sizes);

// How an adapter lays a block out inside its planned buffer.
struct BlockLayout {
  // Bytes the adapter keeps just below a block of this alignment (the
  // replay allocator's tick header; 0 for none). A multiple of the alignment.
  uint64_t (*header_bytes)(uint64_t alignment) = nullptr;
  // The largest arena the adapter can serve.
  uint64_t max_arena = 0;
};

// Fills `out`'s problem, plan, arena, request_of and shift_of from an agreed
// profile. Reads only its arguments: planner threads call it.
Status plan_profile(const Profile& agreed, const ReplayConfig& config, const BlockLayout& layout, PreparedPlan& out);

// The planning options of every plan the runtime makes (Notes [Page-optimal
// plans] and [Planning budget] in learner.cc): config's planner and time
// limit, stopping at a page-optimal greedy plan (GoodEnough, one page unit,
// config.plan_tolerance), the time drawn from `budget` (nullptr: the
// process's, which every unit of every allocator shares), cancelled at exit
// (Note [Planning at exit]). run_planner validates the plan, once.
PlanOptions plan_options(const ReplayConfig& config, PlanningBudget* budget = nullptr);

// Turns an agreed profile into a plan with the adapter's tables. Must be
// safe to call from a planner thread (it reads only immutable state).
class PlanPreparer {
 public:
  virtual ~PlanPreparer() = default;
  virtual StatusOr<std::unique_ptr<PreparedPlan>> prepare(const Profile& agreed) const = 0;
};

// A planner run on a BackgroundPlanner: a copy of the agreed profile, and
// the plan prepared from it once `done` is set (release; the owner reads it
// after an acquire load of `done`).
struct PlanJob {
  Profile profile;          // a copy: the owner keeps profiling meanwhile
  // The owner's slab, grown by the planner thread to the plan's arena (the
  // mapping off the owner's boundary; its pages are faulted in after adoption,
  // Note [Pre-fault after adoption]), under slab_mutex; nullptr: not grown.
  Slab* slab = nullptr;
  std::mutex* slab_mutex = nullptr;
  bool huge_pages = false;
  bool trim = false;        // return the backing allocator's free memory after planning (Note [Trim when predictable])
  // Plans nothing: trims (if `trim`) and faults in the slab's mapped pages
  // (Note [Pre-fault after adoption]), queued when a plan is adopted.
  bool prefault_only = false;
  uint64_t generation = 0;  // the owner's Learner generation it plans
  uint64_t structure = 0;   // structure_key_of the profile (sequence identity)
  int64_t process = 0;      // the process that queued it
  std::optional<StatusOr<std::unique_ptr<PreparedPlan>>> prepared;  // set by the planner thread
  std::atomic<bool> done{false};
};

// The planner thread of one allocator in one process
// (ReplayConfig::plan_in_background). It runs queued jobs one at a time; a
// job stays owned by its learner, which drops it only once done.
class BackgroundPlanner {
 public:
  // `on_thread_start` runs first on the planner thread (the replay allocator
  // keeps it from claiming a per-thread record).
  BackgroundPlanner(const PlanPreparer& preparer, BackingAllocator& backing,
                    void (*on_thread_start)() = nullptr);
  // Stops and joins the thread in the process that started it; a fork
  // child's copy of the parent's is left alone (its thread is not there).
  ~BackgroundPlanner();
  BackgroundPlanner(const BackgroundPlanner&) = delete;
  BackgroundPlanner& operator=(const BackgroundPlanner&) = delete;

  // Starts the thread if this process has none. Only from the program's own
  // call (a mark), never from inside malloc or free, where glibc may hold
  // the lock that pthread_create needs; and only in the process that built
  // the planner: a fork child starts no thread (what a child of a
  // multi-threaded process may do is limited; ThreadSanitizer refuses it)
  // and plans at its boundaries.
  void ensure_started();
  // True when the thread runs in the calling process.
  bool running_here() const;
  // Queues a job (running_here() must hold).
  void submit(PlanJob* job);

 private:
  struct State;
  void run(State& state);
  // Note [Planning at exit] (learner.cc): an exit handler.
  static void stop_all_at_exit();
  const PlanPreparer& preparer_;
  BackingAllocator& backing_;
  void (*on_thread_start_)();
  int64_t creator_process_;
  std::atomic<State*> state_{nullptr};
};

// The counters of one learning unit (memplan::ReplayStats), written by the
// unit's owner, read racily.
struct LearnerCounters {
  Counter iterations, profiled, served, unplanned, fallback, busy, deviations, plans_made, reprofiles,
      plan_failures, slab_bytes, planned_buffers, plan_stall_ns, max_plan_stall_ns, variants, growths, arena_bytes,
      min_shape_load, max_shape_load, plans_held, plan_bytes, evictions, switches, predictions_right,
      predictions_wrong, small;
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
    const PlanPreparer& preparer;
    BackingAllocator& backing;          // trimmed before a slab is committed
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

 private:
  void finish_profile(const Planning& planning, Adapter& adapter);
  void canonicalise(Profile& p) const;
  void plan_now(const Planning& planning, Adapter& adapter, PlanJob* job);
  void try_plan(const Planning& planning, Adapter& adapter, PlanJob* job);
  void plan_in_background(const Planning& planning, Adapter& adapter);
  void withdraw(Adapter& adapter);
  void note_shape(const Profile& p);
  void switch_variant(uint64_t key, Adapter& adapter);
  void enter(uint64_t key);
  bool classify(bool deviated, uint32_t requests, const Planning& planning, Adapter& adapter);
  uint64_t predict() const;
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
  int64_t deviating_run_ = 0;  // consecutive deviating iterations
  uint32_t tick_ = 0;          // requests recorded in this iteration
  Profile current_;
  Profile agreed_;                    // with upper-bound plans: kept while replaying (the maxima)
  MappedVector<uint64_t> pending_;    // replay: per request, the largest size seen above its block this iteration
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
    Profile agreed;
    uint64_t generation = 0;
    std::unique_ptr<PlanJob> job;
    PreparedPlan* plan = nullptr;
    bool growing = false;
    uint64_t shape_load_min = 0, shape_load_max = 0;
  };
  uint64_t key_ = 0;
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
  // Note [Trim when predictable]: bit i set when the i-th latest predicted
  // iteration was mispredicted.
  uint32_t mispredicted_ = 0;
  bool worth_trimming() const;
  int64_t agreements_needed() const;  // Note [Unpredictable streams]
  uint64_t uses_ = 0;                // boundaries so far: the LRU clock
  PreparedPlan* active_ = nullptr;   // the running variant's plan (the one served while replaying)
  bool waiting_ = false;             // active_ waits for the served plan's blocks to be freed
  std::vector<Parked> parked_;
  std::vector<std::unique_ptr<PlanJob>> orphans_;  // jobs of evicted variants, dropped once done
  uint64_t generation_ = 0;           // bumped whenever agreed_ changes (requests or lifetimes)
  std::unique_ptr<PlanJob> job_;      // the planner thread's job, if any
  PointerTickMap profiled_live_;      // backing pointer -> tick, this iteration (off the backing heap too)
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
