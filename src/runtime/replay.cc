// replay.cc — the replay allocator (memplan/replay.h): per-thread profiling,
// planning at the iteration boundary, and serving from a slab.
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
// Liveness. Each distinct planned offset has an occupant word: tick + 1 of
// the block served there and not yet freed, 0 when free. The owner stores it
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
// Cost of the replay fast path: a TLS load, an epoch load, the walk step, a
// bounds/size/alignment check, one occupant load and one store.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/problem.h"
#include "memplan/replay.h"
#include "memplan/validate.h"
#include "runtime/os/os_memory.h"
#include "runtime/slab.h"

namespace memplan {
namespace {

namespace rt = memplan::runtime;

constexpr size_t kMinAlignment = 16;  // what malloc promises (alignof(max_align_t))
constexpr uint32_t kNoWindow = UINT32_MAX;
constexpr int64_t kEscaped = -1;      // profile upper of a block not freed within the iteration

struct Request {
  uint64_t size = 0;
  uint64_t alignment = kMinAlignment;
  bool operator==(const Request&) const = default;
};

// One iteration of one thread, as the backing allocator served it.
struct Profile {
  std::vector<Request> requests;  // by tick
  std::vector<int64_t> uppers;    // by tick: allocation count when freed, or kEscaped
  bool overflowed = false;        // more than max_requests: not plannable

  void clear() {
    requests.clear();
    uppers.clear();
    overflowed = false;
  }
};

// What the plan says about one tick of the iteration.
struct TickEntry {
  uint64_t offset = 0;
  uint64_t size = 0;       // 0: not planned (small or escaping): the backing allocator serves it
  uint64_t alignment = 0;
  uint64_t upper = 0;      // planned end tick
  uint32_t slot = 0;       // index of `offset` in distinct_offsets
};

// A plan ready to serve, immutable once published except for the occupants.
struct ServedPlan {
  Problem problem;  // the buffers planned (ids are ticks), kept for check_invariants
  Plan plan;
  std::vector<TickEntry> ticks;           // one per allocation of the iteration
  // Planned blocks in order of their end tick, with what the liveness walk
  // needs, so that the walk reads memory in order.
  struct End {
    uint64_t upper;
    uint32_t slot;
    uint32_t tick;
  };
  std::vector<End> by_upper;
  std::vector<uint64_t> distinct_offsets; // sorted
  std::unique_ptr<std::atomic<uint32_t>[]> occupant;  // per distinct offset: tick + 1 live there, or 0
  // Open-addressing table offset -> slot (index in distinct_offsets), so that
  // a free finds its block in O(1): keys kNoOffset where empty, size a power
  // of two at least twice the number of offsets.
  std::vector<uint64_t> table_keys;
  std::vector<uint32_t> table_slots;
  uint64_t table_mask = 0;

  static constexpr uint64_t kNoOffset = ~uint64_t{0};
  static uint64_t hash(uint64_t offset) { return (offset >> 4) * 0x9e3779b97f4a7c15ULL; }

  void build_table() {
    size_t capacity = 4;
    while (capacity < 2 * distinct_offsets.size()) capacity *= 2;
    table_keys.assign(capacity, kNoOffset);
    table_slots.assign(capacity, 0);
    table_mask = capacity - 1;
    for (size_t k = 0; k < distinct_offsets.size(); ++k) {
      uint64_t h = hash(distinct_offsets[k]) >> 32;
      while (table_keys[h & table_mask] != kNoOffset) ++h;
      table_keys[h & table_mask] = distinct_offsets[k];
      table_slots[h & table_mask] = static_cast<uint32_t>(k);
    }
  }
  // The slot of a planned offset, or -1.
  int64_t slot_of(uint64_t offset) const {
    for (uint64_t h = hash(offset) >> 32;; ++h) {
      const uint64_t key = table_keys[h & table_mask];
      if (key == offset) return table_slots[h & table_mask];
      if (key == kNoOffset) return -1;
    }
  }

