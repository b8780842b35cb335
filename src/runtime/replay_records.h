// replay_records.h — the replay allocator's data (replay.cc): a plan ready
// to serve with the tables its fast paths read (ServedPlan), and a thread's
// record (ThreadRecord). Their building and checking is replay_records.cc;
// serving is replay.cc and replay_fast.h. Private to memplan's runtime.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "memplan/replay_config.h"
#include "memplan/status.h"
#include "runtime/learner.h"
#include "runtime/replay_fast.h"

namespace memplan::runtime {

using fast::kHeaderBytes;
using fast::TickEntry;

constexpr uint32_t kNoWindow = UINT32_MAX;  // ThreadRecord::window of a thread without a slab window

// Every served block is preceded by kHeaderBytes of slab that hold its tick,
// so that a free finds the block's occupant from the pointer alone. The
// header of a block with a larger alignment is that alignment, so the block
// stays aligned.
inline uint64_t header_bytes(uint64_t alignment) { return std::max(kHeaderBytes, alignment); }

// A plan ready to serve, immutable once published except for the occupants.
// Its PlanView (entries, occupant, tick_count, header_span) points into the
// vectors below and is what frees read.
struct ServedPlan final : PreparedPlan, fast::PlanView {
  std::vector<TickEntry> ticks;  // one per allocation of the iteration, then the sentinel (limit 0)
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

struct ThreadRecord : fast::ThreadFast {
  // fast::ThreadFast is the first cache line: all the allocation fast path
  // reads (a copy of the serving plan's arrays, and the cursors).
  explicit ThreadRecord(const ReplayConfig& config) : learner(config, RequestIdentity::kSequence) {}

  uint64_t epoch = 0;          // the last epoch this thread processed
  bool thread_marked = false;  // the thread marked its own boundary (mark_thread) at least once
  bool seed_pending = false;   // the record's window has saved variants not seeded yet (load_plans)
  uint32_t entry_count = 0;    // ticks of the serving plan
  std::atomic<uint32_t> claimed{0};
  ThreadRecord* next = nullptr;
  uint32_t window = kNoWindow;

  fast::SmallPool small;  // the window's small-request pool (used once `pool` points at it)

  // The owner's state.
  bool deviating = false;      // rest of the iteration goes to the backing allocator
  ServedPlan* plan = nullptr;  // the learner's serving plan, also in window_plans[window]
  Learner learner;             // profiles, agreement, planning, the slab, the counters

  ReplayPhase phase() const { return learner.phase(); }
  bool serving() const { return serve_epoch != fast::kNotServing; }
  // Serving: replaying, not deviating, and in the epoch just processed.
  void update_serving() { serve_epoch = phase() == ReplayPhase::kReplaying && !deviating ? epoch : fast::kNotServing; }
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

// Fills a served plan's tables (ticks, end order, occupants, its view) from
// the plan the learner made of `agreed`. Touches no thread state: the
// planner thread runs it.
void build_served_tables(const Profile& agreed, ServedPlan& served);

// A record's invariants: its slab and small-request pool, its phase and
// window, and that every live slab block sits at its tick's planned offset
// with its tick in its header. The allocator checks the window's plan.
Status check_record(const ThreadRecord& r);

}  // namespace memplan::runtime
