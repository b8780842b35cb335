// render_command.cc — `memplan render`: draw a plan as an SVG heap map. With
// no plan file, plans the problem first (with --planner).
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/planner.h"
#include "memplan/render.h"
#include "memplan/validate.h"

namespace memplan::cli {
namespace {

struct RenderArguments {
  std::string problem_path;
  std::string plan_path;  // empty: plan with `planner`
  std::string svg_path;
  std::string planner{kDefaultPlanner};
  std::string title;
  int width = RenderOptions{}.width;
  int height = RenderOptions{}.height;
};

void run_render(const RenderArguments& args) {
  check_output_path_or_throw(args.svg_path, "--svg");
  RenderOptions options;
  const Problem problem = read_problem_or_throw(args.problem_path, &options.operators);
  options.width = args.width;
  options.height = args.height;
  options.title = args.title.empty() ? std::filesystem::path(args.problem_path).stem().string() : args.title;
  Plan plan;
  if (args.plan_path.empty()) {
    const PlannerInfo& planner = planner_or_throw(args.planner);
    StatusOr<Plan> planned = plan_with(planner.name, problem);
    throw_if_error(planned.status(), "planner '" + args.planner + "' failed on " + args.problem_path);
    plan = std::move(planned).value();
    options.planner = args.planner;
  } else {
    plan = read_plan_or_throw(problem, args.plan_path);
    options.planner = std::filesystem::path(args.plan_path).filename().string();
  }
  // An invalid plan is still drawn, since seeing the overlap is the point.
  const ValidationResult validation = validate(problem, plan);
  if (!validation.ok()) std::fprintf(stderr, "memplan: warning: the plan is invalid: %s\n", validation.message.c_str());

  const std::string svg = render_svg(problem, plan, options);
  if (args.svg_path == "-") {
    std::fwrite(svg.data(), 1, svg.size(), stdout);
  } else {
    write_file_or_throw(args.svg_path, svg);
    std::printf("wrote %s (%zu buffers, %zu bytes)\n", args.svg_path.c_str(), problem.size(), svg.size());
  }
}

}  // namespace

void register_render_command(CLI::App& app) {
  auto args = std::make_shared<RenderArguments>();
  CLI::App* command = app.add_subcommand("render", "Draw a plan as an SVG heap map (time on x, offset on y)");
  command->add_option("problem", args->problem_path, "Problem CSV")->required()->type_name("PROBLEM.csv");
  command->add_option("plan", args->plan_path, "Plan CSV to draw (default: plan the problem with --planner)")
      ->type_name("PLAN.csv");
  command->add_option("-s,--svg", args->svg_path, "Where to write the SVG ('-' for stdout)")
      ->required()
      ->type_name("OUT.svg");
  command->add_option("-p,--planner", args->planner, "Planner to run when no plan file is given")
      ->type_name("NAME")
      ->capture_default_str();
  command->add_option("--title", args->title, "Heading of the picture (default: the problem file's name)")
      ->type_name("TEXT");
  command->add_option("--width", args->width, "Picture width in pixels")
      ->type_name("PX")
      ->check(CLI::Range(200, 100000))
      ->capture_default_str();
  command->add_option("--height", args->height, "Picture height in pixels")
      ->type_name("PX")
      ->check(CLI::Range(160, 100000))
      ->capture_default_str();
  command->footer(
      "One rectangle per buffer, coloured by a hash of its id, with a tooltip (id, lifetime,\n"
      "size, offset). Dashed line: the load; solid line: the arena. Buffers smaller than half\n"
      "a pixel in both directions are drawn merged in grey, which keeps a 60,000-buffer map\n"
      "near 10 MB. An invalid plan is drawn anyway, with a warning.\n"
      "\n"
      "Examples:\n"
      "  memplan render model.csv plan.csv --svg heap.svg\n"
      "  memplan render model.csv --planner greedy_by_size --svg heap.svg --width 1600 --height 900");
  command->callback([args] { run_render(*args); });
}

}  // namespace memplan::cli
