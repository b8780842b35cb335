// snapshot_diagnosis.cc — diagnose: where a snapshot's peak went (live
// tensors by source line, cache and fragmentation) and which allocator
// settings would lower it, each replayed on the window by the caching model
// (snapshot_analysis.h states the grid).
#include <algorithm>
#include <map>
#include <optional>

#include "memplan/units.h"
#include "snapshot_diagnosis.h"

namespace memplan::snapshot {
namespace {

std::vector<SourceLine> live_by_line(const Snapshot& s, const Window& w, uint64_t& before_window) {
  std::map<std::string, SourceLine> lines;
  before_window = 0;
  for (size_t index : w.live_at_peak) {
    const WindowBlock& b = w.blocks[index];
    if (b.alloc_event < 0) before_window += b.size;
    std::string where = s.describe_stack(b.stack);
    if (where.empty()) where = b.alloc_event < 0 ? "(before the window)" : "(no Python frame)";
    SourceLine& line = lines[where];
    line.where = where;
    line.bytes += b.size;
    ++line.blocks;
  }
  std::vector<SourceLine> sorted;
  for (auto& [where, line] : lines) sorted.push_back(std::move(line));
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const SourceLine& a, const SourceLine& b) { return a.bytes > b.bytes; });
  return sorted;
}

std::optional<uint64_t> caching_peak(const simulate::DeviceTrace& trace, const simulate::AllocatorSettings& settings) {
  StatusOr<simulate::ModelResult> result = simulate::simulate_caching(trace, settings);
  if (!result.ok()) return std::nullopt;
  return result->peak_reserved_bytes;
}

// One knob over its grid: the value with the least peak reserved, if it
// reserves less than `baseline`.
struct Candidate {
  std::string value;  // as PYTORCH_CUDA_ALLOC_CONF spells it
  simulate::AllocatorSettings settings;
};

void best_of(const std::string& key, const std::vector<Candidate>& grid, const simulate::DeviceTrace& trace,
             uint64_t baseline, const std::string& note, std::vector<Recommendation>& out) {
  std::optional<Recommendation> best;
  for (const Candidate& c : grid) {
    const std::optional<uint64_t> peak = caching_peak(trace, c.settings);
    if (!peak || *peak >= baseline || (best && *peak >= best->peak_reserved_bytes)) continue;
    best = Recommendation{.action = "PYTORCH_CUDA_ALLOC_CONF=" + key + ":" + c.value,
                          .peak_reserved_bytes = *peak,
                          .saving_bytes = static_cast<int64_t>(baseline) - static_cast<int64_t>(*peak),
                          .note = note};
  }
  if (best) out.push_back(std::move(*best));
}

void search_settings(const Snapshot& s, const simulate::DeviceTrace& trace, uint64_t baseline,
                     std::vector<Recommendation>& out) {
  const simulate::AllocatorSettings& recorded = s.settings;
  const std::string added = s.alloc_conf.empty() ? "" : " (added to the recorded settings)";
  if (!recorded.expandable_segments) {
    simulate::AllocatorSettings expandable = recorded;
    expandable.expandable_segments = true;
    best_of("expandable_segments", {{"True", expandable}}, trace, baseline,
            "segments grow in pages instead of new cudaMalloc calls" + added, out);
  }
  std::vector<Candidate> split;
  for (int mb : {64, 128, 256, 512}) {
    if (recorded.max_split_size_mb == mb) continue;
    simulate::AllocatorSettings c = recorded;
    c.max_split_size_mb = mb;
    split.push_back({std::to_string(mb), c});
  }
  best_of("max_split_size_mb", split, trace, baseline,
          "blocks this large are never split; larger requests may then need new segments" + added, out);
  std::vector<Candidate> roundup;
  for (uint64_t divisions : {2u, 4u, 8u}) {
    simulate::AllocatorSettings c = recorded;
    c.roundup_power2_divisions = {divisions};
    roundup.push_back({std::to_string(divisions), c});
  }
  best_of("roundup_power2_divisions", roundup, trace, baseline,
          "requests rounded up to a division of their power-of-two interval, so blocks are reused more" + added, out);
}

// The recorded empty_cache calls (or out-of-memory retries) left out.
void without_empty_cache(const simulate::DeviceTrace& trace, const simulate::AllocatorSettings& settings,
                         uint64_t baseline, std::vector<Recommendation>& out) {
  simulate::DeviceTrace kept = trace;
  std::erase_if(kept.requests,
                [](const simulate::Request& r) { return r.kind == simulate::Request::Kind::kEmptyCache; });
  if (kept.requests.size() == trace.requests.size()) return;
  const std::optional<uint64_t> peak = caching_peak(kept, settings);
  if (!peak || *peak >= baseline) return;
  out.push_back({.action = "remove the torch.cuda.empty_cache() calls",
                 .peak_reserved_bytes = *peak,
                 .saving_bytes = static_cast<int64_t>(baseline) - static_cast<int64_t>(*peak),
                 .note = std::to_string(trace.requests.size() - kept.requests.size()) +
                         " recorded releases of the cache (calls, or retries after an out-of-memory error)"});
}

void memplan_allocator(const DeviceAnalysis& d, uint64_t baseline, std::vector<Recommendation>& out) {
  const simulate::ModelResult* steady = d.model("memplan");
  const simulate::ModelResult* cold = d.model("memplan_cold");
  if (!steady || steady->peak_reserved_bytes >= baseline) return;
  std::string note = "steady state, once it has learnt an identical window";
  if (cold) note += "; its first window reserves " + format_bytes(static_cast<int64_t>(cold->peak_reserved_bytes));
  out.push_back({.action = "memplan's CUDA allocator (CUDAPluggableAllocator)",
                 .peak_reserved_bytes = steady->peak_reserved_bytes,
                 .saving_bytes = static_cast<int64_t>(baseline) - static_cast<int64_t>(steady->peak_reserved_bytes),
                 .note = note});
}

}  // namespace

Diagnosis diagnose(const Snapshot& s, const DeviceAnalysis& d, const simulate::DeviceTrace* trace) {
  const Window& w = d.window;
  Diagnosis g;
  g.peak_reserved_bytes = w.peak_reserved.bytes;
  for (const SegmentUse& u : w.segments_at_peak) g.live_at_peak_reserved_bytes += std::min(u.allocated, u.size);
  g.cached_at_peak_reserved_bytes =
      g.peak_reserved_bytes - std::min(g.peak_reserved_bytes, g.live_at_peak_reserved_bytes);
  g.peak_allocated_bytes = w.peak_allocated.bytes;
  g.live_by_line = live_by_line(s, w, g.before_window_bytes);
  if (trace == nullptr) return g;
  const simulate::ModelResult* caching = d.model("caching");
  if (!caching) return g;
  g.caching_reserved_bytes = caching->peak_reserved_bytes;
  search_settings(s, *trace, g.caching_reserved_bytes, g.recommendations);
  without_empty_cache(*trace, s.settings, g.caching_reserved_bytes, g.recommendations);
  memplan_allocator(d, g.caching_reserved_bytes, g.recommendations);
  std::stable_sort(g.recommendations.begin(), g.recommendations.end(),
                   [](const Recommendation& a, const Recommendation& b) { return a.saving_bytes > b.saving_bytes; });
  return g;
}

}  // namespace memplan::snapshot
