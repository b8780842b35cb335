// bound_command.cc — `memplan bound`: lower bounds on the arena of a problem
// and the numbers that describe its size.
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "inputs.h"
#include "memplan/bounds.h"

namespace memplan::cli {
namespace {

void run_bound(const std::string& problem_path, bool json) {
  const Problem problem = read_problem_or_throw(problem_path);
  const Bounds bounds = compute_bounds(problem);
  if (json) {
    nlohmann::ordered_json doc;
    doc["problem"] = problem_path;
    doc["buffers"] = problem.size();
    doc["total_size"] = bounds.total_size;
    doc["max_live_buffers"] = bounds.max_live_count;
    doc["load"] = bounds.load;
    doc["load_tick"] = bounds.load_tick;
    doc["positional_maximums"] = bounds.positional_maximums;
    std::puts(doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return;
  }
  std::printf("problem              %s\n", problem_path.c_str());
  std::printf("buffers              %zu\n", problem.size());
  std::printf("total size           %s\n", bytes_with_units(bounds.total_size).c_str());
  std::printf("max live buffers     %zu\n", bounds.max_live_count);
  std::printf("load                 %s\n", bytes_with_units(bounds.load).c_str());
  std::printf("load tick            %lld\n", static_cast<long long>(bounds.load_tick));
  std::printf("positional maximums  %s\n", bytes_with_units(bounds.positional_maximums).c_str());
}

}  // namespace

void register_bound_command(CLI::App& app) {
  auto problem_path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand("bound", "Print lower bounds on the arena and the size of a problem");
  command->add_option("problem", *problem_path, "Problem CSV; - for standard input")
      ->required()
      ->type_name("PROBLEM.csv");
  command->add_flag("--json", *json,
                    "Print the bounds as one JSON object (bytes; the same keys as the text, in snake_case)");
  command->footer(
      "load: the most bytes live at one tick (reached at the load tick); no plan's arena is\n"
      "smaller. positional maximums: a bound for the shared-objects form only (the sum over\n"
      "k of the largest k-th biggest live size at any tick); it is >= load. total size: the\n"
      "arena of a plan without reuse, before alignment padding.\n"
      "\n"
      "Example:\n"
      "  memplan bound model.csv");
  command->callback([problem_path, json] { run_bound(*problem_path, *json); });
}

}  // namespace memplan::cli
