// bench_sat_bound.cc — decides whether a problem's buffers fit in a capacity
// with a SAT solver (CaDiCaL) on the order encoding of no-overlap-2D, the
// encoding Soh, Inoue, Tamura, Banbara and Nabeshima used for two-dimensional
// strip packing (Constraints 15(1), 2010). Issue 16, item 2: an UNSAT answer
// at C proves that no plan fits in C units, which no relaxation of time does
// on D and J; a SAT answer is a plan, checked by memplan::validate.
//
// The encoding and its rules (mirror, twins, normal, cover; each on by
// default, each with a --no-... switch) are src/solver/sat/sat_encoding.h,
// shared with the exact solver's SAT helper thread.
//
// Usage: bench_sat_bound PROBLEM.csv (--capacity BYTES | --descend | --bisect)
//                        [--upper BYTES] [--floor BYTES] [--hint PLAN.csv] [--seconds S]
//                        [--no-mirror] [--no-twins] [--no-normal] [--no-cover]
//                        [--plan-out FILE] [--quiet]
#include <cadical.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "solver/sat/sat_encoding.h"
#include "solver/sections.h"

namespace {

using Clock = std::chrono::steady_clock;

void usage(FILE* out) {
  std::fprintf(out,
               "usage: bench_sat_bound PROBLEM.csv (--capacity BYTES | --descend | --bisect)\n"
               "                       [--upper BYTES] [--floor BYTES] [--hint PLAN.csv] [--seconds S]\n"
               "                       [--no-mirror] [--no-twins] [--no-normal] [--no-cover]\n"
               "                       [--plan-out FILE] [--quiet]\n"
               "\n"
               "Decides with the SAT solver CaDiCaL whether the buffers fit in a capacity, on\n"
               "the order encoding of no-overlap in (time x offset). UNSAT at C proves that no\n"
               "plan fits in C bytes; SAT gives a plan, checked by the validator.\n"
               "\n"
               "  --capacity BYTES  decide this arena size (rounded down to units)\n"
               "  --descend         from the upper plan down: decide one unit below the best plan\n"
               "                    until UNSAT (then the best plan is optimal) or time runs out\n"
               "  --bisect          bisect between the load and the upper plan; every UNSAT raises\n"
               "                    the proven lower bound, every SAT lowers the plan\n"
               "  --upper BYTES     largest capacity encoded (default: the hint's arena, else the\n"
               "                    portfolio heuristics' arena)\n"
               "  --floor BYTES     smallest capacity encoded (default: the load; below the load\n"
               "                    every capacity is refuted without a solve unless encoded)\n"
               "  --hint PLAN.csv   a plan whose offsets seed the solver's phases and whose arena\n"
               "                    is the default --upper\n"
               "  --seconds S       time limit per decision (seconds; default: none); past it the\n"
               "                    verdict is unknown\n"
               "  --total-seconds S time limit for the whole run (seconds)\n"
               "  --no-mirror       do not break the reflection symmetry\n"
               "  --no-twins        do not order buffers with the same lifetime and size\n"
               "  --no-normal       do not require every buffer to rest on 0 or on a buffer live\n"
               "                    with it\n"
               "  --no-cover        do not state that a section as large as the capacity leaves\n"
               "                    no unit free\n"
               "  --plan-out FILE   write the smallest plan found (CSV)\n"
               "  --quiet           print only the result lines\n"
               "Prints the encoding size (variables, clauses), each decision with its answer,\n"
               "seconds and learnt clauses kept, and the bounds proven.\n");
}

struct Options {
  std::string path;
  int64_t capacity = -1;
  bool descend = false;
  bool bisect = false;
  int64_t upper = -1;
  int64_t floor = -1;
  std::string hint;
  double seconds = -1;
  double total_seconds = -1;
  bool mirror = true;
  bool twins = true;
  bool normal = true;
  bool cover = true;
  std::string plan_out;
  bool quiet = false;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    auto value = [&](const char* name) -> const char* {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "bench_sat_bound: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++a];
    };
    auto number = [&](const char* name) -> double {
      const char* v = value(name);
      char* end = nullptr;
      const double d = std::strtod(v, &end);
      if (end == v || *end != '\0' || d < 0) {
        std::fprintf(stderr, "bench_sat_bound: %s: not a non-negative number: '%s'\n", name, v);
        std::exit(2);
      }
      return d;
    };
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else if (arg == "--capacity") {
      opt.capacity = static_cast<int64_t>(number("--capacity"));
    } else if (arg == "--descend") {
      opt.descend = true;
    } else if (arg == "--bisect") {
      opt.bisect = true;
    } else if (arg == "--upper") {
      opt.upper = static_cast<int64_t>(number("--upper"));
    } else if (arg == "--floor") {
      opt.floor = static_cast<int64_t>(number("--floor"));
    } else if (arg == "--hint") {
      opt.hint = value("--hint");
    } else if (arg == "--seconds") {
      opt.seconds = number("--seconds");
    } else if (arg == "--total-seconds") {
      opt.total_seconds = number("--total-seconds");
    } else if (arg == "--no-mirror") {
      opt.mirror = false;
    } else if (arg == "--no-cover") {
      opt.cover = false;
    } else if (arg == "--no-normal") {
      opt.normal = false;
    } else if (arg == "--no-twins") {
      opt.twins = false;
    } else if (arg == "--plan-out") {
      opt.plan_out = value("--plan-out");
    } else if (arg == "--quiet") {
      opt.quiet = true;
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "bench_sat_bound: unknown option %s\n", arg.c_str());
      usage(stderr);
      return 2;
    } else if (opt.path.empty()) {
      opt.path = arg;
    } else {
      std::fprintf(stderr, "bench_sat_bound: more than one problem given (%s)\n", arg.c_str());
      return 2;
    }
  }
  if (opt.path.empty() || (opt.capacity >= 0) + opt.descend + opt.bisect != 1) {
    usage(stderr);
    return 2;
  }
  auto problem = memplan::read_problem_csv(opt.path);
  if (!problem.ok()) {
    std::fprintf(stderr, "bench_sat_bound: %s\n", problem.status().message().c_str());
    return 1;
  }
  const auto& buffers = problem->buffers;
  const int32_t n = static_cast<int32_t>(buffers.size());
  int64_t g = 0;
  for (const auto& b : buffers) g = std::gcd(g, b.size);
  g = std::max<int64_t>(g, 1);
  std::vector<int32_t> size;
  std::vector<int64_t> lower, upper;
  int64_t total = 0;
  for (int32_t i = 0; i < n; ++i) {
    const auto& b = buffers[i];
    if (g % problem->alignment_of(i) != 0 || b.offset.has_value()) {
      std::fprintf(stderr,
                   "bench_sat_bound: %s: buffer %s: alignment %" PRId64 " B does not divide the unit %" PRId64
                   " B, or a fixed offset: not supported\n",
                   opt.path.c_str(), b.id.c_str(), problem->alignment_of(i), g);
      return 1;
    }
    size.push_back(static_cast<int32_t>(std::min<int64_t>(b.size / g, INT32_MAX)));
    total += b.size / g;
    lower.push_back(b.lower);
    upper.push_back(b.upper);
  }
  const int64_t load = memplan::load(*problem);
  const int32_t load_units = static_cast<int32_t>((load + g - 1) / g);

  // The upper end: a hint plan, --upper, or the portfolio heuristics.
  std::optional<memplan::Plan> best;
  if (!opt.hint.empty()) {
    auto hint = memplan::read_plan_csv(*problem, opt.hint);
    if (!hint.ok()) {
      std::fprintf(stderr, "bench_sat_bound: %s\n", hint.status().message().c_str());
      return 1;
    }
    const auto check = memplan::validate(*problem, *hint);
    if (!check.ok()) {
      std::fprintf(stderr, "bench_sat_bound: %s: not a valid plan: %s\n", opt.hint.c_str(), check.message.c_str());
      return 1;
    }
    best = *hint;
  } else {
    auto heuristic = memplan::plan_with("portfolio", *problem);
    if (!heuristic.ok()) {
      std::fprintf(stderr, "bench_sat_bound: portfolio: %s\n", heuristic.status().message().c_str());
      return 1;
    }
    best = *heuristic;
  }
  int64_t upper_bytes = opt.upper >= 0 ? opt.upper : best->arena;
  if (opt.capacity >= 0) upper_bytes = std::max(upper_bytes, opt.capacity);
  if (upper_bytes / g > (1 << 22) || total > (int64_t{1} << 40)) {
    std::fprintf(stderr, "bench_sat_bound: %" PRId64 " units of %" PRId64 " B: too many for the order encoding\n",
                 upper_bytes / g, g);
    return 1;
  }
  const int32_t cmax = static_cast<int32_t>(upper_bytes / g);
  const int32_t floor =
      std::min(opt.floor >= 0 ? static_cast<int32_t>(std::min<int64_t>(opt.floor / g, load_units)) : load_units, cmax);
  std::printf("problem %s: %d buffers, unit %" PRId64 " B, load %" PRId64 " B (%d units), %s plan %" PRId64
              " B (%" PRId64 " units)\n",
              opt.path.c_str(), n, g, load, load_units, opt.hint.empty() ? "heuristic" : "hint", best->arena,
              best->arena / g);
  std::fflush(stdout);
  if (n == 0) {
    std::printf("optimal: 0 B\n");
    return 0;
  }

  const auto t_encode = Clock::now();
  CaDiCaL::Solver solver;
  solver.set("quiet", 1);
  const auto layout = memplan::solver::build_sections(lower, upper);
  const memplan::solver::SatEncoding enc(
      solver, layout, size, lower, upper, cmax, floor,
      {.mirror = opt.mirror, .twins = opt.twins, .normal = opt.normal, .cover = opt.cover});
  if (best->arena <= static_cast<int64_t>(cmax) * g) {
    std::vector<int32_t> off(n);
    for (int32_t i = 0; i < n; ++i) off[i] = static_cast<int32_t>(best->offsets[i] / g);
    enc.set_phases(solver, off);
  }
  std::printf("encoding: capacities %d..%d units, %d variables, %" PRId64 " clauses, %" PRId64
              " pairs live together (%" PRId64 " twins ordered), mirror %s, %" PRId64
              " tight (section, capacity)s, %.1f s\n",
              floor, cmax, enc.variables(), enc.clauses(), enc.pairs(), enc.twin_pairs(),
              enc.mirror_buffer() >= 0 ? buffers[enc.mirror_buffer()].id.c_str() : "off", enc.tight_sections(),
              seconds_since(t_encode));
  std::fflush(stdout);

  memplan::solver::SolveDeadline deadline;
  solver.connect_terminator(&deadline);
  const auto t_start = Clock::now();
  int64_t proven_lower = load;  // every plan is at least this
  // Decides capacity c (units): 10 SAT, 20 UNSAT, 0 unknown.
  auto decide = [&](int32_t c) -> int {
    double limit = opt.seconds;
    if (opt.total_seconds >= 0) {
      const double left = opt.total_seconds - seconds_since(t_start);
      if (left <= 0) return 0;
      limit = limit < 0 ? left : std::min(limit, left);
    }
    deadline.arm(limit < 0 ? std::nullopt
                           : std::optional(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                              std::chrono::duration<double>(limit))));
    const auto t = Clock::now();
    solver.assume(enc.fit(c));
    const int result = solver.solve();
    const double secs = seconds_since(t);
    const char* answer = result == 10 ? "SAT" : result == 20 ? "UNSAT" : "unknown";
    if (result == 10) {
      const auto off = enc.offsets(solver);
      std::vector<int64_t> bytes(n);
      for (int32_t i = 0; i < n; ++i) bytes[i] = static_cast<int64_t>(off[i]) * g;
      memplan::Plan plan = memplan::make_plan(*problem, std::move(bytes));
      const auto check = memplan::validate(*problem, plan);
      if (!check.ok() || plan.arena > static_cast<int64_t>(c) * g) {
        std::fprintf(stderr, "bench_sat_bound: the solver's plan at %d units is not valid: %s (arena %" PRId64 " B)\n",
                     c, check.message.c_str(), plan.arena);
        std::exit(3);
      }
      if (plan.arena < best->arena) best = plan;
    } else if (result == 20) {
      proven_lower = std::max(proven_lower, (static_cast<int64_t>(c) + 1) * g);
    }
    std::printf("capacity %" PRId64 " B (%d units): %s in %.2f s, %" PRId64 " learnt clauses kept%s\n",
                static_cast<int64_t>(c) * g, c, answer, secs, solver.redundant(),
                result == 10 ? (" -> plan " + std::to_string(best->arena) + " B").c_str() : "");
    std::fflush(stdout);
    return result;
  };

  if (opt.capacity >= 0) {
    const int32_t c = static_cast<int32_t>(opt.capacity / g);
    if (c < floor) {
      std::printf("capacity %" PRId64 " B (%d units): UNSAT below the load\n", static_cast<int64_t>(c) * g, c);
      proven_lower = std::max(proven_lower, load);
    } else {
      decide(c);
    }
  } else if (opt.descend) {
    while (best->arena / g - 1 >= floor) {
      const int32_t c = static_cast<int32_t>(best->arena / g - 1);
      if (decide(c) != 10) break;
    }
  } else {
    int32_t lo = floor;                                  // smallest capacity not refuted
    int32_t hi = static_cast<int32_t>(best->arena / g);  // a plan fits here
    while (lo < hi) {
      const int32_t mid = lo + (hi - lo) / 2;
      const int r = decide(mid);
      if (r == 10) {
        hi = static_cast<int32_t>(best->arena / g);
      } else if (r == 20) {
        lo = mid + 1;
      } else {
        break;
      }
    }
  }
  const bool optimal = proven_lower >= best->arena;
  std::printf("bounds: %" PRId64 " B <= optimum <= %" PRId64 " B%s (load %" PRId64 " B, %.1f s)\n", proven_lower,
              best->arena, optimal ? ": optimal" : "", load, seconds_since(t_start));
  if (!opt.plan_out.empty()) {
    const auto status = memplan::write_text_file(opt.plan_out, memplan::format_plan_csv(*problem, *best));
    if (!status.ok()) {
      std::fprintf(stderr, "bench_sat_bound: %s\n", status.message().c_str());
      return 1;
    }
  }
  return 0;
}
