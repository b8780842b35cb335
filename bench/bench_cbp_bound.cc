// bench_cbp_bound.cc — the position-indexed (contiguous bin packing) LP lower
// bound on the arena of a problem, solved with CoinOR Clp (issue 16, item 2).
//
// Offsets are counted in units of g bytes (default: the gcd of the sizes).
// That loses nothing: in any plan, push every buffer down as far as the
// buffers below it allow (process them by offset; a buffer's new offset is the
// largest new top of the time-overlapping buffers below it, or 0). No offset
// grows, no two time-overlapping buffers overlap in bytes afterwards, and every
// offset is a sum of sizes, hence a multiple of g. So a plan with arena <= C*g
// bytes exists iff one with all offsets multiples of g fits in C units.
//
// The model at capacity C (units), for buffers i of s_i units:
//   x[i,o] >= 0, o = 0 .. C - s_i     (fraction of buffer i at offset o)
//   sum_o x[i,o] = 1                   (each buffer placed once)
//   for each section S (maximal set of buffers live together, see
//   solver/sections.h) and unit u in [0, C):
//     sum_{i in S} sum_{o <= u < o + s_i} x[i,o] <= 1
// With integer x this is exactly the problem; its LP relaxation is a bound: if
// the LP is infeasible at C, no plan fits in C*g bytes. The LP is stated in
// cumulative variables X[i,o] = x[i,0] + ... + x[i,o] (nondecreasing in o,
// X[i, C - s_i] = 1), so that the bytes buffer i covers at unit u are
// X[i, min(u, C - s_i)] - X[i, u - s_i]: two coefficients per buffer and row
// instead of s_i. The section rows are added lazily: start with the rows of
// the sections with the largest total, solve, add every violated (S, u) row,
// re-solve with the dual simplex, until none is violated (the LP is feasible)
// or Clp proves the rows so far infeasible (then the full LP is, too: it has
// more rows). --full adds them all up front instead.
//
// --bisect finds the smallest C in [ceil(load/g), --upper/g] at which the LP is
// feasible (the LP is monotone in C: a solution at C is one at C + 1): every
// smaller C is refuted, so the arena is at least C*g bytes. --ip SECONDS also
// solves the integer model with CBC at --capacity (same lazy rows: an integer
// solution that violates a missing row gets the row added and CBC runs again).
//
// Usage: bench_cbp_bound PROBLEM.csv (--capacity BYTES | --bisect [--upper BYTES])
//                        [--unit BYTES] [--full] [--ip SECONDS] [--window K]
//                        [--max-windows N] [--lp-seconds S] [--quiet]
#include <CbcModel.hpp>
#include <CoinPackedMatrix.hpp>
#include <CoinPackedVector.hpp>
#include <OsiClpSolverInterface.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "solver/sections.h"

