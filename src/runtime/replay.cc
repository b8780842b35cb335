// replay.cc — the replay allocator (memplan/replay.h): per-thread profiling,
// planning at the iteration boundary (or on a planner thread, adopted at a
// later boundary: plan_in_background), and serving from a slab.
//
// Layout. One reservation of address space holds max_threads windows of
// window_bytes (a power of two). Thread record w owns window w: its slab is
// committed at the window's start, and the plan it serves is published in
// window_plans[w]. A pointer is a slab pointer iff it falls in the
// reservation (one subtraction and compare); its window is one shift away.
//
// Per-thread record. A thread claims a record on its first request (under a
// mutex) and gives it back at thread exit (pthread key destructor), so thread
// churn reuses records, windows and slabs. Only the owner allocates from a
// record's slab; any thread may free into it.
//
// Liveness. Each tick of a plan has an occupant word: the offset / 16 of the
// block served at that tick and not yet freed, 0 when free. The owner stores it
// when serving (relaxed: the pointer reaches other threads through the
// program's own synchronisation) and any thread clears it on free (release);
// the owner reads occupants with acquire before reusing bytes.
//
// Note [Replay fallback]. Serving tick t is safe when every live slab block b
// satisfies b.lower <= t < b.upper in planned ticks: then b and the new block
// are live together in the plan, which keeps them apart in bytes. Blocks are
// served only at their own tick, so b.lower <= t holds for blocks of this
// iteration; the boundary refuses to replay while a block of an earlier
// iteration is live; and before serving t the owner walks the planned blocks
// in order of their upper tick and deviates if one with upper <= t is still
// live. Each block is examined once per iteration, so the walk is amortised
// O(1) per request.
//
// The fast paths themselves (allocation and free of a slab block) are inline
// functions in replay_fast.h, shared with the drop-in.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/problem.h"
#include "memplan/replay.h"
#include "memplan/validate.h"
#include "runtime/mapped.h"
#include "runtime/os/os_memory.h"
#include "runtime/replay_fast.h"
#include "runtime/slab.h"

#define MEMPLAN_LIKELY(x) __builtin_expect(!!(x), 1)
#define MEMPLAN_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace memplan::runtime::fast {
__thread ThreadLink t_link __attribute__((tls_model("initial-exec")));
}  // namespace memplan::runtime::fast

namespace memplan {
namespace {

namespace rt = memplan::runtime;
namespace fast = memplan::runtime::fast;
using fast::t_link;

constexpr size_t kMinAlignment = 16;  // what malloc promises (alignof(max_align_t))
constexpr uint32_t kNoWindow = UINT32_MAX;
constexpr int64_t kEscaped = -1;      // profile upper of a block not freed within the iteration

struct Request {
  uint64_t size = 0;
  uint64_t alignment = kMinAlignment;
  bool operator==(const Request&) const = default;
};

// One iteration of one thread, as the backing allocator served it. Its arrays
// are mappings of their own, never blocks of the backing allocator's heap
// (Note [Profiles off the backing heap], runtime/mapped.h).
struct Profile {
  rt::MappedVector<Request> requests;  // by tick
  rt::MappedVector<int64_t> uppers;    // by tick: allocation count when freed, or kEscaped
  bool overflowed = false;             // more than max_requests: not plannable

  void clear() {
    requests.clear();
    uppers.clear();
    overflowed = false;
  }
  // clear, and give the arrays' memory back to the kernel.
  void release() {
    rt::MappedVector<Request>().swap(requests);
    rt::MappedVector<int64_t>().swap(uppers);
    overflowed = false;
  }
};

using fast::Counter;
using fast::kHeaderBytes;
using fast::read_header;
using fast::TickEntry;

// Every served block is preceded by kHeaderBytes of slab that hold its tick,
// so that a free finds the block's occupant from the pointer alone. The
// header of a block with a larger alignment is that alignment, so the block
// stays aligned.
uint64_t header_bytes(uint64_t alignment) { return std::max(kHeaderBytes, alignment); }

struct PlanJob;

// The planner thread of one allocator in one process. It runs queued jobs one
// at a time; a job stays owned by its record, which drops it only once done.
struct PlannerState {
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<PlanJob*> queue;  // under mutex
  bool stop = false;            // under mutex
  int64_t process = 0;          // the process the thread runs in
  std::thread thread;
};

// Note [Page-optimal plans]. A slab is committed in whole pages, so a plan
// whose arena takes as many pages as the load (the bound every plan respects)
// cannot be beaten. greedy_by_size is tried first (milliseconds, little
// working memory) and kept when it is valid and page-optimal; otherwise the
// configured planner runs. On the torchvision runs the portfolio otherwise
// spent its whole time budget and up to 4 MiB of transient heap at the
// boundary for the same slab (docs/runtime.md, Memory).
StatusOr<Plan> plan_of(const Problem& problem, const ReplayConfig& config) {
  PlanOptions options;
  options.time_limit_seconds = config.plan_time_limit_seconds;
  if (config.planner != "greedy_by_size") {
    StatusOr<Plan> quick = plan_with("greedy_by_size", problem, options);
    const uint64_t page = rt::os::page_size();
    auto pages = [page](int64_t bytes) { return (static_cast<uint64_t>(std::max<int64_t>(bytes, 0)) + page - 1) / page; };
    if (quick.ok() && pages(quick->arena) <= pages(load(problem)) && validate(problem, *quick).ok()) return quick;
  }
  return plan_with(config.planner, problem, options);
}

// A plan ready to serve, immutable once published except for the occupants.
// Its PlanView (entries, occupant, tick_count, header_span) points into the
// vectors below and is what frees read.
struct ServedPlan : fast::PlanView {
  Problem problem;  // the buffers planned (ids are ticks; sizes include the header), for check_invariants
  Plan plan;
  uint64_t arena = 0;                // bytes of slab the plan uses
  std::vector<TickEntry> ticks;      // one per allocation of the iteration, then the sentinel (limit 0)
  // Ticks of the planned blocks in order of their planned end (upper), which
  // is the order in which the liveness walk must find them freed.
  std::vector<uint32_t> end_ticks;
  // Per tick (and the sentinel): offset16 of the block served there while it is live, else 0.
  std::unique_ptr<std::atomic<uint32_t>[]> occupants;

