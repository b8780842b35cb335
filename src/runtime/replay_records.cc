// replay_records.cc — a served plan's tables and a thread record's
// invariants (replay_records.h).
#include "runtime/replay_records.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace memplan::runtime {

void build_served_tables(const Profile& a, ServedPlan& plan) {
  ServedPlan* served = &plan;
  // One entry per tick, and the sentinel (limit 0) that stops the fast path past the plan.
  served->ticks.assign(a.size() + 1, TickEntry{});
  std::vector<std::pair<int64_t, uint32_t>> ends;  // (upper, tick) of the planned blocks
  for (size_t k = 0; k < served->request_of.size(); ++k) {
    const Buffer& b = served->problem.buffers[k];
    const uint32_t tick = served->request_of[k];
    TickEntry& t = served->ticks[tick];
    const uint64_t shift = served->shift_of[k];  // colour and header
    t.offset16 = static_cast<uint32_t>((static_cast<uint64_t>(served->plan.offsets[k]) + shift) >> 4);
    t.limit = static_cast<uint64_t>(b.size) - shift + 1;
    ends.push_back({b.upper, tick});
  }
  std::stable_sort(
      ends.begin(), ends.end(),
      [](const std::pair<int64_t, uint32_t>& x, const std::pair<int64_t, uint32_t>& y) { return x.first < y.first; });
  // walk_end of tick t: the blocks whose planned life ends at or before t, which must be dead before t is served.
  size_t ended = 0;
  for (size_t t = 0; t < served->ticks.size(); ++t) {
    while (ended < ends.size() && ends[ended].first <= static_cast<int64_t>(t)) ++ended;
    served->ticks[t].walk_end = static_cast<uint32_t>(ended);
  }
  for (const auto& end : ends) served->end_ticks.push_back(end.second);
  served->occupants = std::make_unique<std::atomic<uint32_t>[]>(served->ticks.size());
  served->finish_view();
}

Status check_record(const ThreadRecord& r) {
  const Slab& slab = r.learner.slab();
  MEMPLAN_RETURN_IF_ERROR(slab.check_invariants());
  if (const char* error = r.small.check()) return Internal(error);
  if (r.pool && r.pool != &r.small) return Internal("a record uses another window's small-request pool");
  if (r.window == kNoWindow) {
    if (r.phase() != ReplayPhase::kBackingOnly) return Internal("a thread without a slab window is not backing-only");
    return Status::Ok();
  }
  if (r.phase() == ReplayPhase::kReplaying && !r.plan) return Internal("a replaying thread has no plan");
  if (r.plan != r.learner.serving()) return Internal("the record serves another plan than its learner");
  if (!r.learner.serves_running_variant()) return Internal("a replaying thread serves another variant's plan");
  if (slab.base() != r.window_base) return Internal("slab is not at its window");
  if (!r.plan) return Status::Ok();
  const ServedPlan& p = *r.plan;
  if (static_cast<uint64_t>(p.plan.arena) > slab.mapped_bytes()) return Internal("plan's arena exceeds its slab");
  for (uint32_t t = 0; t < p.size(); ++t) {
    if (p.occupants[t].load() == 0) continue;
    if (p.occupants[t].load() != p.ticks[t].offset16) return Internal("a live slab block's occupant is not its offset");
    if (p.ticks[t].limit == 0) return Internal("a tick the plan leaves to the backing allocator is live in the slab");
    const unsigned char* block = r.window_base + (uint64_t{p.ticks[t].offset16} << 4);
    if (fast::read_header(block) != t) return Internal("a live slab block's header does not name its tick");
  }
  if (r.walk > p.end_ticks.size()) return Internal("liveness cursor past the plan");
  if (r.entries != p.ticks.data() || r.occupant != p.occupants.get())
    return Internal("the fast path reads another plan");
  if (p.entries != p.ticks.data() || p.tick_count + 1 != p.ticks.size() || p.ticks.back().limit != 0) {
    return Internal("the plan's view or sentinel is wrong");
  }
  return Status::Ok();
}

}  // namespace memplan::runtime
