// bench_exact.cc — the exact planner on MiniMalloc's challenging suite A–K.
//
// For each instance: decision at 1 MiB (the capacity upstream runs it at) and
// minimisation (smallest arena with a proof), each the median of --runs runs,
// next to MiniMalloc's median CPU seconds for the decision measured on the
// project's 2-core machine (5 runs each; see issue 3). The ratio column is
// MiniMalloc's time over ours (> 1: we are faster); `lower` is the proven
// lower bound on the arena (bytes) and `arena` the plan's (-1: no plan).
// Exits 3 when a decision finds no plan or a minimisation is not proven.
//
// With --mode scale (or all) it also minimises generated problems
// (memplan::generate_problem, --shape, default dnn, seed 1) of --scale sizes,
// printing the gap to the load, the time and the peak resident memory of the
// process (run one size per process for a per-size peak). With --mode files
// it minimises the problems in the --files CSVs (windowed on large ones) next
// to the portfolio's plan.
//
// With --mode relax it lists, per instance, the relaxed sub-problems that
// minimisation's lower-bound phase tries (src/solver/subproblem_bounds.h)
// and decides each at the load with --nodes nodes (default 2^20, with
// restarts): a refutation there would prove the optimum above the load.
//
// With --mode scan it decides each instance at every capacity of a range
// (--capacities FROM:TO:STEP, --nodes and/or --time-limit per decision;
// --seeds N: once per seed 1..N instead of once with the fixed ordering) and
// prints the smallest arena any of those decisions found.
//
// Usage: bench_exact [--runs N] [--mode decision|minimize|both|scale|files|relax|puzzles|scan|all]
//                    [--instances A,B,...] [--capacities FROM:TO:STEP] [--time-limit SECONDS] [--dir PATH]
//                    [--scale N,N,...] [--shape dnn|random|heavy|nested|equal|puzzle]
//                    [--files PATH,PATH,...] [--window-threshold N] [--window-buffers N]
//                    [--no-canonical] [--no-sections] [--no-overload] [--overload-after N]
//                    [--no-dominance] [--no-twins] [--no-decomposition] [--no-restarts]
//                    [--no-subproblems] [--nodes N] [--count N] [--height BYTES]
//                    [--repair-share FRACTION] [--repair-band-buffers N] [--seeded-share FRACTION] [--seed N] [--seeds
//                    N] [--threads N]
//                    [--no-sat-helper]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/exact.h"
#include "memplan/generate.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "solver/subproblem_bounds.h"

