// snapshot_window.cc — the window's reconstruction (reconstruct_window, see
// snapshot.h): blocks paired by address, the start state, the curves and
// peaks, the segments at the peak of reserved bytes.
#include "memplan/snapshot.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "io/snapshot_numbers.h"
#include "memplan/units.h"

namespace memplan::snapshot {

namespace {

// Keeps the first few warnings of one kind and counts the rest.
class WarningList {
 public:
  void add(const std::string& kind, const std::string& example) {
    auto& [count, first] = kinds_[kind];
    if (count++ == 0) first = example;
  }
  void emit(std::vector<std::string>& out) const {
    for (const auto& [kind, entry] : kinds_) {
      out.push_back(kind + " (" + std::to_string(entry.first) + "x; first: " + entry.second + ")");
    }
  }

 private:
  std::map<std::string, std::pair<size_t, std::string>> kinds_;
};

bool is_segment_event(Action a) {
  return a == Action::kSegmentAlloc || a == Action::kSegmentFree || a == Action::kSegmentMap ||
         a == Action::kSegmentUnmap;
}

int64_t tick_after(const Window& w, int64_t event) {
  return event < 0 ? 0 : w.tick_of_event[static_cast<size_t>(event)];
}

bool is_live_at(const WindowBlock& b, int64_t tick) { return b.alloc_tick <= tick && tick < b.free_tick; }

// The held segment (keyed by address) that contains `address`, or nullptr.
template <typename Held>
auto* segment_holding(Held& held, uint64_t address) {
  auto it = held.upper_bound(address);
  if (it == held.begin()) return static_cast<decltype(&*it)>(nullptr);
  --it;
  return address < it->second.address + it->second.size ? &*it : nullptr;
}

// The segments held after `event` (-1: at the start), each with the
// requested bytes of the blocks live then that lie in it.
std::map<uint64_t, SegmentUse> held_after(const Window& w, const std::vector<Event>& events, int64_t event) {
  std::map<uint64_t, SegmentUse> held;
  for (const simulate::StartSegment& s : w.start_segments) {
    held[s.address] = {.address = s.address, .size = s.size, .stream = s.stream, .small_pool = s.small_pool};
  }
  for (int64_t i = 0; i <= event; ++i) {
    const Event& e = events[static_cast<size_t>(i)];
    if (e.action == Action::kSegmentAlloc) {
      held[e.address] = {
          .address = e.address, .size = e.size, .stream = e.stream, .small_pool = e.size == kSmallSegmentBytes};
    } else if (e.action == Action::kSegmentFree) {
      held.erase(e.address);
    } else if (e.action == Action::kSegmentMap || e.action == Action::kSegmentUnmap) {
      auto it = held.upper_bound(e.address);
      if (it == held.begin()) {
        if (e.action == Action::kSegmentMap)
          held[e.address] = {.address = e.address, .size = e.size, .stream = e.stream};
        continue;
      }
      --it;
      if (e.action == Action::kSegmentMap)
        it->second.size += e.size;
      else
        it->second.size -= std::min(it->second.size, e.size);
    }
  }
  const int64_t t = tick_after(w, event);
  for (const WindowBlock& b : w.blocks) {
    if (!is_live_at(b, t)) continue;
    if (auto* segment = segment_holding(held, b.address)) segment->second.allocated += b.size;
  }
  return held;
}

// Where the fragmentation table is taken: the event with the most bytes
// allocated while reserved bytes stay at their peak (from the peak's event to
// the next segment event), so that the table's allocated adds up with the
// peak allocated when that peak falls in the span. A peak that is a segment
// made (or pages mapped) for a request not yet placed is thus never shown
// with the new segment free.
int64_t fragmentation_event(const std::vector<Event>& events, int64_t peak) {
  if (peak < 0) return peak;
  int64_t best = peak, delta = 0, best_delta = 0;
  for (size_t i = static_cast<size_t>(peak) + 1; i < events.size(); ++i) {
    const Event& e = events[i];
    if (is_segment_event(e.action)) break;
    if (e.action == Action::kAlloc) delta += static_cast<int64_t>(e.size);
    if (e.action == Action::kFreeCompleted) delta -= static_cast<int64_t>(e.size);
    if (delta > best_delta) {
      best_delta = delta;
      best = static_cast<int64_t>(i);
    }
  }
  return best;
}

// The largest range of a held segment that no block live after `event`
// covers (blocks take their requested size rounded to 512 bytes).
uint64_t largest_free_block(const Window& w, const std::map<uint64_t, SegmentUse>& held, int64_t event) {
  std::map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> taken;  // segment -> [begin, end) of live blocks
  const int64_t t = tick_after(w, event);
  for (const WindowBlock& b : w.blocks) {
    if (!is_live_at(b, t)) continue;
    if (const auto* segment = segment_holding(held, b.address)) {
      taken[segment->first].emplace_back(b.address, b.address + round_block(std::max<uint64_t>(b.size, 1)));
    }
  }
  uint64_t largest = 0;
  for (const auto& [address, use] : held) {
    std::vector<std::pair<uint64_t, uint64_t>>& ranges = taken[address];
    std::sort(ranges.begin(), ranges.end());
    uint64_t cursor = address;
    const uint64_t end = address + use.size;
    for (const auto& [begin, stop] : ranges) {
      if (begin > cursor) largest = std::max(largest, std::min(begin, end) - cursor);
      cursor = std::max(cursor, stop);
    }
    if (end > cursor) largest = std::max(largest, end - cursor);
  }
  return largest;
}

// Window::cautions: what this window cannot show, and how to record it.
void add_cautions(const Snapshot& snapshot, const Device& device, Window& w) {
  if (device.events.empty()) {
    w.cautions.push_back(
        "no trace events: the dump holds its segments only (memory history was not being recorded), so the "
        "peaks, the plan and the models describe the dump-time state, not a run; record one with "
        "torch.cuda.memory._record_memory_history(max_entries=100000) before the work, then "
        "torch.cuda.memory._dump_snapshot(path)");
    return;
  }
  uint64_t before = 0;
  for (size_t i : w.live_at_peak) {
    if (w.blocks[i].alloc_event < 0) before += w.blocks[i].size;
  }
  if (w.peak_allocated.bytes > 0 && before * 2 > w.peak_allocated.bytes) {
    w.cautions.push_back(
        std::to_string(before * 100 / w.peak_allocated.bytes) + "% of the peak allocated (" +
        format_bytes(static_cast<int64_t>(before)) +
        ") is held by blocks allocated before the window, whose frames were not recorded: to see who allocated "
        "them, call torch.cuda.memory._record_memory_history(max_entries=100000) before building the model and "
        "the optimizer (or raise max_entries so that the window reaches back to them)");
  }
  // A step's length from ProfilerStep annotations, when the file has them.
  std::vector<int64_t> steps;
  for (const Annotation& a : snapshot.annotations) {
    if (a.start && a.device == device.device && a.name.starts_with("ProfilerStep#")) steps.push_back(a.time_us);
  }
  std::sort(steps.begin(), steps.end());
  const int64_t span = device.events.back().time_us - device.events.front().time_us;
  if (steps.size() >= 2 && steps.back() > steps.front() && span >= 0) {
    const int64_t step = (steps.back() - steps.front()) / static_cast<int64_t>(steps.size() - 1);
    if (span * 2 < step) {
      w.cautions.push_back("the window spans " + format_milliseconds(static_cast<double>(span) / 1e6) +
                           ", less than half of a step (" + format_milliseconds(static_cast<double>(step) / 1e6) +
                           " between ProfilerStep annotations): the ring buffer kept part of a step only; raise "
                           "torch.cuda.memory._record_memory_history(max_entries=...) so that it holds whole steps");
    }
  }
}

// reconstruct_window's steps over the state they share; each step is one
// method, called in order.
struct Reconstruction {
  Reconstruction(const Device& d, Window& window)
      : device(d), events(d.events), w(window), block_of_event(d.events.size(), -1) {}