  uint32_t size() const { return tick_count; }
  bool any_live() const {
    for (uint32_t t = 0; t < tick_count; ++t) {
      if (occupants[t].load(std::memory_order_acquire) != 0) return true;
    }
    return false;
  }
  // Points the view at the vectors, once they are final.
  void finish_view() {
    entries = ticks.data();
    occupant = occupants.get();
    tick_count = static_cast<uint32_t>(ticks.size() - 1);
    header_span = arena >= kHeaderBytes ? arena - kHeaderBytes + 1 : 0;
  }
};

// A planner run on the planner thread (ReplayConfig::plan_in_background): a
// copy of the agreed profile, and the plan prepared from it once `done` is
// set (release; the owner reads it after an acquire load of `done`).
struct PlanJob {
  Profile profile;          // a copy: the owner keeps profiling meanwhile
  uint64_t generation = 0;  // the owner's ThreadRecord::generation it plans
  int64_t process = 0;      // the process that queued it
  std::optional<StatusOr<std::unique_ptr<ServedPlan>>> prepared;  // set by the planner thread
  std::atomic<bool> done{false};
};

struct ThreadRecord : fast::ThreadFast {
  // fast::ThreadFast is the first cache line: all the allocation fast path
  // reads (a copy of the serving plan's arrays, and the cursors).
  uint64_t epoch = 0;         // the last epoch this thread processed
  uint32_t entry_count = 0;   // ticks of the serving plan
  std::atomic<uint32_t> claimed{0};
  ThreadRecord* next = nullptr;
  uint32_t window = kNoWindow;

  // The owner's state.
  ReplayPhase phase = ReplayPhase::kProfiling;
  bool deviating = false;     // rest of the iteration goes to the backing allocator
  int64_t agreements = 0;     // consecutive iterations equal to `agreed`
  int64_t deviating_run = 0;  // consecutive deviating iterations
  Profile current;
  Profile agreed;
  uint64_t generation = 0;        // bumped whenever `agreed` changes (sequence or lifetimes)
  std::unique_ptr<PlanJob> job;   // the planner thread's job (plan_in_background), if any
  rt::PointerTickMap profiled_live;  // backing pointer -> tick, this iteration (off the backing heap too)
  ServedPlan* plan = nullptr;                              // also in window_plans[window]
  std::vector<std::unique_ptr<ServedPlan>> plans;          // every plan this record published
  rt::Slab slab;

  Counter iterations, profiled, unplanned, fallback, deviations, plans_made, reprofiles, plan_failures,
      slab_bytes, planned_buffers, plan_stall_ns, max_plan_stall_ns;

  bool serving() const { return serve_epoch != fast::kNotServing; }
  // Serving: replaying, not deviating, and in the epoch just processed.
  void update_serving() {
    serve_epoch = phase == ReplayPhase::kReplaying && !deviating ? epoch : fast::kNotServing;
  }
  void deviate() {
    deviating = true;
    serve_epoch = fast::kNotServing;
  }
  void adopt(ServedPlan* p) {
    plan = p;
    entries = p ? p->ticks.data() : nullptr;
    end_ticks = p ? p->end_ticks.data() : nullptr;
    occupant = p ? p->occupants.get() : nullptr;
    entry_count = p ? p->size() : 0;
  }
};

ThreadRecord* record_of(const fast::ThreadLink& link) { return static_cast<ThreadRecord*>(link.record); }

// Set when the thread's record has been given back: the calls glibc makes
// while tearing the thread down go to the backing allocator rather than
// claiming a record that no destructor would return.
__thread bool t_exited __attribute__((tls_model("initial-exec")));

// Live instances, so that a thread ending after its allocator is gone never
// touches a freed record.
constexpr int kMaxInstances = 64;
std::mutex g_instances_mutex;
uint64_t g_instance_ids[kMaxInstances];
std::atomic<uint64_t> g_next_instance_id{1};
pthread_key_t g_thread_key;
std::once_flag g_thread_key_once;

bool instance_alive_locked(uint64_t id) {
  for (uint64_t live : g_instance_ids) {
    if (live == id) return true;
  }
  return false;
}

void on_thread_exit(void* value) {
  auto* link = static_cast<fast::ThreadLink*>(value);
  std::lock_guard<std::mutex> lock(g_instances_mutex);
  if (link->record && instance_alive_locked(link->instance_id)) {
    record_of(*link)->claimed.store(0, std::memory_order_release);
  }
  link->record = nullptr;
  link->instance_id = 0;
  t_exited = true;
}

}  // namespace

// fast::SharedFast holds what the fast paths read: the instance id, the
// epoch, the reservation and its windows' plans, the invalid-free count.
struct ReplayAllocator::Impl : runtime::fast::SharedFast {
  ReplayConfig config;
  BackingAllocator& backing;
  Status init;