namespace {

using Clock = std::chrono::steady_clock;

void usage(FILE* out) {
  std::fprintf(out,
               "usage: bench_cbp_bound PROBLEM.csv (--capacity BYTES | --bisect [--upper BYTES])\n"
               "                       [--unit BYTES] [--full] [--ip SECONDS] [--window K]\n"
               "                       [--max-windows N] [--lp-seconds S] [--quiet]\n"
               "\n"
               "Decides the LP relaxation of the position-indexed model (one offset per buffer,\n"
               "at most one buffer per offset unit in every section) with CoinOR Clp. An\n"
               "infeasible LP at capacity C proves that no plan fits in C bytes.\n"
               "\n"
               "  --capacity BYTES  decide the LP at this arena size (rounded down to units)\n"
               "  --bisect          find the smallest capacity at which the LP is feasible, between\n"
               "                    the load and --upper (default: the sum of the sizes); that\n"
               "                    capacity is a lower bound on every plan's arena\n"
               "  --upper BYTES     an arena known to be achievable (bisection's upper end)\n"
               "  --unit BYTES      offset unit g (default: gcd of the sizes); must be a multiple\n"
               "                    of every alignment and divide every size\n"
               "  --full            add every section row up front instead of lazily\n"
               "  --ip SECONDS      with --capacity: also solve the integer model with CBC under\n"
               "                    this time limit (seconds)\n"
               "  --window K        with --capacity: decide the LP of every window of K consecutive\n"
               "                    sections (only the buffers live there), least slack first; an\n"
               "                    infeasible window refutes the capacity for the whole problem\n"
               "  --max-windows N   decide only the N windows with the least slack\n"
               "  --lp-seconds S    Clp time limit per LP (seconds); past it the verdict is unknown\n"
               "  --quiet           print only the result lines\n"
               "Prints the model size (rows, columns, non-zeros), the LP status and the time (s).\n");
}

struct Options {
  std::string path;
  int64_t capacity = -1;
  bool bisect = false;
  int64_t upper = -1;
  int64_t unit = 0;
  bool full = false;
  double ip_seconds = -1;
  bool quiet = false;
  int32_t window = 0;        // > 0: decide windows of this many consecutive sections
  int32_t max_windows = -1;  // < 0: all
  double lp_seconds = -1;    // Clp time limit per LP solve (< 0: none)
};

double g_lp_seconds = -1;
bool g_progress = true;  // one line per round of added rows on stderr

struct Instance {
  int32_t n = 0;
  int64_t unit = 1;
  std::vector<int32_t> size;                   // units
  std::vector<std::vector<int32_t>> sections;  // members, in time order
  std::vector<int64_t> section_total;          // units
  int64_t load_units = 0;
  int64_t total_units = 0;

  void finish() {
    section_total.clear();
    load_units = 0;
    for (const auto& members : sections) {
      int64_t t = 0;
      for (int32_t i : members) t += size[i];
      section_total.push_back(t);
      load_units = std::max(load_units, t);
    }
  }

  // The relaxation to sections [first, first + count): only the buffers live
  // in them, only their rows. Every plan of the whole problem is one of this.
  Instance window(int32_t first, int32_t count) const {
    Instance w;
    w.unit = unit;
    std::vector<int32_t> local(size.size(), -1);
    for (int32_t s = first; s < first + count; ++s) {
      std::vector<int32_t> members;
      for (int32_t i : sections[s]) {
        if (local[i] < 0) {
          local[i] = w.n++;
          w.size.push_back(size[i]);
          w.total_units += size[i];
        }
        members.push_back(local[i]);
      }
      w.sections.push_back(std::move(members));
    }
    w.finish();
    return w;
  }
};

// The LP (or IP) at one capacity, with its lazily grown set of section rows.
class Model {
 public:
  Model(const Instance& inst, int32_t capacity) : inst_(inst), c_(capacity) {
    first_col_.resize(inst.n + 1);
    for (int32_t i = 0; i < inst.n; ++i) first_col_[i + 1] = first_col_[i] + positions(i);
    const int32_t cols = first_col_[inst.n];
    std::vector<double> lo(cols, 0.0), up(cols, 1.0), obj(cols, 1.0);
    // Objective: minimise the sum of the X, i.e. push every buffer up as far as
    // the rows allow. Any objective answers the feasibility question; with this
    // one Clp needed 5x fewer seconds than with none on the small test problem.
    // Monotonicity rows X[i,o-1] - X[i,o] <= 0.
    CoinPackedMatrix m(false, 0, 0);
    m.setDimensions(0, cols);
    std::vector<double> rlo, rup;
    for (int32_t i = 0; i < inst.n; ++i) {
      for (int32_t o = 1; o < positions(i); ++o) {
        CoinPackedVector row;
        row.insert(first_col_[i] + o - 1, 1.0);
        row.insert(first_col_[i] + o, -1.0);
        m.appendRow(row);
        rlo.push_back(-COIN_DBL_MAX);
        rup.push_back(0.0);
      }
    }
    solver_.messageHandler()->setLogLevel(0);
    solver_.loadProblem(m, lo.data(), up.data(), obj.data(), rlo.data(), rup.data());
    base_rows_ = solver_.getNumRows();
    added_.assign(static_cast<size_t>(static_cast<int32_t>(inst.sections.size())) * c_, 0);
  }

