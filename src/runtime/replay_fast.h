// replay_fast.h — the sequenced serving kernel (SequencedKernel): the replay
// allocator's fast paths (memplan/replay.h), as inline member functions over
// the few fields they read, so that both the C++ API (replay.cc) and the
// LD_PRELOAD drop-in (preload/replay_interpose.cc) run them without a call
// into the allocator. It serves requests in their profiled order, lock-free;
// the runtime's other kernel, the checked one (runtime/checked_kernel.h),
// serves adapters that cannot rely on order. Private to src/runtime.
//
// Allocation fast path (serve), for the calling thread's next request:
//   1. the thread has a record of this allocator (one TLS compare), and the
//      request takes a place in the sequence (ReplayConfig::min_sequenced_size;
//      a smaller one is popped from the thread's small-request pool instead,
//      runtime/small_pool.h);
//   2. the record serves in the current epoch: `serve_epoch` equals the
//      allocator's epoch only while the thread replays without deviating, so
//      one compare covers "replaying", "not deviating" and "no mark since";
//   3. the entry of the current tick (the entry array ends with a sentinel
//      whose limit is 0, so a tick past the plan fails the size check instead
//      of needing a bounds check); size < limit and the planned offset is
//      aligned to the request (offsets are multiples of 16, so every
//      alignment up to 16 passes; alignment 0 never does and goes the slow way);
//   4. the liveness walk: each planned block whose planned life ended at or
//      before this tick has occupant 0 (amortised O(1): each block is looked
//      at once per iteration);
//   5. occupant[tick] = offset / 16, the tick into the header below the
//      block, advance the cursors, count, return.
// Free fast path (release): a range compare against the reservation, the
// window's plan (one load), the tick from the 16-byte header (only where a
// header can lie inside the mapping: 16 <= offset <= arena), and a check that
// the tick's occupant is this very offset — a stale, double or interior free
// finds 0 or another offset and is counted as invalid — then one release
// store of 0; a pointer into the window's pool half goes to the pool. Both
// paths are O(1) amortised, take no lock, make no system
// call, no atomic read-modify-write and no indirect call; anything they do
// not handle returns "not handled" with nothing changed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "runtime/counter.h"
#include "runtime/small_pool.h"

namespace memplan::runtime::fast {

// What the plan says about one tick of the iteration: 16 bytes, so that the
// fast path reads one entry per request, in order.
struct TickEntry {
  uint64_t limit = 0;     // planned size + 1 (a request is served when size < limit); 0: not planned
  uint32_t offset16 = 0;  // the block's offset in the slab / 16 (its header sits just below it)
  uint32_t walk_end = 0;  // planned blocks with upper <= this tick (a prefix of end_ticks)
};
static_assert(sizeof(TickEntry) == 16);

using runtime::Counter;

// The arrays of one published plan that a free reads. Immutable once
// published, except the occupants.
struct PlanView {
  const TickEntry* entries = nullptr;         // ticks() + 1 entries, the last a sentinel (limit 0)
  std::atomic<uint32_t>* occupant = nullptr;  // per tick: offset16 of the block served there while live, else 0
  uint32_t tick_count = 0;                    // allocations of the iteration
  uint64_t header_span = 0;                   // a header can be read at offsets 16 .. 15 + header_span
};

// The first cache line of a per-thread record: everything the allocation fast
// path reads and writes. Only the owning thread touches it.
constexpr uint64_t kNotServing = ~uint64_t{0};
struct ThreadFast {
  uint64_t serve_epoch = kNotServing;   // the epoch while serving, kNotServing otherwise
  const TickEntry* entries = nullptr;   // the serving plan's entries
  const uint32_t* end_ticks = nullptr;  // ticks of planned blocks in order of their planned end
  std::atomic<uint32_t>* occupant = nullptr;
  unsigned char* window_base = nullptr;  // where this thread's slab starts
  uint32_t tick = 0;                     // allocations so far in this iteration
  uint32_t walk = 0;                     // next entry of end_ticks to check
  Counter served;                        // allocations served from the slab
  SmallPool* pool = nullptr;             // the window's small-request pool, once the thread may use it
};
static_assert(sizeof(ThreadFast) <= 64);

// The calling thread's record of the allocator whose id it names. initial-exec
// TLS: reaching it never allocates, also inside the preloaded library.
struct ThreadLink {
  uint64_t instance_id;
  ThreadFast* record;
};
extern __thread ThreadLink t_link __attribute__((tls_model("initial-exec")));

// Every served block is preceded by kHeaderBytes of slab holding its tick.
constexpr uint64_t kHeaderBytes = 16;
inline uint32_t read_header(const void* block) {
  uint32_t tick;
  std::memcpy(&tick, static_cast<const unsigned char*>(block) - sizeof tick, sizeof tick);
  return tick;
}
inline void write_header(void* block, uint32_t tick) {
  std::memcpy(static_cast<unsigned char*>(block) - sizeof tick, &tick, sizeof tick);
}

// The sequenced kernel of one allocator: what both fast paths read, and the
// fast paths themselves (serve, release). Shared by every thread; the owning
// allocator (replay.cc) sets its fields and publishes the plans.
struct SequencedKernel {
  uint64_t id = 0;                       // instance id (records of dead instances never match)
  uint64_t min_sequenced = 0;            // ReplayConfig::min_sequenced_size: smaller requests take no tick
  std::atomic<uint64_t> epoch{0};        // bumped by every mark
  unsigned char* reservation = nullptr;  // every thread's window, one after another
  size_t reservation_bytes = 0;
  unsigned window_shift = 0;
  size_t window_bytes = 0;
  size_t window_mask = 0;                                        // window_bytes - 1
  std::unique_ptr<std::atomic<const PlanView*>[]> window_plans;  // per window: the plan frees consult
  // The small-request pools (Note [Small-request pool]): each window's upper
  // part, from pool_offset, when min_sequenced_size turns them on.
  size_t pool_offset = 0;                                   // window_bytes when there are no pools
  std::unique_ptr<std::atomic<SmallPool*>[]> window_pools;  // per window: its pool, set once
  std::atomic<uint64_t> invalid_frees{0};