  bool any_live() const {
    for (size_t k = 0; k < distinct_offsets.size(); ++k) {
      if (occupant[k].load(std::memory_order_acquire) != 0) return true;
    }
    return false;
  }
};

// Counters written by the owner only (so plain load+store, no atomic RMW on
// the fast path), read racily by stats().
struct Counter {
  std::atomic<uint64_t> value{0};
  void bump() { value.store(value.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
  void set(uint64_t v) { value.store(v, std::memory_order_relaxed); }
  uint64_t get() const { return value.load(std::memory_order_relaxed); }
};

struct ThreadRecord {
  std::atomic<uint32_t> claimed{0};
  ThreadRecord* next = nullptr;
  uint32_t window = kNoWindow;
  unsigned char* window_base = nullptr;

  // The owner's state.
  uint64_t epoch = 0;
  ReplayPhase phase = ReplayPhase::kProfiling;
  uint32_t tick = 0;          // allocations so far in this iteration
  bool deviating = false;     // rest of the iteration goes to the backing allocator
  uint32_t upper_cursor = 0;  // next entry of plan->by_upper to examine
  int64_t agreements = 0;     // consecutive iterations equal to `agreed`
  int64_t deviating_run = 0;  // consecutive deviating iterations
  Profile current;
  Profile agreed;
  std::unordered_map<uintptr_t, uint32_t> profiled_live;  // backing pointer -> tick, this iteration
  ServedPlan* plan = nullptr;                              // also in window_plans[window]
  std::vector<std::unique_ptr<ServedPlan>> plans;          // every plan this record published
  rt::Slab slab;

  Counter iterations, profiled, served, unplanned, fallback, deviations, plans_made, reprofiles, plan_failures,
      slab_bytes, planned_buffers;
};

struct ThreadLink {
  uint64_t instance_id;
  ThreadRecord* record;
};
__thread ThreadLink t_link __attribute__((tls_model("initial-exec")));
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
  auto* link = static_cast<ThreadLink*>(value);
  std::lock_guard<std::mutex> lock(g_instances_mutex);
  if (link->record && instance_alive_locked(link->instance_id)) {
    link->record->claimed.store(0, std::memory_order_release);
  }
  link->record = nullptr;
  link->instance_id = 0;
  t_exited = true;
}

}  // namespace

struct ReplayAllocator::Impl {
  ReplayConfig config;
  BackingAllocator& backing;
  Status init;
  uint64_t id = 0;

  unsigned char* reservation = nullptr;
  size_t reservation_bytes = 0;
  size_t window_bytes = 0;
  unsigned window_shift = 0;
  uint32_t windows = 0;
  std::unique_ptr<std::atomic<ServedPlan*>[]> window_plans;

  std::atomic<uint64_t> epoch{0};
  std::mutex records_mutex;
  std::atomic<ThreadRecord*> records{nullptr};
  uint32_t next_window = 0;  // under records_mutex
  std::atomic<uint64_t> invalid_frees{0};

  Impl(const ReplayConfig& c, BackingAllocator& b) : config(c), backing(b) {}

  bool owns(const void* p) const {
    return static_cast<size_t>(static_cast<const unsigned char*>(p) - reservation) < reservation_bytes;
  }

  ThreadRecord* record() {
    if (t_link.instance_id == id) return t_link.record;
    return attach();
  }