  uint32_t windows = 0;
  std::mutex records_mutex;
  std::atomic<ThreadRecord*> records{nullptr};
  uint32_t next_window = 0;  // under records_mutex
  std::vector<std::unique_ptr<PlanJob>> orphaned_jobs;  // under records_mutex: jobs of records given to a new thread
  std::atomic<PlannerState*> planner_state{nullptr};      // plan_in_background: this process's planner thread
  int64_t creator_process = 0;                            // the process that built the allocator

  Impl(const ReplayConfig& c, BackingAllocator& b) : config(c), backing(b) {}

  ThreadRecord* record() {
    if (t_link.instance_id == id) return record_of(t_link);
    return attach();
  }

  ThreadRecord* attach();
  void reset_for_new_thread(ThreadRecord& r);
  void boundary(ThreadRecord& r, uint64_t e);
  void finish_profile(ThreadRecord& r);
  // Plans r's agreed profile, or adopts the plan of it that `job` prepared in
  // the background, and commits the slab.
  void try_plan(ThreadRecord& r, PlanJob* job = nullptr);
  // The plan of an agreed profile, ready to publish: problem, plan and the
  // arrays the fast paths read; an error when the planner fails or the
  // arena cannot be held. Touches no thread state: the planner thread runs it.
  StatusOr<std::unique_ptr<ServedPlan>> prepare(const Profile& a) const;
  // try_plan, with the time it takes added to the thread's plan stall.
  void plan_now(ThreadRecord& r, PlanJob* job = nullptr);
  // At a boundary where the last K iterations agree, with plan_in_background:
  // adopts a finished job's plan of this very profile, or starts a job.
  void plan_in_background(ThreadRecord& r);
  // Starts this process's planner thread if it has none (plan_in_background).
  void ensure_planner();
  void run_planner(PlannerState& p);
  // The problem of an agreed profile: its buffers, and per buffer its tick and
  // colour shift. Reads only the configuration, so planner threads call it too.
  Problem problem_of(const Profile& a, std::vector<uint32_t>* tick_of, std::vector<uint32_t>* color_of) const;
  uint32_t color_shift(size_t k, uint64_t size, uint64_t alignment) const;
  // The general case: consumes the tick; nullptr when the tick is not planned
  // (r.deviating stays false) or the request deviates (r.deviating is set).
  void* serve(ThreadRecord& r, size_t size, size_t alignment);
  [[gnu::noinline]] void* allocate(size_t size, size_t alignment, bool zeroed);
  void* backing_allocate(size_t size, size_t alignment, bool zeroed) {
    return zeroed ? backing.allocate_zeroed(size) : backing.allocate(size, alignment);
  }
  void note_profiled_end(ThreadRecord& r, void* p, bool escaped);
  // The plan and tick of a live slab block, or false.
  bool find_block(const void* p, ServedPlan** plan, uint32_t* tick);
  // A free that is not of a slab pointer (kept out of line, off the fast path).
  [[gnu::noinline]] void deallocate_backing(void* p);
  void publish(ThreadRecord& r, ServedPlan* plan) {
    window_plans[r.window].store(plan, std::memory_order_release);
    r.adopt(plan);
  }
};

ReplayAllocator::ReplayAllocator(const ReplayConfig& config, BackingAllocator& backing)
    : impl_(new Impl(config, backing)) {
  Impl& m = *impl_;
  m.creator_process = rt::os::process_id();
  std::call_once(g_thread_key_once, [] { pthread_key_create(&g_thread_key, on_thread_exit); });
  {
    std::lock_guard<std::mutex> lock(g_instances_mutex);
    m.id = g_next_instance_id.fetch_add(1, std::memory_order_relaxed);
    bool registered = false;
    for (uint64_t& slot : g_instance_ids) {
      if (slot == 0) {
        slot = m.id;
        registered = true;
        break;
      }
    }
    if (!registered) {
      m.init = Internal("more than 64 replay allocators alive at once");
      return;
    }
  }
  // The window: the slab limit rounded up to a power of two (and to pages).
  size_t window = std::max<size_t>(rt::os::page_size(), static_cast<size_t>(config.max_slab_bytes));
  unsigned shift = 0;
  while ((size_t{1} << shift) < window) ++shift;
  const uint64_t windows = static_cast<uint64_t>(std::max<int64_t>(config.max_threads, 0));
  if (windows == 0) return;  // no slabs: every thread uses the backing allocator
  if (shift >= 47 || windows > (uint64_t{1} << (47 - shift))) {
    m.init = InvalidArgument("MEMPLAN_MAX_THREADS x MEMPLAN_MAX_SLAB_BYTES exceeds the address space");
    return;
  }
  const size_t bytes = static_cast<size_t>(windows) << shift;
  void* base = rt::os::reserve(bytes);
  if (!base) {
    m.init = Internal("cannot reserve " + std::to_string(bytes) + " B of address space for slabs");
    return;
  }
  m.reservation = static_cast<unsigned char*>(base);
  m.reservation_bytes = bytes;
  m.window_bytes = size_t{1} << shift;
  m.window_mask = m.window_bytes - 1;
  m.window_shift = shift;
  m.windows = static_cast<uint32_t>(windows);
  m.window_plans = std::make_unique<std::atomic<const fast::PlanView*>[]>(m.windows);
}

ReplayAllocator::~ReplayAllocator() {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(g_instances_mutex);
    for (uint64_t& slot : g_instance_ids) {
      if (slot == m.id) slot = 0;
    }
  }
  if (t_link.instance_id == m.id) t_link = {0, nullptr};
  // The planner thread reads the configuration and the jobs: it ends first.
  if (PlannerState* p = m.planner_state.load(std::memory_order_acquire)) {
    if (p->process == rt::os::process_id()) {
      {
        std::lock_guard<std::mutex> lock(p->mutex);
        p->stop = true;
      }
      p->wake.notify_one();
      p->thread.join();
      delete p;
    }  // else a fork child's copy of the parent's: never destroyed (its thread is not here)
  }
  for (std::unique_ptr<PlanJob>& job : m.orphaned_jobs) {
    if (job->process != rt::os::process_id()) (void)job.release();  // may be in use in the parent: leave it
  }
  for (ThreadRecord* r = m.records.load(); r; r = r->next) {
    if (r->job && r->job->process != rt::os::process_id()) (void)r->job.release();
  }
  for (ThreadRecord* r = m.records.load(); r;) {
    ThreadRecord* next = r->next;
    r->slab.release();
    delete r;
    r = next;
  }
  rt::os::release(m.reservation, m.reservation_bytes);
  delete impl_;
}

