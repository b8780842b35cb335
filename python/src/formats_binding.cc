// formats_binding.cc — the CLI's file formats from Python: problem and plan
// CSV, plan JSON, the SVG heap map and the HTML report. Every reader has a
// file form (read_*) and a text form (parse_*, with `source` naming the text
// in errors); every writer returns text and, given a path, also writes it.
// Errors carry the readers' messages (file, line, field) unchanged.
#include <filesystem>

#include "bindings.h"
#include "errors.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/json.h"
#include "memplan/render.h"
#include "memplan/validate.h"

namespace memplan::python {
namespace {

// The CLI's check (tools/cli/inputs.cc): a directory named where a file is
// expected is refused with the same message, before a reader sees it.
void refuse_directory(const std::string& path, const std::string& expected) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    raise_status(IoError(path + ": is a directory, not " + expected), ErrorSource::kFile);
  }
}

std::string read_file(const std::string& path) {
  refuse_directory(path, "a file");
  return value_or_raise(read_text_file(path), ErrorSource::kFile);
}

void write_file(py::object path, const std::string& text) {
  if (path.is_none()) return;
  const std::string p = py::str(py::module_::import("os").attr("fspath")(path));
  raise_if_error(write_text_file(p, text), ErrorSource::kFile);
}

std::string path_string(py::handle path) { return py::str(py::module_::import("os").attr("fspath")(path)); }

std::vector<std::string> operators_from(py::handle operators) {
  std::vector<std::string> out;
  if (operators.is_none()) return out;
  for (py::handle name : operators) out.push_back(name.is_none() ? std::string() : std::string(py::str(name)));
  return out;
}

// As the CLI reads a plan file: JSON when the first non-blank character
// opens an object, else CSV.
Plan parse_plan(const Problem& problem, const std::string& text, const std::string& source) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return value_or_raise(first != std::string::npos && text[first] == '{' ? parse_plan_json(problem, text, source)
                                                                         : parse_plan_csv(problem, text, source));
}

std::string plan_json(const Problem& problem, const Plan& plan, std::string planner, double seconds) {
  return format_plan_json(problem, plan, {.planner = std::move(planner), .seconds = seconds, .load = load(problem)});
}

// Plans for the report: a Plan or PlanResult (named `plan`, or by its planner),
// a dict {name: plan}, a list of plans / (name, plan) pairs / planner names,
// or a string of planner names separated by commas (the CLI's --planner).
std::vector<NamedPlan> named_plans(const Problem& problem, py::handle plans) {
  std::vector<NamedPlan> out;
  auto add_planner = [&](const std::string& name) {
    if (find_planner(name) == nullptr) {
      raise_status(NotFound(unknown_planner_message(name)), ErrorSource::kPlanner);
    }
    StatusOr<Plan> planned = plan_with(name, problem);
    if (!planned.ok()) {
      raise_status(Status(planned.status().code(), "planner '" + name + "' failed: " + planned.status().message()),
                   ErrorSource::kPlanner);
    }
    out.push_back({.name = name, .plan = std::move(planned).value()});
  };
  auto add = [&](py::handle item, const std::string& what) {
    if (py::isinstance<py::str>(item)) return add_planner(item.cast<std::string>());
    std::string name = "plan";
    if (py::isinstance<PlanResult>(item)) name = item.cast<const PlanResult&>().result.planner;
    if (py::isinstance<py::tuple>(item) && py::len(item) == 2) {
      py::tuple pair = py::reinterpret_borrow<py::tuple>(item);
      out.push_back({.name = py::str(pair[0]), .plan = plan_from(problem, pair[1], what)});
      return;
    }
    out.push_back({.name = name, .plan = plan_from(problem, item, what)});
  };
  if (plans.is_none()) {
    add_planner(std::string(kDefaultPlanner));
  } else if (py::isinstance<py::str>(plans)) {
    const std::string names = plans.cast<std::string>();
    size_t begin = 0;
    while (begin <= names.size()) {
      size_t end = names.find(',', begin);
      if (end == std::string::npos) end = names.size();
      if (end > begin) add_planner(names.substr(begin, end - begin));
      begin = end + 1;
    }
    if (out.empty()) raise_input_error("plans: no planner named in '" + names + "'");
  } else if (py::isinstance<py::dict>(plans)) {
    for (auto [name, plan] : py::reinterpret_borrow<py::dict>(plans)) {
      out.push_back(
          {.name = py::str(name), .plan = plan_from(problem, plan, "plans['" + std::string(py::str(name)) + "']")});
    }
  } else if (py::isinstance<Plan>(plans) || py::isinstance<PlanResult>(plans) || py::isinstance<py::array>(plans)) {
    add(plans, "plans");
  } else if (py::isinstance<py::list>(plans) || py::isinstance<py::tuple>(plans)) {
    size_t i = 0;
    for (py::handle item : plans) add(item, "plans[" + std::to_string(i++) + "]");
  } else {
    raise_input_error("plans: expected a Plan, a PlanResult, a dict of them, a list, or planner names, got " +
                      std::string(py::str(py::type::of(plans).attr("__name__"))));
  }
  return out;
}

}  // namespace