  void pair_events() {
    // 1. Pair allocs and frees by address, in order. Blocks are found in
    //    discovery order here and put in their final order at step 2.
    int64_t tick = 0;
    w.tick_of_event.resize(events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      const Event& e = events[i];
      switch (e.action) {
        case Action::kAlloc: {
          ++tick;
          ++w.alloc_events;
          if (auto it = live.find(e.address); it != live.end()) {
            warnings.add("alloc of an address already allocated (the earlier block is taken as freed there)",
                         "event " + std::to_string(i) + " at " + hex(e.address));
            found[it->second].free_tick = tick;
            found[it->second].free_event = static_cast<int64_t>(i);
            live.erase(it);
          }
          found.push_back({.address = e.address,
                           .size = e.size,
                           .stream = e.stream,
                           .stack = e.stack,
                           .alloc_event = static_cast<int64_t>(i),
                           .alloc_tick = tick});
          block_bytes.push_back(round_block(e.size));
          live[e.address] = found.size() - 1;
          block_of_event[i] = static_cast<int64_t>(found.size() - 1);
          break;
        }
        case Action::kFreeRequested:
        case Action::kFreeCompleted: {
          const bool completed = e.action == Action::kFreeCompleted;
          if (completed) {
            ++tick;
            ++w.free_events;
          }
          auto it = live.find(e.address);
          size_t index;
          if (it == live.end()) {
            // Allocated before the window.
            found.push_back({.address = e.address, .size = e.size, .stream = e.stream, .alloc_tick = 0});
            block_bytes.push_back(round_block(e.size));
            index = found.size() - 1;
            if (!completed) live[e.address] = index;
          } else {
            index = it->second;
            if (completed) live.erase(it);
          }
          if (completed) {
            found[index].free_tick = tick;
            found[index].free_event = static_cast<int64_t>(i);
            block_of_event[i] = static_cast<int64_t>(index);
          }
          break;
        }
        default:
          if (is_segment_event(e.action)) ++w.segment_events;
          break;
      }
      w.tick_of_event[i] = tick;
    }
    w.ticks = tick;
  }