Status ReplayAllocator::init_status() const { return impl_->init; }

ThreadRecord* ReplayAllocator::Impl::attach() {
  if (t_exited) return nullptr;
  try {
    std::lock_guard<std::mutex> lock(records_mutex);
    ThreadRecord* found = nullptr;
    for (ThreadRecord* r = records.load(std::memory_order_acquire); r; r = r->next) {
      uint32_t expected = 0;
      if (r->claimed.load(std::memory_order_relaxed) == 0 &&
          r->claimed.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
        found = r;
        break;
      }
    }
    if (!found) {
      found = new ThreadRecord;
      found->claimed.store(1, std::memory_order_relaxed);
      if (reservation && next_window < windows) {
        found->window = next_window++;
        found->window_base = reservation + (static_cast<size_t>(found->window) << window_shift);
        found->slab = rt::Slab(found->window_base, window_bytes);
      }
      found->next = records.load(std::memory_order_relaxed);
      records.store(found, std::memory_order_release);
    }
    reset_for_new_thread(*found);
    t_link = {id, found};
    pthread_setspecific(g_thread_key, &t_link);
    return found;
  } catch (...) {
    return nullptr;  // out of memory: this request goes to the backing allocator
  }
}

void ReplayAllocator::Impl::reset_for_new_thread(ThreadRecord& r) {
  r.epoch = epoch.load(std::memory_order_acquire);
  r.phase = r.window == kNoWindow ? ReplayPhase::kBackingOnly : ReplayPhase::kProfiling;
  r.tick = 0;
  r.deviating = false;
  r.walk = 0;
  r.update_serving();
  r.agreements = 0;
  r.deviating_run = 0;
  r.current.clear();
  r.agreed.clear();
  r.profiled_live.clear();
  ++r.generation;
  // A job of the previous owner's may still be planned: it is kept until the
  // allocator goes (under records_mutex here); finished ones are dropped.
  std::erase_if(orphaned_jobs, [](const std::unique_ptr<PlanJob>& j) { return j->done.load(std::memory_order_acquire); });
  if (r.job) orphaned_jobs.push_back(std::move(r.job));
  // The previous owner's plan stays published: its blocks may still be freed.
}

void ReplayAllocator::Impl::boundary(ThreadRecord& r, uint64_t e) {
  r.epoch = e;
  r.iterations.bump();
  try {
    switch (r.phase) {
      case ReplayPhase::kProfiling:
        finish_profile(r);
        break;
      case ReplayPhase::kReplaying:
        if (r.deviating) {
          r.deviations.bump();
          ++r.deviating_run;
        } else {
          r.deviating_run = 0;
        }
        if (r.deviating_run >= config.deviations_to_reprofile) {
          r.phase = ReplayPhase::kProfiling;
          r.reprofiles.bump();
          r.agreements = 0;
          r.deviating_run = 0;
          r.agreed.clear();
          if (!config.keep_slab && !r.plan->any_live()) {
            publish(r, nullptr);  // stale frees into the window then find no plan, not unmapped headers
            r.slab.release();
            r.slab_bytes.set(0);
            r.planned_buffers.set(0);
          }
        }
        break;
      case ReplayPhase::kBackingOnly:
        break;
    }
  } catch (...) {
    // Out of memory while bookkeeping: forget the profiles, keep serving safely.
    r.agreements = 0;
    r.agreed.clear();
    if (r.phase == ReplayPhase::kProfiling) r.plan_failures.bump();
  }
  r.tick = 0;
  r.deviating = false;
  r.walk = 0;
  r.current.clear();
  r.profiled_live.clear();
  // A block of an earlier iteration still live may overlap any planned block
  // of this one: replay only from a slab with nothing live.
  if (r.phase == ReplayPhase::kReplaying && r.plan->any_live()) r.deviating = true;
  r.update_serving();
}

