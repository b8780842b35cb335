// run_command.cc — `memplan run`: run a command with the replay allocator
// (libmemplan_replay.so) preloaded, so that its iterations are learnt,
// planned and served from slabs.
//
// The library is looked for, in order: --library; next to the memplan binary;
// in ../lib, ../lib64 and ../lib/<multiarch> beside it (an installed tree);
// in the build tree memplan was built in.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/pool.h"
#include "memplan/replay_config.h"
#include "preload_launch.h"

namespace memplan::cli {
namespace {

constexpr const char* kReplayLibraryName = "libmemplan_replay.so";

struct RunArguments {
  std::string library_path;
  int64_t profile_iterations = 0;  // 0: the library's default (MEMPLAN_PROFILE_ITERATIONS)
  std::string planner;
  bool stats = false;
  std::string plans;       // MEMPLAN_PLANS
  std::string save_plans;  // MEMPLAN_SAVE_PLANS
  std::vector<std::string> command;
};

// The library's knobs for this run, set in the child before exec.
void set_run_environment(const RunArguments& args) {
  if (args.profile_iterations > 0) {
    setenv("MEMPLAN_PROFILE_ITERATIONS", std::to_string(args.profile_iterations).c_str(), 1);
  }
  if (!args.planner.empty()) setenv("MEMPLAN_PLANNER", args.planner.c_str(), 1);
  if (args.stats) setenv("MEMPLAN_STATS", "1", 1);
  if (!args.plans.empty()) setenv("MEMPLAN_PLANS", args.plans.c_str(), 1);
  if (!args.save_plans.empty()) setenv("MEMPLAN_SAVE_PLANS", args.save_plans.c_str(), 1);
}

// The drop-in's backing allocator in this build: mimalloc when memplan was
// built with it (the drop-in's default then, MEMPLAN_BACKING in
// replay_interpose.cc), else the next malloc in the lookup order.
std::string backing_text() {
#ifdef MEMPLAN_MIMALLOC_SONAME
  return "in this build mimalloc\n(" MEMPLAN_MIMALLOC_SONAME
         ", loaded privately; MEMPLAN_BACKING=next: the next malloc, glibc's)";
#else
  return "in this build the\nnext malloc in the lookup order (glibc's; memplan was built without mimalloc)";
#endif
}

// Every knob of the runtime (replay_knobs(), then pool_knobs()), one per
// entry: name, [default], type, and its help wrapped at 100 columns below.
std::string knob_lines() {
  std::string out;
  std::vector<memplan::ReplayKnob> knobs(memplan::replay_knobs().begin(), memplan::replay_knobs().end());
  knobs.insert(knobs.end(), memplan::pool_knobs().begin(), memplan::pool_knobs().end());
  for (const memplan::ReplayKnob& knob : knobs) {
    out += "  " + std::string(knob.variable) + " [" + knob.default_value + "] " + knob.type + "\n";
    std::string line = "      ";
    size_t start = 0;
    const std::string_view text = knob.description;
    while (start < text.size()) {
      size_t end = text.find(' ', start);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view word = text.substr(start, end - start);
      if (line.size() > 6 && line.size() + 1 + word.size() > 100) {
        out += line + "\n";
        line = "      ";
      }
      if (line.size() > 6) line += ' ';
      line += word;
      start = end + 1;
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

void register_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArguments>();
  CLI::App* command =
      app.add_subcommand("run", "Run a command with the replay allocator: learn its iterations, serve them from slabs");
  command
      ->add_option("--profile-iterations", args->profile_iterations,
                   "Iterations that must repeat (per thread) before they are planned (default " +
                       std::to_string(memplan::ReplayConfig{}.profile_iterations) + ")")
      ->type_name("K")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--planner", args->planner,
                   "Planner used at iteration boundaries (default " + memplan::ReplayConfig{}.planner + ")")
      ->type_name("NAME");
  command->add_flag("--stats", args->stats, "Print the replay allocator's statistics when the command exits");
  command
      ->add_option("--plans", args->plans,
                   "Serve plans from this plan file from the first iteration (from an earlier --save-plans "
                   "run of the same command); a file of another program is ignored with one line")
      ->type_name("FILE")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--save-plans", args->save_plans,
                   "Write what the command's threads learnt to this plan file when it exits (it may be the "
                   "--plans file)")
      ->type_name("FILE");
  command->add_option("--library", args->library_path, "The replay library to preload (default: found beside memplan)")
      ->type_name("PATH");
  command->add_option("command", args->command, "The command and its arguments, after --")
      ->type_name("COMMAND ARGS...");
  command->footer(
      "The command runs with LD_PRELOAD=libmemplan_replay.so, which interposes malloc, free, calloc,\n"
      "realloc and the aligned allocations. The program marks its iterations by calling memplan_mark()\n"
      "(memplan/mark.h; from Python: ctypes.CDLL(None).memplan_mark). Each thread's requests are\n"
      "profiled for K iterations, planned at an iteration boundary, and then served from a slab;\n"
      "requests the plan did not foresee go to the backing allocator, " +
      backing_text() +
      ".\n"
      "Child processes inherit the library and learn on their own. memplan exits with the command's\n"
      "exit status.\n"
      "\n"
      "Knobs (environment variables read by the library; default in brackets; docs/runtime.md):\n" +
      knob_lines() +
      "\n"
      "Examples:\n"
      "  memplan run -- python3 infer.py\n"
      "  memplan run --profile-iterations 3 --stats -- ./train\n"
      "  memplan run --save-plans train.plans -- ./train && memplan run --plans train.plans -- ./train\n"
      "  MEMPLAN_MIN_SEQUENCED_SIZE=256 memplan run --stats -- python3 serve.py");
  command->callback([args] {
    if (args->command.empty())
      throw CommandError("no command to run: memplan run [--profile-iterations K] -- COMMAND ARGS...", kExitUsage);
    if (!args->planner.empty()) {
      planner_or_throw(args->planner);  // unknown names are refused here, with a suggestion
      // The drop-in's own registry leaves out `mip` (src/runtime/preload/CMakeLists.txt).
      if (args->planner == "mip") {
        throw CommandError(
            "--planner mip: not available to the replay library (an exact MIP has no place at an "
            "iteration boundary); use exact or a heuristic",
            kExitFailure);
      }
    }
#ifdef MEMPLAN_REPLAY_PRELOAD_BUILD_PATH
    const char* build_path = MEMPLAN_REPLAY_PRELOAD_BUILD_PATH;
#else
    const char* build_path = nullptr;
#endif
    const std::string library = find_preload_library(kReplayLibraryName, args->library_path, build_path);
    const int exit_code = run_with_preload(library, args->command, [&] { set_run_environment(*args); }).exit_code;
    if (exit_code != 0) throw CommandError("the command exited with status " + std::to_string(exit_code), exit_code);
  });
}

}  // namespace memplan::cli