void bind_formats(py::module_& m) {
  m.def(
      "_parse_bytes", [](py::handle value, const std::string& what) { return bytes_from(value, what); },
      py::arg("value"), py::arg("what") = "bytes",
      "Bytes from an int or a string with a unit, as the CLI reads them ('24GiB', '80GB', '1.5K'); InputError "
      "naming `what` otherwise (units.h).");
  m.def(
      "parse_problem",
      [](const std::string& text, const std::string& source) {
        return value_or_raise(parse_problem_csv(text, source));
      },
      py::arg("text"), py::arg("source") = "<input>",
      "A problem from CSV text (docs/formats.md); errors name `source`, the line and the field.");
  m.def(
      "read_problem",
      [](py::object path) {
        const std::string p = path_string(path);
        const std::string text = read_file(p);
        return value_or_raise(parse_problem_csv(text, p));
      },
      py::arg("path"), "A problem from a CSV file, as `memplan plan` reads it.");
  m.def(
      "format_problem",
      [](const Problem& problem, py::object operators, py::object path) {
        const std::vector<std::string> names = operators_from(operators);
        std::string text = names.empty() ? format_problem_csv(problem) : format_problem_csv(problem, names);
        write_file(path, text);
        return text;
      },
      py::arg("problem"), py::kw_only(), py::arg("operators") = py::none(), py::arg("path") = py::none(),
      "The problem as CSV text (with an `operator` column when operator names are given); written to `path` too "
      "when given.");
  m.def(
      "write_problem",
      [](py::object path, const Problem& problem, py::object operators) {
        const std::vector<std::string> names = operators_from(operators);
        write_file(path, names.empty() ? format_problem_csv(problem) : format_problem_csv(problem, names));
      },
      py::arg("path"), py::arg("problem"), py::kw_only(), py::arg("operators") = py::none(),
      "Writes the problem as CSV.");

  m.def(
      "parse_plan",
      [](const Problem& problem, const std::string& text, const std::string& source) {
        return parse_plan(problem, text, source);
      },
      py::arg("problem"), py::arg("text"), py::arg("source") = "<input>",
      "A plan for `problem` from CSV or JSON text (JSON when it starts with '{'), matched by buffer id.");
  m.def(
      "read_plan",
      [](const Problem& problem, py::object path) {
        const std::string p = path_string(path);
        return parse_plan(problem, read_file(p), p);
      },
      py::arg("problem"), py::arg("path"),
      "A plan for `problem` from a CSV or JSON file, as `memplan validate` reads it.");
  m.def(
      "format_plan",
      [](const Problem& problem, py::object plan, const std::string& format, const std::string& planner, double seconds,
         py::object path) {
        const Plan p = plan_from(problem, plan);
        std::string name = planner;
        double time = seconds;
        if (py::isinstance<PlanResult>(plan)) {
          const PlanningResult& r = plan.cast<const PlanResult&>().result;
          if (name.empty()) name = r.planner;
          if (time == 0) time = r.planning_seconds + r.validation_seconds;
        }
        std::string kind = format;
        if (kind.empty()) {
          kind = !path.is_none() && path_string(path).ends_with(".json") ? "json" : "csv";
        }
        std::string text;
        if (kind == "csv") {
          text = format_plan_csv(problem, p);
        } else if (kind == "json") {
          text = plan_json(problem, p, name, time);
        } else {
          raise_input_error("format '" + kind + "': expected 'csv' or 'json'");
        }
        write_file(path, text);
        return text;
      },
      py::arg("problem"), py::arg("plan"), py::kw_only(), py::arg("format") = "", py::arg("planner") = "",
      py::arg("seconds") = 0.0, py::arg("path") = py::none(),
      "The plan as CSV or JSON text (format 'csv' or 'json'; by default JSON when `path` ends in .json, as "
      "`memplan plan --output` decides). JSON names the planner and the planning time (from a PlanResult when "
      "given one). Written to `path` too when given.");
  m.def(
      "write_plan",
      [](py::object path, const Problem& problem, py::object plan) {
        const Plan p = plan_from(problem, plan);
        const std::string file = path_string(path);
        std::string name;
        double seconds = 0;
        if (py::isinstance<PlanResult>(plan)) {
          const PlanningResult& r = plan.cast<const PlanResult&>().result;
          name = r.planner;
          seconds = r.planning_seconds + r.validation_seconds;
        }
        write_file(path, file.ends_with(".json") ? plan_json(problem, p, name, seconds) : format_plan_csv(problem, p));
      },
      py::arg("path"), py::arg("problem"), py::arg("plan"),
      "Writes the plan: JSON when the path ends in .json, else CSV (as `memplan plan --output`).");

  m.def(
      "render_svg",
      [](const Problem& problem, py::object plan, py::object path, int width, int height, const std::string& title,
         const std::string& planner) {
        if (width < 200) raise_input_error("width: " + std::to_string(width) + " px is below 200");
        if (height < 160) raise_input_error("height: " + std::to_string(height) + " px is below 160");
        RenderOptions options;
        options.width = width;
        options.height = height;
        options.title = title;
        options.planner = planner;
        if (options.planner.empty() && py::isinstance<PlanResult>(plan)) {
          options.planner = plan.cast<const PlanResult&>().result.planner;
        }
        std::string svg = render_svg(problem, plan_from(problem, plan), options);
        write_file(path, svg);
        return svg;
      },
      py::arg("problem"), py::arg("plan"), py::arg("path") = py::none(), py::kw_only(),
      py::arg("width") = RenderOptions{}.width, py::arg("height") = RenderOptions{}.height, py::arg("title") = "",
      py::arg("planner") = "",
      "The heap map of a plan as SVG text, as `memplan render` draws it (time on x, offset on y); written to "
      "`path` too when given. Invalid plans are drawn as they are.");
  m.def(
      "report_html",
      [](const Problem& problem, py::object plans, py::object path, const std::string& title, py::object operators,
         int peak_rows) {
        if (peak_rows < 0) raise_input_error("peak_rows: " + std::to_string(peak_rows) + " is negative");
        HtmlReportOptions options;
        options.title = title;
        options.operators = operators_from(operators);
        options.peak_rows = peak_rows;
        const std::vector<NamedPlan> named = named_plans(problem, plans);
        std::string html = render_html_report(problem, named, options);
        write_file(path, html);
        return html;
      },
      py::arg("problem"), py::arg("plans") = py::none(), py::arg("path") = py::none(), py::kw_only(),
      py::arg("title") = "", py::arg("operators") = py::none(), py::arg("peak_rows") = HtmlReportOptions{}.peak_rows,
      "The interactive HTML report `memplan report --html` writes: plans is a Plan or PlanResult, a dict "
      "{name: plan}, a list of plans, (name, plan) pairs or planner names, or 'naive,portfolio' (default: "
      "plan with the default planner). Returns the page; written to `path` too when given.");
}

}  // namespace memplan::python
