// bench_command.cc — `memplan bench`: run planners over many problems and
// print one table row per problem (arena, gap and time per planner), with
// every plan checked by the validator.
//
// 1. Collect the instances: files as given, directories scanned recursively
//    for *.csv in sorted order; read them all first. A file that cannot be
//    read is reported (file, line, field) and left out; the run goes on and
//    exits 1 at the end.
// 2. For each instance and planner: plan (timed), validate, record the arena.
//    The default planner runs as `memplan plan` runs it (without --time-limit,
//    its short exact search where the heuristics leave a gap), and its column
//    group adds what each run ended in (optimal, best found, ...).
//    An invalid plan is shown as INVALID and makes the exit status 3; a planner
//    error as ERROR (exit 1); kUnimplemented as n/a and kDeadlineExceeded as
//    timeout, which are not failures.
// 3. Summary row: the geometric mean of arena/load over the instances a planner
//    solved validly, minus 1 (a mean gap that 0% gaps do not break), and the
//    total time per planner.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/bounds.h"
#include "memplan/planner.h"
#include "memplan/planning.h"
#include "memplan/render.h"
#include "memplan/units.h"
#include "memplan/validate.h"
#include "text_table.h"

namespace memplan::cli {
namespace {

namespace fs = std::filesystem;

struct BenchArguments {
  std::vector<std::string> inputs;
  std::string planners;  // comma-separated; empty: every fast registered planner
  bool csv = false;
  bool json = false;
  bool progress = false;
  bool narrow = false;                       // the aligned table shows the first planner only
  std::string matrix_csv;                    // also write every planner's columns as CSV here
  std::optional<double> time_limit_seconds;  // unset: each planner's default, the default search included
  std::string svg_dir;
};

struct Instance {
  std::string name;  // path relative to the directory given (no .csv), or the file's stem
  std::string path;
  Problem problem;
  std::vector<std::string> operators;  // the CSV's operator column, for the heap maps' tooltips
  int64_t load = 0;
};

enum class Outcome { kValid, kInvalid, kError, kUnsupported, kTimeout };

struct Run {
  Outcome outcome = Outcome::kError;
  int64_t arena = 0;
  double seconds = 0;
  std::string ending;  // the default planner's: what the run ended in (planning.h)
};

struct Unreadable {
  std::string path;
  std::string error;
};

std::vector<Instance> collect_instances(const std::vector<std::string>& inputs, std::vector<Unreadable>* unreadable) {
  std::vector<std::pair<std::string, std::string>> files;  // (name, path)
  for (const std::string& input : inputs) {
    std::error_code error;
    const fs::file_status status = fs::status(input, error);
    if (fs::is_directory(status)) {
      std::vector<fs::path> found;
      for (fs::recursive_directory_iterator it(input, error), end; !error && it != end; it.increment(error)) {
        if (it->is_regular_file() && it->path().extension() == ".csv") found.push_back(it->path());
      }
      if (error) throw CommandError(input + ": " + error.message(), kExitFailure);
      std::sort(found.begin(), found.end());
      if (found.empty()) std::fprintf(stderr, "memplan: warning: no *.csv files under %s\n", input.c_str());
      for (const fs::path& path : found) {
        files.emplace_back(fs::relative(path, input).replace_extension().generic_string(), path.string());
      }
    } else if (fs::is_regular_file(status)) {
      files.emplace_back(fs::path(input).stem().string(), input);
    } else {
      std::fprintf(stderr, "memplan: %s: no such file or directory\n", input.c_str());
      unreadable->push_back({input, "no such file or directory"});
    }
  }

  std::vector<Instance> instances;
  instances.reserve(files.size());
  for (auto& [name, path] : files) {
    try {
      Instance instance{.name = std::move(name), .path = path};
      instance.problem = read_problem_or_throw(path, &instance.operators);
      instance.load = load(instance.problem);
      instances.push_back(std::move(instance));
    } catch (const CommandError& e) {
      std::fprintf(stderr, "memplan: skipping %s\n", e.what());
      unreadable->push_back({path, e.what()});
    }
  }
  if (instances.empty()) throw CommandError("no readable problem files to benchmark", kExitFailure);
  return instances;
}

void write_heap_map(const std::string& svg_dir, const Instance& instance, const Plan& plan, std::string_view planner) {
  const fs::path path = fs::path(svg_dir) / (instance.name + ".svg");
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  if (error) throw CommandError(path.parent_path().string() + ": " + error.message(), kExitFailure);
  write_file_or_throw(
      path.string(),
      render_svg(instance.problem, plan,
                 {.planner = std::string(planner), .title = instance.name, .operators = instance.operators}));
}

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kValid:
      return "valid";
    case Outcome::kInvalid:
      return "invalid";
    case Outcome::kError:
      return "error";
    case Outcome::kUnsupported:
      return "unsupported";
    case Outcome::kTimeout:
      return "timeout";
  }
  return "?";
}