  // Variables of buffer i: X[i, 0 .. C - s_i - 1]; X[i, C - s_i] is the constant 1.
  int32_t positions(int32_t i) const { return c_ - inst_.size[i]; }
  int32_t columns() const { return first_col_[inst_.n]; }
  int32_t rows() const { return solver_.getNumRows(); }
  int64_t nonzeros() const { return solver_.getNumElements(); }
  int32_t section_rows() const { return rows() - base_rows_; }

  // Adds row (s, u) unless already present. Returns false if it was there.
  bool add_row(int32_t s, int32_t u, CoinPackedVector& row, double& rhs) const {
    row.clear();
    rhs = 1.0;
    for (int32_t i : inst_.sections[s]) {
      const int32_t top = std::min(u, c_ - inst_.size[i]);
      const int32_t below = u - inst_.size[i];
      if (top == c_ - inst_.size[i]) {
        rhs -= 1.0;  // X[i, C - s_i] = 1
      } else {
        row.insert(first_col_[i] + top, 1.0);
      }
      if (below >= 0) row.insert(first_col_[i] + below, -1.0);
    }
    return true;
  }

  // Adds the rows listed (section, unit) that are not in the model yet.
  int32_t add_rows(const std::vector<std::pair<int32_t, int32_t>>& list) {
    std::vector<CoinPackedVectorBase*> vecs;
    std::vector<double> rlo, rup;
    std::vector<CoinPackedVector> store;
    store.reserve(list.size());
    for (auto [s, u] : list) {
      uint8_t& flag = added_[static_cast<size_t>(s) * c_ + u];
      if (flag) continue;
      flag = 1;
      store.emplace_back();
      double rhs;
      add_row(s, u, store.back(), rhs);
      rlo.push_back(-COIN_DBL_MAX);
      rup.push_back(rhs);
    }
    for (auto& v : store) vecs.push_back(&v);
    if (!vecs.empty()) solver_.addRows(static_cast<int>(vecs.size()), vecs.data(), rlo.data(), rup.data());
    return static_cast<int32_t>(vecs.size());
  }

  // Coverage of unit u in section s by the solution `x` (cumulative values).
  double coverage(const double* x, int32_t s, int32_t u) const {
    double sum = 0;
    for (int32_t i : inst_.sections[s]) {
      const int32_t top = std::min(u, c_ - inst_.size[i]);
      const int32_t below = u - inst_.size[i];
      sum += top == c_ - inst_.size[i] ? 1.0 : x[first_col_[i] + top];
      if (below >= 0) sum -= x[first_col_[i] + below];
    }
    return sum;
  }

  std::vector<std::pair<int32_t, int32_t>> violated(const double* x, double tol) const {
    std::vector<std::pair<int32_t, int32_t>> out;
    for (int32_t s = 0; s < static_cast<int32_t>(inst_.sections.size()); ++s)
      for (int32_t u = 0; u < c_; ++u)
        if (coverage(x, s, u) > 1.0 + tol) out.emplace_back(s, u);
    return out;
  }

  std::vector<std::pair<int32_t, int32_t>> all_rows_of(int32_t s) const {
    std::vector<std::pair<int32_t, int32_t>> out;
    for (int32_t u = 0; u < c_; ++u) out.emplace_back(s, u);
    return out;
  }

  OsiClpSolverInterface& solver() { return solver_; }