namespace {

struct Instance {
  const char* name;
  double minimalloc_seconds;  // median user CPU seconds, decision at 1 MiB
};

constexpr Instance kInstances[] = {
    {"A", 4.41}, {"B", 3.29}, {"C", 0.58}, {"D", 2.46}, {"E", 3.17}, {"F", 4.37},
    {"G", 0.97}, {"H", 1.51}, {"I", 3.21}, {"J", 0.77}, {"K", 0.49},
};
constexpr int64_t kCapacity = 1 << 20;

struct Measurement {
  memplan::ExactResult result;
  double cpu_seconds = 0;
  bool valid = true;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

void usage() {
  std::fprintf(
      stderr,
      "usage: bench_exact [--runs N] [--mode decision|minimize|both|scale|files|relax|puzzles|scan|all]\n              "
      "     [--instances A,B,...] [--capacities FROM:TO:STEP]\n"
      "                   [--time-limit SECONDS] [--dir PATH] [--scale N,N,...] [--shape SHAPE]\n"
      "                   [--files PATH,PATH,...] [--window-threshold N] [--window-buffers N] [--no-canonical]\n"
      "                   [--no-sections] [--no-overload] [--overload-after N] [--no-dominance]\n"
      "                   [--no-decomposition] [--no-restarts]\n"
      "                   [--no-subproblems] [--nodes N] [--count N] [--height BYTES]\n"
      "                   [--repair-share FRACTION] [--repair-band-buffers N] [--seeded-share FRACTION] [--seed N] "
      "[--seeds N] [--threads N]\n"
      "                   [--no-sat-helper]\n");
}

double peak_resident_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Decides every relaxed sub-problem of each instance at its load.
int run_relax(const std::string& dir, const std::string& only, int64_t nodes, const memplan::ExactOptions& options) {
  std::printf("relaxed sub-problems decided at the load, %lld nodes each\n", static_cast<long long>(nodes));
  std::printf("%-4s %7s %8s %9s %-10s %8s %10s %9s\n", "inst", "buffers", "load", "sub bufs", "verdict", "next cap",
              "nodes", "wall s");
  for (const Instance& instance : kInstances) {
    if (!only.empty() && ("," + only + ",").find("," + std::string(instance.name) + ",") == std::string::npos) continue;
    auto problem = memplan::read_problem_csv(dir + "/" + instance.name + ".1048576.csv");
    if (!problem.ok()) {
      std::fprintf(stderr, "%s\n", problem.status().to_string().c_str());
      return 1;
    }
    std::vector<memplan::solver::CanonicalSearch::Item> items;
    for (size_t i = 0; i < problem->size(); ++i) {
      const memplan::Buffer& b = problem->buffers[i];
      if (b.size > 0)
        items.push_back({.lower = b.lower,
                         .upper = b.upper,
                         .size = b.size,
                         .alignment = problem->alignment_of(i),
                         .fixed_offset = b.offset ? *b.offset : -1});
    }
    const int64_t load = memplan::load(*problem);
    for (const auto& sub : memplan::solver::relaxed_subproblems(items)) {
      memplan::solver::CanonicalSearch search(sub, options);
      memplan::ExactStats stats;
      const memplan::solver::StopCondition no_stop;
      const auto t0 = std::chrono::steady_clock::now();
      const auto verdict = search.decide(load, nodes, no_stop, &stats, true);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const char* name = verdict == memplan::solver::SearchVerdict::kFound       ? "fits"
                         : verdict == memplan::solver::SearchVerdict::kExhausted ? "REFUTED"
                                                                                 : "undecided";
      std::printf(
          "%-4s %7zu %8lld %9zu %-10s %8lld %10lld %9.3f\n", instance.name, problem->size(),
          static_cast<long long>(load), sub.size(), name,
          static_cast<long long>(verdict == memplan::solver::SearchVerdict::kExhausted ? search.next_capacity() : -1),
          static_cast<long long>(stats.nodes), seconds);
      std::fflush(stdout);
    }
  }
  return 0;
}

// Minimises generated DNN-like problems; returns the number not planned.
int run_scale(const std::string& sizes, memplan::ProblemShape shape, const memplan::ExactOptions& options) {
  std::printf("\nexact minimisation on generated %s problems (seed 1), time limit %.0f s\n",
              std::string(memplan::problem_shape_name(shape)).c_str(), options.time_limit_seconds);
  std::printf("%8s %12s %12s %12s %12s %8s %-10s %10s %8s %9s %9s\n", "buffers", "load", "portfolio", "arena", "lower",
              "gap %", "outcome", "nodes", "windows", "wall s", "peak MiB");
  int failures = 0;
  std::stringstream list(sizes);
  for (std::string item; std::getline(list, item, ',');) {
    const size_t n = static_cast<size_t>(std::atoll(item.c_str()));
    const memplan::Problem problem = memplan::generate_problem({.shape = shape, .buffers = n, .seed = 1});
    const int64_t load = memplan::load(problem);
    auto result = memplan::solve_minimize(problem, options);
    const double peak = peak_resident_mib();  // before the reference portfolio run below
    auto portfolio = memplan::plan_with("portfolio", problem, {});
    if (!result.ok() || !result->plan || !memplan::validate(problem, *result->plan).ok()) {
      std::printf("%8zu: %s\n", n, result.ok() ? "no valid plan" : result.status().to_string().c_str());
      ++failures;
      continue;
    }
    if (portfolio.ok() && result->plan->arena > portfolio->arena) ++failures;  // worse than the start
    std::printf(
        "%8zu %12lld %12lld %12lld %12lld %8.3f %-10s %10lld %8lld %9.3f %9.1f\n", n, static_cast<long long>(load),
        static_cast<long long>(portfolio.ok() ? portfolio->arena : -1), static_cast<long long>(result->plan->arena),
        static_cast<long long>(result->lower_bound), 100.0 * memplan::gap(result->plan->arena, load),
        std::string(memplan::exact_outcome_name(result->outcome)).c_str(), static_cast<long long>(result->stats.nodes),
        static_cast<long long>(result->stats.windows), result->stats.seconds, peak);
    std::fflush(stdout);
  }
  return failures;
}

// Minimises `count` generated packing puzzles (seeds 1..count) of `buffers`
// pieces cut from a rectangle `height` bytes high: the optimum lies between
// the load and the height, and refuting the load is where the pruning shows.
int run_puzzles(int count, size_t buffers, int64_t height, const memplan::ExactOptions& options) {
  std::printf("\nexact minimisation on %d generated puzzles of %zu buffers, height %lld bytes, time limit %.1f s\n",
              count, buffers, static_cast<long long>(height), options.time_limit_seconds);
  std::printf("%6s %8s %8s %8s %-10s %12s %9s\n", "seed", "load", "arena", "lower", "outcome", "nodes", "wall s");
  int failures = 0, at_load = 0, above_load = 0, open = 0;
  int64_t nodes = 0;
  std::vector<double> seconds;
  for (int seed = 1; seed <= count; ++seed) {
    const memplan::Problem problem = memplan::generate_problem({.shape = memplan::ProblemShape::kPuzzle,
                                                                .buffers = buffers,
                                                                .seed = static_cast<uint64_t>(seed),
                                                                .max_size = height});
    const int64_t load = memplan::load(problem);
    auto result = memplan::solve_minimize(problem, options);
    if (!result.ok() || !result->plan || !memplan::validate(problem, *result->plan).ok()) {
      std::printf("%6d: %s\n", seed, result.ok() ? "no valid plan" : result.status().to_string().c_str());
      ++failures;
      continue;
    }
    if (result->outcome != memplan::ExactOutcome::kOptimal)
      ++open;
    else if (result->plan->arena == load)
      ++at_load;
    else
      ++above_load;
    nodes += result->stats.nodes;
    seconds.push_back(result->stats.seconds);
    std::printf("%6d %8lld %8lld %8lld %-10s %12lld %9.3f\n", seed, static_cast<long long>(load),
                static_cast<long long>(result->plan->arena), static_cast<long long>(result->lower_bound),
                std::string(memplan::exact_outcome_name(result->outcome)).c_str(),
                static_cast<long long>(result->stats.nodes), result->stats.seconds);
    std::fflush(stdout);
  }
  std::sort(seconds.begin(), seconds.end());
  double total = 0;
  for (const double s : seconds) total += s;
  std::printf("optimal at the load %d, optimal above it %d, open %d; nodes %lld; wall s total %.2f, median %.3f\n",
              at_load, above_load, open, static_cast<long long>(nodes), total,
              seconds.empty() ? 0.0 : seconds[seconds.size() / 2]);
  return failures;
}

// Decides each instance at every capacity of a range (--capacities FROM:TO:STEP
// in bytes; default from the load to 1 MiB in 1 KiB steps) with --nodes nodes
// and/or --time-limit seconds per decision (--nodes alone or neither: the
// node budget, default 2^20; --time-limit alone: that time, as `memplan plan
// --planner exact --capacity C --time-limit T` decides), the way `memplan
// plan` does (with restarts). Prints the verdict and the nodes each decision
// used, and per instance the smallest arena any decision found: the reference
// that minimisation within the same budget should reach.
int run_scan(const std::string& dir, const std::string& only, const std::string& range, int64_t nodes, double seconds,
             const memplan::ExactOptions& options, int seeds) {
  char budget[96];
  if (nodes > 0 && seconds > 0) {
    std::snprintf(budget, sizeof budget, "%lld nodes and %g s", static_cast<long long>(nodes), seconds);
  } else if (nodes > 0) {
    std::snprintf(budget, sizeof budget, "%lld nodes", static_cast<long long>(nodes));
  } else {
    std::snprintf(budget, sizeof budget, "%g s", seconds);
  }
  std::printf("decisions over a range of capacities, at most %s each\n", budget);
  std::printf("%-4s %4s %9s %-10s %8s %10s %9s\n", "inst", "seed", "capacity", "verdict", "arena", "nodes", "cpu s");
  int64_t from = -1, to = int64_t{1} << 20, step = 1024;
  if (!range.empty()) {
    long long a = 0, b = 0, c = 0;
    if (std::sscanf(range.c_str(), "%lld:%lld:%lld", &a, &b, &c) != 3 || c <= 0 || a > b) {
      std::fprintf(stderr, "--capacities wants FROM:TO:STEP in bytes, got '%s'\n", range.c_str());
      return 2;
    }
    from = a, to = b, step = c;
  }
  for (const Instance& instance : kInstances) {
    if (!only.empty() && ("," + only + ",").find("," + std::string(instance.name) + ",") == std::string::npos) continue;
    auto problem = memplan::read_problem_csv(dir + "/" + instance.name + ".1048576.csv");
    if (!problem.ok()) {
      std::fprintf(stderr, "%s\n", problem.status().to_string().c_str());
      return 1;
    }
    const int64_t load = memplan::load(*problem);
    int64_t best = -1;
    double total_cpu = 0;
    memplan::ExactOptions decide_options = options;
    decide_options.node_limit = nodes;
    decide_options.time_limit_seconds = seconds;
    for (int64_t capacity = from < 0 ? (load + step - 1) / step * step : from; capacity <= to; capacity += step) {
      // Seed 0 is the fixed ordering; --seeds N decides with seeds 1..N instead.
      for (int seed = seeds > 0 ? 1 : 0; seed <= seeds; ++seed) {
        decide_options.seed = static_cast<uint64_t>(seed);
        const std::clock_t c0 = std::clock();
        auto result = memplan::solve_decision(*problem, capacity, decide_options);
        const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
        total_cpu += cpu;
        if (!result.ok()) {
          std::fprintf(stderr, "%s: %s\n", instance.name, result.status().to_string().c_str());
          return 1;
        }
        const int64_t arena = result->plan ? result->plan->arena : -1;
        if (arena >= 0 && (best < 0 || arena < best)) best = arena;
        std::printf("%-4s %4d %9lld %-10s %8lld %10lld %9.3f\n", instance.name, seed, static_cast<long long>(capacity),
                    std::string(memplan::exact_outcome_name(result->outcome)).c_str(), static_cast<long long>(arena),
                    static_cast<long long>(result->stats.nodes), cpu);
        std::fflush(stdout);
      }
    }
    std::printf("%-4s smallest arena of any decision: %lld (load %lld; %.1f cpu s in all)\n", instance.name,
                static_cast<long long>(best), static_cast<long long>(load), total_cpu);
  }
  return 0;
}

// Minimises problems read from CSV files (real traces, e.g. bench/data/dsa/idealloc):
// the portfolio's arena next to exact minimisation's (windowed on large ones).
int run_files(const std::string& paths, const memplan::ExactOptions& options) {
  std::printf("\nexact minimisation on problem files, time limit %.0f s (portfolio: its default budget)\n",
              options.time_limit_seconds);
  std::printf("%-28s %8s %12s %12s %12s %8s %8s %-10s %8s %8s %9s %9s\n", "problem", "buffers", "load", "portfolio",
              "exact", "gap %", "gain %", "outcome", "windows", "improved", "wall s", "peak MiB");
  int failures = 0;
  std::stringstream list(paths);
  for (std::string path; std::getline(list, path, ',');) {
    auto problem = memplan::read_problem_csv(path);
    if (!problem.ok()) {
      std::printf("%s: %s\n", path.c_str(), problem.status().to_string().c_str());
      ++failures;
      continue;
    }
    problem->capacity.reset();
    const int64_t load = memplan::load(*problem);
    auto portfolio = memplan::plan_with("portfolio", *problem, {});
    auto result = memplan::solve_minimize(*problem, options);
    if (!portfolio.ok() || !result.ok() || !result->plan || !memplan::validate(*problem, *result->plan).ok()) {
      std::printf("%s: no valid plan\n", path.c_str());
      ++failures;
      continue;
    }
    if (result->plan->arena > portfolio->arena) ++failures;  // never worse than the start
    const std::string name = std::filesystem::path(path).parent_path().filename().string() + "/" +
                             std::filesystem::path(path).stem().string();
    std::printf("%-28s %8zu %12lld %12lld %12lld %8.3f %8.3f %-10s %8lld %8lld %9.2f %9.1f\n", name.c_str(),
                problem->size(), static_cast<long long>(load), static_cast<long long>(portfolio->arena),
                static_cast<long long>(result->plan->arena), 100.0 * memplan::gap(result->plan->arena, load),
                100.0 * (1.0 - static_cast<double>(result->plan->arena) / static_cast<double>(portfolio->arena)),
                std::string(memplan::exact_outcome_name(result->outcome)).c_str(),
                static_cast<long long>(result->stats.windows), static_cast<long long>(result->stats.windows_improved),
                result->stats.seconds, peak_resident_mib());
    std::fflush(stdout);
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 1;
  std::string mode = "both";
  std::string only;
  std::string scale_sizes = "10000,20000";
  std::string files;
  std::string capacities;
  memplan::ProblemShape shape = memplan::ProblemShape::kDnnLike;
  std::string dir = (std::filesystem::path(__FILE__).parent_path() / "data/dsa/minimalloc/challenging").string();
  memplan::ExactOptions options;
  options.time_limit_seconds = 60;
  int64_t relax_nodes = int64_t{1} << 20;
  bool nodes_given = false, time_given = false;
  int puzzle_count = 40;
  int seeds = 0;
  int64_t puzzle_height = 256;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--runs")
      runs = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--mode")
      mode = value();
    else if (arg == "--instances")
      only = value();
    else if (arg == "--time-limit")
      options.time_limit_seconds = std::atof(value().c_str()), time_given = true;
    else if (arg == "--dir")
      dir = value();
    else if (arg == "--scale")
      scale_sizes = value();
    else if (arg == "--files")
      files = value();
    else if (arg == "--capacities")
      capacities = value();
    else if (arg == "--window-threshold")
      options.window_threshold = std::atoll(value().c_str());
    else if (arg == "--window-buffers")
      options.window_buffers = std::atoll(value().c_str());
    else if (arg == "--shape") {
      if (!memplan::parse_problem_shape(value(), &shape)) {
        usage();
        return 2;
      }
    } else if (arg == "--no-canonical")
      options.canonical_only = false;
    else if (arg == "--no-sections")
      options.section_inference = false;
    else if (arg == "--no-overload")
      options.section_overload = false;
    else if (arg == "--overload-after")
      options.overload_after_nodes = std::max<int64_t>(0, std::atoll(value().c_str()));
    else if (arg == "--no-dominance")
      options.dominance = false;
    else if (arg == "--no-twins")
      options.twins = false;
    else if (arg == "--no-decomposition")
      options.decomposition = false;
    else if (arg == "--no-restarts")
      options.restarts = false;
    else if (arg == "--no-subproblems")
      options.subproblem_bounds = false;
    else if (arg == "--repair-share")
      options.repair_share = std::atof(value().c_str());
    else if (arg == "--seeded-share")
      options.seeded_share = std::atof(value().c_str());
    else if (arg == "--seed")
      options.seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (arg == "--threads")
      options.threads = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--no-sat-helper")
      options.sat_helper = false;
    else if (arg == "--repair-band-buffers") {
      options.repair_band_buffers = std::max<int64_t>(1, std::atoll(value().c_str()));
    } else if (arg == "--count")
      puzzle_count = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--seeds")
      seeds = std::max(0, std::atoi(value().c_str()));
    else if (arg == "--height")
      puzzle_height = std::max<int64_t>(1, std::atoll(value().c_str()));
    else if (arg == "--nodes")
      relax_nodes = std::max<int64_t>(1, std::atoll(value().c_str())), nodes_given = true;
    else {
      usage();
      return 2;
    }
  }
  if (mode != "decision" && mode != "minimize" && mode != "both" && mode != "scale" && mode != "all" &&
      mode != "files" && mode != "relax" && mode != "puzzles" && mode != "scan") {
    usage();
    return 2;
  }
  if (mode == "scale") return run_scale(scale_sizes, shape, options) == 0 ? 0 : 3;
  if (mode == "files") return run_files(files, options) == 0 ? 0 : 3;
  if (mode == "relax") return run_relax(dir, only, relax_nodes, options);
  if (mode == "scan") {
    // Nodes, seconds or both bound each decision; --nodes alone (or neither, or
    // --time-limit 0) is the node budget, --time-limit alone the time of
    // `memplan plan --capacity`.
    const double seconds = time_given ? std::max(options.time_limit_seconds, 0.0) : 0;
    const int64_t nodes = nodes_given || seconds == 0 ? relax_nodes : 0;
    return run_scan(dir, only, capacities, nodes, seconds, options, seeds);
  }
  if (mode == "puzzles") {
    return run_puzzles(puzzle_count, static_cast<size_t>(std::max<long long>(1, std::atoll(scale_sizes.c_str()))),
                       puzzle_height, options) == 0
               ? 0
               : 3;
  }
  const bool with_scale = mode == "all";
  if (with_scale) mode = "both";

  std::printf(
      "exact planner on MiniMalloc's challenging suite (capacity %lld bytes for decisions), median of %d run(s), time "
      "limit %.0f s\n",
      static_cast<long long>(kCapacity), runs, options.time_limit_seconds);
  std::printf("%-4s %7s %8s %-9s %-10s %8s %8s %10s %10s %9s %9s %9s %8s %7s\n", "inst", "buffers", "load", "mode",
              "outcome", "arena", "lower", "nodes", "backtrack", "wall s", "cpu s", "best at s", "mm cpu s", "ratio");
  double total_ours = 0, total_theirs = 0;
  int failures = 0;
  for (const Instance& instance : kInstances) {
    if (!only.empty() && ("," + only + ",").find("," + std::string(instance.name) + ",") == std::string::npos) continue;
    const std::string path = dir + "/" + instance.name + ".1048576.csv";
    auto problem = memplan::read_problem_csv(path);
    if (!problem.ok()) {
      std::fprintf(stderr, "%s\n", problem.status().to_string().c_str());
      return 1;
    }
    const int64_t load = memplan::load(*problem);
    for (const std::string m : {"decision", "minimize"}) {
      if (mode != "both" && mode != m) continue;
      std::vector<Measurement> all;
      for (int r = 0; r < runs; ++r) {
        Measurement meas;
        const std::clock_t c0 = std::clock();
        auto result = m == "decision" ? memplan::solve_decision(*problem, kCapacity, options)
                                      : memplan::solve_minimize(*problem, options);
        meas.cpu_seconds = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
        if (!result.ok()) {
          std::fprintf(stderr, "%s: %s\n", instance.name, result.status().to_string().c_str());
          return 1;
        }
        meas.result = std::move(*result);
        if (meas.result.plan) {
          memplan::Problem check = *problem;
          check.capacity.reset();
          meas.valid = memplan::validate(check, *meas.result.plan).ok();
        }
        all.push_back(std::move(meas));
      }
      std::vector<double> wall, cpu;
      for (const Measurement& meas : all) {
        wall.push_back(meas.result.stats.seconds);
        cpu.push_back(meas.cpu_seconds);
      }
      const Measurement& first = all.front();
      const double cpu_median = median(cpu);
      const bool solved = first.result.plan.has_value() && first.valid;
      if (!solved || (m == "minimize" && first.result.outcome != memplan::ExactOutcome::kOptimal)) ++failures;
      char ratio[32] = "-";
      char theirs[32] = "-";
      if (m == "decision") {
        std::snprintf(theirs, sizeof theirs, "%.2f", instance.minimalloc_seconds);
        std::snprintf(ratio, sizeof ratio, "%.1fx", instance.minimalloc_seconds / std::max(cpu_median, 1e-6));
        total_ours += cpu_median;
        total_theirs += instance.minimalloc_seconds;
      }
      std::printf("%-4s %7zu %8lld %-9s %-10s %8lld %8lld %10lld %10lld %9.4f %9.4f %9.3f %8s %7s%s\n", instance.name,
                  problem->size(), static_cast<long long>(load), m.c_str(),
                  std::string(memplan::exact_outcome_name(first.result.outcome)).c_str(),
                  static_cast<long long>(first.result.plan ? first.result.plan->arena : -1),
                  static_cast<long long>(first.result.lower_bound), static_cast<long long>(first.result.stats.nodes),
                  static_cast<long long>(first.result.stats.backtracks), median(wall), cpu_median,
                  first.result.stats.seconds_to_best, theirs, ratio, first.valid ? "" : "  INVALID PLAN");
      if (m == "minimize" && options.repair_share > 0) {
        std::printf("     repair: %lld bands decided, %lld improved the plan\n",
                    static_cast<long long>(first.result.stats.windows),
                    static_cast<long long>(first.result.stats.windows_improved));
      }
      if (m == "minimize" && first.result.stats.seeded_probes > 0) {
        std::printf(
            "     seeded restarts: %lld run (%lld on helper threads), %lld lowered the plan (%lld capacity probes in "
            "all)\n",
            static_cast<long long>(first.result.stats.seeded_probes),
            static_cast<long long>(first.result.stats.helper_probes),
            static_cast<long long>(first.result.stats.seeded_plans),
            static_cast<long long>(first.result.stats.capacity_probes));
      }
      if (m == "minimize" && first.result.stats.sat_decisions > 0) {
        std::printf("     SAT helper: %lld solves, %lld refutations\n",
                    static_cast<long long>(first.result.stats.sat_decisions),
                    static_cast<long long>(first.result.stats.sat_refutations));
      }
      if (m == "minimize" && !first.result.stats.improvements.empty()) {
        // The path of the best plan: seconds, arena, and the step that found it.
        std::string path;
        for (const memplan::Improvement& step : first.result.stats.improvements) {
          char entry[96];
          std::snprintf(entry, sizeof entry, "%s%.2f s %lld %s", path.empty() ? "" : "; ", step.seconds,
                        static_cast<long long>(step.arena),
                        std::string(memplan::plan_source_name(step.source)).c_str());
          path += entry;
        }
        std::printf("     improvements: %s\n", path.c_str());
      }
      std::fflush(stdout);
    }
  }
  if (total_theirs > 0) {
    std::printf("decision total: %.3f cpu s (MiniMalloc %.2f s, ratio %.1fx)\n", total_ours, total_theirs,
                total_theirs / std::max(total_ours, 1e-6));
  }
  if (with_scale) failures += run_scale(scale_sizes, shape, options);
  return failures == 0 ? 0 : 3;
}
