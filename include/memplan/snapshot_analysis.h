// snapshot_analysis.h — one call that analyses a PyTorch CUDA memory
// snapshot: read it, reconstruct each device's window, plan it, find its
// iterations and plan the worst, and replay it through the allocator models.
// `memplan snapshot` prints the report and Python's
// memplan.analyze_snapshot converts it; neither recomputes any of it.
//
//   SnapshotReport report = analyze_snapshot("snapshot.pickle", {}).value();
//   for (const DeviceAnalysis& d : report.devices)
//     d.window.peak_reserved.bytes      recorded
//     d.planned.plan->arena             the window's plan (validated by run_planner)
//     d.model("caching")->peak_reserved_bytes
//   std::string json = report_json(report, {});   // the --json document
//
// Contracts: the report validates its own plans (run_planner does; a planner
// that returns no plan is an error naming the device and the iteration);
// errors are statuses naming the file (and the device); the report owns its
// snapshot, and DeviceAnalysis::device points into it (moving the report
// keeps the pointers valid: the devices live in the snapshot's vector).
// Thread-safety: analyze_snapshot may run on several threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/allocator_model.h"
#include "memplan/plan_file.h"
#include "memplan/planning.h"
#include "memplan/problem.h"
#include "memplan/snapshot.h"
#include "memplan/status.h"

namespace memplan::snapshot {

struct AnalysisOptions {
  // Only this device; -1: every device in the file.
  int device = -1;
  // The planner for the window and the worst iteration (a registry name).
  std::string planner{kDefaultPlanner};
  // Replay the window through the allocator models (caching, expandable
  // segments, memplan steady state, cold and warm).
  bool simulate = true;
  // The plans memplan's warm model starts from (a device plan file: an
  // earlier recording's, or a live run's); nullptr: the plans the steady
  // model learnt from this very window.
  const PlanFile* plans = nullptr;
};

// One allocator model's answer, or why it has none.
struct ModelRun {
  std::string name;  // "caching", "expandable_segments", "memplan", "memplan_cold", "memplan_warm"
  std::optional<simulate::ModelResult> result;
  std::string error;  // when result is empty
};

// One iteration of the window as a problem: its load, and the arena of its
// plan for the worst (largest load) one.
struct IterationLoad {
  size_t index = 0;
  size_t buffers = 0;
  int64_t load = 0;
  int64_t arena = 0;  // 0 unless this is the worst iteration
};

// An out-of-memory question put to a model: with the device's memory as it
// was at the window's first recorded out-of-memory event (reserved then +
// the free bytes PyTorch recorded), replaying the window with each request
// that failed put back in (device_trace's failed_requests), how many
// requests would it fail after freeing its cache?
struct OomReplay {
  std::string model;  // "caching", "expandable_segments", "memplan"
  uint64_t capacity_bytes = 0;
  uint64_t out_of_memory = 0;  // requests that did not fit even after freeing the cache
};

// Live bytes that one source line allocated.
struct SourceLine {
  std::string where;  // Snapshot::describe_stack, or "(before the window)" / "(no Python frame)"
  uint64_t bytes = 0;
  size_t blocks = 0;
};

// Something the user can do, with its effect simulated on this very window.
struct Recommendation {
  std::string action;                // as the user would type it: "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
  uint64_t peak_reserved_bytes = 0;  // the window replayed with it
  int64_t saving_bytes = 0;          // against the caching model with the recorded settings
  std::string note;                  // what it costs or assumes
};

// Why the peak is what it is and what would lower it. The settings searched
// (snapshot_diagnosis.cc): expandable segments; max_split_size_mb 64, 128,
// 256, 512; roundup_power2_divisions 2, 4, 8; the recorded empty_cache calls
// left out; memplan's device allocator (steady state, said plainly that its
// first window reserves what the cold model says). Only settings that reserve
// less than the caching model with the recorded settings are recommended,
// most saving first. What the window cannot show (blocks from before it, no
// trace events) is in Window::cautions.
struct Diagnosis {
  uint64_t peak_reserved_bytes = 0;
  uint64_t live_at_peak_reserved_bytes = 0;    // allocated in the segments held then
  uint64_t cached_at_peak_reserved_bytes = 0;  // reserved minus that: cache and fragmentation
  uint64_t peak_allocated_bytes = 0;
  uint64_t before_window_bytes = 0;      // of the peak allocated, held by blocks from before the window
  std::vector<SourceLine> live_by_line;  // live at the peak allocated, by source line, largest first
  uint64_t caching_reserved_bytes = 0;   // the caching model with the recorded settings (0: models off)
  std::vector<Recommendation> recommendations;
};

struct DeviceAnalysis {
  const Device* device = nullptr;  // into SnapshotReport::snapshot
  Window window;
  Problem problem;  // the whole window (window_problem)
  int64_t load = 0;
  PlanningResult planned;  // plan of the whole window, validated
  // Where the recorded allocator put each buffer of `problem`: its address,
  // with the address ranges no block of the window touched left out (runs of
  // overlapping blocks stacked in address order), validated; empty when the
  // recorded addresses overlap for blocks live at once (an inconsistent file;
  // the window's warnings say why) or are not aligned.
  std::optional<Plan> recorded_layout;
  Iterations iterations;
  std::vector<IterationLoad> iteration_loads;  // every iteration's load
  std::optional<IterationLoad> worst;          // the largest load, with its arena
  std::vector<ModelRun> models;                // empty without AnalysisOptions::simulate
  PlanFile learnt_plans;                       // what the steady model learnt (device plan file; no units without it)
  Diagnosis diagnosis;                         // recommendations only with AnalysisOptions::simulate
  std::vector<OomReplay> oom_replays;          // with simulate, when the window recorded an out-of-memory event

  // The named model's result; nullptr if it did not run or failed.
  const simulate::ModelResult* model(std::string_view name) const;
};

struct SnapshotReport {
  std::string source;  // the file as named by the caller
  Snapshot snapshot;
  std::vector<DeviceAnalysis> devices;  // by device number, as in the file
  double read_seconds = 0;              // reading the file
  double seconds = 0;                   // reading and analysing
};

// Reads the file (snapshot.h: plain data only) and analyses it. Errors: the
// reader's (naming the file, offset or field), "is a directory", a device
// that is not in the file, a file with no device, a planner that is not
// registered or gives no plan.
StatusOr<SnapshotReport> analyze_snapshot(const std::string& path, const AnalysisOptions& options);
// The same for the bytes of a snapshot pickle (standard input, a live
// snapshot pickled by Python); `source` names them in errors and the report.
StatusOr<SnapshotReport> analyze_snapshot(std::span<const uint8_t> bytes, std::string source,
                                          const AnalysisOptions& options);

struct ReportJsonOptions {
  size_t live_rows = 25;  // blocks of live_at_peak listed per device
  int indent = 2;         // -1: one line
};

// The report as the JSON document of `memplan snapshot --json`
// (docs/snapshots.md lists every field).
std::string report_json(const SnapshotReport& report, const ReportJsonOptions& options);

}  // namespace memplan::snapshot