  bool owns(const void* p) const {
    return static_cast<size_t>(static_cast<const unsigned char*>(p) - reservation) < reservation_bytes;
  }

  // The block planned for the calling thread's next request, or nullptr with
  // nothing changed (then the caller takes the allocator's general path).
  [[gnu::always_inline]] void* serve(size_t size, size_t alignment) {
    const ThreadLink link = t_link;
    if (__builtin_expect(link.instance_id != id || size < min_sequenced, 0)) {
      return serve_small(link, size, alignment);
    }
    ThreadFast& r = *link.record;
    if (__builtin_expect(r.serve_epoch != epoch.load(std::memory_order_acquire), 0)) return nullptr;
    const uint32_t t = r.tick;
    const TickEntry e = r.entries[t];
    const uint64_t offset = uint64_t{e.offset16} << 4;
    if (__builtin_expect(size >= e.limit || (offset & (alignment - 1)) != 0, 0)) return nullptr;
    std::atomic<uint32_t>* const occupant = r.occupant;
    uint32_t w = r.walk;
    if (w < e.walk_end) {
      const uint32_t* const end_ticks = r.end_ticks;
      do {
        if (__builtin_expect(occupant[end_ticks[w]].load(std::memory_order_acquire) != 0, 0)) return nullptr;
      } while (++w < e.walk_end);
      r.walk = w;
    }
    r.tick = t + 1;
    occupant[t].store(e.offset16, std::memory_order_relaxed);
    unsigned char* p = r.window_base + offset;
    write_header(p, t);
    r.served.bump();
    return p;
  }

  // Frees p if it is a pointer into the reservation (release_owned) and
  // returns true; returns false for any other pointer.
  [[gnu::always_inline]] bool release(void* p) {
    if (!owns(p)) return false;
    release_owned(p);
    return true;
  }

  // Frees p, a pointer into the reservation (owns(p)): a live slab or pool
  // block, or an invalid free that is counted and ignored.
  [[gnu::always_inline]] void release_owned(void* p) {
    if (in_pool_half(p)) {
      release_small(p);
      return;
    }
    const PlanView* plan;
    uint32_t t;
    if (__builtin_expect(find_live(p, &plan, &t), 1)) {
      plan->occupant[t].store(0, std::memory_order_release);
      return;
    }
    invalid_frees.fetch_add(1, std::memory_order_relaxed);  // double, stale or interior free: ignored
  }