std::string arena_cell(const Run& run) {
  switch (run.outcome) {
    case Outcome::kValid:
      return std::to_string(run.arena);
    case Outcome::kInvalid:
      return "INVALID";
    case Outcome::kError:
      return "ERROR";
    case Outcome::kUnsupported:
      return "n/a";
    case Outcome::kTimeout:
      return "timeout";
  }
  return "?";
}

std::string gap_cell(const Run& run, int64_t load_bytes, bool csv) {
  if (run.outcome != Outcome::kValid) return csv ? "" : "-";
  if (!csv) return percent_gap(run.arena, load_bytes);
  if (load_bytes <= 0) return run.arena == 0 ? "0" : "";
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", gap(run.arena, load_bytes));
  return text;
}

// The summary row's gap cell: the geometric-mean gap, or "-" when nothing was solved.
std::string table_gap_summary(size_t solved, double geomean_gap) {
  if (solved == 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * geomean_gap);
  return text;
}

std::string milliseconds_cell(double seconds, int decimals = 3) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, seconds * 1e3);
  return text;
}

// Every planner's columns: arena and gap per planner (and the default
// planner's result), then each planner's time.
std::vector<TextTable::Column> matrix_columns(const std::vector<const PlannerInfo*>& selected) {
  std::vector<TextTable::Column> columns = {
      {.header = "instance"}, {.header = "buffers", .numeric = true}, {.header = "load", .numeric = true}};
  for (const PlannerInfo* p : selected) {
    const std::string name(p->name);
    columns.push_back({.header = "arena", .numeric = true, .group = name, .csv_header = "arena:" + name});
    columns.push_back({.header = "gap", .numeric = true, .group = name, .csv_header = "gap:" + name});
    if (name == kDefaultPlanner) {
      columns.push_back({.header = "result", .group = name, .csv_header = "result:" + name});
    }
  }
  for (const PlannerInfo* p : selected) {
    const std::string name(p->name);
    columns.push_back({.header = name, .numeric = true, .group = "time (ms)", .csv_header = "ms:" + name});
  }
  return columns;
}

// A run's ending without its reason ("best found (default search budget)" ->
// "best found"), for the narrow table; the CSV keeps the reason.
std::string short_ending(const std::string& ending) {
  if (ending.empty()) return "-";
  return ending.substr(0, ending.find(" ("));
}

// One instance's row of matrix_columns.
std::vector<std::string> matrix_row(const Instance& instance, const std::vector<Run>& runs,
                                    const std::vector<const PlannerInfo*>& selected, bool csv) {
  std::vector<std::string> row = {instance.name, std::to_string(instance.problem.size()),
                                  std::to_string(instance.load)};
  for (size_t k = 0; k < selected.size(); ++k) {
    row.push_back(arena_cell(runs[k]));
    row.push_back(gap_cell(runs[k], instance.load, csv));
    if (selected[k]->name == kDefaultPlanner) row.push_back(runs[k].ending.empty() ? "-" : runs[k].ending);
  }
  for (const Run& run : runs) row.push_back(milliseconds_cell(run.seconds));
  return row;
}