 private:
  const Instance& inst_;
  int32_t c_;
  std::vector<int32_t> first_col_;
  int32_t base_rows_ = 0;
  std::vector<uint8_t> added_;
  OsiClpSolverInterface solver_;
};

enum class Verdict { kFeasible, kInfeasible, kUnknown };

const char* name(Verdict v) {
  switch (v) {
    case Verdict::kFeasible:
      return "feasible";
    case Verdict::kInfeasible:
      return "infeasible";
    default:
      return "unknown";
  }
}

struct LpResult {
  Verdict verdict = Verdict::kUnknown;
  int32_t rows = 0, cols = 0, section_rows = 0, rounds = 0;
  int64_t nnz = 0;
  int64_t full_rows = 0;  // section rows of the complete model
  double seconds = 0;
};

constexpr double kTolerance = 1e-7;

LpResult solve_lp(const Instance& inst, int32_t capacity, bool full, Model** keep = nullptr) {
  LpResult r;
  const auto t0 = Clock::now();
  r.full_rows = static_cast<int64_t>(static_cast<int32_t>(inst.sections.size())) * capacity;
  for (int32_t i = 0; i < inst.n; ++i) {
    if (inst.size[i] > capacity) {  // a buffer larger than the arena: trivially infeasible
      r.verdict = Verdict::kInfeasible;
      r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      return r;
    }
  }
  auto* model = new Model(inst, capacity);
  if (full) {
    for (int32_t s = 0; s < static_cast<int32_t>(inst.sections.size()); ++s) model->add_rows(model->all_rows_of(s));
  } else {
    // Seed with the sections of the largest total (least slack).
    std::vector<int32_t> order(static_cast<int32_t>(inst.sections.size()));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return inst.section_total[a] > inst.section_total[b]; });
    for (size_t k = 0; k < std::min<size_t>(order.size(), 2); ++k) model->add_rows(model->all_rows_of(order[k]));
  }
  auto& solver = model->solver();
  if (g_lp_seconds > 0) solver.getModelPtr()->setMaximumSeconds(g_lp_seconds);
  solver.initialSolve();
  for (;;) {
    ++r.rounds;
    if (g_progress)
      std::fprintf(stderr, "  round %d: %d rows, %.2f s\n", r.rounds, model->rows(),
                   std::chrono::duration<double>(Clock::now() - t0).count());
    if (solver.isProvenPrimalInfeasible()) {
      r.verdict = Verdict::kInfeasible;
      break;
    }
    if (!solver.isProvenOptimal()) {
      r.verdict = Verdict::kUnknown;
      break;
    }
    const auto bad = model->violated(solver.getColSolution(), kTolerance);
    if (bad.empty()) {
      r.verdict = Verdict::kFeasible;
      break;
    }
    if (model->add_rows(bad) == 0) {  // violated rows already present: numerical trouble
      r.verdict = Verdict::kUnknown;
      break;
    }
    solver.resolve();
  }
  r.rows = model->rows();
  r.cols = model->columns();
  r.nnz = model->nonzeros();
  r.section_rows = model->section_rows();
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (keep) {
    *keep = model;
  } else {
    delete model;
  }
  return r;
}

// The size of the complete model at `capacity` (every section row), without building it.
void print_full_size(const Instance& inst, int32_t capacity) {
  int64_t cols = 0, rows = 0, nnz = 0;
  for (int32_t i = 0; i < inst.n; ++i) {
    const int64_t p = std::max<int64_t>(capacity - inst.size[i], 0);
    cols += p;
    rows += std::max<int64_t>(p - 1, 0);  // monotonicity rows, 2 non-zeros each
    nnz += 2 * std::max<int64_t>(p - 1, 0);
  }
  for (const auto& members : inst.sections) {
    rows += capacity;
    for (int32_t i : members) nnz += 2 * std::max<int64_t>(capacity - inst.size[i], 0);
  }
  std::printf("complete model at %" PRId64 " B: rows %" PRId64 "  cols %" PRId64 "  nnz %" PRId64 "\n",
              static_cast<int64_t>(capacity) * inst.unit, rows, cols, nnz);
}

