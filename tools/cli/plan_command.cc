// plan_command.cc — `memplan plan`: read a problem, run one planner, check the
// plan with the validator, report it and optionally write it.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/exact.h"
#include "memplan/json.h"
#include "memplan/planner.h"
#include "memplan/units.h"
#include "memplan/validate.h"

namespace memplan::cli {
namespace {

struct PlanArguments {
  std::string problem_path;
  std::string planner{kDefaultPlanner};
  std::string capacity;   // bytes, with optional unit; empty: none
  std::string alignment;  // bytes; empty: the file's alignments only
  double time_limit_seconds = 0;
  std::string output_path;
  bool json = false;
};

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void run_plan(const PlanArguments& args) {
  const PlannerInfo& planner = planner_or_throw(args.planner);
  Problem problem = read_problem_or_throw(args.problem_path);
  if (!args.capacity.empty()) problem.capacity = byte_size(args.capacity);
  if (!args.alignment.empty()) problem.alignment = power_of_two_byte_size(args.alignment, "--alignment");

  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  // The exact solver runs directly, so that its outcome, proven lower bound
  // and search statistics can be reported. Portfolio with an explicit time
  // limit hands the time that is left over to it (it stops at once when the
  // portfolio's plan already meets the load).
  std::optional<ExactResult> exact;
  StatusOr<Plan> result = Status(StatusCode::kInternal, "no planner ran");
  if (planner.name == "exact") {
    ExactOptions exact_options;
    exact_options.time_limit_seconds = args.time_limit_seconds;
    StatusOr<ExactResult> solved = problem.capacity ? solve_decision(problem, *problem.capacity, exact_options)
                                                    : solve_minimize(problem, exact_options);
    throw_if_error(solved.status(), "planner 'exact' failed on " + args.problem_path);
    exact = *solved;
    if (exact->outcome == ExactOutcome::kInfeasible) {
      throw CommandError("proven: no plan fits in capacity " + bytes_with_units(*problem.capacity) + " (" +
                             std::to_string(exact->stats.nodes) + " nodes, " + format_milliseconds(elapsed()) + ")",
                         kExitDoesNotFit);
    }
    if (!exact->plan) {
      throw CommandError("timed out after " + format_milliseconds(elapsed()) + " without a plan" +
                             (problem.capacity ? " that fits in " + bytes_with_units(*problem.capacity) : std::string()) +
                             "; proven lower bound " + bytes_with_units(exact->lower_bound),
                         kExitDoesNotFit);
    }
    result = *exact->plan;
  } else {
    PlanOptions options;
    options.time_limit_seconds = args.time_limit_seconds;
    result = plan_with(planner.name, problem, options);
    const double left = args.time_limit_seconds - elapsed();
    if (result.ok() && planner.name == kDefaultPlanner && left > 0 && result->arena > load(problem)) {
      ExactOptions exact_options;
      exact_options.time_limit_seconds = left;
      exact_options.capacity = result->arena;
      exact_options.start_plan = &*result;  // improve the portfolio's plan (windowed on large problems)
      StatusOr<ExactResult> solved = solve_minimize(problem, exact_options);
      if (solved.ok()) {
        exact = *solved;
        if (exact->plan && exact->plan->arena < result->arena) result = *exact->plan;
      }
    }
  }
  const double seconds = elapsed();
  if (!result.ok() && result.status().code() == StatusCode::kInfeasible && problem.capacity) {
    throw CommandError("no plan fits in capacity " + bytes_with_units(*problem.capacity) + ": " +
                           result.status().message(),
                       kExitDoesNotFit);
  }
  throw_if_error(result.status(), "planner '" + args.planner + "' failed on " + args.problem_path);
  const Plan& plan = *result;

  // plan_with only returns plans within the capacity (else kCapacityExceeded,
  // exit 2 above), so the validator checks everything, capacity included.
  const ValidationResult validation = validate(problem, plan);
  if (!validation.ok()) {
    throw CommandError("internal error: planner '" + args.planner + "' made an invalid plan for " +
                           args.problem_path + ": " + validation.message + " (please report this)",
                       kExitInternal);
  }
  const int64_t load_bytes = load(problem);

  if (!args.output_path.empty()) {
    const bool as_json = ends_with(args.output_path, ".json");
    write_file_or_throw(args.output_path,
                        as_json ? format_plan_json(problem, plan, {std::string(planner.name), seconds, load_bytes})
                                : format_plan_csv(problem, plan));
  }

  if (args.json) {
    std::fputs(format_plan_json(problem, plan, {std::string(planner.name), seconds, load_bytes}).c_str(), stdout);
    std::fputc('\n', stdout);
  } else {
    std::printf("problem   %s\n", args.problem_path.c_str());
    std::printf("planner   %s\n", std::string(planner.name).c_str());
    std::printf("buffers   %zu\n", problem.size());
    std::printf("load      %s\n", bytes_with_units(load_bytes).c_str());
    std::printf("arena     %s\n", bytes_with_units(plan.arena).c_str());
    std::printf("gap       %s\n", percent_gap(plan.arena, load_bytes).c_str());
    if (problem.capacity) {
      std::printf("capacity  %s, fits\n", bytes_with_units(*problem.capacity).c_str());
    }
    if (exact) {
      std::printf("exact     %s, proven lower bound %s, %lld nodes, %lld backtracks\n",
                  std::string(exact_outcome_name(exact->outcome)).c_str(), bytes_with_units(exact->lower_bound).c_str(),
                  static_cast<long long>(exact->stats.nodes), static_cast<long long>(exact->stats.backtracks));
    }
    std::printf("time      %s\n", format_milliseconds(seconds).c_str());
    if (!args.output_path.empty()) std::printf("wrote     %s\n", args.output_path.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

void register_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArguments>();
  CLI::App* command = app.add_subcommand("plan", "Plan a problem with one planner, check the plan, report arena, load and gap");
  command->add_option("problem", args->problem_path, "Problem CSV: id,lower,upper,size[,alignment][,offset]")
      ->required()
      ->type_name("PROBLEM.csv");
  command->add_option("-p,--planner", args->planner, "Planner to run (see `memplan planners`)")
      ->type_name("NAME")
      ->capture_default_str();
  command->add_option("-c,--capacity", args->capacity,
                      "The arena must fit in this many bytes; exit status 2 if it does not")
      ->type_name("BYTES")
      ->check(byte_size_validator());
  command->add_option("-a,--alignment", args->alignment,
                      "Default alignment of every buffer (a power of two; buffers keep larger ones)")
      ->type_name("BYTES")
      ->check(byte_size_validator());
  command->add_option("-t,--time-limit", args->time_limit_seconds,
                      "Wall-clock budget for planners that can use more time (0: the planner's default);\n"
                      "with the default planner, time left after the heuristics goes to the exact solver")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  command->add_option("-o,--output", args->output_path,
                      "Write the plan: CSV (id,lower,upper,size[,alignment],offset), or JSON if the name ends in .json")
      ->type_name("PLAN.csv");
  command->add_flag("--json", args->json, "Print the plan as JSON on stdout instead of the summary");
  command->footer(
      "Byte sizes take a unit: 4096, 64K, 64KiB, 1.5M, 2GiB (binary), 2KB, 3MB, 1GB (decimal).\n"
      "Gap = arena / load - 1: 0% means the plan is provably optimal.\n"
      "Exit status: 0 planned; 1 bad input or planner error; 2 does not fit --capacity;\n"
      "3 the planner made an invalid plan (a bug).\n"
      "\n"
      "Examples:\n"
      "  memplan plan model.csv\n"
      "  memplan plan model.csv --planner greedy_by_size --capacity 1MiB --output plan.csv\n"
      "  memplan plan model.csv --json > plan.json");
  command->callback([args] { run_plan(*args); });
}

}  // namespace memplan::cli