  // The plan and tick of the live slab block p (p must be inside the
  // reservation), or false.
  bool find_live(const void* p, const PlanView** plan_out, uint32_t* tick_out) const {
    const size_t in_reservation = static_cast<size_t>(static_cast<const unsigned char*>(p) - reservation);
    const PlanView* plan = window_plans[in_reservation >> window_shift].load(std::memory_order_acquire);
    if (__builtin_expect(plan == nullptr, 0)) return false;
    const uint64_t offset = in_reservation & window_mask;
    // The header must lie in the mapping: 16 <= offset <= arena.
    if (__builtin_expect(offset - kHeaderBytes >= plan->header_span, 0)) return false;
    const uint32_t t = read_header(p);
    // Its "header" is program data for a stale or interior pointer: the tick it
    // names must be in the plan and hold a live block at exactly this offset.
    if (__builtin_expect(t >= plan->tick_count, 0)) return false;
    if (__builtin_expect(uint64_t{plan->occupant[t].load(std::memory_order_relaxed)} << 4 != offset, 0)) return false;
    *plan_out = plan;
    *tick_out = t;
    return true;
  }

  // The pool block p (inside the reservation) belongs to and its class, or false.
  bool find_small(const void* p, SmallPool** pool_out, int* class_out) const {
    const size_t in_reservation = static_cast<size_t>(static_cast<const unsigned char*>(p) - reservation);
    if ((in_reservation & window_mask) < pool_offset) return false;
    SmallPool* pool = window_pools[in_reservation >> window_shift].load(std::memory_order_acquire);
    if (pool == nullptr) return false;
    const int c = pool->class_of(p);
    if (c < 0) return false;
    *pool_out = pool;
    *class_out = c;
    return true;
  }

 private:
  // A block of the thread's small-request pool for a request outside the
  // sequence, or nullptr with nothing changed. (Its caller's one compare covers
  // both "another allocator's record" and "outside the sequence".)
  void* serve_small(ThreadLink link, size_t size, size_t alignment) const {
    if (link.instance_id != id || size >= min_sequenced) return nullptr;
    SmallPool* pool = link.record->pool;
    if (pool == nullptr) return nullptr;
    const int c = small_class_aligned(size, alignment);
    if (c < 0) return nullptr;
    return pool->pop(static_cast<uint32_t>(c));
  }

  // True when p (inside the reservation) lies in its window's pool half.
  bool in_pool_half(const void* p) const {
    const size_t in_reservation = static_cast<size_t>(static_cast<const unsigned char*>(p) - reservation);
    return (in_reservation & window_mask) >= pool_offset;
  }

  // Frees p, a pointer into its window's pool half: a pool block, or an
  // invalid free that is counted and ignored. Out of line (a tail call from
  // release_owned), so that a slab block's free keeps its registers.
  [[gnu::noinline]] void release_small(void* p) {
    SmallPool* pool;
    int c;
    if (find_small(p, &pool, &c)) {
      const ThreadLink link = t_link;
      const bool by_owner = link.instance_id == id && link.record == pool->owner;
      if (pool->release(p, static_cast<uint32_t>(c), by_owner)) return;
    }
    invalid_frees.fetch_add(1, std::memory_order_relaxed);  // double or interior free: ignored
  }
};
// The name replay.cc and memplan/replay.h use for the kernel.
using SharedFast = SequencedKernel;

// The kernel's calls as free functions, for the call sites in replay.cc.
[[gnu::always_inline]] inline void* serve(SequencedKernel& s, size_t size, size_t alignment) {
  return s.serve(size, alignment);
}
[[gnu::always_inline]] inline bool release(SequencedKernel& s, void* p) { return s.release(p); }
inline bool find_live(const SequencedKernel& s, const void* p, const PlanView** plan_out, uint32_t* tick_out) {
  return s.find_live(p, plan_out, tick_out);
}
inline bool find_small(const SequencedKernel& s, const void* p, SmallPool** pool_out, int* class_out) {
  return s.find_small(p, pool_out, class_out);
}

}  // namespace memplan::runtime::fast