void ReplayAllocator::Impl::finish_profile(ThreadRecord& r) {
  Profile& c = r.current;
  if (c.requests.empty()) return;  // an idle iteration says nothing about this thread's pattern
  if (c.overflowed) {
    r.agreements = 0;
    r.agreed.clear();
    ++r.generation;
    return;
  }
  if (r.agreements > 0 && r.agreed.requests == c.requests) {
    bool widened = false;
    for (size_t i = 0; i < c.uppers.size(); ++i) {
      int64_t& u = r.agreed.uppers[i];
      const int64_t merged = (u == kEscaped || c.uppers[i] == kEscaped) ? kEscaped : std::max(u, c.uppers[i]);
      widened |= merged != u;
      u = merged;
    }
    if (widened) ++r.generation;  // a plan made in the background for the narrower lifetimes is stale
    ++r.agreements;
  } else {
    std::swap(r.agreed, c);
    r.agreements = 1;
    ++r.generation;
  }
  if (r.agreements < config.profile_iterations) return;
  if (config.plan_in_background) {
    plan_in_background(r);
  } else {
    plan_now(r);
  }
}

void ReplayAllocator::Impl::plan_now(ThreadRecord& r, PlanJob* job) {
  const auto start = std::chrono::steady_clock::now();
  try_plan(r, job);
  const auto stall = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  r.plan_stall_ns.set(r.plan_stall_ns.get() + stall);
  if (stall > r.max_plan_stall_ns.get()) r.max_plan_stall_ns.set(stall);
}

// Background planning, step by step, at each boundary where the thread's
// last K iterations agree:
//   1. no job: copy the agreed profile into a job and queue it for the
//      planner thread; the thread keeps profiling (the plan is not awaited).
//      Where this process has no planner thread (before the first mark, in a
//      fork child, or when none could be started), plan at the boundary;
//   2. a job not done: keep profiling;
//   3. a job done: if it planned the current agreed profile (same generation:
//      the same sequence and lifetimes since it was queued), adopt the plan
//      the planner thread prepared (problem, plan, arrays) with try_plan,
//      which commits the slab and publishes — the only stall; else drop it
//      and go to 1;
//   4. a job queued by another process (this is a fork child; the planner
//      thread stayed in the parent, and may be using it there): leave it,
//      never destroyed, and go to 1.
// A job whose profile stops agreeing before it is done is dropped in step 3.
// Costs per plan: one copy of the profile, one lock and one wake-up.
void ReplayAllocator::Impl::plan_in_background(ThreadRecord& r) {
  const int64_t process = rt::os::process_id();
  if (r.job) {
    PlanJob& job = *r.job;
    if (job.process != process) {
      (void)r.job.release();
    } else if (!job.done.load(std::memory_order_acquire)) {
      return;
    } else if (job.generation == r.generation) {
      if (r.plan && r.plan->any_live()) {
        r.plan_failures.bump();  // the old slab still holds live blocks: adopt at a later boundary
        return;
      }
      std::unique_ptr<PlanJob> finished = std::move(r.job);
      plan_now(r, finished.get());
      return;
    } else {
      r.job.reset();
    }
  }
  PlannerState* planner = planner_state.load(std::memory_order_acquire);
  if (!planner || planner->process != process) {
    plan_now(r);
    return;
  }
  auto job = std::make_unique<PlanJob>();
  job->profile = r.agreed;
  job->generation = r.generation;
  job->process = process;
  {
    std::lock_guard<std::mutex> lock(planner->mutex);
    planner->queue.push_back(job.get());
  }
  planner->wake.notify_one();
  r.job = std::move(job);
}

void ReplayAllocator::Impl::run_planner(PlannerState& p) {
  t_exited = true;  // never claims a record: the planner's own requests go to the backing allocator
  std::unique_lock<std::mutex> lock(p.mutex);
  while (true) {
    p.wake.wait(lock, [&p] { return p.stop || !p.queue.empty(); });
    if (p.stop) return;  // queued jobs stay not done; their records are going away too
    PlanJob* j = p.queue.front();
    p.queue.erase(p.queue.begin());
    lock.unlock();
    try {
      j->prepared.emplace(prepare(j->profile));
      j->profile = Profile{};
      // Note [Trim before the slab], off the owner's boundary: by now the
      // planner's memory and the profiled blocks are free.
      if (config.trim_backing) backing.release_free_memory();
    } catch (...) {
      j->prepared.emplace(Internal("out of memory while planning in the background"));
    }
    j->done.store(true, std::memory_order_release);
    lock.lock();
  }
}

// Runs from mark(), the program's own call: never from inside malloc or free,
// where glibc may hold the lock that pthread_create needs (a free inside
// pthread_join does). Only in the process that built the allocator: a fork
// child starts no thread (what a child of a multi-threaded process may do is
// limited; ThreadSanitizer refuses it outright) and plans at its boundaries;
// the parent's PlannerState it inherited, with the thread gone and the mutex
// in whatever state the fork found it, is never touched there.
void ReplayAllocator::Impl::ensure_planner() {
  const int64_t process = rt::os::process_id();
  if (process != creator_process || planner_state.load(std::memory_order_acquire)) return;
  auto fresh = std::make_unique<PlannerState>();
  fresh->process = process;
  try {
    fresh->thread = std::thread([this, p = fresh.get()] { run_planner(*p); });
  } catch (...) {
    return;  // no thread: boundaries plan synchronously
  }
  planner_state.store(fresh.release(), std::memory_order_release);
}

