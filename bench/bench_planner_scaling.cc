// bench_planner_scaling.cc — planning time of the fast planners on generated
// problems of every shape and size, and whether a time limit is honoured.
//
// Each cell (planner, shape, size) runs in a child process, so that a planner
// that does not finish is stopped at --cap seconds (printed as "> cap") and
// the table goes on. Only the plan call is timed (generation and validation
// are not); every plan is validated and an invalid one is flagged.
//
// With --time-limit L, the planners get PlanOptions::time_limit_seconds = L
// and the table shows the wall time as a multiple of L: a planner honours the
// limit when it returns within it, plus the time it needs to notice (the
// planners poll the deadline between units of work) — the `x limit` column.
//
// Usage: bench_planner_scaling [--planner NAME]... [--shape NAME]...
//                              [--sizes N,N,...] [--cap S] [--time-limit L]
//   --planner     a registered planner (repeatable; default: every fast one)
//   --shape       dnn | random | heavy | nested | equal | puzzle (repeatable;
//                 default: all six)
//   --sizes       buffer counts (default 100000,1000000)
//   --cap         seconds after which a cell is stopped (default 120)
//   --time-limit  seconds passed to the planner (default 0: none)
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/generate.h"
#include "memplan/planner.h"
#include "memplan/validate.h"

#include "size_list.h"

namespace {

// What a child reports through its pipe.
struct CellResult {
  double ms = 0;
  double gap_percent = 0;
  int status = 0;  // StatusCode
  bool valid = false;
};

CellResult run_cell(const memplan::PlannerInfo& planner, memplan::ProblemShape shape, size_t n, double time_limit) {
  const memplan::Problem problem = memplan::generate_problem({.shape = shape, .buffers = n, .seed = 1});
  const auto start = std::chrono::steady_clock::now();
  memplan::StatusOr<memplan::Plan> plan = planner.plan(problem, {.time_limit_seconds = time_limit});
  CellResult r;
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  r.status = static_cast<int>(plan.status().code());
  if (plan.ok()) {
    r.valid = memplan::validate(problem, *plan).ok();
    r.gap_percent = 100.0 * memplan::gap(plan->arena, memplan::load(problem));
  }
  return r;
}

// Runs the cell in a child; false if it was stopped at `cap` seconds or died.
bool run_cell_capped(const memplan::PlannerInfo& planner, memplan::ProblemShape shape, size_t n, double time_limit,
                     double cap, CellResult* out) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    const CellResult r = run_cell(planner, shape, n, time_limit);
    const ssize_t written = write(fds[1], &r, sizeof r);
    _exit(written == static_cast<ssize_t>(sizeof r) ? 0 : 1);
  }
  close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(cap);
  int wstatus = 0;
  bool finished = false;
  while (true) {
    const pid_t done = waitpid(child, &wstatus, WNOHANG);
    if (done == child) {
      finished = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &wstatus, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (finished) finished = read(fds[0], out, sizeof *out) == static_cast<ssize_t>(sizeof *out);
  close(fds[0]);
  return finished;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> planner_names;
  std::vector<std::string> shape_names;
  std::vector<size_t> sizes = {100'000, 1'000'000};
  double cap = 120;
  double time_limit = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--planner" && i + 1 < argc)
      planner_names.push_back(argv[++i]);
    else if (arg == "--shape" && i + 1 < argc)
      shape_names.push_back(argv[++i]);
    else if (arg == "--sizes" && i + 1 < argc)
      sizes = parse_size_list(argv[++i]);
    else if (arg == "--cap" && i + 1 < argc)
      cap = std::atof(argv[++i]);
    else if (arg == "--time-limit" && i + 1 < argc)
      time_limit = std::atof(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: %s [--planner NAME]... [--shape NAME]... [--sizes N,N,...] [--cap S] [--time-limit L]\n",
                   argv[0]);
      return 2;
    }
  }
  std::vector<const memplan::PlannerInfo*> planners;
  if (planner_names.empty()) {
    for (const memplan::PlannerInfo& p : memplan::planners()) {
      if (p.fast) planners.push_back(&p);
    }
  }
  for (const std::string& name : planner_names) {
    const memplan::PlannerInfo* p = memplan::find_planner(name);
    if (p == nullptr) {
      std::fprintf(stderr, "no planner named '%s'\n", name.c_str());
      return 2;
    }
    planners.push_back(p);
  }
  if (shape_names.empty()) shape_names = {"dnn", "random", "heavy", "nested", "equal", "puzzle"};
  std::vector<memplan::ProblemShape> shapes;
  for (const std::string& name : shape_names) {
    memplan::ProblemShape s;
    if (!memplan::parse_problem_shape(name, &s)) {
      std::fprintf(stderr, "unknown shape '%s'\n", name.c_str());
      return 2;
    }
    shapes.push_back(s);
  }

  std::printf("%-24s %-7s %9s %12s %9s %8s  %s\n", "planner", "shape", "buffers", "ms", "x limit", "gap %", "status");
  for (const memplan::PlannerInfo* planner : planners) {
    for (memplan::ProblemShape shape : shapes) {
      for (size_t n : sizes) {
        CellResult r;
        const std::string shape_name(memplan::problem_shape_name(shape));
        char ratio[32] = "-";
        if (!run_cell_capped(*planner, shape, n, time_limit, cap, &r)) {
          std::printf("%-24s %-7s %9zu %12s %9s %8s  %s\n", std::string(planner->name).c_str(), shape_name.c_str(), n,
                      ("> " + std::to_string(static_cast<int>(cap * 1000))).c_str(), "-", "-", "stopped at the cap");
          std::fflush(stdout);
          continue;
        }
        if (time_limit > 0) std::snprintf(ratio, sizeof ratio, "%.2f", r.ms / (1000 * time_limit));
        char gap[32] = "-";
        if (r.status == 0) std::snprintf(gap, sizeof gap, "%.2f", r.gap_percent);
        const std::string status =
            r.status != 0 ? std::string(memplan::status_code_name(static_cast<memplan::StatusCode>(r.status)))
                          : (r.valid ? "ok" : "INVALID PLAN");
        std::printf("%-24s %-7s %9zu %12.1f %9s %8s  %s\n", std::string(planner->name).c_str(), shape_name.c_str(), n,
                    r.ms, ratio, gap, status.c_str());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
