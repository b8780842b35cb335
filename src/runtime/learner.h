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
// Towards several plans (issue 14, step 2). The learner already keeps every
// plan it published (`plans()`, owned here, adapters hold raw pointers), and a
// plan is a PreparedPlan made from one agreed Profile. A bounded plan cache
// is a map from a profile's signature (its requests) to such plans with LRU
// eviction by count and bytes, kept in place of `plans_`; end_iteration
// would look the finished profile up there before planning, and
// Adapter::publish would be called to switch plans rather than only after a
// new one is made. Upper-bound plans are a Profile whose sizes are the
// per-request maxima, which same_requests would compare by key alone.
//
// Thread-safety: a Learner belongs to its unit and is not thread-safe (the
// replay allocator's per-thread record owns one; the libtorch allocator
// uses its one under its mutex). A BackgroundPlanner is shared by the units of
// one allocator; its functions are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "memplan/backing_allocator.h"
#include "memplan/iteration.h"
#include "memplan/plan.h"
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

// A plan made from an agreed profile: what every adapter needs. Adapters
// derive from it to add the tables their fast paths read.
struct PreparedPlan {
  virtual ~PreparedPlan() = default;
  Problem problem;  // the buffers planned (sizes include the header and colour), kept for check_invariants
  Plan plan;
  uint64_t arena = 0;                // bytes of slab the plan uses
  std::vector<uint32_t> request_of;  // per buffer: its request's index in the profile
  std::vector<uint32_t> shift_of;    // per buffer: bytes from its planned offset to the block (header + colour)
};

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

// Note [One validation rule]: a plan is served only if memplan::validate
// accepts it, whichever planner made it. The planner is chosen by
// Note [Page-optimal plans] (learner.cc).
StatusOr<Plan> plan_of(const Problem& problem, const ReplayConfig& config);

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
  uint64_t generation = 0;  // the owner's Learner generation it plans
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
  BackgroundPlanner(const PlanPreparer& preparer, BackingAllocator& backing, bool trim_backing,
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
  const PlanPreparer& preparer_;
  BackingAllocator& backing_;
  bool trim_backing_;
  void (*on_thread_start_)();
  int64_t creator_process_;
  std::atomic<State*> state_{nullptr};
};

// The counters of one learning unit (memplan::ReplayStats), written by the
// unit's owner, read racily.
struct LearnerCounters {
  Counter iterations, profiled, served, unplanned, fallback, busy, deviations, plans_made, reprofiles,
      plan_failures, slab_bytes, planned_buffers, plan_stall_ns, max_plan_stall_ns;
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

  Learner(const ReplayConfig& config, RequestIdentity identity) : config_(config), identity_(identity) {}
  Learner(const Learner&) = delete;
  Learner& operator=(const Learner&) = delete;

  // A new owner (a thread that claims a reused record): profiling when the
  // unit has a slab window, backing-only otherwise. Published plans stay
  // (their blocks may still be freed); a job in flight is handed back.
  [[nodiscard]] std::unique_ptr<PlanJob> restart(bool has_window);

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
  void end_iteration(bool deviated, const Planning& planning, Adapter& adapter);

  // The unit's slab lives in `window` (set once, before the first request).
  void set_window(void* window, size_t window_bytes) { slab_ = Slab(window, window_bytes); }
  Slab& slab() { return slab_; }
  const Slab& slab() const { return slab_; }
  // The published plan, or nullptr.
  PreparedPlan* serving() const { return serving_; }
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

  const ReplayConfig& config_;
  RequestIdentity identity_;
  ReplayPhase phase_ = ReplayPhase::kProfiling;
  int64_t agreements_ = 0;     // consecutive iterations equal to agreed_
  int64_t deviating_run_ = 0;  // consecutive deviating iterations
  uint32_t tick_ = 0;          // requests recorded in this iteration
  Profile current_;
  Profile agreed_;
  uint64_t generation_ = 0;           // bumped whenever agreed_ changes (requests or lifetimes)
  std::unique_ptr<PlanJob> job_;      // the planner thread's job, if any
  PointerTickMap profiled_live_;      // backing pointer -> tick, this iteration (off the backing heap too)
  PreparedPlan* serving_ = nullptr;
  std::vector<std::unique_ptr<PreparedPlan>> plans_;
  Slab slab_;
  LearnerCounters counters_;
};

}  // namespace memplan::runtime
