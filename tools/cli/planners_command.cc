// planners_command.cc — `memplan planners`: the registry, one planner a line.
#include <cstdio>

#include "commands.h"
#include "memplan/planner.h"
#include "text_table.h"

namespace memplan::cli {
namespace {}  // namespace

void register_planners_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("planners", "List the registered planners with their form and a description");
  command->footer(
      "Forms: offsets places buffers at byte offsets directly; objects groups buffers into\n"
      "shared objects and stacks them; composite combines other planners or searches.\n"
      "Speed: fast planners are the default set of `memplan bench`; slow ones (exact search)\n"
      "run only when named. The default planner of `memplan plan` is marked with *.\n"
      "\n"
      "Example:\n"
      "  memplan planners");
  command->callback([] {
    TextTable table({{.header = "name"}, {.header = "form"}, {.header = "speed"}, {.header = "description"}});
    for (const PlannerInfo& p : planners()) {
      std::string name(p.name);
      if (p.name == kDefaultPlanner) name += " *";
      table.add_row({name, std::string(plan_form_name(p.form)), p.fast ? "fast" : "slow", std::string(p.description)});
    }
    table.print(stdout);
  });
}

}  // namespace memplan::cli