// The first planner's columns alone (--narrow): instance, buffers, load,
// arena, gap, result (the default planner's, without its reason) and time
// (ms), a table that fits 100 columns for the shipped instances (tests/cli:
// bench_narrow_fits_100_columns).
constexpr int kNarrowDecimals = 1;  // of its milliseconds (the matrix: 3)
std::vector<TextTable::Column> narrow_columns(const PlannerInfo& first) {
  const std::string name(first.name);
  std::vector<TextTable::Column> columns = {{.header = "instance"},
                                            {.header = "buffers", .numeric = true},
                                            {.header = "load", .numeric = true},
                                            {.header = "arena", .numeric = true, .group = name},
                                            {.header = "gap", .numeric = true, .group = name}};
  if (name == kDefaultPlanner) columns.push_back({.header = "result", .group = name});
  columns.push_back({.header = "ms", .numeric = true, .group = name});
  return columns;
}

void write_matrix_csv(const std::string& path, const TextTable& matrix) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) throw CommandError(path + ": cannot write: " + std::strerror(errno), kExitFailure);
  matrix.print_csv(out);
  if (std::fclose(out) != 0) throw CommandError(path + ": cannot write: " + std::strerror(errno), kExitFailure);
}

void run_bench(const BenchArguments& args) {
  std::vector<const PlannerInfo*> selected;
  if (args.planners.empty()) {
    for (const PlannerInfo& p : planners()) {
      if (p.fast) selected.push_back(&p);
    }
  } else {
    selected = planner_list_or_throw(args.planners);
  }
  std::vector<Unreadable> unreadable;
  const std::vector<Instance> instances = collect_instances(args.inputs, &unreadable);
  std::vector<std::vector<Run>> all_runs;  // per instance, per planner: for --json
  const bool progress = args.progress || isatty(STDERR_FILENO);

  TextTable table(matrix_columns(selected));
  TextTable csv_table(matrix_columns(selected));  // --matrix-csv's, gaps as fractions
  TextTable narrow(narrow_columns(*selected.front()));
  const bool first_is_default = selected.front()->name == kDefaultPlanner;

  std::vector<double> log_ratio_sum(selected.size(), 0);
  std::vector<size_t> solved(selected.size(), 0);
  std::vector<double> total_seconds(selected.size(), 0);
  size_t total_buffers = 0;
  bool any_invalid = false;
  bool any_error = false;
  PlanOptions options;
  options.time_limit_seconds = args.time_limit_seconds.value_or(0);
  options.default_search_seconds = args.time_limit_seconds ? 0.0 : kDefaultSearchSeconds;

  for (size_t i = 0; i < instances.size(); ++i) {
    const Instance& instance = instances[i];
    total_buffers += instance.problem.size();
    std::vector<Run> runs(selected.size());
    double instance_seconds = 0;
    for (size_t k = 0; k < selected.size(); ++k) {
      const PlannerInfo& planner = *selected[k];
      const auto start = std::chrono::steady_clock::now();
      Run& run = runs[k];
      StatusOr<Plan> plan = Status(StatusCode::kInternal, "no planner ran");
      if (planner.name == kDefaultPlanner) {
        // run_planner says what the run ended in; plan_or_status answers as plan_with does.
        StatusOr<PlanningResult> planned = run_planner(planner.name, instance.problem, options);
        if (planned.ok()) {
          run.ending = std::string(plan_ending_name(planned->ending));
          plan = plan_or_status(planner.name, instance.problem, std::move(*planned));
        } else {
          plan = planned.status();
        }
      } else {
        plan = plan_with(planner.name, instance.problem, options);
      }
      run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      total_seconds[k] += run.seconds;
      instance_seconds += run.seconds;
      if (!plan.ok()) {
        const StatusCode code = plan.status().code();
        run.outcome = code == StatusCode::kUnimplemented      ? Outcome::kUnsupported
                      : code == StatusCode::kDeadlineExceeded ? Outcome::kTimeout
                                                              : Outcome::kError;
        if (run.outcome == Outcome::kError) {
          any_error = true;
          std::fprintf(stderr, "memplan: planner '%s' failed on %s: %s\n", std::string(planner.name).c_str(),
                       instance.name.c_str(), plan.status().to_string().c_str());
        }
        continue;
      }
      const ValidationResult validation = validate(instance.problem, *plan);
      if (validation.ok()) {
        run.outcome = Outcome::kValid;
        run.arena = plan->arena;
        if (instance.load > 0) {
          log_ratio_sum[k] += std::log(static_cast<double>(plan->arena) / static_cast<double>(instance.load));
          ++solved[k];
        }
      } else {
        run.outcome = Outcome::kInvalid;
        any_invalid = true;
        std::fprintf(stderr, "memplan: planner '%s' made an invalid plan for %s: %s\n",
                     std::string(planner.name).c_str(), instance.name.c_str(), validation.message.c_str());
      }
      if (k == 0 && !args.svg_dir.empty()) write_heap_map(args.svg_dir, instance, *plan, planner.name);
    }

    table.add_row(matrix_row(instance, runs, selected, args.csv));
    if (!args.matrix_csv.empty()) csv_table.add_row(matrix_row(instance, runs, selected, true));
    std::vector<std::string> narrow_row = {instance.name, std::to_string(instance.problem.size()),
                                           std::to_string(instance.load), arena_cell(runs[0]),
                                           gap_cell(runs[0], instance.load, false)};
    if (first_is_default) narrow_row.push_back(short_ending(runs[0].ending));
    narrow_row.push_back(milliseconds_cell(runs[0].seconds, kNarrowDecimals));
    narrow.add_row(std::move(narrow_row));
    all_runs.push_back(runs);
    if (progress) {
      std::fprintf(stderr, "[%zu/%zu] %s: %zu buffers, %s\n", i + 1, instances.size(), instance.name.c_str(),
                   instance.problem.size(), format_milliseconds(instance_seconds).c_str());
    }
  }

  auto geomean_gap = [&](size_t k) {
    return solved[k] == 0 ? std::nan("") : std::exp(log_ratio_sum[k] / static_cast<double>(solved[k])) - 1.0;
  };
  if (args.json) {
    using Json = nlohmann::ordered_json;
    Json doc;
    Json names = Json::array();
    for (const PlannerInfo* p : selected) names.push_back(std::string(p->name));
    doc["planners"] = names;
    Json rows = Json::array();
    for (size_t i = 0; i < instances.size(); ++i) {
      Json row;
      row["name"] = instances[i].name;
      row["path"] = instances[i].path;
      row["buffers"] = instances[i].problem.size();
      row["load"] = instances[i].load;
      Json cells = Json::object();
      for (size_t k = 0; k < selected.size(); ++k) {
        const Run& run = all_runs[i][k];
        Json cell;
        cell["outcome"] = outcome_name(run.outcome);
        if (run.outcome == Outcome::kValid) {
          cell["arena"] = run.arena;
          cell["gap"] = instances[i].load > 0 ? Json(gap(run.arena, instances[i].load)) : Json(nullptr);
        }
        cell["seconds"] = run.seconds;
        if (!run.ending.empty()) cell["result"] = run.ending;
        cells[std::string(selected[k]->name)] = std::move(cell);
      }
      row["runs"] = std::move(cells);
      rows.push_back(std::move(row));
    }
    doc["instances"] = std::move(rows);
    Json summary = Json::object();
    for (size_t k = 0; k < selected.size(); ++k) {
      const double g = geomean_gap(k);
      summary[std::string(selected[k]->name)] = {{"solved", solved[k]},
                                                 {"geomean_gap", std::isnan(g) ? Json(nullptr) : Json(g)},
                                                 {"total_seconds", total_seconds[k]}};
    }
    doc["summary"] = std::move(summary);
    Json bad = Json::array();
    for (const Unreadable& u : unreadable) bad.push_back({{"path", u.path}, {"error", u.error}});
    doc["unreadable"] = std::move(bad);
    std::fputs(doc.dump(2, ' ', false, Json::error_handler_t::replace).c_str(), stdout);
    std::fputc('\n', stdout);
  } else if (args.csv) {
    table.print_csv(stdout);
  } else {
    std::vector<std::string> summary = {"geomean gap, total time", std::to_string(total_buffers), ""};
    for (size_t k = 0; k < selected.size(); ++k) {
      summary.push_back("");
      summary.push_back(table_gap_summary(solved[k], geomean_gap(k)));
      if (selected[k]->name == kDefaultPlanner) summary.push_back("");
    }
    for (double seconds : total_seconds) summary.push_back(milliseconds_cell(seconds));
    table.add_rule();
    table.add_row(std::move(summary));
    if (args.narrow) {
      std::vector<std::string> narrow_summary = {"geomean gap, total time", std::to_string(total_buffers), "", "",
                                                 table_gap_summary(solved[0], geomean_gap(0))};
      if (first_is_default) narrow_summary.push_back("");
      narrow_summary.push_back(milliseconds_cell(total_seconds[0], kNarrowDecimals));
      narrow.add_rule();
      narrow.add_row(std::move(narrow_summary));
      narrow.print(stdout);
    } else {
      table.print(stdout);
    }
    std::printf(
        "\narena in bytes; gap = arena / load - 1 (0%% = optimal); ms = planning wall-clock time.\n"
        "geomean gap: over the instances a planner solved validly with load > 0.\n"
        "%s",
        std::find_if(selected.begin(), selected.end(),
                     [](const PlannerInfo* p) { return p->name == kDefaultPlanner; }) != selected.end()
            ? "result: what the default planner's run ended in (optimal: proven; best found: a gap may remain).\n"
            : "");
  }
  std::fflush(stdout);
  if (!args.matrix_csv.empty()) write_matrix_csv(args.matrix_csv, csv_table);

  if (any_invalid) throw CommandError("some plans were INVALID (see above): this is a memplan bug", kExitInternal);
  if (any_error) throw CommandError("some planners failed (see above)", kExitFailure);
  if (!unreadable.empty()) {
    throw CommandError(std::to_string(unreadable.size()) + " input(s) could not be read and were left out (see above)",
                       kExitFailure);
  }
}

}  // namespace