  void reconcile_with_dump() {
    const int64_t end_tick = w.ticks + 1;
    // The dump-time state: allocated blocks the window did not leave allocated
    // were allocated before it and never touched; blocks it left allocated that
    // the dump does not hold contradict it.
    std::unordered_map<uint64_t, const Block*> dump_allocated;
    for (const Segment& s : device.segments) {
      for (const Block& b : s.blocks) {
        if (b.state != BlockState::kInactive) dump_allocated.emplace(b.address, &b);
      }
    }
    for (const auto& [address, block] : dump_allocated) {
      if (auto it = live.find(address); it != live.end()) {
        block_bytes[it->second] = block->size;
        continue;
      }
      found.push_back({.address = address,
                       .size = block->requested_size != 0 ? block->requested_size : block->size,
                       .stack = block->stack,
                       .alloc_tick = 0});
      block_bytes.push_back(block->size);
      live[address] = found.size() - 1;
    }
    if (!device.segments.empty() || !device.events.empty()) {
      for (const auto& [address, index] : live) {
        if (dump_allocated.count(address) == 0) {
          warnings.add(
              "end state contradicts the events: a block the window left allocated is not allocated at dump time",
              hex(address) + (found[index].alloc_event >= 0
                                  ? " (alloc event " + std::to_string(found[index].alloc_event) + ")"
                                  : ""));
        }
      }
    }
    for (const auto& [address, index] : live) {
      found[index].free_tick = end_tick;
      found[index].free_event = -1;
    }
  }

  void order_blocks() {
    // 2. Order: blocks from before the window first (by address), then the
    //    window's in alloc order.
    std::vector<size_t> order(found.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const bool before_a = found[a].alloc_event < 0, before_b = found[b].alloc_event < 0;
      if (before_a != before_b) return before_a;
      if (before_a) return found[a].address < found[b].address;
      return found[a].alloc_event < found[b].alloc_event;
    });
    std::vector<size_t> position(found.size());
    w.blocks.reserve(found.size());
    sizes_in_segment.assign(found.size(), 0);
    for (size_t i = 0; i < order.size(); ++i) {
      position[order[i]] = i;
      w.blocks.push_back(found[order[i]]);
      sizes_in_segment[i] = block_bytes[order[i]];
    }
    for (int64_t& b : block_of_event) {
      if (b >= 0) b = static_cast<int64_t>(position[static_cast<size_t>(b)]);
    }
  }

