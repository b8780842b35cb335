// trace_command.cc — `memplan trace`: run a command with the allocation tracer
// (libmemplan_trace.so) preloaded, then say what it recorded.
//
// The library is looked for, in order: --library; next to the memplan binary;
// in ../lib, ../lib64 and ../lib/<multiarch> beside it (an installed tree);
// in the build tree memplan was built in.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/trace.h"
#include "memplan/units.h"
#include "preload_launch.h"

namespace memplan::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLibraryName = "libmemplan_trace.so";

struct TraceArguments {
  std::string output_path;
  std::string library_path;
  std::string mark_signal;
  std::vector<std::string> command;
};

// The signals the tracer accepts (src/trace/preload/interpose.cc, parse_signal):
// a number, or USR1, USR2, HUP, WINCH with or without SIG. Checked here so
// that a typo is refused before the command runs, not ignored inside it.
void check_mark_signal_or_throw(const std::string& name) {
  if (name.empty()) return;
  if (name.find_first_not_of("0123456789") == std::string::npos) {
    if (name.size() < 4 && std::stoi(name) > 0 && std::stoi(name) < NSIG) return;
  } else {
    const std::string bare = name.rfind("SIG", 0) == 0 ? name.substr(3) : name;
    if (bare == "USR1" || bare == "USR2" || bare == "HUP" || bare == "WINCH") return;
  }
  throw CommandError("--mark-signal " + name +
                         ": not a signal this tracer can use (USR1, USR2, HUP, WINCH, "
                         "or a number from 1 to " +
                         std::to_string(NSIG - 1) + ")",
                     kExitFailure);
}

int run_trace(const TraceArguments& args) {
  if (args.command.empty()) {
    throw CommandError("no command to trace: memplan trace [--output FILE] -- COMMAND ARGS...", kExitUsage);
  }
  check_mark_signal_or_throw(args.mark_signal);
  check_output_path_or_throw(args.output_path, "--output");
#ifdef MEMPLAN_TRACE_PRELOAD_BUILD_PATH
  const char* build_path = MEMPLAN_TRACE_PRELOAD_BUILD_PATH;
#else
  const char* build_path = nullptr;
#endif
  const std::string library = find_preload_library(kLibraryName, args.library_path, build_path);
  const std::string output = args.output_path.empty() ? "" : fs::absolute(args.output_path).string();
  const auto [pid, exit_code] = run_with_preload(library, args.command, [&] {
    if (!output.empty()) setenv("MEMPLAN_TRACE_FILE", output.c_str(), 1);
    // Only this process traces; its descendants inherit LD_PRELOAD but not the role.
    setenv("MEMPLAN_TRACE_PID", std::to_string(getpid()).c_str(), 1);
    if (!args.mark_signal.empty()) setenv("MEMPLAN_MARK_SIGNAL", args.mark_signal.c_str(), 1);
  });
  const std::string path = output.empty() ? "memplan-" + std::to_string(pid) + ".trace" : output;
  StatusOr<Trace> trace = read_trace(path);
  if (!trace.ok()) {
    // 126/127: the command could not be run at all (the child said why); no trace is expected.
    if (exit_code != 126 && exit_code != 127) {
      std::fprintf(stderr, "memplan: the command left no readable trace: %s\n", trace.status().message().c_str());
    }
    return exit_code != 0 ? exit_code : kExitFailure;
  }
  const size_t marks = trace->mark_indices().size();
  const size_t events = trace->events.size() - marks;
  std::fprintf(stderr,
               "memplan: traced %zu allocation events and %zu marks on %zu thread(s) into %s "
               "(%s, %.1f bytes/event)%s\n",
               events, marks, trace->threads.size(), path.c_str(),
               format_bytes(static_cast<int64_t>(trace->file_bytes)).c_str(),
               trace->events.empty() ? 0.0 : static_cast<double>(trace->file_bytes) / trace->events.size(),
               trace->complete ? "" : "; incomplete: the process ended without running its exit handlers");
  if (trace->missed_events > 0) {
    std::fprintf(stderr, "memplan: %llu calls were made inside the tracer (from signal handlers) and not recorded\n",
                 static_cast<unsigned long long>(trace->missed_events));
  }
  return exit_code;
}

}  // namespace

void register_trace_command(CLI::App& app) {
  auto args = std::make_shared<TraceArguments>();
  CLI::App* command = app.add_subcommand("trace", "Run a command under the allocation tracer and write its trace");
  command->add_option("-o,--output", args->output_path, "Trace file to write (default: memplan-<pid>.trace)")
      ->type_name("FILE");
  command->add_option("--library", args->library_path, "The tracer library to preload (default: found beside memplan)")
      ->type_name("PATH");
  command
      ->add_option("--mark-signal", args->mark_signal,
                   "A signal that marks an iteration when sent to the command (USR1, USR2 or a number); "
                   "marks land where the program is when it arrives")
      ->type_name("SIGNAL");
  command->add_option("command", args->command, "The command and its arguments, after --")
      ->type_name("COMMAND ARGS...");
  command->footer(
      "The command runs with LD_PRELOAD=libmemplan_trace.so, which records every malloc, calloc,\n"
      "realloc, aligned allocation and free (C++ new and delete included) with its thread, time and\n"
      "order. Iterations are marked by calling memplan_mark() (see memplan/mark.h); from Python:\n"
      "  import ctypes; mark = ctypes.CDLL(None).memplan_mark\n"
      "Child processes are not traced. memplan exits with the command's exit status.\n"
      "\n"
      "Examples:\n"
      "  memplan trace --output run.trace -- python3 train.py\n"
      "  memplan trace-info run.trace\n"
      "  memplan extract run.trace --iteration 2 --output step.csv");
  command->callback([args] {
    const int exit_code = run_trace(*args);
    if (exit_code != 0)
      throw CommandError("the traced command exited with status " + std::to_string(exit_code), exit_code);
  });
}

}  // namespace memplan::cli
