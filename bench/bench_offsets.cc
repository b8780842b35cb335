// bench_offsets.cc — the gap-placement planners (TFLite, XLA, Gergov) on the
// shared instances and on a large generated DNN-like problem.
//
// Prints one row per (planner, instance): buffers, load (bytes), arena
// (bytes), gap = arena / load - 1 in percent, and the planner's wall time in
// milliseconds (the plan call only: reading, bounds and validation are not
// timed). Every plan is validated; an invalid one is reported in the gap
// column instead of a number.
//
// Usage: bench_offsets [--data DIR] [--buffers N] [--planner NAME]...
//   --data DIR     the data folder (default bench/data, i.e. run
//                  from the project root)
//   --buffers N    size of the generated DNN-like problem (default 1000000;
//                  0 skips it)
//   --planner NAME run only this planner (repeatable; default: all five)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/generate.h"
#include "memplan/planner.h"
#include "memplan/validate.h"

namespace {

struct Instance {
  std::string name;
  memplan::Problem problem;
  int64_t load = 0;
};

void run(const memplan::PlannerInfo& planner, const Instance& instance) {
  const auto start = std::chrono::steady_clock::now();
  memplan::StatusOr<memplan::Plan> plan = planner.plan(instance.problem, {});
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!plan.ok()) {
    std::printf("%-26s %-14s %9zu %16lld %16s %9s %10.1f  %s\n", std::string(planner.name).c_str(),
                instance.name.c_str(), instance.problem.size(), static_cast<long long>(instance.load), "-", "error", ms,
                plan.status().to_string().c_str());
    return;
  }
  const memplan::ValidationResult v = memplan::validate(instance.problem, *plan);
  char gap[32];
  if (v.ok())
    std::snprintf(gap, sizeof gap, "%.2f", 100.0 * memplan::gap(plan->arena, instance.load));
  else
    std::snprintf(gap, sizeof gap, "INVALID");
  std::printf("%-26s %-14s %9zu %16lld %16lld %9s %10.1f%s%s\n", std::string(planner.name).c_str(),
              instance.name.c_str(), instance.problem.size(), static_cast<long long>(instance.load),
              static_cast<long long>(plan->arena), gap, ms, v.ok() ? "" : "  ", v.ok() ? "" : v.message.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = "bench/data";
  size_t generated = 1'000'000;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--data" && i + 1 < argc)
      data = argv[++i];
    else if (arg == "--buffers" && i + 1 < argc)
      generated = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--planner" && i + 1 < argc)
      only.push_back(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--data DIR] [--buffers N] [--planner NAME]...\n", argv[0]);
      return 2;
    }
  }
  if (only.empty())
    only = {"greedy_by_size", "greedy_by_size_first_fit", "best_fit_spatial", "best_fit_temporal", "gergov"};
  std::vector<const memplan::PlannerInfo*> planners;
  for (const std::string& name : only) {
    const memplan::PlannerInfo* p = memplan::find_planner(name);
    if (p == nullptr) {
      std::fprintf(stderr, "no planner named '%s'\n", name.c_str());
      return 2;
    }
    planners.push_back(p);
  }

  std::vector<std::pair<std::string, std::string>> files;
  for (char c = 'A'; c <= 'K'; ++c) {
    files.push_back({std::string(1, c), data + "/dsa/minimalloc/challenging/" + c + ".1048576.csv"});
  }
  files.push_back({"resnet50", data + "/dsa/idealloc/somas_tensors/resnet50.csv"});
  files.push_back({"pangu_2.6B", data + "/dsa/idealloc/somas_tensors/pangu_2.6B.csv"});
  for (const char* g : {"G_1", "S_1", "Y_1"}) files.push_back({g, data + "/dsa/idealloc/iopddl/" + g + ".csv"});

  std::vector<Instance> instances;
  for (const auto& [name, path] : files) {
    memplan::StatusOr<memplan::Problem> problem = memplan::read_problem_csv(path);
    if (!problem.ok()) {
      std::fprintf(stderr, "skipping %s: %s\n", name.c_str(), problem.status().to_string().c_str());
      continue;
    }
    problem->capacity.reset();  // minimisation: report the arena, whatever the suite's capacity
    instances.push_back({name, std::move(*problem), 0});
  }
  if (generated > 0) {
    memplan::Problem problem =
        memplan::generate_problem({.shape = memplan::ProblemShape::kDnnLike, .buffers = generated, .seed = 1});
    instances.push_back({"dnn-" + std::to_string(generated), std::move(problem), 0});
  }
  for (Instance& instance : instances) instance.load = memplan::load(instance.problem);

  std::printf("%-26s %-14s %9s %16s %16s %9s %10s\n", "planner", "instance", "buffers", "load", "arena", "gap %", "ms");
  for (const memplan::PlannerInfo* planner : planners) {
    for (const Instance& instance : instances) run(*planner, instance);
  }
  return 0;
}
