// replay.cc — the replay allocator (memplan/replay.h): serving each
// thread's iterations from its slab. What is learnt and how a plan is made
// is the learner's (runtime/learner.h: one Learner per thread record, with
// the sequence identity); this file holds the thread records, their windows,
// and serving. The served plan's tables and the thread record are
// replay_records.h.
//
// Layout. One reservation of address space holds max_threads windows of
// window_bytes (a power of two). Thread record w owns window w: its slab is
// committed at the window's start, and the plan it serves is published in
// window_plans[w]. With min_sequenced_size > 0 the window is twice the slab
// limit and its upper half, from pool_offset, holds the record's small-request
// pool (window_pools[w]; runtime/small_pool.h). A pointer is memplan's iff it
// falls in the reservation (one subtraction and compare); its window is one
// shift away.
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
#include <charconv>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "memplan/plan.h"
#include "memplan/plan_file.h"
#include "memplan/problem.h"
#include "memplan/replay.h"
#include "runtime/learner.h"
#include "runtime/os/os_memory.h"
#include "runtime/replay_fast.h"
#include "runtime/replay_records.h"
#include "runtime/slab.h"
#include "runtime/small_pool.h"

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

// A served block sits kHeaderBytes after an offset aligned to at least
// kMinAlignment (memplan/backing_allocator.h), so it keeps malloc's alignment
// only while the header is a multiple of it.
static_assert(fast::kHeaderBytes % kMinAlignment == 0, "the block header must keep blocks aligned");

using fast::kHeaderBytes;
using fast::read_header;
using fast::TickEntry;
using rt::header_bytes;
using rt::kNoWindow;
using rt::ServedPlan;
using rt::ThreadRecord;

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
// As the learner's PlanTables it builds a ServedPlan's fast-path tables.
struct ReplayAllocator::Impl : runtime::fast::SharedFast, runtime::PlanTables {
  ReplayConfig config;
  BackingAllocator& backing;
  Status init;

  uint32_t windows = 0;
  std::mutex records_mutex;
  std::atomic<ThreadRecord*> records{nullptr};
  uint32_t next_window = 0;  // under records_mutex
  std::vector<std::unique_ptr<rt::PlanJob>>
      orphaned_jobs;                               // under records_mutex: jobs of records given to a new thread
  std::unique_ptr<rt::BackgroundPlanner> planner;  // plan_in_background only
  std::atomic<uint64_t> iteration_key{0};          // the key of the latest mark (Note [Keyed plans])
  // load_plans: per window, the saved variants its first owner is seeded
  // with (Note [Plans from a file]); each entry is read and emptied by that
  // owner only, and the vector never resized after load_plans.
  std::vector<SavedUnit> saved_by_window;

  Impl(const ReplayConfig& c, BackingAllocator& b) : config(c), backing(b) {}

  ThreadRecord* record() {
    if (t_link.instance_id == id) return record_of(t_link);
    return attach();
  }

  ThreadRecord* attach();
  bool pools_enabled() const { return pool_offset < window_bytes; }
  // Lets the record's thread use its window's small-request pool: from its
  // first boundary, or from its first request where that is an iteration.
  void open_pool(ThreadRecord& r) {
    if (pools_enabled() && r.window != kNoWindow) r.pool = &r.small;
  }
  void reset_for_new_thread(ThreadRecord& r);
  // Seeds the record's learner with its window's saved variants, once.
  void seed(ThreadRecord& r);
  // The thread's iteration boundary; `key` names the variant that starts.
  void boundary(ThreadRecord& r, uint64_t e) { boundary(r, e, iteration_key.load(std::memory_order_acquire)); }
  void boundary(ThreadRecord& r, uint64_t e, uint64_t key);
  // The tick header below each block; offset16 holds offsets below 64 GiB.
  rt::BlockLayout layout() const override {
    return {.header_bytes = &header_bytes, .max_arena = std::min<uint64_t>(pool_offset, (uint64_t{1} << 36) - 1)};
  }
  std::unique_ptr<rt::PreparedPlan> new_plan() const override { return std::make_unique<ServedPlan>(); }
  // The arrays the fast paths read. Touches no thread state: the planner thread runs it.
  Status build_tables(const rt::Profile& a, rt::PreparedPlan& plan) const override;
  // The general case: consumes the tick; nullptr when the tick is not planned
  // (r.deviating stays false) or the request deviates (r.deviating is set).
  void* serve(ThreadRecord& r, size_t size, size_t alignment);
  [[gnu::noinline]] void* allocate(size_t size, size_t alignment, bool zeroed);
  void* backing_allocate(size_t size, size_t alignment, bool zeroed) {
    return zeroed ? backing.allocate_zeroed(size) : backing.allocate(size, alignment);
  }
  // The plan and tick of a live slab block, or false.
  bool find_block(const void* p, ServedPlan** plan, uint32_t* tick);
  // The bytes usable in p (inside the reservation) if it is a live slab or pool block.
  std::optional<uint64_t> capacity_of(const void* p);
  // A free that is not of a slab pointer (kept out of line, off the fast path).
  [[gnu::noinline]] void deallocate_backing(void* p);
  void publish(ThreadRecord& r, ServedPlan* plan) {
    window_plans[r.window].store(plan, std::memory_order_release);
    r.adopt(plan);
  }
};

