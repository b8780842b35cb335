// mip_cbc.cc — the `mip` planner: the classic mixed-integer formulation of
// offset planning, solved with CoinOR CBC. Built only with MEMPLAN_WITH_CBC
// (CMake detects Debian's coinor-libcbc-dev); the reference for small problems
// and a cross-check of the exact search.
//
// Formulation (buffers of size 0 take offset 0, or their fixed offset):
//   minimise  M
//   M - x_i >= s_i                               every buffer i
//   x_i + s_i <= x_j + U z_ij                    every pair i < j live together:
//   x_j + s_j <= x_i + U (1 - z_ij)              z_ij = 0: i below j, 1: j below i
//   x_i = a_i k_i, k_i integer when the alignment a_i > 1
//   0 <= x_i <= U - s_i, x_i fixed for fixed buffers, load <= M <= U
// U is the upper bound: the problem's capacity, or the `portfolio` arena when
// smaller (that plan is also handed to CBC as its first incumbent).
//
//   1. Upper bound and warm start from the portfolio (a tenth of the time).
//   2. Build the model (columns M, k_i, z_ij; two rows per pair), hand it to
//      CBC with probing, Gomory, knapsack, clique, MIR and flow-cover cuts.
//   3. Branch and bound under the time limit; an event handler stops it on
//      cancel. Round the incumbent to offsets and validate.
// Size: n + p + 1 columns and n + 2p rows for p overlapping pairs; the search
// is exponential, so this is for problems of tens of buffers.
#include <CbcEventHandler.hpp>
#include <CbcModel.hpp>
#include <CglClique.hpp>
#include <CglFlowCover.hpp>
#include <CglGomory.hpp>
#include <CglKnapsackCover.hpp>
#include <CglMixedIntegerRounding2.hpp>
#include <CglProbing.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/heuristics.h"
#include "memplan/validate.h"
#include "solver/registered.h"

namespace memplan {
namespace {

constexpr double kDefaultSeconds = 10.0;
// Above this many overlapping pairs only the cheap cut generators run.
constexpr size_t kCheapCutsAbovePairs = 2000;

using Clock = std::chrono::steady_clock;

// Stops branch and bound when the caller's cancel flag is set or the
// deadline has passed (CBC's own limit is checked less often than events
// arrive).
class StopHandler : public CbcEventHandler {
 public:
  StopHandler(const std::atomic<bool>* cancel, Clock::time_point deadline) : cancel_(cancel), deadline_(deadline) {}
  CbcAction event(CbcEvent) override {
    if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) return stop;
    return Clock::now() >= deadline_ ? stop : noAction;
  }
  CbcEventHandler* clone() const override { return new StopHandler(*this); }

 private:
  const std::atomic<bool>* cancel_;
  Clock::time_point deadline_;
};

bool cancelled(const PlanOptions& options) {
  return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed);
}

}  // namespace

