// snapshot_analysis.cc — analyze_snapshot: the snapshot job as one call
// (snapshot_analysis.h). The CLI and Python print or convert its report.
#include "memplan/snapshot_analysis.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <utility>

#include "memplan/bounds.h"
#include "memplan/validate.h"
#include "snapshot_diagnosis.h"

namespace memplan::snapshot {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

StatusOr<PlanningResult> plan(const std::string& planner, const Problem& problem, const std::string& what) {
  StatusOr<PlanningResult> result = run_planner(planner, problem);
  if (!result.ok()) return Status(result.status().code(), "planning " + what + ": " + result.status().message());
  if (!result->plan) return Status(StatusCode::kInternal, "planning " + what + ": no plan (" + result->reason + ")");
  return result;
}

// `plans`: the warm model's (nullptr: what the steady model learnt, kept in `learnt`).
std::vector<ModelRun> run_models(const Snapshot& s, const simulate::DeviceTrace& trace, const PlanFile* plans,
                                 PlanFile& learnt) {
  const simulate::MemplanModelOptions memplan_options{.settings = s.settings};
  std::vector<ModelRun> runs;
  auto add = [&](std::string name, StatusOr<simulate::ModelResult> result) {
    ModelRun run{.name = std::move(name)};
    if (result.ok())
      run.result = std::move(result).value();
    else
      run.error = result.status().message();
    runs.push_back(std::move(run));
  };
  add("caching", simulate::simulate_caching(trace, s.settings));
  add("expandable_segments", simulate::simulate_expandable_segments(trace, s.settings));
  add("memplan", simulate::simulate_memplan(trace, memplan_options, &learnt));
  add("memplan_cold", simulate::simulate_memplan_cold(trace, memplan_options));
  add("memplan_warm", simulate::simulate_memplan_warm(trace, plans ? *plans : learnt, memplan_options));
  return runs;
}

// The models again with the device's memory as at the first recorded
// out-of-memory event (DeviceAnalysis::oom_replays).
std::vector<OomReplay> replay_ooms(const Snapshot& s, const Window& w, const Device& device) {
  if (w.ooms.empty()) return {};
  const simulate::DeviceTrace trace = device_trace(w, device, /*failed_requests=*/true);
  simulate::AllocatorSettings settings = s.settings;
  settings.capacity_bytes = w.ooms.front().reserved + w.ooms.front().device_free;
  std::vector<OomReplay> replays;
  auto add = [&](std::string model, const StatusOr<simulate::ModelResult>& result) {
    if (result.ok()) replays.push_back({std::move(model), settings.capacity_bytes, result->out_of_memory});
  };
  add("caching", simulate::simulate_caching(trace, settings));
  add("expandable_segments", simulate::simulate_expandable_segments(trace, settings));
  add("memplan", simulate::simulate_memplan(trace, {.settings = settings}));
  return replays;
}

// Every iteration's load; the worst (largest load) is planned.
Status plan_iterations(DeviceAnalysis& d, const std::string& planner, const std::string& name) {
  std::optional<Problem> worst_problem;
  for (size_t k = 0; k < d.iterations.spans.size(); ++k) {
    Problem p = iteration_problem(d.window, d.iterations.spans[k]);
    d.iteration_loads.push_back({.index = k, .buffers = p.size(), .load = load(p)});
    if (!d.worst || d.iteration_loads.back().load > d.worst->load) {
      d.worst = d.iteration_loads.back();
      worst_problem = std::move(p);
    }
  }
  if (!d.worst) return Status::Ok();
  StatusOr<PlanningResult> worst =
      plan(planner, *worst_problem, "iteration " + std::to_string(d.worst->index) + " of " + name);
  if (!worst.ok()) return worst.status();
  d.worst->arena = worst->plan->arena;
  d.iteration_loads[d.worst->index].arena = worst->plan->arena;
  return Status::Ok();
}

// DeviceAnalysis::recorded_layout: the recorded addresses, compacted.
std::optional<Plan> recorded_layout(const Window& w, const Problem& problem) {
  std::vector<size_t> order(problem.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return w.blocks[a].address < w.blocks[b].address; });
  Plan plan;
  plan.offsets.assign(problem.size(), 0);
  uint64_t run_start = 0, run_end = 0;  // the current run of overlapping address ranges
  int64_t run_offset = 0;               // where it starts in the layout
  for (size_t i : order) {
    const uint64_t address = w.blocks[i].address;
    const uint64_t end = address + static_cast<uint64_t>(problem.buffers[i].size);
    if (address % static_cast<uint64_t>(kBlockAlignment) != 0 || end < address) return std::nullopt;
    if (address >= run_end) {  // a new run, after the last one
      run_offset += static_cast<int64_t>(run_end - run_start);
      run_start = address;
      run_end = address;
    }
    run_end = std::max(run_end, end);
    plan.offsets[i] = run_offset + static_cast<int64_t>(address - run_start);
  }
  plan.arena = arena_of(problem, plan.offsets);
  if (!validate(problem, plan).ok()) return std::nullopt;
  return plan;
}