// A thread record's side of its learner's boundary.
class RecordAdapter final : public runtime::Learner::Adapter {
 public:
  RecordAdapter(ReplayAllocator::Impl& m, ThreadRecord& r) : m_(m), r_(r) {}
  bool slab_in_use() const override { return r_.plan && r_.plan->any_live(); }
  // Stale frees into the window then find no plan, never a header being unmapped.
  void withdraw() override { m_.publish(r_, nullptr); }
  void publish(runtime::PreparedPlan& plan) override { m_.publish(r_, static_cast<ServedPlan*>(&plan)); }

 private:
  ReplayAllocator::Impl& m_;
  ThreadRecord& r_;
};

void ReplayAllocator::Impl::seed(ThreadRecord& r) {
  r.seed_pending = false;
  if (r.window >= saved_by_window.size() || saved_by_window[r.window].variants.empty()) return;
  const SavedUnit unit = std::move(saved_by_window[r.window]);
  saved_by_window[r.window] = SavedUnit{};
  RecordAdapter adapter(*this, r);
  r.learner.seed(unit, {.tables = *this, .backing = backing, .planner = planner.get()}, adapter);
}

ReplayAllocator::ReplayAllocator(const ReplayConfig& config, BackingAllocator& backing)
    : impl_(new Impl(config, backing)) {
  Impl& m = *impl_;
  if (config.plan_in_background) {
    // The planner thread never claims a record: its own requests go to the backing allocator.
    m.planner = std::make_unique<rt::BackgroundPlanner>(m, backing, [] { t_exited = true; });
  }
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
  // The window: the slab limit rounded up to a power of two (and to pages),
  // twice that when the window's upper half holds a small-request pool.
  size_t window = std::max<size_t>(rt::os::page_size(), static_cast<size_t>(config.max_slab_bytes));
  unsigned shift = 0;
  while ((size_t{1} << shift) < window) ++shift;
  const bool pools = config.min_sequenced_size > 0 && std::min<int64_t>(config.small_pool_bytes, int64_t{1} << shift) >=
                                                          static_cast<int64_t>(fast::kSmallChunkBytes);
  if (pools) ++shift;
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
  m.min_sequenced = static_cast<uint64_t>(std::max<int64_t>(config.min_sequenced_size, 0));
  m.window_bytes = size_t{1} << shift;
  m.window_mask = m.window_bytes - 1;
  m.window_shift = shift;
  m.pool_offset = pools ? m.window_bytes / 2 : m.window_bytes;
  m.windows = static_cast<uint32_t>(windows);
  m.window_plans = std::make_unique<std::atomic<const fast::PlanView*>[]>(m.windows);
  m.window_pools = std::make_unique<std::atomic<fast::SmallPool*>[]>(m.windows);
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
  m.planner.reset();
  const int64_t process = rt::os::process_id();
  for (std::unique_ptr<rt::PlanJob>& job : m.orphaned_jobs) {
    if (job->process != process) (void)job.release();  // may be in use in the parent: leave it
  }
  for (ThreadRecord* r = m.records.load(); r; r = r->next) r->learner.forget_foreign_job(process);
  for (ThreadRecord* r = m.records.load(); r;) {
    ThreadRecord* next = r->next;
    r->learner.slab().release();
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
      found = new ThreadRecord(config);
      found->claimed.store(1, std::memory_order_relaxed);
      if (reservation && next_window < windows) {
        found->window = next_window++;
        found->window_base = reservation + (static_cast<size_t>(found->window) << window_shift);
        found->learner.set_window(found->window_base, pool_offset);
        if (pools_enabled()) {
          found->small.setup(
              found->window_base + pool_offset,
              std::min<uint64_t>(static_cast<uint64_t>(config.small_pool_bytes), window_bytes - pool_offset),
              static_cast<fast::ThreadFast*>(found));
          window_pools[found->window].store(&found->small, std::memory_order_release);
        }
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
  std::unique_ptr<rt::PlanJob> job =
      r.learner.restart(r.window != kNoWindow, iteration_key.load(std::memory_order_acquire));
  r.tick = 0;
  r.deviating = false;
  r.walk = 0;
  r.seed_pending = r.window < saved_by_window.size() && !saved_by_window[r.window].variants.empty();
  // Saved plans serve the first iteration: from here when it starts now,
  // else at the first boundary (start-up is not an iteration).
  if (r.seed_pending && (r.epoch != 0 || config.profile_before_first_mark)) seed(r);
  r.update_serving();
  if (config.profile_before_first_mark) open_pool(r);
  // A job of the previous owner's may still be planned: it is kept until the
  // allocator goes (under records_mutex here); finished ones are dropped.
  std::erase_if(orphaned_jobs,
                [](const std::unique_ptr<rt::PlanJob>& j) { return j->done.load(std::memory_order_acquire); });
  if (job) orphaned_jobs.push_back(std::move(job));
  // The previous owner's plan stays published: its blocks may still be freed.
}

void ReplayAllocator::Impl::boundary(ThreadRecord& r, uint64_t e, uint64_t key) {
  r.epoch = e;
  open_pool(r);
  RecordAdapter adapter(*this, r);
  r.learner.end_iteration(r.deviating, {.tables = *this, .backing = backing, .planner = planner.get()}, adapter, r.tick,
                          key);
  if (r.seed_pending) seed(r);
  r.tick = 0;
  r.deviating = false;
  r.walk = 0;
  // A block of an earlier iteration still live may overlap any planned block
  // of this one: replay only from a slab with nothing live.
  if (r.phase() == ReplayPhase::kReplaying && r.plan->any_live()) r.deviating = true;
  r.update_serving();
}

Status ReplayAllocator::Impl::build_tables(const rt::Profile& a, rt::PreparedPlan& plan) const {
  rt::build_served_tables(a, *static_cast<ServedPlan*>(&plan));
  return Status::Ok();
}

void* ReplayAllocator::Impl::serve(ThreadRecord& r, size_t size, size_t alignment) {
  if (void* p = fast::serve(*this, size, alignment)) return p;
  const uint32_t t = r.tick++;
  if (t >= r.entry_count) {
    r.deviate();  // more requests than planned
    return nullptr;
  }
  const TickEntry& e = r.entries[t];
  if (e.limit != 0 && size >= e.limit) r.learner.observe_larger(t, size);  // Note [Upper-bound plans]
  for (; r.walk < e.walk_end; ++r.walk) {
    if (r.occupant[r.end_ticks[r.walk]].load(std::memory_order_acquire) != 0) {
      r.deviate();  // freed late: its bytes may belong to a block planned from now on
      return nullptr;
    }
  }
  if (e.limit == 0) return nullptr;  // not planned: the backing allocator serves it
  r.deviate();                       // larger or more aligned than planned
  return nullptr;
}

void* ReplayAllocator::Impl::allocate(size_t size, size_t alignment, bool zeroed) {
  if (alignment < kMinAlignment) alignment = kMinAlignment;
  ThreadRecord* r = record();
  if (!r) return backing_allocate(size, alignment, zeroed);
  if (size < min_sequenced) {
    // Not part of the sequence (ReplayConfig::min_sequenced_size): no tick,
    // no profile record, no boundary; its free finds no profile record.
    // The small-request pool serves it when it can (Note [Small-request pool]).
    const int pool_class = r->pool ? fast::small_class_aligned(size, alignment) : -1;
    if (pool_class >= 0) {
      const uint32_t c = static_cast<uint32_t>(pool_class);
      void* p = r->pool->pop(c);
      if (!p) p = r->pool->refill(c, false);
      if (p) {
        if (zeroed) std::memset(p, 0, size);
        return p;
      }
    }
    r->learner.counters().small.bump();
    return backing_allocate(size, alignment, zeroed);
  }
  const uint64_t e = epoch.load(std::memory_order_acquire);
  if (e != r->epoch) boundary(*r, e);
  switch (r->phase()) {
    case ReplayPhase::kReplaying: {
      if (!r->deviating) {
        if (void* p = serve(*r, size, alignment)) {
          if (zeroed) std::memset(p, 0, size);
          return p;
        }
        if (!r->deviating) {
          r->learner.counters().unplanned.bump();
          return backing_allocate(size, alignment, zeroed);
        }
        // serve() consumed this request's tick as it deviated. Note
        // [Predicted variants]: from here the requests tell which variant
        // this iteration is.
        r->learner.begin_tail(r->tick - 1);
        r->learner.observe_request(size, alignment);
      } else {
        const uint32_t t = r->tick++;
        r->learner.begin_tail(t);  // deviating since the boundary (a block of an earlier iteration was live)
        r->learner.observe_request(size, alignment);
        // The rest of a deviating iteration keeps its ticks, so that sizes
        // beyond the plan's blocks raise the upper bound.
        if (t < r->entry_count && r->entries[t].limit != 0 && size >= r->entries[t].limit) {
          r->learner.observe_larger(t, size);
        }
      }
      r->learner.counters().fallback.bump();
      return backing_allocate(size, alignment, zeroed);
    }
    case ReplayPhase::kProfiling: {
      void* p = backing_allocate(size, alignment, zeroed);
      if (!p) return nullptr;  // a failed request is not part of the pattern
      // Before the first mark may be start-up, not an iteration (see
      // ReplayConfig::profile_before_first_mark).
      if (r->epoch == 0 && !r->thread_marked && !config.profile_before_first_mark) return p;
      r->learner.record(0, size, alignment, p);  // the sequence identity: the key is the tick
      return p;
    }
    case ReplayPhase::kBackingOnly:
      break;
  }
  return backing_allocate(size, alignment, zeroed);
}

std::optional<uint64_t> ReplayAllocator::Impl::capacity_of(const void* p) {
  ServedPlan* plan;
  uint32_t tick;
  if (find_block(p, &plan, &tick)) return plan->ticks[tick].limit - 1;
  fast::SmallPool* pool;
  int c;
  if (fast::find_small(*this, p, &pool, &c) && fast::SmallPool::mark_of(p) != pool->key) {
    return fast::small_class_bytes(static_cast<uint32_t>(c));
  }
  return std::nullopt;
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
    if (r.phase() == ReplayPhase::kProfiling) r.learner.record_end(p, false);
  }
  m.backing.deallocate(p);
}

void* ReplayAllocator::reallocate(void* p, size_t size) {
  Impl& m = *impl_;
  if (!p) return allocate(size);
  if (m.owns(p)) {
    const std::optional<uint64_t> live = m.capacity_of(p);
    if (!live) {
      m.invalid_frees.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    const uint64_t capacity = *live;
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
  if (t_link.instance_id == m.id && t_link.record && record_of(t_link)->phase() == ReplayPhase::kProfiling) {
    record_of(t_link)->learner.record_end(p, true);
  }
  return m.backing.reallocate(p, size);
}

size_t ReplayAllocator::usable_size(void* p) {
  Impl& m = *impl_;
  if (!p) return 0;
  if (m.owns(p)) return m.capacity_of(p).value_or(0);
  return m.backing.usable_size(p);
}

bool ReplayAllocator::owns(const void* p) const { return impl_->owns(p); }

void ReplayAllocator::mark() { mark_key(0); }

void ReplayAllocator::mark_key(uint64_t key) {
  Impl& m = *impl_;
  if (m.planner) m.planner->ensure_started();
  m.iteration_key.store(key, std::memory_order_release);
  const uint64_t e = m.epoch.fetch_add(1, std::memory_order_acq_rel) + 1;
  // The marking thread plans now; the others at their next request.
  if (ThreadRecord* r = m.record()) {
    if (r->epoch != e) m.boundary(*r, m.epoch.load(std::memory_order_acquire));
  }
}

void ReplayAllocator::mark_thread(uint64_t key) {
  Impl& m = *impl_;
  if (m.planner) m.planner->ensure_started();
  ThreadRecord* r = m.record();
  if (!r) return;
  r->thread_marked = true;
  // A global mark not processed yet by this thread and this one are one boundary.
  m.boundary(*r, m.epoch.load(std::memory_order_acquire), key);
}

Status ReplayAllocator::load_plans(const PlanFile& file) {
  Impl& m = *impl_;
  if (m.windows == 0) return Status::Ok();  // no slabs: nothing to serve plans from
  std::vector<SavedUnit> by_window(m.windows);
  for (const SavedUnit& u : file.units) {
    uint32_t window = 0;
    const auto parsed = std::from_chars(u.name.data(), u.name.data() + u.name.size(), window);
    if (parsed.ec != std::errc() || parsed.ptr != u.name.data() + u.name.size()) {
      return InvalidArgument("unit " + u.name + ": the drop-in's units are thread numbers");
    }
    if (window < m.windows) by_window[window] = u;
  }
  std::lock_guard<std::mutex> lock(m.records_mutex);
  if (m.records.load(std::memory_order_acquire) != nullptr) {
    return InvalidArgument("plans must be loaded before the first request");
  }
  m.saved_by_window = std::move(by_window);
  return Status::Ok();
}

PlanFile ReplayAllocator::saved_plans(const std::string& program) const {
  const Impl& m = *impl_;
  PlanFile file;
  file.adapter = "drop-in";
  file.program = program;
  std::vector<const ThreadRecord*> records;
  for (ThreadRecord* r = m.records.load(std::memory_order_acquire); r; r = r->next) {
    if (r->window != kNoWindow) records.push_back(r);
  }
  std::sort(records.begin(), records.end(),
            [](const ThreadRecord* a, const ThreadRecord* b) { return a->window < b->window; });
  for (const ThreadRecord* r : records) {
    SavedUnit unit = r->learner.saved_unit(std::to_string(r->window));
    if (!unit.variants.empty()) file.units.push_back(std::move(unit));
  }
  return file;
}

ReplayPhase ReplayAllocator::phase_of_calling_thread() {
  Impl& m = *impl_;
  ThreadRecord* r = m.record();
  if (!r) return ReplayPhase::kBackingOnly;
  const uint64_t e = m.epoch.load(std::memory_order_acquire);
  if (e != r->epoch) m.boundary(*r, e);
  return r->phase();
}

ReplayStats ReplayAllocator::stats() const {
  const Impl& m = *impl_;
  ReplayStats s;
  for (ThreadRecord* r = m.records.load(std::memory_order_acquire); r; r = r->next) {
    ++s.threads;
    s.served += r->served.get();  // counted on the fast path, in the record's first cache line
    s.pooled += r->small.pooled.get();
    s.pool_bytes += r->small.chunks_committed.get() * fast::kSmallChunkBytes;
    r->learner.counters().add_to(s);
  }
  s.invalid_frees = m.invalid_frees.load(std::memory_order_relaxed);
  if (m.planner) s.background_plans = m.planner->plans_finished();
  return s;
}

Status ReplayAllocator::check_invariants() const {
  const Impl& m = *impl_;
  for (ThreadRecord* r = m.records.load(std::memory_order_acquire); r; r = r->next) {
    MEMPLAN_RETURN_IF_ERROR(rt::check_record(*r));
    if (r->window != kNoWindow && m.window_plans[r->window].load() != r->plan) {
      return Internal("window plan differs from its thread's plan");
    }
  }
  return Status::Ok();
}

}  // namespace memplan
