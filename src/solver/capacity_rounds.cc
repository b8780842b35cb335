// capacity_rounds.cc — the round schedule of capacity_rounds.h over a
// decision callback: floor, just below the ceiling, bisection, sweep, seeded
// restarts.
// Per round O(log gap + sweep points) probes plus a map look-up each; the
// nodes are the callback's.
#include "solver/capacity_rounds.h"

#include <algorithm>
#include <limits>

namespace memplan::solver {
namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

int64_t doubled(int64_t budget) { return budget > kNone / 4 ? budget : 2 * budget; }

}  // namespace

CapacityBounds::CapacityBounds(int64_t floor, int64_t ceiling, int64_t granule)
    : floor_(floor), ceiling_(ceiling), granule_(std::max<int64_t>(granule, 1)) {}

int64_t CapacityBounds::round_up(int64_t value) const {
  if (granule_ <= 1 || value > kNone - granule_) return value;
  const int64_t r = value % granule_;
  return r == 0 ? value : value + (granule_ - r);
}

int64_t CapacityBounds::round_down(int64_t value) const {
  if (granule_ <= 1) return value;
  return value - value % granule_;
}

void CapacityBounds::plan_found(int64_t arena) { ceiling_ = std::min(ceiling_, arena); }

void CapacityBounds::refuted(int64_t capacity, int64_t next_capacity) {
  const int64_t above = capacity == kNone ? kNone : capacity + 1;
  floor_ = std::max(floor_, round_up(std::max(above, next_capacity)));
}

void CapacityBounds::absorb(const CapacityProbe& probe, const ProbeResult& result) {
  switch (result.verdict) {
    case ProbeVerdict::kPlan:
      plan_found(result.arena);
      break;
    case ProbeVerdict::kRefuted:
      refuted(probe.capacity, result.next_capacity);
      break;
    case ProbeVerdict::kOutOfBudget:
      break;  // a time-out proves nothing
  }
}

int64_t seeded_capacity(const CapacityBounds& bounds, int32_t levels, SplitMix64* draws, int64_t* k) {
  const int64_t step = std::max(bounds.granule(), bounds.round_down(bounds.ceiling() / 1024));
  const int64_t most =
      std::min<int64_t>(std::max(levels, 1), std::max<int64_t>((bounds.ceiling() - 1 - bounds.floor()) / step, 1));
  *k = 1 + static_cast<int64_t>(draws->below(static_cast<uint64_t>(most)));
  return std::max(bounds.floor(), bounds.round_down(bounds.ceiling() - *k * step));
}

