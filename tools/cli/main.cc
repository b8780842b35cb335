// main.cc — the `memplan` command-line tool: builds the app, registers every
// subcommand (one file each, declared in commands.h), and turns errors into
// messages and exit codes (exit_codes.h). Adding a subcommand: its file, its
// declaration in commands.h, one register line below.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"

int main(int argc, char** argv) {
  CLI::App app{
      "memplan plans the memory of deep-learning tensors: it places buffers (a size and a\n"
      "half-open lifetime [lower, upper) in ticks each) at byte offsets in one arena, as\n"
      "small as it can, and says how far the arena is from the load (the most bytes live\n"
      "at one tick, a lower bound on every plan).",
      "memplan"};
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  memplan planners\n"
      "  memplan plan model.csv --planner greedy_by_size --output plan.csv\n"
      "  memplan validate model.csv plan.csv\n"
      "  memplan bench bench/data/dsa --planners portfolio,naive\n"
      "  memplan render model.csv plan.csv --svg heap.svg\n"
      "  memplan report model.csv plan.csv --html report.html\n"
      "  memplan snapshot snapshot.pickle --json\n"
      "  memplan predict --capacity 24GiB -- python3 train.py\n"
      "Run `memplan COMMAND --help` for a command's options.\n"
      "\n"
      "Exit status: 0 success; 1 bad input or failure (including an invalid plan given to\n"
      "`validate`); 2 proven: no plan fits the capacity; 3 internal error (a planner made an\n"
      "invalid plan); 4 unknown: no plan within the capacity found, none proven impossible;\n"
      "100 usage error (a wrong command line); 130 interrupted.");

  memplan::cli::register_planners_command(app);
  memplan::cli::register_plan_command(app);
  memplan::cli::register_validate_command(app);
  memplan::cli::register_bound_command(app);
  memplan::cli::register_bench_command(app);
  memplan::cli::register_render_command(app);
  memplan::cli::register_report_command(app);
  memplan::cli::register_generate_command(app);
  memplan::cli::register_trace_command(app);
  memplan::cli::register_trace_info_command(app);
  memplan::cli::register_extract_command(app);
  memplan::cli::register_run_command(app);
  memplan::cli::register_snapshot_command(app);
  memplan::cli::register_predict_command(app);

  app.set_version_flag("--version", std::string("memplan ") + MEMPLAN_VERSION);

  // A first word that is no subcommand: say so, and suggest the nearest one
  // (CLI11 alone would report it as an unexpected extra argument).
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::string nearest = memplan::nearest_name(argv[1], names);
      std::fprintf(stderr, "memplan: unknown command '%s'%s; run `memplan --help` for the list\n", argv[1],
                   nearest.empty() ? "" : ("; did you mean '" + nearest + "'?").c_str());
      return memplan::cli::kExitUsage;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help) and has a code per kind of
    // error; memplan has one for every usage error (exit_codes.h).
    const int code = app.exit(e);
    return code == 0 ? 0 : memplan::cli::kExitUsage;
  } catch (const memplan::cli::CommandError& e) {
    std::fprintf(stderr, "memplan: %s\n", e.what());
    return e.exit_code;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "memplan: out of memory\n");
    return memplan::cli::kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memplan: internal error: %s (please report this)\n", e.what());
    return memplan::cli::kExitInternal;
  }
  return 0;
}
