// svg.cc — the heap map as SVG (see render.h for what is drawn and why).
//
// 1. Scale: x maps [min lower, max upper] to the plot's width; y maps
//    [0, 1.04 · max(arena, load, capacity if near)] to its height, upwards.
// 2. Every buffer of size > 0 with an offset becomes a <rect> with a <title>,
//    at least one pixel wide and high, unless it is smaller than
//    merge_below_px in both dimensions; those mark cells of a plot-sized pixel
//    grid instead.
// 3. The marked cells are emitted row by row as runs of one grey <path>.
// 4. Lines for load, arena (and capacity), axes with ticks, caption.
// Cost O(n + plot width · plot height); output about 150–200 bytes per drawn
// buffer plus at most ~20 bytes per merged pixel run.
#include "memplan/render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/units.h"

namespace memplan {
namespace {

// The smallest width and height of a drawn rectangle, in pixels.
constexpr double kMinMarkPx = 1.0;

// Margins around the plot, in pixels: room for byte labels on the left, tick
// labels and the axis name below, title and caption above.
constexpr int kLeft = 78;
constexpr int kRight = 16;
constexpr int kTop = 48;
constexpr int kBottom = 44;
// Rectangles thinner than this (pixels) in either direction get no outline.
constexpr double kOutlineMinPx = 2.0;

void append_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // Control characters other than tab/newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n')
          out += '?';
        else
          out += c;
    }
  }
}

// Coordinates with one decimal, trailing ".0" dropped: sub-pixel precision is
// all a viewer can use, and it keeps the file small.
void append_number(std::string& out, double value) {
  char text[32];
  int n = std::snprintf(text, sizeof text, "%.1f", value);
  if (n >= 2 && text[n - 2] == '.' && text[n - 1] == '0') n -= 2;
  if (n == 2 && text[0] == '-' && text[1] == '0') {  // "-0.0" -> "0"
    text[0] = '0';
    n = 1;
  }
  out.append(text, static_cast<size_t>(n));
}

void append_int(std::string& out, int64_t value) { out += std::to_string(value); }

