// bench_sat_bound.cc — decides whether a problem's buffers fit in a capacity
// with a SAT solver (CaDiCaL) on the order encoding of no-overlap-2D, the
// encoding Soh, Inoue, Tamura, Banbara and Nabeshima used for two-dimensional
// strip packing (Constraints 15(1), 2010). Issue 16, item 2: an UNSAT answer
// at C proves that no plan fits in C units, which no relaxation of time does
// on D and J; a SAT answer is a plan, checked by memplan::validate.
//
// Offsets are counted in units of g bytes (the gcd of the sizes; see
// bench_cbp_bound.cc for why that loses nothing). The model at capacity C:
//   y[i,k] <=> offset_i >= k, for k = 1 .. Cmax - s_i (order encoding:
//     y[i,k+1] -> y[i,k]); offset 0 <= o_i <= Cmax - s_i.
//   For every pair i, j live at a common tick, two literals below[i,j] (i lies
//     wholly below j: o_i + s_i <= o_j) and below[j,i]; at least one holds,
//     and below[i,j] & y[i,k] -> y[j, k + s_i] for every k (with y[i,0] true
//     and y[j, m] false past j's range).
//   A selector fit[C] for each capacity between the floor and Cmax:
//     fit[C] -> not y[i, C - s_i + 1] for every i (every buffer ends by C).
// Deciding C is one solve under the assumption fit[C], so the clauses learnt at
// one capacity carry over to the next in --descend and --bisect.
//
// Symmetry, both sound and both on by default:
//   mirror    reflecting a plan (o_i -> C - s_i - o_i) gives a plan, so the
//             first of the largest buffers sits in the lower half:
//             fit[C] -> o_b <= (C - s_b) / 2.
//   twins     buffers with the same lifetime and size are interchangeable, so
//             among them the earlier one in the file lies below (the mirror's
//             buffer has no twin ordered, so that the two combine).
// and a dominance rule, also on by default:
//   normal    every buffer rests on offset 0 or on the top of a buffer live
//             with it. Any plan becomes one by pushing buffers down (in order
//             of offset, each to the highest top below it); pushing down only
//             lowers offsets, so a mirrored plan keeps its buffer in the lower
//             half, and relabelling twins afterwards changes no shape.
// and one redundant rule (implied by the pairs, but only through every order of
// a section's buffers, which a SAT solver would have to enumerate):
//   cover     a section whose sizes add up to exactly C leaves no unit free.
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