StatusOr<DeviceAnalysis> analyze_device(const Snapshot& s, const Device& device, const AnalysisOptions& options) {
  DeviceAnalysis d;
  d.device = &device;
  d.window = reconstruct_window(s, device);
  d.problem = window_problem(d.window);
  d.load = load(d.problem);
  const std::string name = "device " + std::to_string(device.device);
  StatusOr<PlanningResult> planned = plan(options.planner, d.problem, "the window of " + name);
  if (!planned.ok()) return planned.status();
  d.planned = std::move(planned).value();
  d.recorded_layout = recorded_layout(d.window, d.problem);
  d.iterations = find_iterations(s, device, d.window);
  if (Status status = plan_iterations(d, options.planner, name); !status.ok()) return status;
  if (!options.simulate) {
    d.diagnosis = diagnose(s, d, nullptr);
    return d;
  }
  const simulate::DeviceTrace trace = device_trace(d.window, device);
  d.models = run_models(s, trace, options.plans, d.learnt_plans);
  d.oom_replays = replay_ooms(s, d.window, device);
  d.diagnosis = diagnose(s, d, &trace);
  return d;
}

// The devices the options select, or why there are none.
StatusOr<std::vector<const Device*>> select_devices(const Snapshot& s, const std::string& source, int only) {
  std::vector<const Device*> devices;
  for (const Device& d : s.devices) {
    if (only < 0 || d.device == only) devices.push_back(&d);
  }
  if (!devices.empty()) return devices;
  if (only < 0) return Status(StatusCode::kInvalidArgument, source + ": no device has segments or events");
  std::string known;
  for (const Device& d : s.devices) known += (known.empty() ? "" : ", ") + std::to_string(d.device);
  return Status(StatusCode::kInvalidArgument, source + ": no device " + std::to_string(only) +
                                                  " (devices: " + (known.empty() ? "none" : known) + ")");
}

Status check_planner(const AnalysisOptions& options) {
  if (find_planner(options.planner)) return Status::Ok();
  return Status(StatusCode::kNotFound, unknown_planner_message(options.planner));
}

// The options' planner is registered (checked by the callers).
StatusOr<SnapshotReport> analyze(Snapshot snapshot, std::string source, const AnalysisOptions& options,
                                 Clock::time_point start, double read_seconds) {
  SnapshotReport report{.source = std::move(source), .snapshot = std::move(snapshot), .read_seconds = read_seconds};
  StatusOr<std::vector<const Device*>> devices = select_devices(report.snapshot, report.source, options.device);
  if (!devices.ok()) return devices.status();
  for (const Device* device : *devices) {
    StatusOr<DeviceAnalysis> d = analyze_device(report.snapshot, *device, options);
    if (!d.ok()) return Status(d.status().code(), report.source + ": " + d.status().message());
    report.devices.push_back(std::move(d).value());
  }
  report.seconds = seconds_since(start);
  return report;
}

}  // namespace

const simulate::ModelResult* DeviceAnalysis::model(std::string_view name) const {
  for (const ModelRun& run : models) {
    if (run.name == name && run.result) return &*run.result;
  }
  return nullptr;
}

StatusOr<SnapshotReport> analyze_snapshot(const std::string& path, const AnalysisOptions& options) {
  const Clock::time_point start = Clock::now();
  if (Status status = check_planner(options); !status.ok()) return status;  // before reading a large file
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return Status(StatusCode::kInvalidArgument, path + ": is a directory, not a snapshot");
  }
  StatusOr<Snapshot> read = read_snapshot(path);
  if (!read.ok()) return read.status();
  return analyze(std::move(read).value(), path, options, start, seconds_since(start));
}

StatusOr<SnapshotReport> analyze_snapshot(std::span<const uint8_t> bytes, std::string source,
                                          const AnalysisOptions& options) {
  const Clock::time_point start = Clock::now();
  if (Status status = check_planner(options); !status.ok()) return status;
  StatusOr<pickle::Document> document = pickle::parse_pickle(bytes, source);
  if (!document.ok()) return document.status();
  StatusOr<Snapshot> read = snapshot_from_pickle(*document, source);
  if (!read.ok()) return read.status();
  read->file_bytes = bytes.size();
  return analyze(std::move(read).value(), std::move(source), options, start, seconds_since(start));
}

}  // namespace memplan::snapshot
