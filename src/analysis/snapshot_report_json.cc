// snapshot_report_json.cc — report_json: the snapshot analysis as the JSON
// document of `memplan snapshot --json`, which Python's
// memplan.analyze_snapshot also returns (as a dict). Every field is named
// here once; docs/snapshots.md lists them.
#include <nlohmann/json.hpp>

#include "memplan/snapshot_analysis.h"

namespace memplan::snapshot {
namespace {

using Json = nlohmann::ordered_json;

// The heap map's tick at an event (-1: the start of the window, tick 0).
int64_t tick_at(const Window& w, int64_t event) { return event < 0 ? 0 : w.tick_of_event[static_cast<size_t>(event)]; }

Json recorded_json(const Window& w) {
  return {{"peak_reserved_bytes", w.peak_reserved.bytes},
          {"peak_allocated_bytes", w.peak_allocated.bytes},
          {"peak_reserved_event", w.peak_reserved.event},
          {"peak_allocated_event", w.peak_allocated.event},
          {"peak_reserved_tick", tick_at(w, w.peak_reserved.event)},
          {"peak_allocated_tick", tick_at(w, w.peak_allocated.event)},
          {"fragmentation_event", w.segments_at_peak_event},
          {"start_reserved_bytes", w.start_reserved},
          {"start_allocated_bytes", w.start_allocated},
          {"end_reserved_bytes", w.end_reserved},
          {"end_allocated_bytes", w.end_allocated}};
}

Json iterations_json(const DeviceAnalysis& d) {
  Json spans = Json::array();
  for (const Iteration& span : d.iterations.spans) spans.push_back({span.first_event, span.end_event});
  Json iterations = {{"count", d.iterations.spans.size()}, {"found_by", d.iterations.found_by}, {"spans", spans}};
  if (d.worst) {
    const Iteration& span = d.iterations.spans[d.worst->index];
    iterations["worst"] = {{"index", d.worst->index},     {"first_event", span.first_event},
                           {"end_event", span.end_event}, {"buffers", d.worst->buffers},
                           {"load_bytes", d.worst->load}, {"arena_bytes", d.worst->arena}};
  }
  return iterations;
}

Json model_json(const ModelRun& run) {
  if (!run.result) return {{"error", run.error}};
  const simulate::ModelResult& m = *run.result;
  Json model = {{"peak_reserved_bytes", m.peak_reserved_bytes},
                {"peak_allocated_bytes", m.peak_allocated_bytes},
                {"peak_request_index", m.peak_request_index},
                {"start_reserved_bytes", m.start_reserved_bytes},
                {"final_reserved_bytes", m.final_reserved_bytes},
                {"device_allocations", m.device_allocations},
                {"device_frees", m.device_frees}};
  if (run.name.starts_with("memplan")) {
    model["served"] = m.served;
    model["fallback"] = m.fallback;
    model["plans"] = m.plans;
    model["arena_bytes"] = m.arena_bytes;
    model["slab_bytes"] = m.slab_bytes;
    model["resident_bytes"] = m.resident_bytes;
  }
  return model;
}

Json live_json(const Snapshot& s, const Window& w, size_t rows) {
  Json live = Json::array();
  for (size_t i = 0; i < w.live_at_peak.size() && i < rows; ++i) {
    const WindowBlock& b = w.blocks[w.live_at_peak[i]];
    live.push_back({{"size_bytes", b.size},
                    {"address", b.address},
                    {"stream", b.stream},
                    {"small_pool", b.size <= (1u << 20)},
                    {"allocated_by", s.describe_stack(b.stack)},
                    {"alloc_event", b.alloc_event}});
  }
  return live;
}

Json ooms_json(const Snapshot& s, const Window& w) {
  Json ooms = Json::array();
  for (const OomEvent& o : w.ooms) {
    ooms.push_back({{"event", o.event},
                    {"requested_bytes", o.requested},
                    {"device_free_bytes", o.device_free},
                    {"allocated_bytes", o.allocated},
                    {"reserved_bytes", o.reserved},
                    {"largest_free_block_bytes", o.largest_free_block},
                    {"requested_by", s.describe_stack(o.stack)}});
  }
  return ooms;
}

Json diagnosis_json(const Diagnosis& g, size_t rows) {
  Json lines = Json::array();
  for (size_t i = 0; i < g.live_by_line.size() && i < rows; ++i) {
    const SourceLine& l = g.live_by_line[i];
    lines.push_back({{"where", l.where}, {"bytes", l.bytes}, {"blocks", l.blocks}});
  }
  Json recommendations = Json::array();
  for (const Recommendation& r : g.recommendations) {
    recommendations.push_back({{"action", r.action},
                               {"peak_reserved_bytes", r.peak_reserved_bytes},
                               {"saving_bytes", r.saving_bytes},
                               {"note", r.note}});
  }
  return {{"peak_reserved_bytes", g.peak_reserved_bytes},
          {"live_at_peak_reserved_bytes", g.live_at_peak_reserved_bytes},
          {"cached_at_peak_reserved_bytes", g.cached_at_peak_reserved_bytes},
          {"peak_allocated_bytes", g.peak_allocated_bytes},
          {"before_window_bytes", g.before_window_bytes},
          {"live_by_line", lines},
          {"caching_reserved_bytes", g.caching_reserved_bytes},
          {"recommendations", recommendations}};
}

Json device_json(const Snapshot& s, const DeviceAnalysis& d, const ReportJsonOptions& options) {
  const Window& w = d.window;
  Json j;
  j["device"] = d.device->device;
  j["events"] = d.device->events.size();
  j["blocks"] = w.blocks.size();
  j["diagnosis"] = diagnosis_json(d.diagnosis, options.live_rows);
  j["recorded"] = recorded_json(w);
  j["load_bytes"] = d.load;
  j["planned"] = {{"arena_bytes", d.planned.plan->arena},
                  {"planner", d.planned.planner},
                  {"buffers", d.problem.size()},
                  {"saving_bytes", static_cast<int64_t>(w.peak_reserved.bytes) - d.planned.plan->arena}};
  j["iterations"] = iterations_json(d);
  if (!d.models.empty()) {
    Json simulated = Json::object();
    for (const ModelRun& run : d.models) simulated[run.name] = model_json(run);
    j["simulated"] = simulated;
  }
  j["live_at_peak"] = live_json(s, w, options.live_rows);
  j["ooms"] = ooms_json(s, w);
  if (!d.oom_replays.empty()) {
    Json replays = Json::array();
    for (const OomReplay& r : d.oom_replays) {
      replays.push_back({{"model", r.model}, {"capacity_bytes", r.capacity_bytes}, {"out_of_memory", r.out_of_memory}});
    }
    j["oom_models"] = replays;
  }
  j["warnings"] = w.warnings;
  j["cautions"] = w.cautions;
  return j;
}

}  // namespace

std::string report_json(const SnapshotReport& report, const ReportJsonOptions& options) {
  const Snapshot& s = report.snapshot;
  Json doc;
  doc["snapshot"] = report.source;
  doc["format"] = s.newer_format ? "newer" : "older";
  doc["file_bytes"] = s.file_bytes;
  doc["alloc_conf"] = s.alloc_conf;
  doc["read_seconds"] = report.read_seconds;
  doc["seconds"] = report.seconds;
  Json devices = Json::array();
  for (const DeviceAnalysis& d : report.devices) devices.push_back(device_json(s, d, options));
  doc["devices"] = devices;
  doc["warnings"] = s.warnings;
  // Frames come from the file: bytes that are not UTF-8 are replaced, never thrown on.
  return doc.dump(options.indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace memplan::snapshot