// Stops a solve at its deadline (checked by CaDiCaL between its steps).
class Deadline : public CaDiCaL::Terminator {
 public:
  void arm(double seconds) {
    armed_ = seconds >= 0;
    if (armed_) at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
  bool terminate() override { return armed_ && Clock::now() >= at_; }

 private:
  bool armed_ = false;
  Clock::time_point at_;
};

class Encoding {
 public:
  // Adds the clauses to `solver` as it builds them.
  Encoding(CaDiCaL::Solver& solver, const memplan::solver::SectionLayout& layout, std::vector<int32_t> size,
           std::vector<int64_t> lower, std::vector<int64_t> upper, int32_t cmax, int32_t floor, bool mirror,
           bool twins, bool normal, bool cover)
      : solver_(solver), size_(std::move(size)), lower_(std::move(lower)), upper_(std::move(upper)), cmax_(cmax), floor_(floor) {
    const int32_t n = static_cast<int32_t>(size_.size());
    // Order variables: buffer i has Cmax - s_i of them.
    first_.resize(n + 1);
    first_[0] = 1;
    for (int32_t i = 0; i < n; ++i) first_[i + 1] = first_[i] + std::max(0, range(i));
    next_var_ = first_[n];
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t k = 1; k < range(i); ++k) clause({-y(i, k + 1), y(i, k)});
    }
    // The mirror's buffer: the first of the largest (its twins stay unordered).
    mirror_buffer_ = -1;
    if (mirror) {
      for (int32_t i = 0; i < n; ++i) {
        if (mirror_buffer_ < 0 || size_[i] > size_[mirror_buffer_]) mirror_buffer_ = i;
      }
    }
    // Pairs live at a common tick.
    std::vector<std::vector<int32_t>> neighbours(n);
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t j : layout.neighbors_of(i)) {
        neighbours[i].push_back(j);
        if (i < j) add_pair(i, j, twins);
      }
    }
    if (normal) add_normal_form(neighbours);
    // Capacity selectors.
    for (int32_t c = floor_; c <= cmax_; ++c) {
      const int32_t f = next_var_++;
      fit_.push_back(f);
      for (int32_t i = 0; i < n; ++i) {
        if (size_[i] > c) {
          clause({-f});
          break;
        }
        if (c - size_[i] + 1 <= range(i)) clause({-f, -y(i, c - size_[i] + 1)});
      }
      if (mirror_buffer_ >= 0 && size_[mirror_buffer_] <= c) {
        const int32_t half = (c - size_[mirror_buffer_]) / 2;
        if (half + 1 <= range(mirror_buffer_)) clause({-f, -y(mirror_buffer_, half + 1)});
      }
      if (cover) add_cover(layout, c, f);
    }
  }

  int32_t range(int32_t i) const { return cmax_ - size_[i]; }  // largest offset
  // y(i, k) for 1 <= k <= range(i).
  int32_t y(int32_t i, int32_t k) const { return first_[i] + k - 1; }
  int32_t fit(int32_t c) const { return fit_[c - floor_]; }
  int32_t variables() const { return next_var_ - 1; }
  int64_t clauses() const { return clause_count_; }
  int64_t pairs() const { return pairs_; }
  int64_t twin_pairs() const { return twin_pairs_; }
  int32_t mirror_buffer() const { return mirror_buffer_; }
  int64_t tight_sections() const { return tight_sections_; }

  std::vector<int32_t> offsets(CaDiCaL::Solver& s) const {
    const int32_t n = static_cast<int32_t>(size_.size());
    std::vector<int32_t> out(n, 0);
    for (int32_t i = 0; i < n; ++i) {
      int32_t k = 0;
      while (k < range(i) && s.val(y(i, k + 1)) > 0) ++k;
      out[i] = k;
    }
    return out;
  }

  // Phases that reproduce a plan (offsets in units).
  void set_phases(CaDiCaL::Solver& s, const std::vector<int32_t>& offset) const {
    for (size_t i = 0; i < size_.size(); ++i) {
      const int32_t r = range(static_cast<int32_t>(i));
      for (int32_t k = 1; k <= r; ++k) s.phase(offset[i] >= k ? y(i, k) : -y(i, k));
    }
    for (const auto& p : pair_vars_) {
      s.phase(offset[p.i] + size_[p.i] <= offset[p.j] ? p.below_ij : -p.below_ij);
      s.phase(offset[p.j] + size_[p.j] <= offset[p.i] ? p.below_ji : -p.below_ji);
    }
  }

 private:
  struct PairVars {
    int32_t i, j, below_ij, below_ji;
  };

  void clause(std::initializer_list<int32_t> lits) {
    for (int32_t lit : lits) solver_.add(lit);
    solver_.add(0);
    ++clause_count_;
  }

  // below -> o_j >= o_i + s_i.
  void add_below(int32_t below, int32_t i, int32_t j) {
    // o_j >= s_i (k = 0).
    if (size_[i] > range(j)) {
      clause({-below});
      return;
    }
    clause({-below, y(j, size_[i])});
    for (int32_t k = 1; k <= range(i); ++k) {
      if (k + size_[i] > range(j)) {
        clause({-below, -y(i, k)});  // and every larger k follows by the order clauses
        break;
      }
      clause({-below, -y(i, k), y(j, k + size_[i])});
    }
  }

  // Every buffer at offset k > 0 rests on a buffer live with it that ends at k:
  //   (o_i = k) -> OR_j at[j, k - s_j],   at[j, m] -> (o_j = m).
  void add_normal_form(const std::vector<std::vector<int32_t>>& neighbours) {
    const int32_t n = static_cast<int32_t>(size_.size());
    std::vector<std::vector<int32_t>> at(n);  // at[j][m], created on first use
    auto at_var = [&](int32_t j, int32_t m) {
      if (at[j].empty()) at[j].assign(range(j) + 1, 0);
      int32_t& v = at[j][m];
      if (v == 0) {
        v = next_var_++;
        if (m > 0) clause({-v, y(j, m)});
        if (m < range(j)) clause({-v, -y(j, m + 1)});
      }
      return v;
    };
    std::vector<int32_t> lits;
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t k = 1; k <= range(i); ++k) {
        lits.clear();
        lits.push_back(-y(i, k));
        if (k < range(i)) lits.push_back(y(i, k + 1));
        for (int32_t j : neighbours[i]) {
          const int32_t m = k - size_[j];
          if (m >= 0 && m <= range(j)) lits.push_back(at_var(j, m));
        }
        for (int32_t lit : lits) solver_.add(lit);
        solver_.add(0);
        ++clause_count_;
      }
    }
  }

  // A section whose buffers add up to exactly c leaves no unit of [0, c) free
  // at capacity c: fit[c] -> OR_{i in S} covers[i, u] for every unit u, with
  // covers[i, u] -> o_i <= u < o_i + s_i. (Implied by the pairs, but only
  // through every ordering of the section; said directly it propagates.)
  void add_cover(const memplan::solver::SectionLayout& layout, int32_t c, int32_t f) {
    for (int32_t s = 0; s < layout.section_count; ++s) {
      const auto members = layout.members_of(s);
      int64_t total = 0;
      for (int32_t i : members) total += size_[i];
      if (total != c) continue;
      ++tight_sections_;
      std::vector<int32_t> lits;
      for (int32_t u = 0; u < c; ++u) {
        lits.assign(1, -f);
        for (int32_t i : members) {
          if (u - size_[i] + 1 > range(i)) continue;  // i cannot reach unit u
          lits.push_back(covers(i, u));  // may add the definition's clauses: not inside this one
        }
        for (int32_t lit : lits) solver_.add(lit);
        solver_.add(0);
        ++clause_count_;
      }
    }
  }

  int32_t covers(int32_t i, int32_t u) {
    if (cover_.empty()) cover_.resize(size_.size());
    if (cover_[i].empty()) cover_[i].assign(cmax_, 0);
    int32_t& v = cover_[i][u];
    if (v == 0) {
      v = next_var_++;
      if (u + 1 <= range(i)) clause({-v, -y(i, u + 1)});          // o_i <= u
      if (u - size_[i] + 1 >= 1) clause({-v, y(i, u - size_[i] + 1)});  // o_i > u - s_i
    }
    return v;
  }

  void add_pair(int32_t i, int32_t j, bool twins) {
    ++pairs_;
    const int32_t ij = next_var_++;
    const int32_t ji = next_var_++;
    pair_vars_.push_back({i, j, ij, ji});
    clause({ij, ji});
    add_below(ij, i, j);
    add_below(ji, j, i);
    const bool twin = lower_[i] == lower_[j] && upper_[i] == upper_[j] && size_[i] == size_[j];
    if (twins && twin && i != mirror_buffer_ && j != mirror_buffer_) {
      ++twin_pairs_;
      clause({ij});
    }
  }

  CaDiCaL::Solver& solver_;
  std::vector<int32_t> size_;
  std::vector<int64_t> lower_, upper_;
  int32_t cmax_, floor_;
  std::vector<int32_t> first_;
  int32_t next_var_ = 1;
  std::vector<int32_t> fit_;
  std::vector<PairVars> pair_vars_;
  int64_t clause_count_ = 0;
  int64_t pairs_ = 0;
  int64_t twin_pairs_ = 0;
  int32_t mirror_buffer_ = -1;
  std::vector<std::vector<int32_t>> cover_;  // covers(i, u), created on first use
  int64_t tight_sections_ = 0;
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
      std::fprintf(stderr, "bench_sat_bound: %s: buffer %s: alignment %" PRId64
                   " B does not divide the unit %" PRId64 " B, or a fixed offset: not supported\n",
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
  Encoding enc(solver, layout, size, lower, upper, cmax, floor, opt.mirror, opt.twins, opt.normal, opt.cover);
  if (best->arena <= static_cast<int64_t>(cmax) * g) {
    std::vector<int32_t> off(n);
    for (int32_t i = 0; i < n; ++i) off[i] = static_cast<int32_t>(best->offsets[i] / g);
    enc.set_phases(solver, off);
  }
  std::printf("encoding: capacities %d..%d units, %d variables, %" PRId64 " clauses, %" PRId64
              " pairs live together (%" PRId64 " twins ordered), mirror %s, %" PRId64 " tight (section, capacity)s, %.1f s\n",
              floor, cmax, enc.variables(), enc.clauses(), enc.pairs(), enc.twin_pairs(),
              enc.mirror_buffer() >= 0 ? buffers[enc.mirror_buffer()].id.c_str() : "off", enc.tight_sections(),
              seconds_since(t_encode));
  std::fflush(stdout);

  Deadline deadline;
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
    deadline.arm(limit);
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
    int32_t lo = floor;                                      // smallest capacity not refuted
    int32_t hi = static_cast<int32_t>(best->arena / g);     // a plan fits here
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
