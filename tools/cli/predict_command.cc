// predict_command.cc — `memplan predict [options] -- python3 train.py ARGS`:
// predict a PyTorch script's GPU memory without a GPU, by running it as
// `python3 -m memplan.predict [options] train.py ARGS` (python/memplan/predict,
// docs/predict.md) with memplan's Python package on PYTHONPATH.
//
// The package is looked for, in order: MEMPLAN_PYTHON_PATH; <dir of memplan>/python
// (the build tree: build/memplan beside build/python/memplan); the
// dist-packages or site-packages folders of <dir of memplan>/../lib/python3*
// (an installed tree); else the interpreter's own path.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
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

struct PredictArguments {
  std::string capacity;
  std::string output_path;
  std::string device;
  std::string gpu;
  std::string sweep;
  int steps = 0;
  bool json = false;
  std::vector<std::string> command;
};

bool has_predict_package(const fs::path& folder) {
  std::error_code ec;
  return fs::is_regular_file(folder / "memplan" / "predict" / "__main__.py", ec);
}

// The folder to put on PYTHONPATH, or "" to leave the interpreter's path alone.
std::string find_python_package() {
  if (const char* path = std::getenv("MEMPLAN_PYTHON_PATH"); path != nullptr && *path != '\0') {
    if (!has_predict_package(path)) {
      throw CommandError(std::string("MEMPLAN_PYTHON_PATH=") + path + ": no memplan/predict package in it");
    }
    return path;
  }
  std::error_code ec;
  const fs::path binary = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path here = binary.parent_path();
  if (has_predict_package(here / "python")) return (here / "python").string();
  for (const auto& entry : fs::directory_iterator(here.parent_path() / "lib", ec)) {
    if (entry.path().filename().string().rfind("python3", 0) != 0) continue;
    for (const char* kind : {"dist-packages", "site-packages"}) {
      if (has_predict_package(entry.path() / kind)) return (entry.path() / kind).string();
    }
  }
  return "";
}

// python3 [interpreter options] -m memplan.predict [options] SCRIPT ARGS; a
// command that starts with the script (x.py) runs under python3.
std::vector<std::string> runner_command(const PredictArguments& args) {
  std::vector<std::string> out;
  size_t next = 0;
  const std::string& first = args.command.front();
  if (first.size() > 3 && first.compare(first.size() - 3, 3, ".py") == 0) {
    out.push_back("python3");
  } else {
    out.push_back(first);
    next = 1;
    while (next < args.command.size() && args.command[next].rfind("-", 0) == 0) out.push_back(args.command[next++]);
  }
  if (next >= args.command.size()) throw CommandError("no script to predict: memplan predict -- python3 train.py ARGS");
  for (const char* word : {"-m", "memplan.predict"}) out.push_back(word);
  if (!args.capacity.empty()) out.insert(out.end(), {"--capacity", args.capacity});
  if (!args.output_path.empty()) out.insert(out.end(), {"--output", fs::absolute(args.output_path).string()});
  if (!args.device.empty()) out.insert(out.end(), {"--device", args.device});
  if (!args.gpu.empty()) out.insert(out.end(), {"--gpu", args.gpu});
  if (!args.sweep.empty()) out.insert(out.end(), {"--sweep", args.sweep});
  if (args.steps > 0) out.insert(out.end(), {"--steps", std::to_string(args.steps)});
  if (args.json) out.push_back("--json");
  out.insert(out.end(), args.command.begin() + static_cast<std::ptrdiff_t>(next), args.command.end());
  return out;
}

// Runs the command and returns its exit status (128 + signal when killed). Like
// system(), memplan ignores ^C and ^\ while it runs.
int run_command(const std::vector<std::string>& command, const std::string& python_path) {
  std::fflush(nullptr);
  struct sigaction ignore = {}, old_int = {}, old_quit = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  const pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    if (!python_path.empty()) {
      const char* existing = std::getenv("PYTHONPATH");
      const std::string value = python_path + (existing != nullptr && *existing ? ":" + std::string(existing) : "");
      setenv("PYTHONPATH", value.c_str(), 1);
    }
    std::vector<char*> argv;
    for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "memplan: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  int status = 0;
  if (pid > 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (pid < 0) throw CommandError(std::string("cannot start the command: ") + std::strerror(errno));
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace

void register_predict_command(CLI::App& app) {
  auto args = std::make_shared<PredictArguments>();
  CLI::App* command =
      app.add_subcommand("predict", "Predict a PyTorch script's GPU memory without a GPU (it runs on the meta device)");
  command->add_option("--capacity", args->capacity, "The GPU's memory (e.g. 24GiB): fits or not, and the headroom")
      ->type_name("BYTES");
  command->add_option("-o,--output", args->output_path, "Write the prediction as a CUDA memory snapshot pickle")
      ->type_name("FILE");
  command->add_option("--steps", args->steps, "Stop after N iterations (each optimizer.step() ends one)")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  command->add_option("--device", args->device, "The CUDA device predicted for (default cuda:0)")->type_name("cuda:N");
  command->add_option("--gpu", args->gpu, "Add this GPU's CUDA rules (the cuBLAS workspaces): h100 or a100")
      ->check(CLI::IsMember({"h100", "a100"}, CLI::ignore_case))
      ->type_name("NAME");
  command
      ->add_option("--sweep", args->sweep,
                   "Predict once per value, {NAME} in the command replaced by it: a table and, with "
                   "--capacity, the largest value that fits")
      ->type_name("NAME=V1,V2,...");
  command->add_flag("--json", args->json, "Print one JSON object");
  command->add_option("command", args->command, "The Python command, after --")->type_name("python3 SCRIPT ARGS...");
  command->footer(
      "Runs `python3 -m memplan.predict [options] SCRIPT ARGS`: the script, unchanged, sees a CUDA\n"
      "device that is really PyTorch's meta device; every storage it creates and frees is recorded,\n"
      "written as a CUDA memory snapshot and replayed through memplan's allocator models\n"
      "(docs/predict.md). Exit status: 0; 2 the prediction does not fit --capacity (a sweep: no value\n"
      "fits); 1 the script cannot be predicted (the message names the operator and the script's line)\n"
      "or failed.\n"
      "\n"
      "Examples:\n"
      "  memplan predict --capacity 24GiB -- python3 train.py --batch 32\n"
      "  memplan predict --json --output step.pickle --steps 1 -- python3 train.py\n"
      "  memplan predict --gpu h100 --capacity 80GiB -- python3 train.py\n"
      "  memplan predict --capacity 24GiB --sweep batch=1,2,4,8 -- python3 train.py --batch {batch}\n"
      "  memplan snapshot step.pickle");
  command->callback([args] {
    if (args->command.empty()) throw CommandError("no command: memplan predict [options] -- python3 train.py ARGS");
    const int exit_code = run_command(runner_command(*args), find_python_package());
    if (exit_code == 2) throw CommandError("the prediction does not fit the capacity", 2);
    if (exit_code != 0)
      throw CommandError("the prediction failed (status " + std::to_string(exit_code) + ")", exit_code);
  });
}

}  // namespace memplan::cli
