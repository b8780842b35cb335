// extract.cc — one iteration of a trace as a planning problem.
//
// Algorithm (n = events in the iteration):
//   1. Take the iteration's events [begin, end); event k of it is tick k.
//   2. Turn each event into pointer actions keyed by sequence number: an
//      allocation acquires its result at its sequence, a free releases at its
//      sequence, a realloc releases its old pointer at its release sequence
//      and acquires the new one at its sequence. Sorting the actions by key
//      replays the allocator's state in the order it really changed, even
//      when another thread reused a pointer between a realloc's release and
//      its return.
//   3. Sweep the actions with a map pointer -> open buffer: an acquire opens a
//      buffer at its tick; a release closes the open buffer of that pointer at
//      its tick (a realloc's at its tick + 1, so old and new overlap for the
//      copy); a release of a pointer with no open buffer was allocated before
//      the iteration (counted as inherited).
//   4. Buffers still open at the end escape the iteration (counted, left out);
//      closed ones below min_size are counted and left out; the rest, sorted by
//      allocation tick, are the problem.
// Cost: O(n log n) time for the sort, O(n) memory.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "memplan/trace.h"

namespace memplan {
namespace {

constexpr uint64_t kMaxBufferBytes = uint64_t{1} << 62;

struct Action {
  uint64_t key = 0;      // sequence number at which the allocator's state changed
  bool acquire = false;  // false: release
  size_t event = 0;      // index into trace.events
  int64_t tick = 0;      // the tick a release closes its buffer at, or an acquire opens it
};

struct OpenBuffer {
  int64_t lower = 0;
  uint64_t size = 0;
  uint64_t alignment = 0;  // asked for by an aligned call, 0 otherwise
};

uint64_t round_up_to_power_of_two(uint64_t x) {
  uint64_t p = 1;
  while (p < x && p < kMaxBufferBytes) p <<= 1;
  return p;
}

}  // namespace

StatusOr<Extraction> extract_iteration(const Trace& trace, int64_t iteration, const ExtractOptions& options) {
  if (!is_power_of_two(options.alignment)) {
    return InvalidArgument("alignment " + std::to_string(options.alignment) + " is not a power of two");
  }
  MEMPLAN_ASSIGN_OR_RETURN(const IterationSpan span, iteration_span(trace, iteration));

  Extraction result;
  result.iteration = iteration;
  result.events = span.end - span.begin;

  std::vector<Action> actions;
  actions.reserve(result.events + result.events / 4);
  for (size_t i = span.begin; i < span.end; ++i) {
    const TraceEvent& e = trace.events[i];
    const auto tick = static_cast<int64_t>(i - span.begin);
    switch (e.kind()) {
      case TraceEventKind::kAlloc:
        if (e.pointer == 0) {
          ++result.failed;
        } else {
          actions.push_back({.key = e.sequence, .acquire = true, .event = i, .tick = tick});
        }
        break;
      case TraceEventKind::kFree:
        actions.push_back({.key = e.sequence, .acquire = false, .event = i, .tick = tick});
        break;
      case TraceEventKind::kRealloc: {
        // A failed realloc (null result for a nonzero size) leaves the old block alone.
        const bool failed = e.pointer == 0 && e.size != 0;
        if (failed) ++result.failed;
        if (e.old_pointer != 0 && !failed) {
          actions.push_back({.key = e.release_sequence, .acquire = false, .event = i, .tick = tick + 1});
        }
        if (e.pointer != 0) actions.push_back({.key = e.sequence, .acquire = true, .event = i, .tick = tick});
        break;
      }
      case TraceEventKind::kMark:
        return Internal("a mark inside iteration " + std::to_string(iteration));
    }
  }
  // Releases sort before acquires at the same key: a key is shared only by a
  // realloc's release and acquire when an in-memory trace gives both one number.
  std::sort(actions.begin(), actions.end(), [](const Action& a, const Action& b) {
    if (a.key != b.key) return a.key < b.key;
    return !a.acquire && b.acquire;
  });

  std::unordered_map<uint64_t, OpenBuffer> open;
  open.reserve(actions.size());
  std::vector<Buffer> buffers;
  for (const Action& a : actions) {
    const TraceEvent& e = trace.events[a.event];
    if (a.acquire) {
      if (e.size > kMaxBufferBytes) {
        return InvalidArgument("iteration " + std::to_string(iteration) + ", tick " + std::to_string(a.tick) +
                               ": size " + std::to_string(e.size) + " exceeds 2^62 bytes");
      }
      auto [it, inserted] = open.try_emplace(e.pointer);
      if (!inserted) ++result.reused_live;  // the trace lost the free of the older buffer: drop it
      it->second = OpenBuffer{.lower = a.tick, .size = e.size, .alignment = e.alignment};
      continue;
    }
    const uint64_t pointer = e.kind() == TraceEventKind::kRealloc ? e.old_pointer : e.pointer;
    auto it = open.find(pointer);
    if (it == open.end()) {
      ++result.inherited;
      continue;
    }
    const OpenBuffer b = it->second;
    open.erase(it);
    if (b.size < options.min_size) {
      ++result.below_min_size;
      result.below_min_size_bytes += b.size;
      continue;
    }
    const auto asked = static_cast<int64_t>(round_up_to_power_of_two(b.alignment));
    buffers.push_back(Buffer{.lower = b.lower,
                             .upper = a.tick,
                             .size = static_cast<int64_t>(b.size),
                             .alignment = std::max(asked, options.alignment)});
  }
  for (const auto& [pointer, b] : open) {
    ++result.escaped;
    result.escaped_bytes += b.size;
  }

  std::sort(buffers.begin(), buffers.end(), [](const Buffer& a, const Buffer& b) { return a.lower < b.lower; });
  for (Buffer& b : buffers) b.id = std::to_string(b.lower);
  result.problem.buffers = std::move(buffers);
  if (Status s = check_problem(result.problem); !s.ok()) {
    return Internal("extracted problem is invalid: " + s.message());
  }
  return result;
}

}  // namespace memplan