void print_lp(const Instance& inst, int32_t capacity, const LpResult& r) {
  std::printf("capacity %" PRId64 " B (%d units): LP %s  rows %d (section rows %d of %" PRId64
              ")  cols %d  nnz %" PRId64 "  rounds %d  %.2f s\n",
              static_cast<int64_t>(capacity) * inst.unit, capacity, name(r.verdict), r.rows, r.section_rows,
              r.full_rows, r.cols, r.nnz, r.rounds, r.seconds);
  std::fflush(stdout);
}

// CBC on the integer model at `capacity`, adding violated section rows to the
// model between runs. Returns the verdict of the integer model.
Verdict solve_ip(const Instance& inst, int32_t capacity, Model& model, double seconds) {
  const auto t0 = Clock::now();
  auto& solver = model.solver();
  for (int32_t j = 0; j < model.columns(); ++j) solver.setInteger(j);
  Verdict verdict = Verdict::kUnknown;
  int runs = 0;
  for (;;) {
    const double left = seconds - std::chrono::duration<double>(Clock::now() - t0).count();
    if (left <= 0) break;
    ++runs;
    CbcModel cbc(solver);
    cbc.setLogLevel(0);
    cbc.messageHandler()->setLogLevel(0);
    cbc.setMaximumSeconds(left);
    cbc.setMaximumSolutions(1);  // a feasibility question: the first solution answers it
    cbc.branchAndBound();
    if (cbc.isProvenInfeasible()) {
      verdict = Verdict::kInfeasible;
      break;
    }
    const double* x = cbc.bestSolution();
    if (x == nullptr) break;  // time limit without a solution
    const auto bad = model.violated(x, kTolerance);
    if (bad.empty()) {
      verdict = Verdict::kFeasible;
      break;
    }
    model.add_rows(bad);
  }
  std::printf("capacity %" PRId64 " B (%d units): IP %s  CBC runs %d  rows %d  cols %d  nnz %" PRId64
              "  %.2f s (limit %.0f s)\n",
              static_cast<int64_t>(capacity) * inst.unit, capacity, name(verdict), runs, model.rows(), model.columns(),
              model.nonzeros(), std::chrono::duration<double>(Clock::now() - t0).count(), seconds);
  return verdict;
}