// Note [Address colouring]. Planned offsets are sums of tensor sizes, which
// are mostly multiples of 4 KiB, so without help most slab blocks share their
// address bits below the page size — unlike glibc's or tcmalloc's blocks. Two
// streams whose addresses agree modulo 4 KiB compete for the same L1 sets and
// make loads wait on unrelated stores (4K aliasing). With
// config.color_span_bytes = S > 0, the k-th planned block of at least 4 KiB
// starts (k * 37 mod S/64) * 64 bytes (rounded down to its alignment) above
// its planned offset: the plan's buffer grows by that shift, so the validator
// still sees disjoint blocks, at a cost of < S bytes per block.
uint32_t ReplayAllocator::Impl::color_shift(size_t k, uint64_t size, uint64_t alignment) const {
  if (config.color_span_bytes <= 0 || size < 4096) return 0;
  const uint64_t slots = static_cast<uint64_t>(config.color_span_bytes) / 64;
  const uint64_t shift = (static_cast<uint64_t>(k) * 37 % slots) * 64;
  return static_cast<uint32_t>(shift / alignment * alignment);
}

Problem ReplayAllocator::Impl::problem_of(const Profile& a, std::vector<uint32_t>* tick_of,
                                          std::vector<uint32_t>* color_of) const {
  Problem problem;
  for (size_t i = 0; i < a.requests.size(); ++i) {
    if (a.uppers[i] == kEscaped) continue;
    if (static_cast<int64_t>(a.requests[i].size) < config.min_planned_size) continue;
    Buffer b;
    b.id = std::to_string(i);
    b.lower = static_cast<int64_t>(i);
    b.upper = a.uppers[i];
    const uint32_t color = color_shift(problem.buffers.size(), a.requests[i].size, a.requests[i].alignment);
    // The colour shift, the header below the block, and at least one byte so
    // that malloc(0) gets a unique address.
    b.size = static_cast<int64_t>(color + header_bytes(a.requests[i].alignment) +
                                  std::max<uint64_t>(a.requests[i].size, 1));
    b.alignment = static_cast<int64_t>(a.requests[i].alignment);
    problem.buffers.push_back(std::move(b));
    tick_of->push_back(static_cast<uint32_t>(i));
    color_of->push_back(color);
  }
  return problem;
}

StatusOr<std::unique_ptr<ServedPlan>> ReplayAllocator::Impl::prepare(const Profile& a) const {
  auto served = std::make_unique<ServedPlan>();
  std::vector<uint32_t> tick_of;  // buffer index -> tick
  std::vector<uint32_t> color_of;  // buffer index -> colour shift (Note [Address colouring])
  served->problem = problem_of(a, &tick_of, &color_of);
  StatusOr<Plan> plan = plan_of(served->problem, config);
  if (!plan.ok()) return plan.status();
  // offset16 holds offsets below 64 GiB.
  if (static_cast<uint64_t>(plan->arena) > window_bytes || static_cast<uint64_t>(plan->arena) >= (uint64_t{1} << 36)) {
    return CapacityExceeded("the plan's arena does not fit a slab window");
  }
  served->plan = std::move(plan).value();
  served->arena = static_cast<uint64_t>(served->plan.arena);
  // One entry per tick, and the sentinel (limit 0) that stops the fast path past the plan.
  served->ticks.assign(a.requests.size() + 1, TickEntry{});
  std::vector<std::pair<int64_t, uint32_t>> ends;  // (upper, tick) of the planned blocks
  for (size_t k = 0; k < tick_of.size(); ++k) {
    const Buffer& b = served->problem.buffers[k];
    TickEntry& t = served->ticks[tick_of[k]];
    const uint64_t header = header_bytes(static_cast<uint64_t>(b.alignment));
    const uint64_t color = color_of[k];
    t.offset16 = static_cast<uint32_t>((static_cast<uint64_t>(served->plan.offsets[k]) + color + header) >> 4);
    t.limit = static_cast<uint64_t>(b.size) - color - header + 1;
    ends.push_back({b.upper, tick_of[k]});
  }
  std::stable_sort(ends.begin(), ends.end(),
                   [](const std::pair<int64_t, uint32_t>& x, const std::pair<int64_t, uint32_t>& y) {
                     return x.first < y.first;
                   });
  // walk_end of tick t: the blocks whose planned life ends at or before t, which must be dead before t is served.
  size_t ended = 0;
  for (size_t t = 0; t < served->ticks.size(); ++t) {
    while (ended < ends.size() && ends[ended].first <= static_cast<int64_t>(t)) ++ended;
    served->ticks[t].walk_end = static_cast<uint32_t>(ended);
  }
  for (const auto& end : ends) served->end_ticks.push_back(end.second);
  served->occupants = std::make_unique<std::atomic<uint32_t>[]>(served->ticks.size());
  served->finish_view();
  return served;
}

void ReplayAllocator::Impl::try_plan(ThreadRecord& r, PlanJob* job) {
  if (r.plan && r.plan->any_live()) {
    r.plan_failures.bump();  // the old slab still holds live blocks: retry at the next boundary
    return;
  }
  // A job was prepared in the background from this very profile: it is
  // adopted only while the agreed profile is the one it was given.
  StatusOr<std::unique_ptr<ServedPlan>> prepared = job ? std::move(*job->prepared) : prepare(r.agreed);
  // Note [Trim before the slab]. The planner's working memory is freed by now,
  // and so are the profiled iterations' blocks; the backing allocator would
  // keep both resident under the slab that takes their place. A plan made in
  // the background was followed by its trim there.
  if (config.trim_backing && !job) backing.release_free_memory();
  // Stale frees must not read headers while the mapping changes under them.
  if (r.plan) publish(r, nullptr);
  if (!prepared.ok() || !r.slab.commit(static_cast<size_t>((*prepared)->arena), config.huge_pages).ok()) {
    // No plan, or one this thread cannot hold: stay with the backing allocator for good.
    r.plan_failures.bump();
    r.slab_bytes.set(r.slab.mapped_bytes());  // a failed commit leaves nothing mapped
    r.planned_buffers.set(0);
    r.phase = ReplayPhase::kBackingOnly;
    r.update_serving();
    return;
  }
  ServedPlan* published = prepared->get();
  r.plans.push_back(std::move(prepared).value());
  publish(r, published);
  r.phase = ReplayPhase::kReplaying;
  r.update_serving();
  r.deviating_run = 0;
  r.plans_made.bump();
  r.planned_buffers.set(published->problem.size());
  r.slab_bytes.set(r.slab.mapped_bytes());
  // Replaying needs no profile until the thread profiles again.
  r.current.release();
  r.agreed.release();
  r.profiled_live.release();
}

