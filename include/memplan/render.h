// render.h — heap maps: a plan drawn as an SVG picture.
//
// Time runs along x (ticks), offset up along y (bytes, 0 at the bottom). Every
// buffer is one rectangle [lower, upper) × [offset, offset + size), filled with
// a colour derived from a hash of its id (the same id gets the same colour in
// every picture) and carrying a <title> tooltip: id, lifetime, size, offset.
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

#include <string>

#include "memplan/plan.h"
#include "memplan/problem.h"

namespace memplan {

struct RenderOptions {
  int width = 1200;   // pixels, whole picture including margins (at least 200)
  int height = 640;   // pixels, whole picture including margins (at least 160)
  // Named in the caption ("portfolio: arena ..."); omitted when empty.
  std::string planner;
  // A heading above the caption (an instance name); omitted when empty.
  std::string title;
  // Buffers smaller than this many pixels in both width and height are merged
  // into one grey shape instead of getting their own rectangle (see above).
  double merge_below_px = 0.5;
};

std::string render_svg(const Problem& problem, const Plan& plan, const RenderOptions& options = {});

}  // namespace memplan
