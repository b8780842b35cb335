// html_report.cc — the interactive HTML report (see render.h for what it shows
// and the shape of the data it embeds).
//
// The page is: the CSS (report.css), a <script type="application/json"> with
// the problem and the plans as columns, and the script (report.js) that reads
// it and draws. Both files are the project's own, embedded at build time into
// report_assets.h by cmake/embed_text.cmake. Everything is written here by
// hand (no JSON library) so that the output is byte-stable and linear in size.
//
// Note [Script-safe JSON]: the data sits inside a <script> element, which ends
// at the first "</" followed by "script". Every '<', '>' and '&' in a string is
// written as a \u escape, so no text from the input can close the element or
// be read as markup; JSON.parse reads the escapes back unchanged.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "memplan/bounds.h"
#include "memplan/render.h"
#include "memplan/validate.h"
#include "report_assets.h"

namespace memplan {
namespace {

// A JSON string with Note [Script-safe JSON]'s escapes. Bytes >= 0x80 pass
// through: the page is declared UTF-8.
void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (byte < 0x20 || c == '<' || c == '>' || c == '&') {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\u%04x", byte);
          out += escape;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_integer(std::string& out, int64_t value) { out += std::to_string(value); }

// "name":[v0,v1,...] for one column of integers.
template <typename Column>
void append_int_column(std::string& out, std::string_view name, size_t count, Column value_of) {
  out += '"';
  out += name;
  out += "\":[";
  for (size_t i = 0; i < count; ++i) {
    if (i) out += ',';
    append_integer(out, value_of(i));
  }
  out += ']';
}

// HTML text (the <title>): the escapes that matter between tags.
void append_html_text(std::string& out, std::string_view text) {
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
      default:
        out += c;
    }
  }
}

// Buffers live at `tick`, largest first (ties by index), at most `rows`.
std::vector<size_t> largest_live_at(const Problem& problem, int64_t tick, int rows) {
  std::vector<size_t> live;
  for (size_t i = 0; i < problem.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.lower <= tick && tick < b.upper && b.size > 0) live.push_back(i);
  }
  std::stable_sort(live.begin(), live.end(),
                   [&](size_t a, size_t b) { return problem.buffers[a].size > problem.buffers[b].size; });
  live.resize(std::min(live.size(), static_cast<size_t>(std::max(rows, 0))));
  return live;
}

void append_data(std::string& out, const Problem& problem, std::span<const NamedPlan> plans,
                 const HtmlReportOptions& options) {
  const size_t n = problem.size();
  const Bounds bounds = compute_bounds(problem, /*with_positional_maximums=*/false);
  out += "{\"format\":\"memplan-report\",\"version\":1,\"title\":";
  append_json_string(out, options.title.empty() ? "memplan report" : options.title);
  out += ",\"load\":";
  append_integer(out, bounds.load);
  out += ",\"capacity\":";
  if (problem.capacity)
    append_integer(out, *problem.capacity);
  else
    out += "null";
  out += ",\"peak_tick\":";
  append_integer(out, bounds.load_tick);
  out += ",\"peak_buffers\":[";
  const std::vector<size_t> peak = largest_live_at(problem, bounds.load_tick, options.peak_rows);
  for (size_t k = 0; k < peak.size(); ++k) {
    if (k) out += ',';
    append_integer(out, static_cast<int64_t>(peak[k]));
  }
  out += "],\n\"ids\":[";
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    append_json_string(out, problem.buffers[i].id);
  }
  out += "],\n";
  append_int_column(out, "lower", n, [&](size_t i) { return problem.buffers[i].lower; });
  out += ",\n";
  append_int_column(out, "upper", n, [&](size_t i) { return problem.buffers[i].upper; });
  out += ",\n";
  append_int_column(out, "size", n, [&](size_t i) { return problem.buffers[i].size; });

  // Operators as a table of names and one index per buffer: a model has a few
  // hundred operator names and many buffers per name.
  std::vector<std::string_view> names;
  std::unordered_map<std::string_view, int64_t> index_of;
  std::vector<int64_t> operator_index(n, -1);
  for (size_t i = 0; i < std::min(n, options.operators.size()); ++i) {
    const std::string& name = options.operators[i];
    if (name.empty()) continue;
    auto [it, added] = index_of.emplace(name, static_cast<int64_t>(names.size()));
    if (added) names.push_back(name);
    operator_index[i] = it->second;
  }
  out += ",\n\"operator_names\":[";
  for (size_t k = 0; k < names.size(); ++k) {
    if (k) out += ',';
    append_json_string(out, names[k]);
  }
  out += "],\n";
  if (names.empty())
    out += "\"operator\":[]";
  else
    append_int_column(out, "operator", n, [&](size_t i) { return operator_index[i]; });

  out += ",\n\"plans\":[";
  for (size_t p = 0; p < plans.size(); ++p) {
    const NamedPlan& named = plans[p];
    const Plan& plan = named.plan;
    // The arena as drawn: the plan's, or the top of its highest buffer if a
    // hand-written plan understates it.
    int64_t arena = plan.arena;
    const size_t placed = std::min(n, plan.offsets.size());
    for (size_t i = 0; i < placed; ++i) arena = std::max(arena, plan.offsets[i] + problem.buffers[i].size);
    const ValidationResult validation = validate(problem, plan);
    out += p ? ",\n{\"name\":" : "\n{\"name\":";
    append_json_string(out, named.name);
    out += ",\"arena\":";
    append_integer(out, arena);
    out += ",\"gap\":";
    if (bounds.load > 0) {
      char text[32];
      std::snprintf(text, sizeof text, "%.6f", gap(arena, bounds.load));
      out += text;
    } else {
      out += arena == 0 ? "0" : "null";
    }
    out += ",\"valid\":";
    out += validation.ok() ? "true" : "false";
    out += ",\"message\":";
    append_json_string(out, validation.ok() ? "" : validation.message);
    out += ",\n";
    append_int_column(out, "offsets", n, [&](size_t i) { return i < placed ? plan.offsets[i] : int64_t{-1}; });
    out += '}';
  }
  out += "]}";
}

}  // namespace

std::string render_html_report(const Problem& problem, std::span<const NamedPlan> plans,
                               const HtmlReportOptions& options) {
  std::string out;
  out.reserve(16384 + problem.size() * (24 + 10 * plans.size()));
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"memplan\">\n<title>";
  append_html_text(out, options.title.empty() ? "memplan report" : "memplan report: " + options.title);
  out += "</title>\n<style>\n";
  out += report_assets::kCss;
  out +=
      "</style>\n</head>\n<body>\n<noscript>This report draws with JavaScript; enable it to see the heap "
      "maps.</noscript>\n<script type=\"application/json\" id=\"memplan-data\">";
  append_data(out, problem, plans, options);
  out += "</script>\n<script>\n";
  out += report_assets::kJs;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace memplan
