// render.h — heap maps: a plan drawn as an SVG picture, or one or more plans
// of a problem as an interactive HTML report (render_html_report, below).
//
// Time runs along x (ticks), offset up along y (bytes, 0 at the bottom). Every
// buffer is one rectangle [lower, upper) × [offset, offset + size), filled with
// a colour derived from a hash of its id (the same id gets the same colour in
// every picture) and carrying a <title> tooltip: id, lifetime, size, offset,
// and the operator that allocated it when RenderOptions::operators names one.
// The load is drawn as a dashed horizontal line, the arena as a solid one, the
// capacity (if the problem has one within the picture) as a dotted one. Axes
// are labelled in ticks and in binary byte units; a caption names the planner
// and gives arena, load and gap.
//
// Size of the output. A rectangle costs about 150–200 bytes, so a plan of
// 60,000 buffers stays near 10 MB. Buffers whose rectangle would be smaller
// than `merge_below_px` in BOTH dimensions are not drawn one by one (they
// would be invisible and only bloat the file): they are rasterised onto the
// pixel grid of the plot and drawn together as one grey <path> of row runs,
// without tooltips. That path is bounded by the plot's pixel count, so the
// file stays well under 20 MB for any problem. Buffers of size 0 occupy no
// bytes and are not drawn.
//
// The picture is deterministic (same inputs, same bytes) and is produced in
// O(n + width · height) time. A plan whose offsets do not match the problem's
// buffer count is drawn for the buffers it has offsets for; invalid plans
// (overlaps) are drawn as they are, which is what makes them easy to debug.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "memplan/plan.h"
#include "memplan/problem.h"

namespace memplan {

struct RenderOptions {
  int width = 1200;  // pixels, whole picture including margins (at least 200)
  int height = 640;  // pixels, whole picture including margins (at least 160)
  // Named in the caption ("portfolio: arena ..."); omitted when empty.
  std::string planner;
  // A heading above the caption (an instance name); omitted when empty.
  std::string title;
  // Buffers smaller than this many pixels in both width and height are merged
  // into one grey shape instead of getting their own rectangle (see above).
  double merge_below_px = 0.5;
  // One name per buffer, in problem order: the operator (or graph node) that
  // allocated it, as a problem CSV's `operator` column gives it; shown in the
  // buffer's tooltip. Empty or shorter than the problem: the rest unknown.
  std::vector<std::string> operators;
};

std::string render_svg(const Problem& problem, const Plan& plan, const RenderOptions& options = {});

// ---- the HTML report ----------------------------------------------------------------
//
// One self-contained HTML file (no network, no external file: it works from
// file://) that draws each plan's heap map on a canvas, with the live-bytes
// curve under it (load and arena lines), a tooltip per buffer (id, size,
// lifetime, offset, operator when known), search by id or operator, and a
// table of the largest buffers live at the peak. Several plans of one problem
// are drawn side by side on one time axis and one byte scale, each with its
// arena and gap. The JavaScript and CSS are the project's own
// (src/render/report.js, report.css), embedded when memplan is built.
//
// The data is embedded as one JSON object of columns (one array per field, not
// one object per buffer), about 20–30 bytes per buffer and plan:
//     {"format":"memplan-report","version":1,"title":..,"load":..,
//      "capacity":..|null,"peak_tick":..,"peak_buffers":[index..],
//      "ids":[..],"lower":[..],"upper":[..],"size":[..],
//      "operator_names":[..],"operator":[index into operator_names or -1],
//      "plans":[{"name":..,"arena":..,"gap":..|null,"valid":..,"message":..,
//                "offsets":[..]}]}
// Integers are written exactly (64-bit); the page computes in doubles, exact
// up to 2^53 bytes. `peak_buffers` lists the buffers live at `peak_tick` (the
// first tick where the live bytes reach the load), largest first, at most
// `peak_rows` of them. A plan with fewer offsets than buffers draws only the
// buffers it places (offset -1 in the column for the others); invalid plans
// are drawn as they are, with their validator message.
struct NamedPlan {
  std::string name;  // shown above the plan's map ("portfolio", "plan.csv")
  Plan plan;
};

struct HtmlReportOptions {
  // The page's heading (an instance name); "memplan report" when empty.
  std::string title;
  // Operator of each buffer (index = buffer index), "" where unknown. Empty:
  // no buffer's operator is known. Shorter than the problem: the rest unknown.
  std::vector<std::string> operators;
  // Rows of the table of largest buffers live at the peak.
  int peak_rows = 25;
};

std::string render_html_report(const Problem& problem, std::span<const NamedPlan> plans,
                               const HtmlReportOptions& options = {});

}  // namespace memplan
