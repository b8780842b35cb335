// snapshot_command.cc — `memplan snapshot`: what a PyTorch CUDA memory
// snapshot says (recorded peaks and when, what was live at the peak and who
// allocated it, fragmentation, out-of-memory events) and what a plan of its
// window would need (load, planned arena, saving against what was reserved),
// per device; as text, JSON, or the interactive HTML report.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/allocator_model.h"
#include "memplan/bounds.h"
#include "memplan/plan_file.h"
#include "memplan/planning.h"
#include "memplan/render.h"
#include "memplan/snapshot.h"
#include "memplan/snapshot_analysis.h"
#include "memplan/units.h"
#include "text_table.h"

namespace memplan::cli {
namespace {

struct SnapshotArguments {
  std::string path;
  int device = -1;  // -1: every device
  bool json = false;
  std::string html_path;
  bool iterations = false;
  std::string planner{kDefaultPlanner};
  int top = 10;
  bool no_simulate = false;
  std::string plans;       // the warm model's plan file ("": the window's own)
  std::string save_plans;  // where the steady model's plans are written
};

std::string bytes_text(uint64_t bytes) { return bytes_with_units(static_cast<int64_t>(bytes)); }

std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

// "after event 759 (+0.171 s)" relative to the window's first event.
// "after event 759 (tick 412, +0.171 s)": the event, the heap map's tick at
// it (ticks count allocs and frees), and the time relative to the window's
// first event.
std::string when(const snapshot::DeviceAnalysis& r, const snapshot::Peak& peak) {
  if (peak.event < 0) return "at the start of the window";
  const snapshot::Device& device = *r.device;
  std::string text = "after event " + std::to_string(peak.event) + " (tick " +
                     std::to_string(r.window.tick_of_event[static_cast<size_t>(peak.event)]);
  const int64_t first = device.events.empty() ? 0 : device.events.front().time_us;
  if (peak.time_us != 0 && first != 0) {
    char t[48];
    std::snprintf(t, sizeof t, ", +%.3f s", static_cast<double>(peak.time_us - first) / 1e6);
    text += t;
  }
  return text + ")";
}

std::string saving(uint64_t recorded, int64_t arena) {
  if (recorded == 0) return "n/a";
  char text[96];
  const double share =
      100.0 * (static_cast<double>(recorded) - static_cast<double>(arena)) / static_cast<double>(recorded);
  std::snprintf(text, sizeof text, "%s (%.1f%% of the recorded peak reserved)",
                format_bytes(static_cast<int64_t>(recorded) - arena).c_str(), share);
  return text;
}

// "12.3%" of a whole; "" when the whole is 0.
std::string share(uint64_t part, uint64_t whole) {
  if (whole == 0) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

// The first lines of a device's report: where the peak went and what would
// lower it (snapshot::Diagnosis).
void print_diagnosis(const snapshot::DeviceAnalysis& r, const SnapshotArguments& args) {
  const snapshot::Diagnosis& g = r.diagnosis;
  std::printf("  peak reserved %s = %s of live tensors + %s cached or fragmented\n",
              format_bytes(static_cast<int64_t>(g.peak_reserved_bytes)).c_str(),
              format_bytes(static_cast<int64_t>(g.live_at_peak_reserved_bytes)).c_str(),
              format_bytes(static_cast<int64_t>(g.cached_at_peak_reserved_bytes)).c_str());
  std::printf("  live at the peak allocated (%s), by source line:\n",
              format_bytes(static_cast<int64_t>(g.peak_allocated_bytes)).c_str());
  TextTable lines({{"bytes", true}, {"share", true}, {"blocks", true}, {"allocated by", false}});
  for (size_t i = 0; i < g.live_by_line.size() && i < static_cast<size_t>(args.top); ++i) {
    const snapshot::SourceLine& l = g.live_by_line[i];
    lines.add_row({format_bytes(static_cast<int64_t>(l.bytes)), share(l.bytes, g.peak_allocated_bytes),
                   std::to_string(l.blocks), l.where});
  }
  lines.print(stdout);
  if (g.caching_reserved_bytes > 0) {
    if (g.recommendations.empty()) {
      std::printf("  no setting tried reserves less than the caching allocator as recorded (%s) on this window\n",
                  format_bytes(static_cast<int64_t>(g.caching_reserved_bytes)).c_str());
    } else {
      std::printf("  would reserve less on this window (replayed; the caching allocator as recorded: %s):\n",
                  format_bytes(static_cast<int64_t>(g.caching_reserved_bytes)).c_str());
      for (const snapshot::Recommendation& rec : g.recommendations) {
        std::printf("    %-50s %11s, saves %s (%s)\n      %s\n", rec.action.c_str(),
                    format_bytes(static_cast<int64_t>(rec.peak_reserved_bytes)).c_str(),
                    format_bytes(rec.saving_bytes).c_str(),
                    share(static_cast<uint64_t>(rec.saving_bytes), g.caching_reserved_bytes).c_str(), rec.note.c_str());
      }
    }
  }
}

void print_text(const snapshot::Snapshot& s, const snapshot::DeviceAnalysis& r, const SnapshotArguments& args) {
  const snapshot::Window& w = r.window;
  const snapshot::Device& d = *r.device;
  std::printf("\ndevice %d\n", d.device);
  for (const std::string& caution : w.cautions) std::printf("  caution: %s\n", caution.c_str());
  print_diagnosis(r, args);
  std::printf("\n");
  std::printf("  events          %zu (%zu alloc, %zu free, %zu segment), %zu blocks\n", d.events.size(), w.alloc_events,
              w.free_events, w.segment_events, w.blocks.size());
  std::printf("  start           allocated %s, reserved %s\n",
              format_bytes(static_cast<int64_t>(w.start_allocated)).c_str(),
              format_bytes(static_cast<int64_t>(w.start_reserved)).c_str());
  std::printf("  peak allocated  %s %s\n", bytes_text(w.peak_allocated.bytes).c_str(),
              when(r, w.peak_allocated).c_str());
  std::printf("  peak reserved   %s %s\n", bytes_text(w.peak_reserved.bytes).c_str(), when(r, w.peak_reserved).c_str());
  std::printf("  end             allocated %s, reserved %s\n",
              format_bytes(static_cast<int64_t>(w.end_allocated)).c_str(),
              format_bytes(static_cast<int64_t>(w.end_reserved)).c_str());

  // Fragmentation at the peak of reserved bytes, by pool, then the segments
  // with the most free bytes.
  uint64_t reserved[2] = {0, 0}, allocated[2] = {0, 0}, count[2] = {0, 0};
  for (const snapshot::SegmentUse& u : w.segments_at_peak) {
    reserved[u.small_pool] += u.size;
    allocated[u.small_pool] += std::min(u.allocated, u.size);
    ++count[u.small_pool];
  }
  std::printf("\n  at the peak reserved (after event %lld): reserved - allocated (free in segments) by pool\n",
              static_cast<long long>(w.segments_at_peak_event));
  TextTable pools({{"pool", false}, {"segments", true}, {"reserved", true}, {"allocated", true}, {"free", true}});
  for (int small = 1; small >= 0; --small) {
    pools.add_row({small ? "small (<= 1 MiB)" : "large", std::to_string(count[small]),
                   format_bytes(static_cast<int64_t>(reserved[small])),
                   format_bytes(static_cast<int64_t>(allocated[small])),
                   format_bytes(static_cast<int64_t>(reserved[small] - allocated[small]))});
  }
  pools.print(stdout);
  std::vector<snapshot::SegmentUse> segments = w.segments_at_peak;
  std::stable_sort(segments.begin(), segments.end(), [](const auto& a, const auto& b) {
    return a.size - std::min(a.allocated, a.size) > b.size - std::min(b.allocated, b.size);
  });
  if (!segments.empty() && args.top > 0) {
    std::printf("  segments with the most free bytes then\n");
    TextTable table(
        {{"segment", false}, {"pool", false}, {"stream", true}, {"size", true}, {"allocated", true}, {"free", true}});
    for (size_t i = 0; i < segments.size() && i < static_cast<size_t>(args.top); ++i) {
      const auto& u = segments[i];
      table.add_row({hex(u.address), u.small_pool ? "small" : "large", std::to_string(u.stream),
                     format_bytes(static_cast<int64_t>(u.size)),
                     format_bytes(static_cast<int64_t>(std::min(u.allocated, u.size))),
                     format_bytes(static_cast<int64_t>(u.size - std::min(u.allocated, u.size)))});
    }
    table.print(stdout);
  }

  std::printf("\n  live at the peak allocated: %zu blocks, largest first\n", w.live_at_peak.size());
  TextTable live({{"size", true}, {"class", false}, {"address", false}, {"stream", true}, {"allocated by", false}});
  for (size_t i = 0; i < w.live_at_peak.size() && i < static_cast<size_t>(args.top); ++i) {
    const snapshot::WindowBlock& b = w.blocks[w.live_at_peak[i]];
    std::string by = s.describe_stack(b.stack);
    if (by.empty()) by = b.alloc_event < 0 ? "(before the window)" : "(no Python frame)";
    live.add_row({format_bytes(static_cast<int64_t>(b.size)), b.size <= (1u << 20) ? "small" : "large", hex(b.address),
                  std::to_string(b.stream), by});
  }
  live.print(stdout);

  if (w.ooms.empty()) {
    std::printf("\n  out-of-memory events: none\n");
  } else {
    std::printf("\n  out-of-memory events: %zu\n", w.ooms.size());
    for (const snapshot::OomEvent& o : w.ooms) {
      std::printf("    event %lld: request %s; device free %s; allocated %s, reserved %s\n",
                  static_cast<long long>(o.event), format_bytes(static_cast<int64_t>(o.requested)).c_str(),
                  format_bytes(static_cast<int64_t>(o.device_free)).c_str(),
                  format_bytes(static_cast<int64_t>(o.allocated)).c_str(),
                  format_bytes(static_cast<int64_t>(o.reserved)).c_str());
      const std::string by = s.describe_stack(o.stack);
      std::printf("      requested by %s; largest free block then %s\n",
                  by.empty() ? "(no frame recorded)" : by.c_str(),
                  format_bytes(static_cast<int64_t>(o.largest_free_block)).c_str());
      for (size_t k = 0; k < o.largest_live.size() && k < 3; ++k) {
        const snapshot::WindowBlock& b = w.blocks[o.largest_live[k]];
        std::printf("      live %s %s\n", format_bytes(static_cast<int64_t>(b.size)).c_str(),
                    s.describe_stack(b.stack).c_str());
      }
    }
  }

  if (!r.oom_replays.empty()) {
    std::printf("    replayed with the device's memory then (%s = reserved + free at the first):",
                format_bytes(static_cast<int64_t>(r.oom_replays.front().capacity_bytes)).c_str());
    for (const snapshot::OomReplay& o : r.oom_replays) {
      std::printf(" %s %s;", o.model.c_str(),
                  o.out_of_memory ? (std::to_string(o.out_of_memory) + " out of memory").c_str() : "fits");
    }
    std::printf("\n");
  }

  std::printf("\n  plan of the window (%zu buffers, %s)\n", r.problem.size(), r.planned.planner.c_str());
  std::printf("    load          %s\n", bytes_text(static_cast<uint64_t>(r.load)).c_str());
  std::printf("    arena         %s, gap %s\n", bytes_text(static_cast<uint64_t>(r.planned.plan->arena)).c_str(),
              percent_gap(r.planned.plan->arena, r.load).c_str());
  std::printf("    below peak    %s: a bound, not a setting (the plan knows the whole window in advance)\n",
              saving(w.peak_reserved.bytes, r.planned.plan->arena).c_str());
  if (r.iterations.spans.empty()) {
    std::printf("  iterations: none found (no snapshot markers, ProfilerStep annotations or repeating allocs)\n");
  } else {
    std::printf("  iterations: %zu, found by %s", r.iterations.spans.size(), r.iterations.found_by.c_str());
    if (r.iterations.period_allocs) std::printf(" (%zu allocs each)", r.iterations.period_allocs);
    std::printf("\n");
    const auto& worst = *r.worst;
    const snapshot::Iteration& span = r.iterations.spans[worst.index];
    std::printf("    worst         #%zu, events [%zu, %zu): %zu buffers, load %s, arena %s, gap %s\n", worst.index,
                span.first_event, span.end_event, worst.buffers, format_bytes(worst.load).c_str(),
                format_bytes(worst.arena).c_str(), percent_gap(worst.arena, worst.load).c_str());
    if (args.iterations) {
      TextTable table({{"iteration", true}, {"events", false}, {"buffers", true}, {"load", true}, {"arena", true}});
      for (const auto& it : r.iteration_loads) {
        const snapshot::Iteration& sp = r.iterations.spans[it.index];
        table.add_row({std::to_string(it.index),
                       "[" + std::to_string(sp.first_event) + ", " + std::to_string(sp.end_event) + ")",
                       std::to_string(it.buffers), format_bytes(it.load), it.arena ? format_bytes(it.arena) : ""});
      }
      table.print(stdout);
    }
  }
  if (!r.models.empty()) {
    std::printf("\n  allocator models replaying the window from its start state (peak reserved)\n");
    TextTable table({{"model", false}, {"peak reserved", true}, {"vs recorded", true}, {"note", false}});
    table.add_row({"recorded", format_bytes(static_cast<int64_t>(w.peak_reserved.bytes)), "", ""});
    for (const snapshot::ModelRun& sim : r.models) {
      if (!sim.result) {
        table.add_row({sim.name, "", "", "failed: " + sim.error});
        continue;
      }
      char ratio[32] = "";
      if (w.peak_reserved.bytes > 0) {
        std::snprintf(
            ratio, sizeof ratio, "%.3fx",
            static_cast<double>(sim.result->peak_reserved_bytes) / static_cast<double>(w.peak_reserved.bytes));
      }
      std::string note;
      if (sim.name == "memplan") note = "steady state (the window after an identical one)";
      if (sim.name == "memplan_cold") note = "the window alone";
      if (sim.name == "memplan_warm") {
        note =
            args.plans.empty() ? "the window alone, from plans made of this window" : "the window alone, from --plans";
        if (sim.result->resident_bytes != 0) {
          note += "; start state in " + format_bytes(static_cast<int64_t>(sim.result->resident_bytes)) +
                  " of resident slots";
        }
      }
      table.add_row({sim.name, format_bytes(static_cast<int64_t>(sim.result->peak_reserved_bytes)), ratio, note});
    }
    table.print(stdout);
  }
  for (const std::string& warning : w.warnings) std::printf("  warning: %s\n", warning.c_str());
}

// The recorded curves as a small static SVG (allocated and reserved over the
// window's events, with the plan's arena and the load as lines), appended to
// the report page below its heap map.
std::string recorded_usage_section(const snapshot::DeviceAnalysis& r) {
  const snapshot::Window& w = r.window;
  const double width = 1000, height = 240, left = 70, top = 10, bottom = 30;
  // The heap map's time axis: ticks (one per alloc and free), [0, ticks + 1).
  const double ticks = static_cast<double>(w.ticks + 1);
  auto tick_before = [&](size_t event) { return event == 0 ? 0.0 : static_cast<double>(w.tick_of_event[event - 1]); };
  const double top_bytes = static_cast<double>(std::max<uint64_t>(
      {w.peak_reserved.bytes, w.peak_allocated.bytes, static_cast<uint64_t>(r.planned.plan->arena), 1}));
  auto x = [&](double tick) { return left + (width - left - 10) * tick / ticks; };
  auto y = [&](double bytes) { return top + (height - top - bottom) * (1 - bytes / top_bytes); };
  auto polyline = [&](bool reserved) {
    std::string points;
    char p[64];
    for (size_t k = 0; k < w.usage.size(); ++k) {
      const snapshot::UsageSample& u = w.usage[k];
      const double end = k + 1 < w.usage.size() ? tick_before(w.usage[k + 1].first_event) : ticks;
      const double bytes = static_cast<double>(reserved ? u.reserved : u.allocated);
      std::snprintf(p, sizeof p, "%.1f,%.1f %.1f,%.1f ", x(tick_before(u.first_event)), y(bytes), x(end), y(bytes));
      points += p;
    }
    return points;
  };
  // A dashed line with its label at the left (or right) end.
  auto hline = [&](int64_t bytes, const char* colour, const std::string& label, bool at_right) {
    char line[360];
    std::snprintf(line, sizeof line,
                  "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"6 4\"/>"
                  "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"%s\" text-anchor=\"%s\">%s</text>\n",
                  left, width - 10, y(static_cast<double>(bytes)), y(static_cast<double>(bytes)), colour,
                  at_right ? width - 14 : left + 4, y(static_cast<double>(bytes)) - 3, colour,
                  at_right ? "end" : "start", label.c_str());
    return std::string(line);
  };
  std::string svg =
      "<section style=\"margin:16px;font-family:sans-serif\"><h2>Recorded usage</h2>\n<p>Bytes the program had "
      "allocated (blue) and the caching allocator had reserved (orange) over the window's " +
      std::to_string(w.ticks) + " ticks, the heap maps' time axis (a tick is an alloc or a free; " +
      std::to_string(r.device->events.size()) +
      " events in all; each step is the most of its run): "
      "peak reserved " +
      format_bytes(static_cast<int64_t>(w.peak_reserved.bytes)) + ", peak allocated " +
      format_bytes(static_cast<int64_t>(w.peak_allocated.bytes)) +
      "; the plan's arena and the load as dashed lines.</p>\n";
  char head[200];
  std::snprintf(head, sizeof head, "<svg width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n", width,
                height);
  svg += head;
  svg += "<polyline fill=\"none\" stroke=\"#e67e22\" stroke-width=\"1.5\" points=\"" + polyline(true) + "\"/>\n";
  svg += "<polyline fill=\"none\" stroke=\"#2e6fd8\" stroke-width=\"1.5\" points=\"" + polyline(false) + "\"/>\n";
  svg += hline(r.planned.plan->arena, "#2a9d4b", "plan arena " + format_bytes(r.planned.plan->arena), false);
  svg += hline(r.load, "#666", "load " + format_bytes(r.load), true);
  char axis[400];
  std::snprintf(axis, sizeof axis,
                "<text x=\"4\" y=\"%.1f\" font-size=\"11\">%s</text><text x=\"4\" y=\"%.1f\" font-size=\"11\">0</text>"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">tick 0</text>"
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">tick %lld</text>\n",
                top + 10, format_bytes(static_cast<int64_t>(top_bytes)).c_str(), height - bottom, left, height - 10,
                width - 10, height - 10, static_cast<long long>(w.ticks));
  svg += axis;
  svg += "</svg></section>\n";
  return svg;
}

void write_html(const snapshot::Snapshot& s, const snapshot::DeviceAnalysis& r, const SnapshotArguments& args) {
  HtmlReportOptions options;
  options.title = std::filesystem::path(args.path).stem().string() + ", device " + std::to_string(r.device->device) +
                  ": recorded peak reserved " + format_bytes(static_cast<int64_t>(r.window.peak_reserved.bytes)) +
                  ", allocated " + format_bytes(static_cast<int64_t>(r.window.peak_allocated.bytes));
  options.operators.reserve(r.window.blocks.size());
  for (const snapshot::WindowBlock& b : r.window.blocks) {
    std::string by = s.describe_stack(b.stack);
    options.operators.push_back(by.empty() && b.alloc_event < 0 ? "(before the window)" : by);
  }
  // The recorded layout first (what happened), then memplan's plan of the window.
  std::vector<NamedPlan> plans;
  if (r.recorded_layout)
    plans.push_back({.name = "recorded layout (addresses, untouched ranges left out)", .plan = *r.recorded_layout});
  plans.push_back({.name = "memplan plan (" + r.planned.planner + ")", .plan = *r.planned.plan});
  std::string html = render_html_report(r.problem, plans, options);
  if (const size_t body = html.rfind("</body>"); body != std::string::npos) {
    html.insert(body, recorded_usage_section(r));
  }
  write_file_or_throw(args.html_path, html);
  if (args.html_path != "-" && !args.json) {
    std::printf("\nwrote %s (device %d, %zu buffers, %zu bytes)\n", args.html_path.c_str(), r.device->device,
                r.problem.size(), html.size());
  }
}

// --save-plans: the plans the steady model learnt of each device's window,
// one device plan file (units "cuda:<device>/<k>") for the CUDA allocator's
// MEMPLAN_PLANS, for any program. Progress goes to stderr (stdout may be JSON).
void save_learnt_plans(const snapshot::SnapshotReport& report, const SnapshotArguments& args) {
  PlanFile file{.adapter = "device", .program = "", .units = {}};
  for (const snapshot::DeviceAnalysis& d : report.devices) {
    for (const SavedUnit& u : d.learnt_plans.units) file.units.push_back(u);
  }
  if (file.units.empty())
    throw CommandError("--save-plans: the memplan model learnt no plan of this window", kExitFailure);
  throw_if_error(save_plan_file(file, args.save_plans));
  std::fprintf(stderr, "saved plans to %s (%s)\n", args.save_plans.c_str(), plan_file_summary(file).c_str());
}

// A snapshot piped in ("-"): its bytes read here, the rest the library's.
StatusOr<snapshot::SnapshotReport> analyze_standard_input(const snapshot::AnalysisOptions& options) {
  const std::string bytes = read_input_or_throw("-");
  return snapshot::analyze_snapshot({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "<stdin>", options);
}

void run_snapshot(const SnapshotArguments& args) {
  check_output_path_or_throw(args.html_path, "--html");
  if (args.html_path == "-" && args.json) {
    throw CommandError("--html - and --json both write to standard output; write the page to a file", kExitUsage);
  }
  if (args.no_simulate && (!args.plans.empty() || !args.save_plans.empty())) {
    throw CommandError("--plans and --save-plans need the allocator models; drop --no-simulate", kExitUsage);
  }
  check_output_path_or_throw(args.save_plans, "--save-plans");
  std::optional<PlanFile> plans;
  if (!args.plans.empty()) {
    StatusOr<PlanFile> loaded = load_plan_file(args.plans);
    throw_if_error(loaded.status());
    plans = std::move(loaded).value();
  }
  const snapshot::AnalysisOptions options{.device = args.device,
                                          .planner = args.planner,
                                          .simulate = !args.no_simulate,
                                          .plans = plans ? &*plans : nullptr};
  StatusOr<snapshot::SnapshotReport> analysed =
      args.path == "-" ? analyze_standard_input(options) : snapshot::analyze_snapshot(args.path, options);
  throw_if_error(analysed.status());
  const snapshot::SnapshotReport& report = *analysed;
  const snapshot::Snapshot& s = report.snapshot;
  if (!args.html_path.empty() && report.devices.size() > 1) {
    throw CommandError(
        "--html draws one device; name it with --device (devices here: " + std::to_string(report.devices.size()) + ")",
        kExitUsage);
  }
  if (args.html_path == "-") {
    // The page alone on standard output.
  } else if (args.json) {
    std::printf("%s\n", snapshot::report_json(report, {.live_rows = static_cast<size_t>(args.top)}).c_str());
  } else {
    std::printf("snapshot  %s (%s, %s format, %zu device%s)\n", args.path.c_str(),
                format_bytes(static_cast<int64_t>(s.file_bytes)).c_str(), s.newer_format ? "newer" : "older",
                s.devices.size(), s.devices.size() == 1 ? "" : "s");
    std::printf("read in   %.3f s; explained and planned in %.3f s\n", report.read_seconds, report.seconds);
    if (!s.alloc_conf.empty()) std::printf("PYTORCH_CUDA_ALLOC_CONF  %s\n", s.alloc_conf.c_str());
    for (const std::string& warning : s.warnings) std::printf("warning: %s\n", warning.c_str());
    for (const snapshot::DeviceAnalysis& r : report.devices) print_text(s, r, args);
  }
  if (!args.html_path.empty()) write_html(s, report.devices.front(), args);
  if (!args.save_plans.empty()) save_learnt_plans(report, args);
}

}  // namespace

void register_snapshot_command(CLI::App& app) {
  auto args = std::make_shared<SnapshotArguments>();
  CLI::App* command = app.add_subcommand(
      "snapshot",
      "Explain a PyTorch CUDA memory snapshot and plan its window (peaks, live blocks, fragmentation, plan)");
  command
      ->add_option("snapshot", args->path,
                   "A pickle written by torch.cuda.memory._dump_snapshot() ('-': standard input)")
      ->required()
      ->type_name("FILE.pickle");
  command->add_option("--device", args->device, "Only this device (default: every device in the file)")
      ->type_name("N")
      ->check(CLI::Range(0, 1 << 20));
  command->add_flag("--json", args->json, "Print one JSON object instead of the text report");
  command->add_option("--html", args->html_path, "Write the interactive heap map of the window's plan ('-' for stdout)")
      ->type_name("OUT.html");
  command->add_flag("--iterations", args->iterations, "List every iteration's load (and the worst one's arena)");
  command->add_option("-p,--planner", args->planner, "Planner for the window and the worst iteration")
      ->type_name("NAME")
      ->capture_default_str();
  command->add_flag("--no-simulate", args->no_simulate,
                    "Skip the allocator models (caching, expandable segments, memplan)");
  command
      ->add_option("--plans", args->plans,
                   "The plan file memplan's warm model starts from (memplan snapshot --save-plans of an earlier "
                   "recording, or a live run's); default: plans made of this window")
      ->type_name("FILE")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--save-plans", args->save_plans,
                   "Write the plans memplan's model learnt of the window, for the CUDA allocator's MEMPLAN_PLANS "
                   "or another snapshot's --plans")
      ->type_name("FILE");
  command
      ->add_option("--top", args->top, "Rows of the live-at-peak and segment tables (and of live_at_peak under --json)")
      ->type_name("N")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  command->footer(
      "Reads the snapshot as plain data (a pickle that would import or call code is refused,\n"
      "naming the opcode and its offset; nothing in the file is run). For each device:\n"
      "  - the window's start state: the dump-time segments with the window's events undone;\n"
      "  - peak allocated (bytes the program requested and held) and peak reserved (bytes the\n"
      "    caching allocator held in segments), and after which event;\n"
      "  - at the peak reserved: reserved minus allocated by pool and the segments with the most\n"
      "    free bytes (fragmentation and cache);\n"
      "  - the blocks live at the peak allocated, largest first, with the Python frame\n"
      "    (file:line function) that allocated them and their pool (small: <= 1 MiB);\n"
      "  - out-of-memory events with what was allocated and reserved then;\n"
      "  - the window as a planning problem (each block a buffer from its alloc to its\n"
      "    free_completed, rounded up to 512 B; blocks from before the window live from its start,\n"
      "    blocks still allocated live to its end): its load (a lower bound on any allocator's\n"
      "    reserved bytes) and the planned arena, and the saving against the recorded peak reserved;\n"
      "  - iterations (snapshot markers, ProfilerStep annotations, or a repeating alloc sequence):\n"
      "    the worst one's load and arena;\n"
      "  - the allocator models replaying the window from its start state with the recorded\n"
      "    allocator settings: PyTorch's caching allocator, expandable segments, and memplan's\n"
      "    device allocator (steady state: after an identical window; cold: the window alone; warm:\n"
      "    the window alone, from plans made before it: --plans, or this window's own).\n"
      "\n"
      "--json prints {\"snapshot\", \"format\", \"devices\": [{\"device\", \"recorded\": {\"peak_reserved_bytes\",\n"
      "\"peak_allocated_bytes\", ...}, \"load_bytes\", \"planned\": {\"arena_bytes\", ...}, \"simulated\":\n"
      "{\"caching\", \"expandable_segments\", \"memplan\", \"memplan_cold\", \"memplan_warm\": "
      "{\"peak_reserved_bytes\",\n"
      "...}},\n"
      "\"iterations\", \"live_at_peak\", \"ooms\", \"warnings\"}]} (docs/snapshots.md has every field).\n"
      "\n"
      "Record one with PyTorch:\n"
      "  torch.cuda.memory._record_memory_history(max_entries=100000)\n"
      "  ... run a few steps ...\n"
      "  torch.cuda.memory._dump_snapshot(\"snapshot.pickle\")\n"
      "\n"
      "Examples:\n"
      "  memplan snapshot snapshot.pickle\n"
      "  memplan snapshot snapshot.pickle --device 0 --iterations\n"
      "  memplan snapshot snapshot.pickle --json\n"
      "  memplan snapshot ctx256.pickle --save-plans ctx256.plans && memplan snapshot ctx512.pickle --plans "
      "ctx256.plans\n"
      "  memplan snapshot snapshot.pickle --device 0 --html window.html");
  command->callback([args] { run_snapshot(*args); });
}

}  // namespace memplan::cli
