// bench_objects.cc — the shared-objects planners (TFLite's strategies) on the
// shared instances.
//
// Prints one row per (planner, instance): buffers, the positional-maximums
// bound (bytes; no objects assignment can total less), the load (bytes; no
// plan can be smaller), the arena of the stacked objects (bytes), gap = arena
// / load - 1 in percent, and the planner's wall time in milliseconds (the plan
// call only: reading, bounds and validation are not timed). Every plan is
// validated; an invalid one is reported in the gap column instead of a number.
//
// Usage: bench_objects [--data DIR] [--planner NAME]... [--instance SUBSTRING]...
//   --data DIR            the data folder (default bench/data, i.e.
//                         run from the project root)
//   --planner NAME        run only this planner (repeatable; default: every
//                         registered planner of the shared-objects form)
//   --instance SUBSTRING  run only instances whose path contains it (repeatable)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/planner.h"
#include "memplan/validate.h"

namespace {

struct Instance {
  std::string name;
  memplan::Problem problem;
  memplan::Bounds bounds;
};

void run(const memplan::PlannerInfo& planner, const Instance& instance) {
  const auto start = std::chrono::steady_clock::now();
  memplan::StatusOr<memplan::Plan> plan = planner.plan(instance.problem, {});
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::string name(planner.name);
  if (!plan.ok()) {
    std::printf("%-24s %-22s %8zu %16lld %16lld %16s %9s %10.1f  %s\n", name.c_str(), instance.name.c_str(),
                instance.problem.size(), static_cast<long long>(instance.bounds.positional_maximums),
                static_cast<long long>(instance.bounds.load), "-", "error", ms, plan.status().to_string().c_str());
    return;
  }
  const memplan::ValidationResult v = memplan::validate(instance.problem, *plan);
  char gap[32];
  if (v.ok())
    std::snprintf(gap, sizeof gap, "%.2f", 100.0 * memplan::gap(plan->arena, instance.bounds.load));
  else
    std::snprintf(gap, sizeof gap, "INVALID");
  std::printf("%-24s %-22s %8zu %16lld %16lld %16lld %9s %10.1f%s%s\n", name.c_str(), instance.name.c_str(),
              instance.problem.size(), static_cast<long long>(instance.bounds.positional_maximums),
              static_cast<long long>(instance.bounds.load), static_cast<long long>(plan->arena), gap, ms,
              v.ok() ? "" : "  ", v.ok() ? "" : v.message.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = "bench/data";
  std::vector<std::string> only, filters;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--data" && i + 1 < argc)
      data = argv[++i];
    else if (arg == "--planner" && i + 1 < argc)
      only.push_back(argv[++i]);
    else if (arg == "--instance" && i + 1 < argc)
      filters.push_back(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--data DIR] [--planner NAME]... [--instance SUBSTRING]...\n", argv[0]);
      return 2;
    }
  }
  std::vector<const memplan::PlannerInfo*> planners;
  if (only.empty()) {
    for (const memplan::PlannerInfo& p : memplan::planners()) {
      if (p.form == memplan::PlanForm::kObjects) planners.push_back(&p);
    }
  }
  for (const std::string& name : only) {
    const memplan::PlannerInfo* p = memplan::find_planner(name);
    if (p == nullptr) {
      std::fprintf(stderr, "no planner named '%s'\n", name.c_str());
      return 2;
    }
    planners.push_back(p);
  }

  const std::filesystem::path root = std::filesystem::path(data) / "dsa";
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().extension() != ".csv") continue;
    const std::string path = it->path().string();
    if (!filters.empty() && std::none_of(filters.begin(), filters.end(),
                                         [&](const std::string& f) { return path.find(f) != std::string::npos; })) {
      continue;
    }
    files.push_back(it->path());
  }
  if (ec) {
    std::fprintf(stderr, "cannot list %s: %s\n", root.string().c_str(), ec.message().c_str());
    return 1;
  }
  std::sort(files.begin(), files.end());

  std::printf("%-24s %-22s %8s %16s %16s %16s %9s %10s\n", "planner", "instance", "buffers", "posmax_bytes",
              "load_bytes", "arena_bytes", "gap_%", "ms");
  for (const std::filesystem::path& file : files) {
    memplan::StatusOr<memplan::Problem> problem = memplan::read_problem_csv(file.string());
    if (!problem.ok()) {
      std::fprintf(stderr, "%s\n", problem.status().to_string().c_str());
      continue;
    }
    Instance instance{.name = file.parent_path().filename().string() + "/" + file.stem().string(),
                      .problem = std::move(*problem)};
    instance.bounds = memplan::compute_bounds(instance.problem);
    for (const memplan::PlannerInfo* planner : planners) run(*planner, instance);
  }
  return 0;
}