void* ReplayAllocator::Impl::serve(ThreadRecord& r, size_t size, size_t alignment) {
  if (void* p = fast::serve(*this, size, alignment)) return p;
  const uint32_t t = r.tick++;
  if (t >= r.entry_count) {
    r.deviate();  // more requests than planned
    return nullptr;
  }
  const TickEntry& e = r.entries[t];
  for (; r.walk < e.walk_end; ++r.walk) {
    if (r.occupant[r.end_ticks[r.walk]].load(std::memory_order_acquire) != 0) {
      r.deviate();  // freed late: its bytes may belong to a block planned from now on
      return nullptr;
    }
  }
  if (e.limit == 0) return nullptr;  // not planned: the backing allocator serves it
  r.deviate();  // larger or more aligned than planned
  return nullptr;
}

void* ReplayAllocator::Impl::allocate(size_t size, size_t alignment, bool zeroed) {
  if (alignment < kMinAlignment) alignment = kMinAlignment;
  ThreadRecord* r = record();
  if (!r) return backing_allocate(size, alignment, zeroed);
  const uint64_t e = epoch.load(std::memory_order_acquire);
  if (e != r->epoch) boundary(*r, e);
  switch (r->phase) {
    case ReplayPhase::kReplaying: {
      if (!r->deviating) {
        if (void* p = serve(*r, size, alignment)) {
          if (zeroed) std::memset(p, 0, size);
          return p;
        }
        if (!r->deviating) {
          r->unplanned.bump();
          return backing_allocate(size, alignment, zeroed);
        }
      }
      r->fallback.bump();
      return backing_allocate(size, alignment, zeroed);
    }
    case ReplayPhase::kProfiling: {
      void* p = backing_allocate(size, alignment, zeroed);
      if (!p) return nullptr;  // a failed request is not part of the pattern
      // Before the first mark may be start-up, not an iteration (see
      // ReplayConfig::profile_before_first_mark).
      if (r->epoch == 0 && !config.profile_before_first_mark) return p;
      const uint32_t t = r->tick++;
      r->profiled.bump();
      Profile& c = r->current;
      if (c.overflowed || c.requests.size() >= static_cast<size_t>(config.max_requests)) {
        c.overflowed = true;
        return p;
      }
      try {
        c.requests.push_back({size, alignment});
        c.uppers.push_back(kEscaped);
        r->profiled_live.insert(reinterpret_cast<uintptr_t>(p), t);
      } catch (...) {
        c.overflowed = true;  // out of memory for the profile: this iteration is not planned
      }
      return p;
    }
    case ReplayPhase::kBackingOnly:
      break;
  }
  return backing_allocate(size, alignment, zeroed);
}

void ReplayAllocator::Impl::note_profiled_end(ThreadRecord& r, void* p, bool escaped) {
  const int64_t tick = r.profiled_live.take(reinterpret_cast<uintptr_t>(p));
  if (tick < 0) return;
  if (!escaped && !r.current.overflowed) r.current.uppers[static_cast<size_t>(tick)] = r.tick;
}

bool ReplayAllocator::Impl::find_block(const void* p, ServedPlan** plan_out, uint32_t* tick_out) {
  const fast::PlanView* view;
  if (!fast::find_live(*this, p, &view, tick_out)) return false;
  *plan_out = static_cast<ServedPlan*>(const_cast<fast::PlanView*>(view));  // every published view is a ServedPlan
  return true;
}

void* ReplayAllocator::allocate(size_t size, size_t alignment) {
  Impl& m = *impl_;
  if (void* p = fast::serve(m, size, alignment)) return p;
  return m.allocate(size, alignment, false);
}

void* ReplayAllocator::serve_from_slab(size_t size, size_t alignment) { return fast::serve(*impl_, size, alignment); }

void* ReplayAllocator::allocate_zeroed(size_t size) { return impl_->allocate(size, kMinAlignment, true); }

void ReplayAllocator::deallocate(void* p) {
  Impl& m = *impl_;
  if (MEMPLAN_LIKELY(fast::release(m, p))) return;
  m.deallocate_backing(p);
}

bool ReplayAllocator::release_to_slab(void* p) { return fast::release(*impl_, p); }

runtime::fast::SharedFast* runtime::fast::shared_state(ReplayAllocator& allocator) { return allocator.impl_; }

void ReplayAllocator::Impl::deallocate_backing(void* p) {
  Impl& m = *this;
  if (!p) return;
  if (t_link.instance_id == m.id && t_link.record) {
    ThreadRecord& r = *record_of(t_link);
    const uint64_t e = m.epoch.load(std::memory_order_acquire);
    if (e != r.epoch) m.boundary(r, e);
    if (r.phase == ReplayPhase::kProfiling) m.note_profiled_end(r, p, false);
  }
  m.backing.deallocate(p);
}