  void undo_segment_events() {
    // 3. Reserved bytes: the dump's segments with the window's segment events undone.
    for (const Segment& s : device.segments) {
      w.end_reserved += s.total_size;
      segments[s.address] = {.address = s.address,
                             .size = s.total_size,
                             .stream = s.stream,
                             .small_pool = s.small_pool,
                             .expandable = s.expandable};
    }
    int64_t reserved = static_cast<int64_t>(w.end_reserved);
    for (size_t i = events.size(); i-- > 0;) {
      const Event& e = events[i];
      switch (e.action) {
        case Action::kSegmentAlloc:
          reserved -= static_cast<int64_t>(e.size);
          if (segments.erase(e.address) == 0) {
            warnings.add("segment_alloc of a segment not held at dump time nor freed later",
                         "event " + std::to_string(i) + " at " + hex(e.address));
          }
          break;
        case Action::kSegmentFree:
          reserved += static_cast<int64_t>(e.size);
          segments[e.address] = {
              .address = e.address, .size = e.size, .stream = e.stream, .small_pool = e.size == kSmallSegmentBytes};
          break;
        case Action::kSegmentMap:
        case Action::kSegmentUnmap: {
          const bool map = e.action == Action::kSegmentMap;
          reserved += map ? -static_cast<int64_t>(e.size) : static_cast<int64_t>(e.size);
          simulate::StartSegment* s = containing(e.address);
          if (s == nullptr) {
            if (!map)
              segments[e.address] = {.address = e.address, .size = e.size, .stream = e.stream, .expandable = true};
            else
              warnings.add("segment_map outside every segment", "event " + std::to_string(i));
          } else if (map) {
            s->size = s->size >= e.size ? s->size - e.size : 0;
          } else {
            s->size += e.size;
          }
          break;
        }
        default:
          break;
      }
    }
    if (reserved < 0) {
      warnings.add("the segment events undo more than the dump-time segments hold (start reserved taken as 0)",
                   std::to_string(reserved) + " bytes");
      reserved = 0;
    }
    w.start_reserved = static_cast<uint64_t>(reserved);
  }

  void tile_start_segments() {
    // The start segments, each tiled by the blocks allocated before the window
    // and the free gaps between them.
    for (auto it = segments.begin(); it != segments.end();) {
      if (it->second.size == 0)
        it = segments.erase(it);
      else
        ++it;
    }
    std::vector<size_t> outside;
    std::map<uint64_t, std::vector<size_t>> blocks_of_segment;
    for (size_t i = 0; i < w.blocks.size(); ++i) {
      if (w.blocks[i].alloc_tick != 0) continue;
      w.start_allocated += w.blocks[i].size;
      simulate::StartSegment* s = containing(w.blocks[i].address);
      if (s == nullptr || w.blocks[i].address >= s->address + s->size) {
        outside.push_back(i);
        continue;
      }
      blocks_of_segment[s->address].push_back(i);
    }
    if (!outside.empty()) {
      warnings.add("blocks allocated before the window lie in no segment held then",
                   hex(w.blocks[outside.front()].address));
    }
    for (auto& [address, s] : segments) {
      uint64_t cursor = 0;
      for (size_t i : blocks_of_segment[address]) {
        const uint64_t offset = w.blocks[i].address - s.address;
        if (offset < cursor) {
          warnings.add("blocks allocated before the window overlap", hex(w.blocks[i].address));
          continue;
        }
        if (offset > cursor) s.blocks.push_back({.offset = cursor, .size = offset - cursor});
        const uint64_t size = std::min(std::max(sizes_in_segment[i], w.blocks[i].size), s.size - offset);
        s.blocks.push_back({.offset = offset, .size = size, .allocated = true, .requested_size = w.blocks[i].size});
        cursor = offset + size;
      }
      if (!s.blocks.empty() && cursor < s.size) s.blocks.push_back({.offset = cursor, .size = s.size - cursor});
      w.start_segments.push_back(s);
    }
  }

