// trace_command.cc — `memplan trace`: run a command with the allocation tracer
// (libmemplan_trace.so) preloaded, then say what it recorded.
//
// The library is looked for, in order: --library; next to the memplan binary;
// in ../lib, ../lib64 and ../lib/<multiarch> beside it (an installed tree);
// in the build tree memplan was built in.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/trace.h"
#include "memplan/units.h"

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

std::string find_library(const std::string& requested) {
  std::error_code error;
  if (!requested.empty()) {
    if (!fs::is_regular_file(requested, error)) throw CommandError("--library: no file '" + requested + "'");
    return fs::absolute(requested).string();
  }
  std::vector<fs::path> candidates;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path dir = self.parent_path();
    candidates.push_back(dir / kLibraryName);
    candidates.push_back(dir / ".." / "lib" / kLibraryName);
    candidates.push_back(dir / ".." / "lib64" / kLibraryName);
#if defined(__x86_64__)
    candidates.push_back(dir / ".." / "lib" / "x86_64-linux-gnu" / kLibraryName);
#elif defined(__aarch64__)
    candidates.push_back(dir / ".." / "lib" / "aarch64-linux-gnu" / kLibraryName);
#endif
  }
#ifdef MEMPLAN_TRACE_PRELOAD_BUILD_PATH
  candidates.emplace_back(MEMPLAN_TRACE_PRELOAD_BUILD_PATH);
#endif
  for (const fs::path& candidate : candidates) {
    if (fs::is_regular_file(candidate, error)) return fs::canonical(candidate, error).string();
  }
  std::string tried;
  for (const fs::path& candidate : candidates) tried += "\n  " + candidate.lexically_normal().string();
  throw CommandError(std::string("cannot find ") + kLibraryName + "; looked in:" + tried +
                     "\n(pass --library PATH)");
}

// Runs the command with the tracer preloaded; returns its pid and exit status
// (128 + signal if a signal ended it), like a shell.
std::pair<pid_t, int> run_traced(const TraceArguments& args, const std::string& library, const std::string& output) {
  // Like system(): while the command runs, ^C and ^\ are the command's business.
  struct sigaction ignore {}, saved_int {}, saved_quit {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, &saved_int);
  sigaction(SIGQUIT, &ignore, &saved_quit);
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) throw CommandError(std::string("fork failed: ") + std::strerror(errno));
  if (child == 0) {
    sigaction(SIGINT, &saved_int, nullptr);
    sigaction(SIGQUIT, &saved_quit, nullptr);
    const char* existing = std::getenv("LD_PRELOAD");
    const std::string preload = existing && *existing ? library + ":" + existing : library;
    setenv("LD_PRELOAD", preload.c_str(), 1);
    if (!output.empty()) setenv("MEMPLAN_TRACE_FILE", output.c_str(), 1);
    // Only this process traces; its descendants inherit LD_PRELOAD but not the role.
    setenv("MEMPLAN_TRACE_PID", std::to_string(getpid()).c_str(), 1);
    if (!args.mark_signal.empty()) setenv("MEMPLAN_MARK_SIGNAL", args.mark_signal.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "memplan: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &saved_int, nullptr);
  sigaction(SIGQUIT, &saved_quit, nullptr);
  return {child, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

int run_trace(const TraceArguments& args) {
  if (args.command.empty()) throw CommandError("no command to trace: memplan trace [--output FILE] -- COMMAND ARGS...");
  const std::string library = find_library(args.library_path);
  const std::string output = args.output_path.empty() ? "" : fs::absolute(args.output_path).string();
  const auto [pid, exit_code] = run_traced(args, library, output);
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
  command->add_option("--mark-signal", args->mark_signal,
                      "A signal that marks an iteration when sent to the command (USR1, USR2 or a number); "
                      "marks land where the program is when it arrives")
      ->type_name("SIGNAL");
  command->add_option("command", args->command, "The command and its arguments, after --")->type_name("COMMAND ARGS...");
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
    if (exit_code != 0) throw CommandError("the traced command exited with status " + std::to_string(exit_code), exit_code);
  });
}

}  // namespace memplan::cli