void* ReplayAllocator::reallocate(void* p, size_t size) {
  Impl& m = *impl_;
  if (!p) return allocate(size);
  if (m.owns(p)) {
    ServedPlan* plan;
    uint32_t tick;
    if (!m.find_block(p, &plan, &tick)) {
      m.invalid_frees.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    const uint64_t capacity = plan->ticks[tick].limit - 1;
    if (size == 0) {
      fast::release(m, p);
      return nullptr;
    }
    if (size <= capacity) return p;
    void* q = m.backing.allocate(size, kMinAlignment);
    if (!q) return nullptr;  // p stays valid, as realloc promises
    std::memcpy(q, p, capacity);
    fast::release(m, p);
    return q;
  }
  // A profiled block that is realloc'ed is not planned: its life goes on
  // under another size, which the plan could not serve in place.
  if (t_link.instance_id == m.id && t_link.record && record_of(t_link)->phase == ReplayPhase::kProfiling) {
    m.note_profiled_end(*record_of(t_link), p, true);
  }
  return m.backing.reallocate(p, size);
}

size_t ReplayAllocator::usable_size(void* p) {
  Impl& m = *impl_;
  if (!p) return 0;
  if (m.owns(p)) {
    ServedPlan* plan;
    uint32_t tick;
    return m.find_block(p, &plan, &tick) ? plan->ticks[tick].limit - 1 : 0;
  }
  return m.backing.usable_size(p);
}

bool ReplayAllocator::owns(const void* p) const { return impl_->owns(p); }

void ReplayAllocator::mark() {
  Impl& m = *impl_;
  if (m.config.plan_in_background) m.ensure_planner();
  const uint64_t e = m.epoch.fetch_add(1, std::memory_order_acq_rel) + 1;
  // The marking thread plans now; the others at their next request.
  if (ThreadRecord* r = m.record()) {
    if (r->epoch != e) m.boundary(*r, m.epoch.load(std::memory_order_acquire));
  }
}

ReplayPhase ReplayAllocator::phase_of_calling_thread() {
  Impl& m = *impl_;
  ThreadRecord* r = m.record();
  if (!r) return ReplayPhase::kBackingOnly;
  const uint64_t e = m.epoch.load(std::memory_order_acquire);
  if (e != r->epoch) m.boundary(*r, e);
  return r->phase;
}

ReplayStats ReplayAllocator::stats() const {
  const Impl& m = *impl_;
  ReplayStats s;
  for (ThreadRecord* r = m.records.load(std::memory_order_acquire); r; r = r->next) {
    ++s.threads;
    s.iterations += r->iterations.get();
    s.profiled += r->profiled.get();
    s.served += r->served.get();
    s.unplanned += r->unplanned.get();
    s.fallback += r->fallback.get();
    s.deviations += r->deviations.get();
    s.plans += r->plans_made.get();
    s.reprofiles += r->reprofiles.get();
    s.plan_failures += r->plan_failures.get();
    s.slab_bytes += r->slab_bytes.get();
    s.planned_buffers += r->planned_buffers.get();
    s.plan_stall_ns += r->plan_stall_ns.get();
    s.max_plan_stall_ns = std::max(s.max_plan_stall_ns, r->max_plan_stall_ns.get());
  }
  s.invalid_frees = m.invalid_frees.load(std::memory_order_relaxed);
  return s;
}

Status ReplayAllocator::check_invariants() const {
  const Impl& m = *impl_;
  for (ThreadRecord* r = m.records.load(std::memory_order_acquire); r; r = r->next) {
    MEMPLAN_RETURN_IF_ERROR(r->slab.check_invariants());
    if (r->window == kNoWindow) {
      if (r->phase != ReplayPhase::kBackingOnly) return Internal("a thread without a slab window is not backing-only");
      continue;
    }
    if (r->phase == ReplayPhase::kReplaying && !r->plan) return Internal("a replaying thread has no plan");
    if (m.window_plans[r->window].load() != r->plan) return Internal("window plan differs from its thread's plan");
    if (r->slab.base() != r->window_base) return Internal("slab is not at its window");
    if (!r->plan) continue;
    const ServedPlan& p = *r->plan;
    const ValidationResult valid = validate(p.problem, p.plan);
    if (!valid.ok()) return Internal("served plan is invalid: " + valid.message);
    if (static_cast<uint64_t>(p.plan.arena) > r->slab.mapped_bytes()) return Internal("plan's arena exceeds its slab");
    for (uint32_t t = 0; t < p.size(); ++t) {
      if (p.occupants[t].load() == 0) continue;
      if (p.occupants[t].load() != p.ticks[t].offset16) return Internal("a live slab block's occupant is not its offset");
      if (p.ticks[t].limit == 0) return Internal("a tick the plan leaves to the backing allocator is live in the slab");
      const unsigned char* block = r->window_base + (uint64_t{p.ticks[t].offset16} << 4);
      if (read_header(block) != t) return Internal("a live slab block's header does not name its tick");
    }
    if (r->walk > p.end_ticks.size()) return Internal("liveness cursor past the plan");
    if (r->entries != p.ticks.data() || r->occupant != p.occupants.get()) return Internal("the fast path reads another plan");
    if (p.entries != p.ticks.data() || p.tick_count + 1 != p.ticks.size() || p.ticks.back().limit != 0) {
      return Internal("the plan's view or sentinel is wrong");
    }
  }
  return Status::Ok();
}

}  // namespace memplan