// A stable colour per id: FNV-1a hash -> hue, saturation and lightness within
// a pastel range, so neighbours differ but text and lines stay readable.
void append_colour(std::string& out, std::string_view id) {
  uint64_t h = 1469598103934665603ull;
  for (char c : id) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  const double hue = static_cast<double>(h % 360);
  const double saturation = 0.45 + static_cast<double>((h >> 16) % 30) / 100.0;
  const double lightness = 0.60 + static_cast<double>((h >> 32) % 16) / 100.0;
  // HSL -> RGB.
  const double chroma = (1 - std::fabs(2 * lightness - 1)) * saturation;
  const double sector = hue / 60.0;
  const double x = chroma * (1 - std::fabs(std::fmod(sector, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  switch (static_cast<int>(sector)) {
    case 0:
      r = chroma;
      g = x;
      break;
    case 1:
      r = x;
      g = chroma;
      break;
    case 2:
      g = chroma;
      b = x;
      break;
    case 3:
      g = x;
      b = chroma;
      break;
    case 4:
      r = x;
      b = chroma;
      break;
    default:
      r = chroma;
      b = x;
      break;
  }
  const double m = lightness - chroma / 2;
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", static_cast<int>(std::lround((r + m) * 255)),
                static_cast<int>(std::lround((g + m) * 255)), static_cast<int>(std::lround((b + m) * 255)));
  out += text;
}

std::string gap_text(int64_t arena, int64_t load) {
  if (load <= 0) return arena == 0 ? "0.00%" : "n/a";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * gap(arena, load));
  return text;
}

// A 1-2-5 step giving at most about `target` ticks over `span` (>= 1, integer).
int64_t time_step(int64_t span, int target) {
  const double raw = std::max(1.0, static_cast<double>(span) / target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * magnitude;
    if (step >= raw) break;
  }
  return std::max<int64_t>(1, std::llround(step));
}

// A power-of-two step giving at most `target` ticks up to `top` bytes, so that
// labels come out as round binary sizes (128 KiB, 1.5 MiB, ...).
int64_t byte_step(double top, int target) {
  int64_t step = 1;
  while (static_cast<double>(step) * target < top && step < (int64_t{1} << 61)) step <<= 1;
  return step;
}

class SvgWriter {
 public:
  SvgWriter(const Problem& problem, const Plan& plan, const RenderOptions& options)
      : problem_(problem), plan_(plan), options_(options) {
    width_ = std::max(options.width, 200);
    height_ = std::max(options.height, 160);
    plot_w_ = width_ - kLeft - kRight;
    plot_h_ = height_ - kTop - kBottom;
    drawn_ = std::min(problem.size(), plan.offsets.size());

    load_ = load(problem);
    arena_ = plan.arena;
    for (size_t i = 0; i < drawn_; ++i) arena_ = std::max(arena_, plan.offsets[i] + problem.buffers[i].size);
    double top = static_cast<double>(std::max<int64_t>({arena_, load_, 1}));
    // A capacity far above the plan would squash the picture; it is drawn only
    // when it lies within a quarter above the tallest of arena and load.
    if (problem.capacity && static_cast<double>(*problem.capacity) <= 1.25 * top) {
      show_capacity_ = true;
      top = std::max(top, static_cast<double>(*problem.capacity));
    }
    y_top_ = top * 1.04;

    t0_ = 0;
    t1_ = 1;
    if (!problem.buffers.empty()) {
      t0_ = problem.buffers[0].lower;
      t1_ = problem.buffers[0].upper;
      for (const Buffer& b : problem.buffers) {
        t0_ = std::min(t0_, b.lower);
        t1_ = std::max(t1_, b.upper);
      }
      if (t1_ <= t0_) t1_ = t0_ + 1;  // only for problems that fail check_problem
    }
  }

  std::string write() {
    out_.reserve(4096 + drawn_ * 180);
    header();
    buffers();
    merged_buffers();
    bound_lines();
    axes();
    out_ += "</svg>\n";
    return std::move(out_);
  }

 private:
  double x_of(int64_t tick) const {
    return kLeft + (static_cast<double>(tick) - static_cast<double>(t0_)) /
                       (static_cast<double>(t1_) - static_cast<double>(t0_)) * plot_w_;
  }
  double y_of(double bytes) const { return kTop + plot_h_ - bytes / y_top_ * plot_h_; }

  void header() {
    out_ += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"";
    append_int(out_, width_);
    out_ += "\" height=\"";
    append_int(out_, height_);
    out_ += "\" viewBox=\"0 0 ";
    append_int(out_, width_);
    out_ += ' ';
    append_int(out_, height_);
    out_ += "\" font-family=\"sans-serif\" font-size=\"11\">\n<title>memplan heap map";
    if (!options_.title.empty()) {
      out_ += ": ";
      append_escaped(out_, options_.title);
    }
    out_ += "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
    if (!options_.title.empty()) {
      out_ += "<text x=\"";
      append_int(out_, kLeft);
      out_ += "\" y=\"17\" font-size=\"14\" font-weight=\"bold\">";
      append_escaped(out_, options_.title);
      out_ += "</text>\n";
    }
    std::string caption;
    if (!options_.planner.empty()) caption += options_.planner + ": ";
    caption += "arena " + format_bytes(arena_) + " (" + std::to_string(arena_) + " B) \u00b7 load " +
               format_bytes(load_) + " (" + std::to_string(load_) + " B) \u00b7 gap " + gap_text(arena_, load_) +
               " \u00b7 " + std::to_string(problem_.size()) + " buffers";
    out_ += "<text id=\"caption\" x=\"";
    append_int(out_, kLeft);
    out_ += "\" y=\"36\" font-size=\"12\">";
    append_escaped(out_, caption);
    out_ += "</text>\n<rect x=\"";
    append_int(out_, kLeft);
    out_ += "\" y=\"";
    append_int(out_, kTop);
    out_ += "\" width=\"";
    append_int(out_, plot_w_);
    out_ += "\" height=\"";
    append_int(out_, plot_h_);
    out_ += "\" fill=\"#f7f7f7\" stroke=\"none\"/>\n";
  }

  void buffers() {
    out_ += "<g id=\"buffers\" stroke=\"#303030\" stroke-width=\"0.3\" stroke-opacity=\"0.7\">\n";
    for (size_t i = 0; i < drawn_; ++i) {
      const Buffer& b = problem_.buffers[i];
      if (b.size <= 0) continue;
      const int64_t offset = plan_.offsets[i];
      const double x0 = x_of(b.lower);
      double x1 = x_of(b.upper);
      const double y_low = y_of(static_cast<double>(offset));
      double y_high = y_of(static_cast<double>(offset) + static_cast<double>(b.size));
      if (x1 - x0 < options_.merge_below_px && y_low - y_high < options_.merge_below_px) {
        mark_merged(x0, x1, y_high, y_low);
        continue;
      }
      // A rectangle thinner than a pixel in one direction would be drawn
      // invisibly (and its tooltip unreachable): it is widened to one pixel
      // from its start / its offset, which may cover a neighbour by less
      // than a pixel.
      x1 = std::max(x1, x0 + kMinMarkPx);
      y_high = std::min(y_high, y_low - kMinMarkPx);
      out_ += "<rect x=\"";
      append_number(out_, x0);
      out_ += "\" y=\"";
      append_number(out_, y_high);
      out_ += "\" width=\"";
      append_number(out_, x1 - x0);
      out_ += "\" height=\"";
      append_number(out_, y_low - y_high);
      out_ += "\" fill=\"";
      append_colour(out_, b.id);
      // An outline on a rectangle thinner than a couple of pixels would cover
      // its fill: stacks of thin buffers would read as solid grey.
      out_ += (x1 - x0 < kOutlineMinPx || y_low - y_high < kOutlineMinPx) ? "\" stroke=\"none\"><title>" : "\"><title>";
      append_escaped(out_, b.id);
      out_ += ": ticks [";
      append_int(out_, b.lower);
      out_ += ", ";
      append_int(out_, b.upper);
      out_ += "), ";
      append_int(out_, b.size);
      out_ += " B (";
      out_ += format_bytes(b.size);
      out_ += ") at offset ";
      append_int(out_, offset);
      if (i < options_.operators.size() && !options_.operators[i].empty()) {
        out_ += ", from ";
        append_escaped(out_, options_.operators[i]);
      }
      out_ += "</title></rect>\n";
    }
    out_ += "</g>\n";
  }

  void mark_merged(double x0, double x1, double y_high, double y_low) {
    if (merged_.empty()) merged_.assign(static_cast<size_t>(plot_w_) * static_cast<size_t>(plot_h_), 0);
    ++merged_count_;
    auto cell = [](double v, int limit) { return std::clamp(static_cast<int>(std::floor(v)), 0, limit - 1); };
    // Cells of every pixel the rectangle touches (at least one).
    const int cx0 = cell(x0 - kLeft, plot_w_);
    const int cx1 = cell(std::max(x0, x1 - 1e-9) - kLeft, plot_w_);
    const int cy0 = cell(y_high - kTop, plot_h_);
    const int cy1 = cell(std::max(y_high, y_low - 1e-9) - kTop, plot_h_);
    for (int cy = cy0; cy <= cy1; ++cy) {
      for (int cx = cx0; cx <= cx1; ++cx) merged_[static_cast<size_t>(cy) * plot_w_ + cx] = 1;
    }
  }

  void merged_buffers() {
    if (merged_count_ == 0) return;
    out_ += "<path id=\"merged-buffers\" fill=\"#8a8a8a\" shape-rendering=\"crispEdges\" d=\"";
    for (int cy = 0; cy < plot_h_; ++cy) {
      const uint8_t* row = &merged_[static_cast<size_t>(cy) * plot_w_];
      for (int cx = 0; cx < plot_w_;) {
        if (!row[cx]) {
          ++cx;
          continue;
        }
        int end = cx;
        while (end < plot_w_ && row[end]) ++end;
        out_ += 'M';
        append_int(out_, kLeft + cx);
        out_ += ' ';
        append_int(out_, kTop + cy);
        out_ += 'h';
        append_int(out_, end - cx);
        out_ += "v1h-";
        append_int(out_, end - cx);
        out_ += 'z';
        cx = end;
      }
    }
    out_ += "\"><title>";
    append_int(out_, static_cast<int64_t>(merged_count_));
    out_ += " buffers smaller than ";
    append_number(out_, options_.merge_below_px);
    out_ += " px, drawn merged</title></path>\n";
  }

  void horizontal_line(std::string_view id, double bytes, std::string_view style, std::string_view label,
                       bool label_at_left) {
    const double y = y_of(bytes);
    out_ += "<line id=\"";
    out_ += id;
    out_ += "\" x1=\"";
    append_int(out_, kLeft);
    out_ += "\" x2=\"";
    append_int(out_, kLeft + plot_w_);
    out_ += "\" y1=\"";
    append_number(out_, y);
    out_ += "\" y2=\"";
    append_number(out_, y);
    out_ += "\" ";
    out_ += style;
    out_ += "/>\n<text x=\"";
    append_int(out_, label_at_left ? kLeft + 4 : kLeft + plot_w_ - 4);
    out_ += "\" y=\"";
    append_number(out_, y - 3);
    out_ += label_at_left ? "\">" : "\" text-anchor=\"end\">";
    append_escaped(out_, label);
    out_ += "</text>\n";
  }

  void bound_lines() {
    horizontal_line("load-line", static_cast<double>(load_),
                    "stroke=\"#c0392b\" stroke-width=\"1.5\" stroke-dasharray=\"7 4\"", "load " + format_bytes(load_),
                    /*label_at_left=*/true);
    horizontal_line("arena-line", static_cast<double>(arena_), "stroke=\"#111111\" stroke-width=\"1.5\"",
                    "arena " + format_bytes(arena_), /*label_at_left=*/false);
    if (show_capacity_) {
      horizontal_line("capacity-line", static_cast<double>(*problem_.capacity),
                      "stroke=\"#1f5fbf\" stroke-width=\"1.2\" stroke-dasharray=\"2 3\"",
                      "capacity " + format_bytes(*problem_.capacity), /*label_at_left=*/false);
    }
  }

  void axes() {
    const int bottom = kTop + plot_h_;
    out_ += "<g id=\"axes\" stroke=\"#000000\" stroke-width=\"1\">\n<line x1=\"";
    append_int(out_, kLeft);
    out_ += "\" y1=\"";
    append_int(out_, bottom);
    out_ += "\" x2=\"";
    append_int(out_, kLeft + plot_w_);
    out_ += "\" y2=\"";
    append_int(out_, bottom);
    out_ += "\"/>\n<line x1=\"";
    append_int(out_, kLeft);
    out_ += "\" y1=\"";
    append_int(out_, kTop);
    out_ += "\" x2=\"";
    append_int(out_, kLeft);
    out_ += "\" y2=\"";
    append_int(out_, bottom);
    out_ += "\"/>\n</g>\n<g id=\"tick-labels\" fill=\"#000000\">\n";

    const int64_t t_step = time_step(t1_ - t0_, std::max(2, plot_w_ / 90));
    // First multiple of the step at or after t0 (floor division for negative ticks).
    int64_t first = t0_ / t_step * t_step;
    if (first < t0_) first += t_step;
    for (int64_t t = first; t <= t1_; t += t_step) {
      const double x = x_of(t);
      tick_mark(x, bottom, x, bottom + 4);
      out_ += "<text x=\"";
      append_number(out_, x);
      out_ += "\" y=\"";
      append_int(out_, bottom + 16);
      out_ += "\" text-anchor=\"middle\">";
      append_int(out_, t);
      out_ += "</text>\n";
      if (t > t1_ - t_step) break;  // the next step would overflow or pass t1
    }
    const int64_t b_step = byte_step(y_top_, std::max(2, plot_h_ / 50));
    for (int64_t b = 0; static_cast<double>(b) <= y_top_; b += b_step) {
      const double y = y_of(static_cast<double>(b));
      tick_mark(kLeft - 4, y, kLeft, y);
      out_ += "<text x=\"";
      append_int(out_, kLeft - 7);
      out_ += "\" y=\"";
      append_number(out_, y + 4);
      out_ += "\" text-anchor=\"end\">";
      out_ += format_bytes_short(b);
      out_ += "</text>\n";
      if (b > (int64_t{1} << 62) - b_step) break;
    }
    out_ += "<text x=\"";
    append_int(out_, kLeft + plot_w_ / 2);
    out_ += "\" y=\"";
    append_int(out_, height_ - 8);
    out_ += "\" text-anchor=\"middle\">time (ticks)</text>\n<text transform=\"translate(14 ";
    append_int(out_, kTop + plot_h_ / 2);
    out_ += ") rotate(-90)\" text-anchor=\"middle\">offset (bytes)</text>\n</g>\n";
  }

  void tick_mark(double x1, double y1, double x2, double y2) {
    out_ += "<line stroke=\"#000000\" x1=\"";
    append_number(out_, x1);
    out_ += "\" y1=\"";
    append_number(out_, y1);
    out_ += "\" x2=\"";
    append_number(out_, x2);
    out_ += "\" y2=\"";
    append_number(out_, y2);
    out_ += "\"/>\n";
  }

  const Problem& problem_;
  const Plan& plan_;
  const RenderOptions& options_;
  int width_ = 0, height_ = 0, plot_w_ = 0, plot_h_ = 0;
  size_t drawn_ = 0;
  int64_t load_ = 0, arena_ = 0;
  int64_t t0_ = 0, t1_ = 1;
  double y_top_ = 1;
  bool show_capacity_ = false;
  std::vector<uint8_t> merged_;  // plot_w_ × plot_h_ cells, 1 where a merged buffer lies
  size_t merged_count_ = 0;
  std::string out_;
};

}  // namespace

std::string render_svg(const Problem& problem, const Plan& plan, const RenderOptions& options) {
  return SvgWriter(problem, plan, options).write();
}

}  // namespace memplan
