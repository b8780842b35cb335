// run_command.cc — `memplan run`: run a command with the replay allocator
// (libmemplan_replay.so) preloaded, so that its iterations are learnt,
// planned and served from slabs.
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

namespace memplan::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kReplayLibraryName = "libmemplan_replay.so";

struct RunArguments {
  std::string library_path;
  int64_t profile_iterations = 0;  // 0: the library's default (MEMPLAN_PROFILE_ITERATIONS)
  std::string planner;
  bool stats = false;
  std::vector<std::string> command;
};

std::string find_replay_library(const std::string& requested) {
  std::error_code error;
  if (!requested.empty()) {
    if (!fs::is_regular_file(requested, error)) throw CommandError("--library: no file '" + requested + "'");
    return fs::absolute(requested).string();
  }
  std::vector<fs::path> candidates;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path dir = self.parent_path();
    for (const char* relative : {".", "../lib", "../lib64",
#if defined(__x86_64__)
                                 "../lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
                                 "../lib/aarch64-linux-gnu",
#endif
                                 }) {
      candidates.push_back(dir / relative / kReplayLibraryName);
    }
  }
#ifdef MEMPLAN_REPLAY_PRELOAD_BUILD_PATH
  candidates.emplace_back(MEMPLAN_REPLAY_PRELOAD_BUILD_PATH);
#endif
  for (const fs::path& candidate : candidates) {
    if (fs::is_regular_file(candidate, error)) return fs::canonical(candidate, error).string();
  }
  std::string tried;
  for (const fs::path& candidate : candidates) tried += "\n  " + candidate.lexically_normal().string();
  throw CommandError(std::string("cannot find ") + kReplayLibraryName + "; looked in:" + tried +
                     "\n(pass --library PATH)");
}

// Runs the command with the replay allocator preloaded; returns its exit
// status (128 + signal if a signal ended it), like a shell.
int run_replayed(const RunArguments& args, const std::string& library) {
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
    if (args.profile_iterations > 0) {
      setenv("MEMPLAN_PROFILE_ITERATIONS", std::to_string(args.profile_iterations).c_str(), 1);
    }
    if (!args.planner.empty()) setenv("MEMPLAN_PLANNER", args.planner.c_str(), 1);
    if (args.stats) setenv("MEMPLAN_STATS", "1", 1);
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
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

void register_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArguments>();
  CLI::App* command =
      app.add_subcommand("run", "Run a command with the replay allocator: learn its iterations, serve them from slabs");
  command->add_option("--profile-iterations", args->profile_iterations,
                      "Iterations that must repeat (per thread) before they are planned (default 2)")
      ->type_name("K")
      ->check(CLI::PositiveNumber);
  command->add_option("--planner", args->planner, "Planner used at iteration boundaries (default portfolio)")
      ->type_name("NAME");
  command->add_flag("--stats", args->stats, "Print the replay allocator's statistics when the command exits");
  command->add_option("--library", args->library_path, "The replay library to preload (default: found beside memplan)")
      ->type_name("PATH");
  command->add_option("command", args->command, "The command and its arguments, after --")->type_name("COMMAND ARGS...");
  command->footer(
      "The command runs with LD_PRELOAD=libmemplan_replay.so, which interposes malloc, free, calloc,\n"
      "realloc and the aligned allocations. The program marks its iterations by calling memplan_mark()\n"
      "(memplan/mark.h; from Python: ctypes.CDLL(None).memplan_mark). Each thread's requests are\n"
      "profiled for K iterations, planned at an iteration boundary, and then served from a slab;\n"
      "requests the plan did not foresee go to glibc's allocator. Every MEMPLAN_* knob of\n"
      "docs/runtime.md applies. Child processes inherit the library and learn on their own.\n"
      "memplan exits with the command's exit status.\n"
      "\n"
      "Examples:\n"
      "  memplan run -- python3 infer.py\n"
      "  memplan run --profile-iterations 3 --stats -- ./train");
  command->callback([args] {
    if (args->command.empty()) throw CommandError("no command to run: memplan run [--profile-iterations K] -- COMMAND ARGS...");
    const std::string library = find_replay_library(args->library_path);
    const int exit_code = run_replayed(*args, library);
    if (exit_code != 0) throw CommandError("the command exited with status " + std::to_string(exit_code), exit_code);
  });
}

}  // namespace memplan::cli
