// report_command.cc — `memplan report`: one self-contained HTML page with the
// heap maps of one or more plans of a problem (render_html_report). With no
// plan file, plans the problem first (with --planner); with several, draws
// them side by side.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string_view>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/csv.h"
#include "memplan/planner.h"
#include "memplan/render.h"
#include "memplan/validate.h"

namespace memplan::cli {
namespace {

struct ReportArguments {
  std::string problem_path;
  std::vector<std::string> plan_paths;
  std::string html_path;
  // Planners to run, "a,b,c"; used when no plan file is given or when the
  // option is given explicitly (`planner_given`).
  std::string planner{kDefaultPlanner};
  bool planner_given = false;
  std::string title;
  int peak_rows = HtmlReportOptions{}.peak_rows;
};

void run_report(const ReportArguments& args) {
  check_output_path_or_throw(args.html_path, "--html");
  const auto stdin_reads =
      std::count(args.plan_paths.begin(), args.plan_paths.end(), std::string("-")) + (args.problem_path == "-" ? 1 : 0);
  if (stdin_reads > 1) throw CommandError("standard input ('-') can be read only once", kExitFailure);
  const std::string text = read_input_or_throw(args.problem_path);
  const std::string source = args.problem_path == "-" ? "<stdin>" : args.problem_path;
  StatusOr<Problem> parsed = parse_problem_csv(text, source);
  throw_if_error(parsed.status());
  const Problem problem = std::move(parsed).value();

  HtmlReportOptions options;
  options.title = !args.title.empty()        ? args.title
                  : args.problem_path == "-" ? std::string("stdin")
                                             : std::filesystem::path(args.problem_path).stem().string();
  options.operators = operator_column(text, problem.size());
  options.peak_rows = args.peak_rows;

  std::vector<NamedPlan> plans;
  if (args.plan_paths.empty() || args.planner_given) {
    for (const PlannerInfo* planner : planner_list_or_throw(args.planner)) {
      StatusOr<Plan> planned = plan_with(planner->name, problem);
      throw_if_error(planned.status(), "planner '" + std::string(planner->name) + "' failed on " + source);
      plans.push_back({.name = std::string(planner->name), .plan = std::move(planned).value()});
    }
  }
  for (const std::string& path : args.plan_paths) {
    plans.push_back({.name = path == "-" ? "stdin" : std::filesystem::path(path).filename().string(),
                     .plan = read_plan_or_throw(problem, path)});
  }
  // Invalid plans are drawn (seeing the overlap is the point), with a warning
  // here and the validator's message on the page.
  for (const NamedPlan& named : plans) {
    const ValidationResult validation = validate(problem, named.plan);
    if (!validation.ok()) {
      std::fprintf(stderr, "memplan: warning: plan '%s' is invalid: %s\n", named.name.c_str(),
                   validation.message.c_str());
    }
  }

  const std::string html = render_html_report(problem, plans, options);
  if (args.html_path == "-") {
    std::fwrite(html.data(), 1, html.size(), stdout);
  } else {
    write_file_or_throw(args.html_path, html);
    std::printf("wrote %s (%zu buffers, %zu plan%s, %zu bytes)\n", args.html_path.c_str(), problem.size(), plans.size(),
                plans.size() == 1 ? "" : "s", html.size());
  }
}

}  // namespace

void register_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArguments>();
  CLI::App* command =
      app.add_subcommand("report", "Write an interactive HTML heap map of one or more plans (zoom, hover, search)");
  command->add_option("problem", args->problem_path, "Problem CSV ('-' for stdin)")
      ->required()
      ->type_name("PROBLEM.csv");
  command
      ->add_option("plans", args->plan_paths,
                   "Plans to draw side by side, CSV or JSON (default: plan the problem with --planner)")
      ->type_name("PLAN");
  command->add_option("-o,--html", args->html_path, "Where to write the HTML page ('-' for stdout)")
      ->required()
      ->type_name("OUT.html");
  CLI::Option* planner = command
                             ->add_option("-p,--planner", args->planner,
                                          "Planners to run, comma-separated (default: when no plan file is given)")
                             ->type_name("NAME[,NAME...]")
                             ->capture_default_str();
  command->add_option("--title", args->title, "Heading of the page (default: the problem file's name)")
      ->type_name("TEXT");
  command->add_option("--peak-rows", args->peak_rows, "Rows of the table of largest buffers at the peak")
      ->type_name("N")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  command->footer(
      "One HTML file with everything inside (no network; opens from file://): a canvas heap\n"
      "map per plan (wheel zooms time, shift+wheel zooms bytes, drag pans), a tooltip per\n"
      "buffer (id, size, lifetime, offset, operator), search by id or operator, the live\n"
      "bytes under each map with load and arena lines, and the largest buffers live at the\n"
      "peak. Several plans (files, planners or both) share one view and one byte scale,\n"
      "so they compare at a glance. A problem CSV with an `operator` column names each\n"
      "buffer's operator. Invalid plans are drawn too.\n"
      "\n"
      "Examples:\n"
      "  memplan report model.csv --html report.html\n"
      "  memplan report model.csv greedy.csv portfolio.json --html compare.html\n"
      "  memplan report model.csv --planner naive,greedy_by_size,portfolio --html planners.html");
  command->callback([args, planner] {
    args->planner_given = planner->count() > 0;
    run_report(*args);
  });
}

}  // namespace memplan::cli
