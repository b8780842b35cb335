// trace_plans.cc — plans_from_trace (memplan/trace_plans.h): a traced
// thread's requests replayed through the drop-in's replay allocator, and
// what it learnt saved as a plan file.
#include "memplan/trace_plans.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include "memplan/backing_allocator.h"
#include "memplan/replay.h"

namespace memplan {
namespace {

// The drop-in's configuration (replay_interpose.cc) for a replay that must
// make the plans the drop-in would: plans made at the boundary (a planner
// thread could finish after the trace's last mark), and the first
// iteration's profile kept for the file.
ReplayConfig drop_in_config() {
  ReplayConfig config;
  config.profile_before_first_mark = false;
  config.plan_in_background = false;
  config.huge_pages = false;
  config.trim_backing = false;
  config.save_plans_file = "(trace)";
  return config;
}

}  // namespace

StatusOr<PlanFile> plans_from_trace(const Trace& trace, const std::string& program) {
  const auto first = std::find_if(trace.events.begin(), trace.events.end(), [](const TraceEvent& e) {
    return kind_of(e.call) == TraceEventKind::kAlloc && e.pointer != 0;
  });
  if (first == trace.events.end()) return InvalidArgument("the trace has no allocation to learn from");
  const uint32_t unit = first->thread;
  HeapBacking backing;
  ReplayAllocator replay(drop_in_config(), backing);
  MEMPLAN_RETURN_IF_ERROR(replay.init_status());
  std::unordered_map<uint64_t, void*> live;  // the unit's blocks: traced pointer -> replayed one
  auto release = [&](uint64_t traced) {
    const auto found = live.find(traced);
    if (found == live.end()) return;
    replay.deallocate(found->second);
    live.erase(found);
  };
  for (const TraceEvent& e : trace.events) {
    switch (kind_of(e.call)) {
      case TraceEventKind::kMark:
        replay.mark();
        break;
      case TraceEventKind::kFree:
        release(e.pointer);
        break;
      case TraceEventKind::kAlloc:
        if (e.thread != unit || e.pointer == 0) break;
        if (void* p = replay.allocate(e.size, std::max<uint64_t>(e.alignment, 16))) {
          release(e.pointer);  // a traced pointer made again (its free was not recorded)
          live.emplace(e.pointer, p);
        }
        break;
      case TraceEventKind::kRealloc: {
        const auto found = live.find(e.old_pointer);
        if (e.thread != unit) {
          release(e.old_pointer);  // another thread's realloc ends the unit's block
          break;
        }
        void* old = found == live.end() ? nullptr : found->second;
        if (found != live.end()) live.erase(found);
        if (e.pointer == 0) {
          if (e.size == 0 && old)
            replay.deallocate(old);  // a realloc to size 0 freed it
          else if (old)
            live.emplace(e.old_pointer, old);  // failed: the old block stays
          break;
        }
        if (void* q = old ? replay.reallocate(old, e.size) : replay.allocate(e.size, 16)) live[e.pointer] = q;
        break;
      }
    }
  }
  PlanFile file = replay.saved_plans(program);
  for (const auto& [traced, p] : live) replay.deallocate(p);
  return file;
}

}  // namespace memplan
