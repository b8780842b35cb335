// commands.h — the subcommands of the `memplan` tool. Each lives in its own
// file in this folder and registers itself on the app in main.cc. A command's
// callback reports failure by throwing CommandError (message to stderr, exit
// code); everything else is printed to stdout.
#pragma once

#include <CLI/CLI.hpp>
#include <stdexcept>
#include <string>

namespace memplan::cli {

// Thrown by a command to end the program with `exit_code` after printing
// "memplan: <message>" to stderr.
struct CommandError : std::runtime_error {
  CommandError(std::string message, int exit_code = 1) : std::runtime_error(std::move(message)), exit_code(exit_code) {}
  int exit_code;
};

void register_planners_command(CLI::App& app);
void register_plan_command(CLI::App& app);
void register_validate_command(CLI::App& app);
void register_bound_command(CLI::App& app);
void register_bench_command(CLI::App& app);
void register_render_command(CLI::App& app);
void register_report_command(CLI::App& app);
void register_generate_command(CLI::App& app);
void register_trace_command(CLI::App& app);
void register_trace_info_command(CLI::App& app);
void register_extract_command(CLI::App& app);
void register_run_command(CLI::App& app);
void register_snapshot_command(CLI::App& app);
void register_predict_command(CLI::App& app);

}  // namespace memplan::cli
