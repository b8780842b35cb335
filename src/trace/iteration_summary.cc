// iteration_summary.cc — per-iteration statistics of a trace (memplan trace-info).
//
// Live bytes are process-wide: the sweep starts at the first event of the
// trace, so an iteration's peak includes what earlier iterations left live.
// Like extract.cc, the sweep orders pointer actions by sequence number (a
// realloc releases its old pointer at its release sequence), so a pointer is
// never live twice. Cost: O(n log n) for n events.
#include <algorithm>
#include <bit>
#include <set>
#include <tuple>
#include <unordered_map>

#include "memplan/trace.h"

namespace memplan {
namespace {

enum class Step : uint8_t { kRelease, kMark, kAcquire };

struct SummaryAction {
  uint64_t key = 0;
  Step step = Step::kRelease;
  size_t event = 0;
};

struct Live {
  uint64_t size = 0;
  int64_t iteration = 0;  // the iteration that allocated it
};

size_t histogram_bucket(uint64_t size) { return size <= 1 ? 0 : 64 - static_cast<size_t>(std::countl_zero(size - 1)); }

}  // namespace

std::vector<IterationSummary> summarize_iterations(const Trace& trace) {
  const int64_t count = trace.iteration_count();
  std::vector<IterationSummary> out(static_cast<size_t>(count));
  std::vector<int64_t> iteration_of(trace.events.size());
  {
    int64_t it = 0;
    for (size_t i = 0; i < trace.events.size(); ++i) {
      // A mark belongs to the iteration it opens.
      if (trace.events[i].kind() == TraceEventKind::kMark) ++it;
      iteration_of[i] = it;
    }
  }

  using Signature = std::tuple<TraceCall, uint64_t, uint64_t>;
  std::vector<Signature> previous, current;
  std::set<uint32_t> threads;
  std::vector<SummaryAction> actions;
  actions.reserve(trace.events.size());
  for (int64_t k = 0; k < count; ++k) {
    auto span = iteration_span(trace, k);
    if (!span.ok()) continue;  // unreachable: k is in range
    IterationSummary& s = out[static_cast<size_t>(k)];
    s.iteration = k;
    s.closed = span->closed;
    s.events = span->end - span->begin;
    current.clear();
    threads.clear();
    for (size_t i = span->begin; i < span->end; ++i) {
      const TraceEvent& e = trace.events[i];
      threads.insert(e.thread);
      switch (e.kind()) {
        case TraceEventKind::kAlloc:
        case TraceEventKind::kRealloc: {
          current.emplace_back(e.call, e.size, e.alignment);
          const bool realloc = e.kind() == TraceEventKind::kRealloc;
          const bool failed = e.pointer == 0 && (e.size != 0 || !realloc);
          if (realloc && e.old_pointer != 0 && !failed) {
            actions.push_back({.key = e.release_sequence, .step = Step::kRelease, .event = i});
          }
          if (e.pointer != 0) {
            actions.push_back({.key = e.sequence, .step = Step::kAcquire, .event = i});
            ++s.allocations;
            s.allocated_bytes += e.size;
            ++s.size_histogram[histogram_bucket(e.size)];
          }
          break;
        }
        case TraceEventKind::kFree:
          ++s.frees;
          actions.push_back({.key = e.sequence, .step = Step::kRelease, .event = i});
          break;
        case TraceEventKind::kMark:
          break;
      }
    }
    // The mark that opens iteration k carries what earlier iterations left live into it.
    if (k > 0)
      actions.push_back({.key = trace.events[span->begin - 1].sequence, .step = Step::kMark, .event = span->begin - 1});
    s.threads = threads.size();
    s.repeats_previous = k >= 2 && current == previous;
    std::swap(previous, current);
  }

  std::sort(actions.begin(), actions.end(), [](const SummaryAction& a, const SummaryAction& b) {
    if (a.key != b.key) return a.key < b.key;
    return a.step < b.step;
  });
  std::unordered_map<uint64_t, Live> live;
  live.reserve(actions.size() / 2 + 1);
  std::vector<uint64_t> iteration_live(out.size(), 0);
  uint64_t live_bytes = 0;
  for (const SummaryAction& a : actions) {
    const TraceEvent& e = trace.events[a.event];
    const int64_t k = iteration_of[a.event];
    IterationSummary& s = out[static_cast<size_t>(k)];
    if (a.step == Step::kMark) {
      s.peak_live_bytes = std::max(s.peak_live_bytes, live_bytes);
      continue;
    }
    if (a.step == Step::kAcquire) {
      auto [it, inserted] = live.try_emplace(e.pointer);
      if (!inserted) {  // a lost free: forget the older block
        live_bytes -= it->second.size;
        iteration_live[static_cast<size_t>(it->second.iteration)] -= it->second.size;
      }
      it->second = Live{.size = e.size, .iteration = k};
      live_bytes += e.size;
      uint64_t& mine = iteration_live[static_cast<size_t>(k)];
      mine += e.size;
      s.peak_iteration_bytes = std::max(s.peak_iteration_bytes, mine);
      s.peak_live_bytes = std::max(s.peak_live_bytes, live_bytes);
    } else {
      // The bytes were live up to this release, inside this iteration.
      s.peak_live_bytes = std::max(s.peak_live_bytes, live_bytes);
      const uint64_t pointer = e.kind() == TraceEventKind::kRealloc ? e.old_pointer : e.pointer;
      auto it = live.find(pointer);
      if (it != live.end()) {
        live_bytes -= it->second.size;
        iteration_live[static_cast<size_t>(it->second.iteration)] -= it->second.size;
        live.erase(it);
      }
    }
  }
  return out;
}

}  // namespace memplan
