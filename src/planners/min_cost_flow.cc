// min_cost_flow.cc — shared objects as chains of buffers chosen by a min-cost
// flow (TFLite GPU delegate's MINCOSTFLOW strategy).
//
// An object is a chain of buffers, each starting no earlier than the previous
// one ends. TFLite's model: every buffer i either opens a new object (cost
// size_i) or follows a buffer j that ended by i's start (cost max(0, size_i -
// size_j), what the object grows by); each buffer has at most one follower.
// TFLite solves this as a min-cost flow on a bipartite graph with an arc for
// every compatible (j, i) pair: O(n^2) arcs. The cost charges growth against
// the previous member only, so it may exceed the real object size (64, 8, 64
// costs 64 + 0 + 56); objects are sized by their real largest member after.
//
// Two observations shrink the graph. (1) Predecessors of equal size are
// interchangeable: the cost depends only on the sizes, and a buffer that has
// ended stays available to every later start. So the predecessors of one size
// (a class) are aggregated into a chain over time instead of one node each.
// (2) A follower rarely profits from a predecessor many size classes away, so
// on large problems each buffer only looks a window of W classes up and down:
// W = max(4, 2^19 / 2n), i.e. all classes (exact) while n·S stays near half a
// million arcs, and at least 4 classes each way beyond.
//
// Algorithm (buffers without a fixed offset; n of them, S distinct sizes):
//   1. For each size class a, a chain of nodes at the distinct ticks at which
//      buffers of class a end, linked forward in time (uncapacitated, cost 0):
//      a unit of flow at a node is an ended class-a buffer that may be
//      followed, still available at every later node.
//   2. The source supplies each chain node with one unit per buffer of its
//      class that ends at its tick.
//   3. Each buffer i is a node demanding one unit, either from the source
//      (i opens an object, cost size_i) or, for every class a within W of
//      i's class, from the last class-a chain node at or before i's start
//      (i follows a class-a buffer, cost max(0, size_i - size_a)).
//   4. Solve with LEMON's NetworkSimplex (candidate-list pivots, which were
//      the fastest rule on the shared instances).
//   5. Sweep over time (ends before starts at a tick). An ended buffer puts its
//      object into its class's free pool; a starting buffer that the flow fed
//      from class a takes the best-fitting object in that pool (smallest of at
//      least its size, else the largest), one that opens gets a new object.
//      The flow guarantees the pool is never empty when needed.
//
// Exactness: with W >= S the network is equivalent to TFLite's (the same
// optimal cost). The window matters little where sizes repeat: on iopddl/Y_1
// (62k buffers, 62 sizes) W = 8 already matches the full graph and W = 4
// costs 0.03% more; it matters a lot where they don't (MiniMalloc's
// challenging instances, up to 177 sizes, lose up to 66% at W = 4), hence
// the budget, which keeps those exact.
//
// Complexity: at most 2n + 1 nodes and 3n + min(S, 2W + 1)·n arcs, built
// in O(n log n). Network simplex has no polynomial bound in this form but is
// the bulk of the time (about 3 s on iopddl/Y_1's 62k buffers); step 5 is
// O(n log n). Space O(n).
#include <algorithm>

// LEMON's SmartDigraph copies a default-initialised arc record before filling
// it in; GCC's -Wmaybe-uninitialized flags that copy when addArc is inlined
// here (seen with sanitizers on). The value is overwritten before any read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <lemon/network_simplex.h>
#include <lemon/smart_graph.h>

#include "planners/planners.h"
#include "planners/shared_objects.h"
#include "planners/stop_condition.h"