int64_t parse_int(const char* flag, const char* text) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 0) {
    std::fprintf(stderr, "bench_cbp_bound: %s needs a non-negative integer, got '%s'\n", flag, text);
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    auto next = [&]() -> const char* {
      if (k + 1 >= argc) {
        std::fprintf(stderr, "bench_cbp_bound: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++k];
    };
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--capacity") {
      opt.capacity = parse_int("--capacity", next());
    } else if (a == "--bisect") {
      opt.bisect = true;
    } else if (a == "--upper") {
      opt.upper = parse_int("--upper", next());
    } else if (a == "--unit") {
      opt.unit = parse_int("--unit", next());
    } else if (a == "--full") {
      opt.full = true;
    } else if (a == "--ip") {
      opt.ip_seconds = std::strtod(next(), nullptr);
    } else if (a == "--window") {
      opt.window = static_cast<int32_t>(parse_int("--window", next()));
    } else if (a == "--max-windows") {
      opt.max_windows = static_cast<int32_t>(parse_int("--max-windows", next()));
    } else if (a == "--lp-seconds") {
      opt.lp_seconds = std::strtod(next(), nullptr);
    } else if (a == "--quiet") {
      opt.quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "bench_cbp_bound: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    } else if (opt.path.empty()) {
      opt.path = a;
    } else {
      std::fprintf(stderr, "bench_cbp_bound: more than one problem given (%s)\n", a.c_str());
      return 2;
    }
  }
  if (opt.path.empty() || (opt.capacity < 0) == !opt.bisect) {
    usage(stderr);
    return 2;
  }
  auto problem = memplan::read_problem_csv(opt.path);
  if (!problem.ok()) {
    std::fprintf(stderr, "bench_cbp_bound: %s\n", problem.status().message().c_str());
    return 1;
  }
  const auto& buffers = problem->buffers;
  Instance inst;
  inst.n = static_cast<int32_t>(buffers.size());
  int64_t g = 0;
  for (const auto& b : buffers) g = std::gcd(g, b.size);
  inst.unit = opt.unit > 0 ? opt.unit : std::max<int64_t>(g, 1);
  std::vector<int64_t> lower, upper;
  for (const auto& b : buffers) {
    if (b.size % inst.unit != 0) {
      std::fprintf(stderr,
                   "bench_cbp_bound: %s: buffer %s: size %" PRId64 " B is not a multiple of the unit %" PRId64 " B\n",
                   opt.path.c_str(), b.id.c_str(), b.size, inst.unit);
      return 1;
    }
    if (inst.unit % b.alignment != 0 || b.offset.has_value()) {
      std::fprintf(stderr,
                   "bench_cbp_bound: %s: buffer %s: alignment %" PRId64
                   " B does not divide the unit, or a fixed offset: not supported\n",
                   opt.path.c_str(), b.id.c_str(), b.alignment);
      return 1;
    }
    if (b.size / inst.unit > (1 << 24)) {
      std::fprintf(stderr, "bench_cbp_bound: %s: buffer %s: more than 2^24 units; choose a larger --unit\n",
                   opt.path.c_str(), b.id.c_str());
      return 1;
    }
    inst.size.push_back(static_cast<int32_t>(b.size / inst.unit));
    inst.total_units += b.size / inst.unit;
    lower.push_back(b.lower);
    upper.push_back(b.upper);
  }
  const auto layout = memplan::solver::build_sections(lower, upper);
  int64_t memberships = 0;
  for (int32_t s = 0; s < layout.section_count; ++s) {
    const auto m = layout.members_of(s);
    inst.sections.emplace_back(m.begin(), m.end());
    memberships += static_cast<int64_t>(m.size());
  }
  inst.finish();
  const int64_t load = memplan::load(*problem);
  std::printf("problem %s: %d buffers, %d sections (%" PRId64 " memberships), unit %" PRId64 " B, load %" PRId64
              " B (%" PRId64 " units)\n",
              opt.path.c_str(), inst.n, static_cast<int32_t>(inst.sections.size()), memberships, inst.unit, load,
              inst.load_units);
  std::fflush(stdout);
  if (inst.n == 0) {
    std::printf("lp bound: 0 B\n");
    return 0;
  }

  g_lp_seconds = opt.lp_seconds;
  g_progress = !opt.quiet;
  if (opt.window > 0) {
    if (opt.bisect || opt.ip_seconds >= 0) {
      std::fprintf(stderr, "bench_cbp_bound: --window goes with --capacity only\n");
      return 2;
    }
    const int64_t cap_units = opt.capacity / inst.unit;
    const int32_t sections = static_cast<int32_t>(inst.sections.size());
    const int32_t k = std::min(opt.window, sections);
    // Windows with the least slack (largest sum of section totals) first.
    std::vector<int32_t> starts(sections - k + 1);
    std::iota(starts.begin(), starts.end(), 0);
    auto weight = [&](int32_t s0) {
      int64_t w = 0;
      for (int32_t s = s0; s < s0 + k; ++s) w += inst.section_total[s];
      return w;
    };
    std::stable_sort(starts.begin(), starts.end(), [&](int32_t a, int32_t b) { return weight(a) > weight(b); });
    if (opt.max_windows >= 0 && static_cast<int32_t>(starts.size()) > opt.max_windows) starts.resize(opt.max_windows);
    int counts[3] = {0, 0, 0};
    double seconds = 0;
    int32_t max_cols = 0;
    int64_t max_nnz = 0;
    for (int32_t s0 : starts) {
      const Instance w = inst.window(s0, k);
      const LpResult r = solve_lp(w, static_cast<int32_t>(cap_units), opt.full);
      seconds += r.seconds;
      max_cols = std::max(max_cols, r.cols);
      max_nnz = std::max(max_nnz, r.nnz);
      ++counts[static_cast<int>(r.verdict)];
      if (!opt.quiet || r.verdict != Verdict::kFeasible) {
        std::printf("sections %d..%d (%d buffers): ", s0, s0 + k - 1, w.n);
        print_lp(w, static_cast<int32_t>(cap_units), r);
      }
    }
    std::printf("windows of %d sections at %" PRId64
                " B: %zu decided, %d LP feasible, %d infeasible, %d unknown; "
                "largest model %d cols, %" PRId64 " nnz; %.2f s in all\n",
                k, cap_units * inst.unit, starts.size(), counts[0], counts[1], counts[2], max_cols, max_nnz, seconds);
    return counts[2] > 0 ? 3 : 0;
  }

  if (!opt.bisect) {
    const int64_t cap_units = opt.capacity / inst.unit;
    if (cap_units > (1 << 24)) {
      std::fprintf(stderr, "bench_cbp_bound: capacity above 2^24 units; choose a larger --unit\n");
      return 1;
    }
    print_full_size(inst, static_cast<int32_t>(cap_units));
    std::fflush(stdout);
    Model* model = nullptr;
    const LpResult r =
        solve_lp(inst, static_cast<int32_t>(cap_units), opt.full, opt.ip_seconds >= 0 ? &model : nullptr);
    print_lp(inst, static_cast<int32_t>(cap_units), r);
    if (opt.ip_seconds >= 0 && model != nullptr) {
      if (r.verdict == Verdict::kFeasible) {
        solve_ip(inst, static_cast<int32_t>(cap_units), *model, opt.ip_seconds);
      } else {
        std::printf("IP not run: the LP is %s\n", name(r.verdict));
      }
    }
    delete model;
    return r.verdict == Verdict::kUnknown ? 3 : 0;
  }

  // Bisection: lo is refuted-or-unknown below, hi feasible.
  int64_t lo = inst.load_units;  // smallest candidate
  int64_t hi = opt.upper >= 0 ? opt.upper / inst.unit : inst.total_units;
  if (hi < lo) hi = lo;
  if (hi > (1 << 24)) {
    std::fprintf(stderr, "bench_cbp_bound: upper end above 2^24 units; choose a larger --unit or --upper\n");
    return 1;
  }
  double seconds = 0;
  auto decide = [&](int64_t c) {
    const LpResult r = solve_lp(inst, static_cast<int32_t>(c), opt.full);
    seconds += r.seconds;
    if (!opt.quiet) print_lp(inst, static_cast<int32_t>(c), r);
    return r.verdict;
  };
  const Verdict at_lo = decide(lo);
  if (at_lo == Verdict::kUnknown) return 3;
  if (at_lo == Verdict::kInfeasible) {
    if (decide(hi) != Verdict::kFeasible) {
      std::printf("bisection: LP not feasible at the upper end %" PRId64 " B\n", hi * inst.unit);
      return 3;
    }
    ++lo;  // lo refuted: invariant lo <= answer <= hi, hi feasible
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      const Verdict v = decide(mid);
      if (v == Verdict::kUnknown) return 3;
      if (v == Verdict::kFeasible) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
  } else {
    hi = lo;
  }
  std::printf("lp bound: %" PRId64 " B (%" PRId64 " units; load %" PRId64 " B; %s)  %.2f s in all\n", hi * inst.unit,
              hi, load, hi > inst.load_units ? "above the load" : "= the load", seconds);
  return 0;
}
