// preload_launch.h — what `memplan trace` and `memplan run` share: finding a
// preload library of memplan's and running a command with it in LD_PRELOAD.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace memplan::cli {

// The path of the preload library `file_name` (e.g. "libmemplan_trace.so"):
// `requested` if given (it must exist); else, in order, next to the memplan
// binary; in ../lib, ../lib64 and ../lib/<multiarch> beside it (an installed
// tree); `build_path`, where the build tree put it (may be null). Throws
// CommandError listing where it looked.
std::string find_preload_library(const char* file_name, const std::string& requested, const char* build_path);

struct LaunchResult {
  pid_t pid = 0;
  int exit_code = 0;  // the command's exit status, or 128 + signal, like a shell
};

// Runs `command` with `library` prepended to LD_PRELOAD, waits for it, and
// returns its status. Like system(), memplan ignores ^C and ^\ while the
// command runs. `prepare_child` runs in the child just before exec (to set the
// library's environment knobs). A command that cannot be started exits 127
// (not found) or 126, after saying why on stderr.
LaunchResult run_with_preload(const std::string& library, const std::vector<std::string>& command,
                              const std::function<void()>& prepare_child);

}  // namespace memplan::cli