  void replay_forward() {
    // 4. Forward replay: the curves and their peaks.
    uint64_t allocated = w.start_allocated;
    int64_t reserved = static_cast<int64_t>(w.start_reserved);
    w.peak_allocated = {.bytes = allocated, .event = -1, .time_us = events.empty() ? 0 : events.front().time_us};
    w.peak_reserved = {.bytes = w.start_reserved, .event = -1, .time_us = w.peak_allocated.time_us};
    const size_t bucket = std::max<size_t>(1, (events.size() + kUsageSamples - 1) / kUsageSamples);
    w.usage.reserve(std::min(events.size(), kUsageSamples));
    for (size_t i = 0; i < events.size(); ++i) {
      const Event& e = events[i];
      switch (e.action) {
        case Action::kAlloc:
          allocated += e.size;
          break;
        case Action::kFreeCompleted:
          if (block_of_event[i] >= 0)
            allocated -= std::min(allocated, w.blocks[static_cast<size_t>(block_of_event[i])].size);
          break;
        case Action::kSegmentAlloc:
        case Action::kSegmentMap:
          reserved += static_cast<int64_t>(e.size);
          break;
        case Action::kSegmentFree:
        case Action::kSegmentUnmap:
          reserved = std::max<int64_t>(0, reserved - static_cast<int64_t>(e.size));
          break;
        case Action::kOom: {
          OomEvent oom{.event = static_cast<int64_t>(i),
                       .time_us = e.time_us,
                       .requested = e.size,
                       .device_free = e.address,
                       .allocated = allocated,
                       .reserved = static_cast<uint64_t>(reserved),
                       .stack = e.stack};
          w.ooms.push_back(std::move(oom));
          break;
        }
        default:
          break;
      }
      if (allocated > w.peak_allocated.bytes) w.peak_allocated = {allocated, static_cast<int64_t>(i), e.time_us};
      if (static_cast<uint64_t>(reserved) > w.peak_reserved.bytes) {
        w.peak_reserved = {static_cast<uint64_t>(reserved), static_cast<int64_t>(i), e.time_us};
      }
      // The curves, each sample the most of its run of events.
      const size_t sample = i / bucket;
      if (sample >= w.usage.size()) w.usage.push_back({.first_event = i});
      w.usage.back().allocated = std::max(w.usage.back().allocated, allocated);
      w.usage.back().reserved = std::max(w.usage.back().reserved, static_cast<uint64_t>(reserved));
    }
    w.end_allocated = allocated;
    if (static_cast<uint64_t>(reserved) != w.end_reserved) {
      warnings.add("replayed reserved bytes differ from the dump-time segments",
                   std::to_string(reserved) + " vs " + std::to_string(w.end_reserved));
    }
  }

  void at_the_peaks(const Snapshot& snapshot) {
    auto live_at = [&](int64_t t, size_t limit) {
      std::vector<size_t> out;
      for (size_t i = 0; i < w.blocks.size(); ++i) {
        if (w.blocks[i].alloc_tick <= t && t < w.blocks[i].free_tick) out.push_back(i);
      }
      std::stable_sort(out.begin(), out.end(), [&](size_t a, size_t b) { return w.blocks[a].size > w.blocks[b].size; });
      if (out.size() > limit) out.resize(limit);
      return out;
    };
    w.live_at_peak = live_at(tick_after(w, w.peak_allocated.event), SIZE_MAX);
    for (size_t k = 0; k < w.ooms.size() && k < 100; ++k) {
      w.ooms[k].largest_live = live_at(tick_after(w, w.ooms[k].event), 10);
    }

    // 5. Segments held at the peak of reserved bytes (once the request that
    //    needed the last one is placed) and what was allocated in each; at
    //    each oom, the largest free block.
    w.segments_at_peak_event = fragmentation_event(events, w.peak_reserved.event);
    {
      const std::map<uint64_t, SegmentUse> held = held_after(w, events, w.segments_at_peak_event);
      for (const auto& [address, use] : held) {
        if (use.size > 0) w.segments_at_peak.push_back(use);
      }
    }
    for (size_t k = 0; k < w.ooms.size() && k < 100; ++k) {
      w.ooms[k].largest_free_block = largest_free_block(w, held_after(w, events, w.ooms[k].event), w.ooms[k].event);
    }
    add_cautions(snapshot, device, w);
  }

  simulate::StartSegment* containing(uint64_t address) {
    auto it = segments.upper_bound(address);
    if (it == segments.begin()) return nullptr;
    --it;
    return &it->second;
  }

  const Device& device;
  const std::vector<Event>& events;
  Window& w;
  WarningList warnings;
  // Blocks in discovery order (step 1) until order_blocks puts them in w.blocks.
  std::vector<WindowBlock> found;
  std::vector<uint64_t> block_bytes;          // the block's size in its segment (dump size, else rounded)
  std::vector<int64_t> block_of_event;        // the block an alloc or free_completed opens or closes; -1: none
  std::unordered_map<uint64_t, size_t> live;  // address -> index into found
  std::vector<uint64_t> sizes_in_segment;     // block_bytes in w.blocks' order
  std::map<uint64_t, simulate::StartSegment> segments;  // the start state being built, by address
};

}  // namespace

Window reconstruct_window(const Snapshot& snapshot, const Device& device) {
  Window w;
  w.device = device.device;
  Reconstruction r(device, w);
  r.pair_events();
  r.reconcile_with_dump();
  r.order_blocks();
  r.undo_segment_events();
  r.tile_start_segments();
  r.replay_forward();
  r.at_the_peaks(snapshot);
  r.warnings.emit(w.warnings);
  return w;
}

}  // namespace memplan::snapshot