  ThreadRecord* attach();
  void reset_for_new_thread(ThreadRecord& r);
  void boundary(ThreadRecord& r, uint64_t e);
  void finish_profile(ThreadRecord& r);
  void try_plan(ThreadRecord& r);
  void* serve(ThreadRecord& r, size_t size, size_t alignment);
  void deviate(ThreadRecord& r) { r.deviating = true; }
  void* allocate(size_t size, size_t alignment, bool zeroed);
  void* backing_allocate(size_t size, size_t alignment, bool zeroed) {
    return zeroed ? backing.allocate_zeroed(size) : backing.allocate(size, alignment);
  }
  void note_profiled_end(ThreadRecord& r, void* p, bool escaped);
  // The plan and slot of a live slab block, or false.
  bool find_block(const void* p, ServedPlan** plan, size_t* slot, uint32_t* tick);
  void free_slab(void* p);
};

ReplayAllocator::ReplayAllocator(const ReplayConfig& config, BackingAllocator& backing)
    : impl_(new Impl(config, backing)) {
  Impl& m = *impl_;
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
  m.window_shift = shift;
  m.windows = static_cast<uint32_t>(windows);
  m.window_plans = std::make_unique<std::atomic<ServedPlan*>[]>(m.windows);
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
  r.upper_cursor = 0;
  r.agreements = 0;
  r.deviating_run = 0;
  r.current.clear();
  r.agreed.clear();
  r.profiled_live.clear();
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
            r.slab.release();
            r.slab_bytes.set(0);
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
  r.upper_cursor = 0;
  r.current.clear();
  r.profiled_live.clear();
  // A block of an earlier iteration still live may overlap any planned block
  // of this one: replay only from a slab with nothing live.
  if (r.phase == ReplayPhase::kReplaying && r.plan->any_live()) r.deviating = true;
}

void ReplayAllocator::Impl::finish_profile(ThreadRecord& r) {
  Profile& c = r.current;
  if (c.requests.empty()) return;  // an idle iteration says nothing about this thread's pattern
  if (c.overflowed) {
    r.agreements = 0;
    r.agreed.clear();
    return;
  }
  if (r.agreements > 0 && r.agreed.requests == c.requests) {
    for (size_t i = 0; i < c.uppers.size(); ++i) {
      int64_t& u = r.agreed.uppers[i];
      u = (u == kEscaped || c.uppers[i] == kEscaped) ? kEscaped : std::max(u, c.uppers[i]);
    }
    ++r.agreements;
  } else {
    std::swap(r.agreed, c);
    r.agreements = 1;
  }
  if (r.agreements >= config.profile_iterations) try_plan(r);
}

void ReplayAllocator::Impl::try_plan(ThreadRecord& r) {
  if (r.plan && r.plan->any_live()) {
    r.plan_failures.bump();  // the old slab still holds live blocks: retry at the next boundary
    return;
  }
  auto served = std::make_unique<ServedPlan>();
  const Profile& a = r.agreed;
  std::vector<uint32_t> tick_of;  // buffer index -> tick
  for (size_t i = 0; i < a.requests.size(); ++i) {
    if (a.uppers[i] == kEscaped) continue;
    if (static_cast<int64_t>(a.requests[i].size) < config.min_planned_size) continue;
    Buffer b;
    b.id = std::to_string(i);
    b.lower = static_cast<int64_t>(i);
    b.upper = a.uppers[i];
    b.size = static_cast<int64_t>(std::max<uint64_t>(a.requests[i].size, 1));  // unique addresses for malloc(0)
    b.alignment = static_cast<int64_t>(a.requests[i].alignment);
    served->problem.buffers.push_back(std::move(b));
    tick_of.push_back(static_cast<uint32_t>(i));
  }
  PlanOptions options;
  options.time_limit_seconds = config.plan_time_limit_seconds;
  StatusOr<Plan> plan = plan_with(config.planner, served->problem, options);
  const bool fits = plan.ok() && static_cast<uint64_t>(plan->arena) <= window_bytes;
  if (!fits || !r.slab.commit(static_cast<size_t>(plan->arena), config.huge_pages).ok()) {
    // No plan, or one this thread cannot hold: stay with the backing allocator for good.
    r.plan_failures.bump();
    r.phase = ReplayPhase::kBackingOnly;
    return;
  }
  served->plan = std::move(plan).value();
  served->ticks.assign(a.requests.size(), TickEntry{});
  for (size_t k = 0; k < tick_of.size(); ++k) {
    TickEntry& t = served->ticks[tick_of[k]];
    t.offset = static_cast<uint64_t>(served->plan.offsets[k]);
    t.size = static_cast<uint64_t>(served->problem.buffers[k].size);
    t.alignment = static_cast<uint64_t>(served->problem.buffers[k].alignment);
    t.upper = static_cast<uint64_t>(served->problem.buffers[k].upper);
    served->distinct_offsets.push_back(t.offset);
  }
  std::sort(served->distinct_offsets.begin(), served->distinct_offsets.end());
  served->distinct_offsets.erase(std::unique(served->distinct_offsets.begin(), served->distinct_offsets.end()),
                                 served->distinct_offsets.end());
  for (uint32_t tick : tick_of) {
    TickEntry& t = served->ticks[tick];
    t.slot = static_cast<uint32_t>(
        std::lower_bound(served->distinct_offsets.begin(), served->distinct_offsets.end(), t.offset) -
        served->distinct_offsets.begin());
  }
  for (uint32_t tick : tick_of) served->by_upper.push_back({served->ticks[tick].upper, served->ticks[tick].slot, tick});
  std::stable_sort(served->by_upper.begin(), served->by_upper.end(),
                   [](const ServedPlan::End& x, const ServedPlan::End& y) { return x.upper < y.upper; });
  served->build_table();
  served->occupant = std::make_unique<std::atomic<uint32_t>[]>(std::max<size_t>(served->distinct_offsets.size(), 1));

  ServedPlan* published = served.get();
  r.plans.push_back(std::move(served));
  window_plans[r.window].store(published, std::memory_order_release);
  r.plan = published;
  r.phase = ReplayPhase::kReplaying;
  r.deviating_run = 0;
  r.plans_made.bump();
  r.planned_buffers.set(published->problem.size());
  r.slab_bytes.set(r.slab.mapped_bytes());
}

void* ReplayAllocator::Impl::serve(ThreadRecord& r, size_t size, size_t alignment) {
  ServedPlan& plan = *r.plan;
  const uint32_t t = r.tick++;
  if (t >= plan.ticks.size()) {
    deviate(r);  // more requests than planned
    return nullptr;
  }
  while (r.upper_cursor < plan.by_upper.size()) {
    const ServedPlan::End& e = plan.by_upper[r.upper_cursor];
    if (e.upper > t) break;
    if (plan.occupant[e.slot].load(std::memory_order_acquire) == e.tick + 1) {
      deviate(r);  // freed late: its bytes may belong to a block planned from now on
      return nullptr;
    }
    ++r.upper_cursor;
  }
  const TickEntry& e = plan.ticks[t];
  if (e.size == 0) return nullptr;  // not planned: the backing allocator serves it
  if (size > e.size || alignment > e.alignment || plan.occupant[e.slot].load(std::memory_order_acquire) != 0) {
    deviate(r);
    return nullptr;
  }
  plan.occupant[e.slot].store(t + 1, std::memory_order_relaxed);
  r.served.bump();
  return r.window_base + e.offset;
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
        r->profiled_live[reinterpret_cast<uintptr_t>(p)] = t;
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
  auto it = r.profiled_live.find(reinterpret_cast<uintptr_t>(p));
  if (it == r.profiled_live.end()) return;
  if (!escaped && !r.current.overflowed) r.current.uppers[it->second] = r.tick;
  r.profiled_live.erase(it);
}

bool ReplayAllocator::Impl::find_block(const void* p, ServedPlan** plan_out, size_t* slot_out, uint32_t* tick_out) {
  const size_t offset_in_reservation = static_cast<size_t>(static_cast<const unsigned char*>(p) - reservation);
  const size_t w = offset_in_reservation >> window_shift;
  ServedPlan* plan = window_plans[w].load(std::memory_order_acquire);
  if (!plan) return false;
  const uint64_t offset = offset_in_reservation & (window_bytes - 1);
  const int64_t found = plan->slot_of(offset);
  if (found < 0) return false;
  const size_t slot = static_cast<size_t>(found);
  const uint32_t occupant = plan->occupant[slot].load(std::memory_order_relaxed);
  if (occupant == 0) return false;
  *plan_out = plan;
  *slot_out = slot;
  *tick_out = occupant - 1;
  return true;
}

void ReplayAllocator::Impl::free_slab(void* p) {
  ServedPlan* plan;
  size_t slot;
  uint32_t tick;
  if (!find_block(p, &plan, &slot, &tick)) {
    invalid_frees.fetch_add(1, std::memory_order_relaxed);  // double or foreign free: ignored
    return;
  }
  plan->occupant[slot].store(0, std::memory_order_release);
}

void* ReplayAllocator::allocate(size_t size, size_t alignment) { return impl_->allocate(size, alignment, false); }

void* ReplayAllocator::allocate_zeroed(size_t size) { return impl_->allocate(size, kMinAlignment, true); }

void ReplayAllocator::deallocate(void* p) {
  if (!p) return;
  Impl& m = *impl_;
  if (m.owns(p)) {
    m.free_slab(p);
    return;
  }
  if (t_link.instance_id == m.id && t_link.record) {
    ThreadRecord& r = *t_link.record;
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
    size_t slot;
    uint32_t tick;
    if (!m.find_block(p, &plan, &slot, &tick)) {
      m.invalid_frees.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    const uint64_t capacity = plan->ticks[tick].size;
    if (size == 0) {
      m.free_slab(p);
      return nullptr;
    }
    if (size <= capacity) return p;
    void* q = m.backing.allocate(size, kMinAlignment);
    if (!q) return nullptr;  // p stays valid, as realloc promises
    std::memcpy(q, p, capacity);
    m.free_slab(p);
    return q;
  }
  // A profiled block that is realloc'ed is not planned: its life goes on
  // under another size, which the plan could not serve in place.
  if (t_link.instance_id == m.id && t_link.record && t_link.record->phase == ReplayPhase::kProfiling) {
    m.note_profiled_end(*t_link.record, p, true);
  }
  return m.backing.reallocate(p, size);
}

size_t ReplayAllocator::usable_size(void* p) {
  Impl& m = *impl_;
  if (!p) return 0;
  if (m.owns(p)) {
    ServedPlan* plan;
    size_t slot;
    uint32_t tick;
    return m.find_block(p, &plan, &slot, &tick) ? plan->ticks[tick].size : 0;
  }
  return m.backing.usable_size(p);
}

bool ReplayAllocator::owns(const void* p) const { return impl_->owns(p); }

void ReplayAllocator::mark() {
  Impl& m = *impl_;
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
    for (size_t k = 0; k < p.distinct_offsets.size(); ++k) {
      const uint32_t occupant = p.occupant[k].load();
      if (occupant == 0) continue;
      const uint32_t tick = occupant - 1;
      if (tick >= p.ticks.size() || p.ticks[tick].size == 0 || p.ticks[tick].slot != k) {
        return Internal("a live slab block is not at its planned offset");
      }
    }
    if (r->upper_cursor > p.by_upper.size()) return Internal("liveness cursor past the plan");
  }
  return Status::Ok();
}

}  // namespace memplan