StatusOr<Plan> plan_mip(const Problem& problem, const PlanOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem));
  if (cancelled(options)) return Cancelled("mip planner cancelled");
  const double seconds = options.time_limit_seconds > 0 ? options.time_limit_seconds : kDefaultSeconds;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const size_t n = problem.size();

  // 1. Upper bound and warm start.
  Problem uncapped = problem;
  uncapped.capacity.reset();
  std::optional<Plan> start;
  {
    StatusOr<Plan> heuristic = plan_heuristics(
        uncapped, PlanOptions{.time_limit_seconds = std::max(1e-3, 0.1 * seconds), .cancel = options.cancel});
    if (heuristic.ok() && validate(uncapped, *heuristic).ok()) start = std::move(*heuristic);
  }
  int64_t upper = start ? start->arena : 0;
  if (!start) {
    for (const Buffer& b : problem.buffers) upper += b.size + problem.alignment;  // any stacking fits
  }
  if (problem.capacity) {
    if (start && start->arena <= *problem.capacity) return std::move(*start);  // fits: nothing to optimise
    upper = *problem.capacity;
    start.reset();
  }
  const int64_t lower = load(problem);
  if (start && start->arena <= lower) return std::move(*start);  // at the load: optimal, no model needed
  for (const Buffer& b : problem.buffers) {
    if (b.offset && *b.offset + b.size > upper)
      return Infeasible("fixed buffer '" + b.id + "' ends above the capacity");
  }
  if (lower > upper) return Infeasible("the load " + std::to_string(lower) + " exceeds the capacity");

  // 2. Columns: 0 = M, 1..n = k_i, then one z per overlapping pair.
  std::vector<double> col_lower, col_upper, objective;
  std::vector<bool> integer;
  auto add_column = [&](double lo, double hi, double cost, bool is_integer) {
    col_lower.push_back(lo);
    col_upper.push_back(hi);
    objective.push_back(cost);
    integer.push_back(is_integer);
    return static_cast<int>(col_lower.size() - 1);
  };
  add_column(static_cast<double>(lower), static_cast<double>(upper), 1.0, false);
  std::vector<int64_t> align(n);
  for (size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    align[i] = problem.alignment_of(i);
    double lo = 0, hi = 0;
    if (b.offset) {
      lo = hi = static_cast<double>(*b.offset / align[i]);
    } else if (b.size > 0) {
      hi = static_cast<double>((upper - b.size) / align[i]);
    }
    add_column(lo, hi, 0.0, align[i] > 1);
  }
  // Rows as (row, column, value) triples, packed once at the end (appending
  // rows one by one to a CoinPackedMatrix copies it on every growth).
  std::vector<int> triple_row, triple_column;
  std::vector<double> triple_value;
  std::vector<double> row_lower, row_upper;
  auto add_row = [&](std::initializer_list<int> idx, std::initializer_list<double> val, double lo, double hi) {
    const int row = static_cast<int>(row_lower.size());
    for (const int c : idx) {
      triple_row.push_back(row);
      triple_column.push_back(c);
    }
    triple_value.insert(triple_value.end(), val.begin(), val.end());
    row_lower.push_back(lo);
    row_upper.push_back(hi);
  };
  const double inf = COIN_DBL_MAX;
  const double big = static_cast<double>(upper);
  for (size_t i = 0; i < n; ++i) {
    const double s = static_cast<double>(problem.buffers[i].size);
    add_row({0, static_cast<int>(i + 1)}, {1.0, -static_cast<double>(align[i])}, s, inf);
  }
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const Buffer& a = problem.buffers[i];
      const Buffer& b = problem.buffers[j];
      if (a.size == 0 || b.size == 0 || !a.overlaps_in_time(b)) continue;
      const int z = add_column(0.0, 1.0, 0.0, true);
      const int ci = static_cast<int>(i + 1), cj = static_cast<int>(j + 1);
      const double ai = static_cast<double>(align[i]), aj = static_cast<double>(align[j]);
      // x_i - x_j - U z <= -s_i
      add_row({ci, cj, z}, {ai, -aj, -big}, -inf, -static_cast<double>(a.size));
      // x_j - x_i + U z <= U - s_j
      add_row({cj, ci, z}, {aj, -ai, big}, -inf, big - static_cast<double>(b.size));
      pairs.emplace_back(i, j);
    }
  }
  CoinPackedMatrix rows(false, triple_row.data(), triple_column.data(), triple_value.data(),
                        static_cast<CoinBigIndex>(triple_value.size()));
  rows.setDimensions(static_cast<int>(row_lower.size()), static_cast<int>(col_lower.size()));

  OsiClpSolverInterface solver;
  solver.loadProblem(rows, col_lower.data(), col_upper.data(), objective.data(), row_lower.data(), row_upper.data());
  for (size_t c = 0; c < integer.size(); ++c) {
    if (integer[c]) solver.setInteger(static_cast<int>(c));
  }
  solver.messageHandler()->setLogLevel(0);

  // 3. Branch and bound, in the time the start plan and the model left.
  const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
  if (left <= 0) {
    if (start) return std::move(*start);
    return DeadlineExceeded("the MIP model took the whole " + std::to_string(seconds) + " s to build");
  }
  CbcModel model(solver);
  // The root LP runs before CBC looks at its clock: bound Clp's own simplex.
  if (auto* clp = dynamic_cast<OsiClpSolverInterface*>(model.solver())) {
    clp->getModelPtr()->setMaximumSeconds(left);
    clp->getModelPtr()->setMaximumWallSeconds(left);
  }
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.setMaximumSeconds(left);
  model.setNumberThreads(0);
  CglProbing probing;
  probing.setUsingObjective(1);
  CglGomory gomory;
  CglKnapsackCover knapsack;
  CglClique clique;
  clique.setStarCliqueReport(false);  // it prints to stdout otherwise
  clique.setRowCliqueReport(false);
  CglMixedIntegerRounding2 mir;
  CglFlowCover flow;
  // Cut generation at the root runs without a look at any clock, and one pass
  // of MIR or flow cover over thousands of big-M pair rows takes seconds; on
  // such models the pair rows' cuts are weak anyway, so only the cheap ones run.
  const bool large = pairs.size() > kCheapCutsAbovePairs;
  if (!large) {
    model.addCutGenerator(&probing, -1, "probing");
    model.addCutGenerator(&gomory, -1, "gomory");
    model.addCutGenerator(&mir, -1, "mir");
    model.addCutGenerator(&flow, -1, "flow");
  }
  model.addCutGenerator(&knapsack, -1, "knapsack");
  model.addCutGenerator(&clique, -1, "clique");
  if (large) model.setMaximumCutPassesAtRoot(1);
  StopHandler handler(options.cancel, deadline);
  model.passInEventHandler(&handler);
  if (start) {  // warm start: the portfolio plan as the first incumbent
    std::vector<double> values(col_lower.size(), 0.0);
    values[0] = static_cast<double>(start->arena);
    for (size_t i = 0; i < n; ++i) values[i + 1] = static_cast<double>(start->offsets[i] / align[i]);
    for (size_t p = 0; p < pairs.size(); ++p) {
      const auto [i, j] = pairs[p];
      values[1 + n + p] = start->offsets[j] < start->offsets[i] ? 1.0 : 0.0;
    }
    model.setBestSolution(values.data(), static_cast<int>(values.size()), static_cast<double>(start->arena), true);
  }
  model.branchAndBound();

  if (cancelled(options)) return Cancelled("mip planner cancelled");
  const double* best = model.bestSolution();
  if (best == nullptr) {
    if (model.isProvenInfeasible()) {
      return Infeasible("no plan fits in capacity " + std::to_string(upper) + " bytes (proven by the MIP)");
    }
    if (start) return std::move(*start);
    return DeadlineExceeded("the MIP found no plan in " + std::to_string(seconds) + " s");
  }
  std::vector<int64_t> offsets(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.offset)
      offsets[i] = *b.offset;
    else if (b.size > 0)
      offsets[i] = static_cast<int64_t>(std::llround(best[i + 1])) * align[i];
  }
  Plan plan = make_plan(problem, std::move(offsets));
  const ValidationResult check = validate(problem, plan);
  if (!check.ok()) {
    if (start) return std::move(*start);
    return Internal("the MIP solution does not round to a valid plan: " + check.message);
  }
  if (start && start->arena < plan.arena) return std::move(*start);
  return plan;
}

}  // namespace memplan