namespace memplan {
namespace {

// Size classes each way a follower may take its predecessor from: as many as
// keep the follow arcs within kFollowArcBudget, and never fewer than
// kMinClassWindow (which bounds the arcs by 9n on large problems).
constexpr int64_t kFollowArcBudget = int64_t{1} << 19;
constexpr int64_t kMinClassWindow = 4;

using Graph = lemon::SmartDigraph;
using Solver = lemon::NetworkSimplex<Graph, int64_t, int64_t>;

}  // namespace

StatusOr<ObjectAssignment> assign_min_cost_flow(const Problem& problem, const PlanOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(check_problem(problem));
  StopCondition stop(options, "min_cost_flow");
  if (stop.should_stop_now()) return stop.status();
  const std::vector<int32_t> parts = objects::start_order(problem);
  const auto& buf = problem.buffers;
  objects::ObjectTable table(problem.size());
  if (parts.empty()) return std::move(table).take();
  const int64_t n = static_cast<int64_t>(parts.size());
  const int64_t window = std::max(kMinClassWindow, kFollowArcBudget / (2 * n));

  std::vector<int64_t> class_size;
  for (int32_t b : parts) class_size.push_back(buf[b].size);
  std::sort(class_size.begin(), class_size.end());
  class_size.erase(std::unique(class_size.begin(), class_size.end()), class_size.end());
  const int classes = static_cast<int>(class_size.size());
  auto class_of = [&](int32_t b) {
    return static_cast<int>(std::lower_bound(class_size.begin(), class_size.end(), buf[b].size) - class_size.begin());
  };

  // Step 1: chain ticks per class.
  std::vector<std::vector<int64_t>> chain_tick(classes);
  for (int32_t b : parts) chain_tick[class_of(b)].push_back(buf[b].upper);
  for (std::vector<int64_t>& ticks : chain_tick) {
    std::sort(ticks.begin(), ticks.end());
    ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  }

  Graph g;
  g.reserveNode(static_cast<int>(2 * n + 1));
  g.reserveArc(static_cast<int>(3 * n + std::min(n * classes, (2 * window + 1) * n)));
  Graph::ArcMap<int64_t> capacity(g), cost(g);
  auto add_arc = [&](Graph::Node from, Graph::Node to, int64_t cap, int64_t c) {
    const Graph::Arc a = g.addArc(from, to);
    capacity.set(a, cap);
    cost.set(a, c);
    return a;
  };
  const Graph::Node source = g.addNode();
  std::vector<std::vector<Graph::Node>> chain(classes);
  std::vector<std::vector<int64_t>> chain_supply(classes);
  for (int a = 0; a < classes; ++a) {
    chain_supply[a].assign(chain_tick[a].size(), 0);
    for (size_t k = 0; k < chain_tick[a].size(); ++k) {
      chain[a].push_back(g.addNode());
      if (k > 0) add_arc(chain[a][k - 1], chain[a][k], n, 0);
    }
  }
  // Step 2.
  for (int32_t b : parts) {
    const int a = class_of(b);
    const auto& ticks = chain_tick[a];
    ++chain_supply[a][std::lower_bound(ticks.begin(), ticks.end(), buf[b].upper) - ticks.begin()];
  }
  for (int a = 0; a < classes; ++a) {
    for (size_t k = 0; k < chain[a].size(); ++k) add_arc(source, chain[a][k], chain_supply[a][k], 0);
  }
  // Step 3.
  std::vector<Graph::Node> demand(problem.size());
  std::vector<Graph::Arc> opens(problem.size());
  std::vector<std::vector<std::pair<int, Graph::Arc>>> follows(problem.size());
  for (int32_t i : parts) {
    demand[i] = g.addNode();
    opens[i] = add_arc(source, demand[i], 1, buf[i].size);
    const int c = class_of(i);
    for (int a = static_cast<int>(std::max<int64_t>(0, c - window)); a < classes && a <= c + window; ++a) {
      const auto& ticks = chain_tick[a];
      const size_t k = std::upper_bound(ticks.begin(), ticks.end(), buf[i].lower) - ticks.begin();
      if (k == 0) continue;  // no class-a buffer has ended by i's start
      follows[i].emplace_back(
          a, add_arc(chain[a][k - 1], demand[i], 1, std::max<int64_t>(0, buf[i].size - class_size[a])));
    }
  }
  // LEMON's network simplex cannot be interrupted: the last look before it.
  if (stop.should_stop_now()) return stop.status();

  // Step 4.
  Graph::NodeMap<int64_t> supply(g, 0);
  supply.set(source, n);
  for (int32_t i : parts) supply.set(demand[i], -1);
  Solver solver(g);
  solver.upperMap(capacity).costMap(cost).supplyMap(supply);
  if (solver.run(Solver::CANDIDATE_LIST) != Solver::OPTIMAL) {
    return Internal("min_cost_flow: network simplex found no optimal flow (the network is always feasible)");
  }

  if (stop.should_stop_now()) return stop.status();

  // Step 5.
  std::vector<int32_t> by_end = parts;
  std::stable_sort(by_end.begin(), by_end.end(), [&](int32_t a, int32_t b) { return buf[a].upper < buf[b].upper; });
  std::vector<objects::FreeObjectPool> pool(classes);
  size_t e = 0;
  for (int32_t i : parts) {
    for (; e < by_end.size() && buf[by_end[e]].upper <= buf[i].lower; ++e) {
      const int32_t k = table.object_of(by_end[e]);
      pool[class_of(by_end[e])].add(k, table.size_of(k));
    }
    int from = -1;
    for (const auto& [a, arc] : follows[i]) {
      if (solver.flow(arc) > 0) from = a;
    }
    int32_t k = -1;
    if (from < 0) {
      k = table.create(buf[i].size);
    } else {
      k = pool[from].smallest_at_least(buf[i].size);
      if (k < 0) k = pool[from].largest();
      if (k < 0) return Internal("min_cost_flow: the flow took a predecessor that has not ended");
      pool[from].remove(k, table.size_of(k));
    }
    table.assign(i, k, buf[i].size);
  }
  return std::move(table).take();
}

StatusOr<Plan> plan_min_cost_flow(const Problem& problem, const PlanOptions& options) {
  return objects::stack(problem, assign_min_cost_flow(problem, options));
}

}  // namespace memplan

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
