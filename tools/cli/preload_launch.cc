// preload_launch.cc — locating memplan's preload libraries and running a
// command under one of them (shared by `memplan trace` and `memplan run`).
#include "preload_launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "commands.h"

namespace memplan::cli {

namespace fs = std::filesystem;

std::string find_preload_library(const char* file_name, const std::string& requested, const char* build_path) {
  std::error_code error;
  if (!requested.empty()) {
    if (!fs::is_regular_file(requested, error)) throw CommandError("--library: no file '" + requested + "'");
    return fs::absolute(requested).string();
  }
  std::vector<fs::path> candidates;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path dir = self.parent_path();
    for (const char* relative : {
           ".", "../lib", "../lib64",
#if defined(__x86_64__)
               "../lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
                                 "../lib/aarch64-linux-gnu",
#endif
         }) {
      candidates.push_back(dir / relative / file_name);
    }
  }
  if (build_path != nullptr) candidates.emplace_back(build_path);
  for (const fs::path& candidate : candidates) {
    if (fs::is_regular_file(candidate, error)) return fs::canonical(candidate, error).string();
  }
  std::string tried;
  for (const fs::path& candidate : candidates) tried += "\n  " + candidate.lexically_normal().string();
  throw CommandError(std::string("cannot find ") + file_name + "; looked in:" + tried + "\n(pass --library PATH)");
}

LaunchResult run_with_preload(const std::string& library, const std::vector<std::string>& command,
                              const std::function<void()>& prepare_child) {
  // Like system(): while the command runs, ^C and ^\ are the command's business.
  struct sigaction ignore {
  }, saved_int{}, saved_quit{};
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
    if (prepare_child) prepare_child();
    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
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

}  // namespace memplan::cli