void register_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArguments>();
  CLI::App* command = app.add_subcommand("bench", "Run planners over many problems and tabulate arena, gap and time");
  command->add_option("inputs", args->inputs, "Problem CSV files, or directories scanned recursively for *.csv")
      ->required()
      ->type_name("FILE|DIR");
  command
      ->add_option("-p,--planners", args->planners,
                   "Comma-separated planners, in column order (default: every fast registered planner)")
      ->type_name("A,B,...");
  command->add_flag("--csv", args->csv, "Print CSV (gap as a fraction, no summary row) instead of an aligned table");
  command->add_flag("--json", args->json,
                    "Print JSON: planners, per instance the outcome, arena, gap and seconds per planner,\n"
                    "the summary per planner, and the inputs that could not be read");
  command->add_flag("--progress", args->progress,
                    "One progress line per instance on stderr (the default when stderr is a terminal)");
  command->add_flag("--narrow", args->narrow,
                    "Print the first planner's columns only (instance, buffers, load, arena, gap, result\n"
                    "without its reason, ms): a table that fits a terminal; --csv and --json keep every planner");
  command
      ->add_option("--matrix-csv", args->matrix_csv,
                   "Also write every planner's columns, as --csv prints them, to FILE")
      ->type_name("FILE");
  command
      ->add_option("-t,--time-limit", args->time_limit_seconds,
                   "Wall-clock budget per planner run for planners that can use more time. Unset: each\n"
                   "planner's default (the default planner: heuristics, then up to 1 s of exact search\n"
                   "where they leave a gap); 0: the default planner's heuristics alone")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--svg-dir", args->svg_dir,
                   "Write a heap map of the first planner's plan per instance to DIR/<instance>.svg")
      ->type_name("DIR");
  command->footer(
      "A file that cannot be read is reported and left out; the run goes on and exits 1.\n"
      "Every plan is checked by the validator. Cells: arena in bytes, INVALID (exit status 3),\n"
      "ERROR (planner failed, exit status 1), n/a (planner does not support the problem),\n"
      "timeout. The last row gives each planner's geometric-mean gap and total time.\n"
      "\n"
      "Examples:\n"
      "  memplan bench bench/data/dsa/minimalloc/challenging\n"
      "  memplan bench model_a.csv model_b.csv --planners portfolio,naive --csv > results.csv\n"
      "  memplan bench bench/data/dsa --svg-dir heapmaps\n"
      "  memplan bench bench/data/torch --narrow --matrix-csv planners.csv");
  command->callback([args] { run_bench(*args); });
}

}  // namespace memplan::cli