StatusOr<RoundStats> run_capacity_rounds(CapacityBounds* bounds, const RoundSchedule& schedule, const DecideFn& decide,
                                         const std::function<bool()>& stop, const RaiseFloorFn& raise_floor,
                                         const std::function<double()>& clock) {
  auto now = [&] { return clock ? clock() : 0.0; };
  RoundStats stats;
  const int32_t orders = std::max<int32_t>(schedule.orders, 1);
  const int32_t points = std::max<int32_t>(schedule.sweep_points, 1);
  // Largest budget run so far per (capacity, first order, restarts).
  std::map<std::tuple<int64_t, int32_t, bool>, int64_t> done;
  bool stopped = false;
  int64_t other_nodes = 0;  // budgets of the probes of steps 1-4 (the seeded share without a clock)

  // Runs one probe unless it repeats one already run or lies outside the
  // bounds; returns its verdict (kOutOfBudget when skipped).
  auto probe = [&](CapacityProbe p) -> StatusOr<ProbeVerdict> {
    if (!stopped && stop()) stopped = true;
    if (stopped || bounds->closed() || p.capacity < bounds->floor() || p.capacity >= bounds->ceiling() ||
        p.node_budget <= 0) {
      return ProbeVerdict::kOutOfBudget;
    }
    if (schedule.max_budget > 0) p.node_budget = std::min(p.node_budget, schedule.max_budget);
    p.first_order %= orders;
    if (p.seed == 0) {
      int64_t& ran = done[{p.capacity, p.first_order, p.allow_restarts}];
      if (ran >= p.node_budget) {
        ++stats.skipped;
        return ProbeVerdict::kOutOfBudget;
      }
      ran = p.node_budget;
      other_nodes += p.node_budget;
    }
    ++stats.probes;
    MEMPLAN_ASSIGN_OR_RETURN(ProbeResult result, decide(p));
    bounds->absorb(p, result);
    if (stop()) stopped = true;
    return result.verdict;
  };

  int64_t budget = std::max<int64_t>(schedule.base_budget, 1);
  int64_t floor_budget = budget;
  int64_t sweep_budget = std::max<int64_t>(budget / 2, 1);
  int32_t cursor = 0;
  double floor_seconds = 0, other_seconds = 0;  // with a clock: time of the floor, and of steps 2-4
  double seeded_seconds = 0;                    // with a clock: time of step 5
  uint64_t seed = std::max<uint64_t>(schedule.seed, 1);
  SplitMix64 draws{.state = seed};  // the seeded probes' capacities
  // 5. Seeded restarts just below the ceiling, until they have had their
  //    share of the time so far (of the nodes without a clock). Called after
  //    the floor and after the sweep, so that a round cut short by the
  //    deadline still gave them their share.
  int64_t seeded_nodes = 0;
  auto seeded_catch_up = [&]() -> Status {
    if (schedule.seeded_budget <= 0 || schedule.seeded_share <= 0) return Status::Ok();
    const double share = std::min(schedule.seeded_share, 0.95);
    const double others = clock ? floor_seconds + other_seconds : static_cast<double>(other_nodes);
    const double target = others * share / (1 - share);
    const double seeded_start = now();
    while (!stopped && !bounds->closed()) {
      const double used = clock ? seeded_seconds + (now() - seeded_start) : static_cast<double>(seeded_nodes);
      if (used >= target) break;
      int64_t k = 1;
      const bool at_floor =
          schedule.seeded_floor_every > 0 && (stats.seeded_probes + 1) % schedule.seeded_floor_every == 0;  // step 5b
      const int64_t c = at_floor ? bounds->floor() : seeded_capacity(*bounds, schedule.seeded_levels, &draws, &k);
      const int64_t ceiling = bounds->ceiling();
      const int64_t nodes =
          at_floor ? std::max(schedule.seeded_budget, schedule.seeded_floor_budget) : schedule.seeded_budget;
      MEMPLAN_ASSIGN_OR_RETURN(const ProbeVerdict v, probe({.capacity = c,
                                                            .node_budget = nodes,
                                                            .first_order = static_cast<int32_t>(k % orders),
                                                            .seed = seed++,
                                                            .step = PlanSource::kSeeded}));
      ++stats.seeded_probes;
      if (v == ProbeVerdict::kPlan && bounds->ceiling() < ceiling) ++stats.seeded_plans;
      seeded_nodes += nodes;
    }
    seeded_seconds += now() - seeded_start;
    return Status::Ok();
  };
  stopped = stop();
  for (int32_t round = 0; !stopped && !bounds->closed(); ++round) {
    ++stats.rounds;
    const int32_t order = round % orders;
    // 1. The floor, repeated while it is refuted (each refutation raises it),
    //    in the rounds where it has not taken more time than the other probes
    //    together: its long searches cost several times more per node (the
    //    overload check), and a floor that resists is mostly waiting for a
    //    proof that may not come.
    if (!clock || floor_seconds <= other_seconds || bounds->ceiling() == kNone) {
      const double floor_start = now();
      const bool restarts_at_floor = floor_budget < schedule.proof_budget;
      const double cap = clock ? std::max(1.0, other_seconds - floor_seconds) : 0.0;
      ProbeVerdict at_floor = ProbeVerdict::kRefuted;
      while (!stopped && !bounds->closed() && at_floor == ProbeVerdict::kRefuted) {
        MEMPLAN_ASSIGN_OR_RETURN(at_floor, probe({.capacity = bounds->floor(),
                                                  .node_budget = floor_budget,
                                                  .first_order = order,
                                                  .allow_restarts = restarts_at_floor,
                                                  .max_seconds = cap,
                                                  .step = PlanSource::kFloor}));
      }
      if (stopped || bounds->closed()) break;
      // 1b. Relaxed sub-problems once the floor resisted a proof-sized budget.
      if (raise_floor && !restarts_at_floor) {
        MEMPLAN_ASSIGN_OR_RETURN(const bool running, raise_floor(bounds, std::max<int64_t>(floor_budget / 2, 1)));
        stopped = !running || stop();
        if (stopped || bounds->closed()) break;
      }
      floor_budget = doubled(floor_budget);
      floor_seconds += now() - floor_start;
      MEMPLAN_RETURN_IF_ERROR(seeded_catch_up());
    }
    if (bounds->ceiling() == kNone) {  // no plan yet: only the floor to decide
      if (schedule.max_budget > 0 && floor_budget > schedule.max_budget) break;
      budget = doubled(budget);
      continue;
    }
    double others_mark = now();
    // Steps 2-4 count their time as they go, and the seeded restarts catch
    // up after every sweep probe: a late round's sweep can outlast the
    // deadline, and would otherwise leave them nothing.
    auto others_then_seeded = [&]() -> Status {
      other_seconds += now() - others_mark;
      MEMPLAN_RETURN_IF_ERROR(seeded_catch_up());
      others_mark = now();
      return Status::Ok();
    };
    // 2. Just below the ceiling, while that finds plans.
    while (!stopped && !bounds->closed()) {
      MEMPLAN_ASSIGN_OR_RETURN(const ProbeVerdict v, probe({.capacity = bounds->round_down(bounds->ceiling() - 1),
                                                            .node_budget = std::max<int64_t>(budget / 4, 1),
                                                            .first_order = order + 1,
                                                            .step = PlanSource::kCeiling}));
      if (v != ProbeVerdict::kPlan) break;
    }
    // 3. Bisection between the bounds, over the multiples of the granule
    //    above the floor: a time-out moves the probe up.
    const int64_t g = bounds->granule();
    int64_t from = bounds->round_up(bounds->floor() + 1);
    while (!stopped && !bounds->closed() && from < bounds->ceiling()) {
      const int64_t units = (bounds->ceiling() - 1 - from) / g;  // multiples of g in [from, ceiling) minus one
      const int64_t c = from + (units / 2) * g;
      MEMPLAN_ASSIGN_OR_RETURN(const ProbeVerdict v, probe({.capacity = c,
                                                            .node_budget = std::max<int64_t>(budget / 8, 1),
                                                            .first_order = order + 2,
                                                            .step = PlanSource::kBisection}));
      from = v == ProbeVerdict::kOutOfBudget ? c + g : bounds->round_up(bounds->floor() + 1);
    }
    // 4. The sweep: 2 B nodes a round over capacities spread through the
    //    gap, top down, the k-th from the top with sweep_budget / (k + 1) nodes,
    //    each searched exactly as a decision at that capacity would be (first
    //    key order, restarts).
    int64_t spent = 0;
    while (!stopped && !bounds->closed() && spent < 2 * budget) {
      const int64_t gap = bounds->ceiling() - bounds->floor();
      const int64_t step = std::max(bounds->granule(), bounds->round_up((gap + points - 1) / points));
      const int64_t top = bounds->round_down(bounds->ceiling() - 1);
      if (top < bounds->floor()) break;  // no multiple of the granule left in the gap
      const int64_t c = top - static_cast<int64_t>(cursor) * step;
      if (cursor >= points || c < bounds->floor()) {  // a pass over the gap is complete
        cursor = 0;
        sweep_budget = doubled(sweep_budget);
        ++stats.sweep_passes;
        continue;
      }
      const int64_t nodes = std::max<int64_t>(sweep_budget / (cursor + 1), 1);
      ++cursor;
      MEMPLAN_ASSIGN_OR_RETURN(const ProbeVerdict v,
                               probe({.capacity = c, .node_budget = nodes, .step = PlanSource::kSweep}));
      (void)v;
      spent += nodes;
      MEMPLAN_RETURN_IF_ERROR(others_then_seeded());
    }
    MEMPLAN_RETURN_IF_ERROR(others_then_seeded());
    if (schedule.max_budget > 0 && budget >= schedule.max_budget) break;
    budget = doubled(budget);
  }
  stats.sweep_budget = sweep_budget;
  return stats;
}

}  // namespace memplan::solver
