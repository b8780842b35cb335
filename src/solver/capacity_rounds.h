// capacity_rounds.h — minimisation as rounds of bounded decisions at
// several capacities, sharing one floor and one ceiling.
//
// Why several capacities. Whether a bounded decision search finds a plan at capacity
// C is not monotone in C: on MiniMalloc's D the search finds a plan at
// 995 KiB in 780k nodes, none at 999 KiB in 30 s, one at 1000 KiB in 15 s
// (docs/exact.md, "Capacity rounds"); MiniMalloc solves D at 1,040,384 and
// not at 1,032,192. A minimiser that walks the
// capacities in one direction, or spends its budget on one capacity, misses
// the plans that a decision at some other capacity finds. So every round
// spreads its budget over several capacities:
//
//   round r, budget B = base * 2^r:
//     1. floor     decide at the floor with its own budget F (a plan there is
//                  optimal; a refutation raises the floor and repeats the
//                  step), then F doubles. With a clock, only in rounds where
//                  the floor has not taken more time than the other probes
//                  together, and capped at the time that keeps it so (at
//                  least a second): its long searches cost several times more
//                  per node, and a floor that resists may never be refuted. From
//                  proof_budget on without restarts: a refutation must
//                  exhaust a tree, and restarts would redo it per key order.
//     1b.          when the floor resisted a proof-sized budget, the caller's
//                  raise_floor (relaxed sub-problems) gets F / 2.
//     2. ceiling   decide just below the ceiling (ceiling - granule) with
//                  B / 4, repeated while it finds plans (each lowers the
//                  ceiling).
//     3. bisection probes between the bounds with B / 8 each.
//     4. sweep     a cursor over up to `sweep_points` capacities spread over
//                  (floor, ceiling), top down, the k-th from the top decided
//                  with sweep_budget / (k + 1) nodes exactly as a decision at
//                  that capacity runs (first key order, restarts), until the
//                  round's sweep has spent 2 B nodes and at least the time
//                  the floor took this round (with a clock); when the cursor has passed over
//                  the whole gap the sweep budget doubles. So once a pass with
//                  budget b is complete, every capacity of the gap (one in
//                  gap / sweep_points when the gap is wide) k steps below the
//                  ceiling has been decided with b / (k + 1) nodes: the
//                  capacities just below the best plan, where a plan is worth
//                  most, get the most, and a pass costs about b ln(points).
//     5. seeded   short decisions (seeded_budget nodes) with jittered keys,
//                  a new seed each, at a capacity drawn uniformly from the
//                  seeded_levels steps below the ceiling (a step: 1/1024 of
//                  the ceiling, at least a granule; never below the floor),
//                  until they have taken seeded_share of the rounds'
//                  time (caught up after the floor and after every sweep
//                  probe). Search times of one decision are heavy-tailed
//                  (Gomes, Selman, Crato and Kautz, "Heavy-tailed phenomena
//                  in satisfiability and constraint satisfaction problems",
//                  JAR 2000): the deterministic tree at one capacity can
//                  miss for millions of nodes where another ordering finds a
//                  plan in thousands. On MiniMalloc's D and J, 30 s of these
//                  alone ended 0.5-1.8 % below what steps 1-4 and the band
//                  repair reach in 60 s (docs/history/exact.md, "Seeded
//                  restarts: budget, jitter and key order").
//     5b.         every seeded_floor_every-th of them decides at the floor
//                  instead. Seeded trees at the floor find plans that the
//                  fixed orders reach late: on OmniMalloc's pinwheel (101
//                  buffers, a perfect packing) the first key order needs
//                  seconds at the load, most seeds a few thousand nodes,
//                  while a gap of 16 % keeps step 5's capacities near the
//                  ceiling (docs/exact.md, "Seeded probes at the floor").
//   The floor, ceiling and bisection probes rotate the key order the search
//   starts with, so the same capacity is also searched along other trees.
//
// Sharing: a plan at any capacity lowers the ceiling to its arena; a complete
// refutation at C raises the floor to max(C + 1, the search's next capacity),
// rounded up to the granule. A probe that ran out of budget changes nothing
// (a time-out proves nothing). Probes at or above the ceiling, or below the
// floor, are never run; a probe identical to one already run with at least
// its budget (decisions are deterministic, and a larger budget repeats a
// smaller one's nodes first) is skipped.
//
// The decisions come from a callback, so the schedule is tested with a mock
// oracle (tests/unit/capacity_rounds_test.cc) and solve_minimize plugs in
// the canonical search. Single-threaded: the probes interleave on the
// caller's thread, each bounded by its node budget.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>

#include "core/splitmix.h"
#include "memplan/exact.h"
#include "memplan/status.h"

namespace memplan::solver {

// One bounded decision the rounds ask for.
struct CapacityProbe {
  int64_t capacity = 0;
  int64_t node_budget = 0;
  int32_t first_order = 0;  // the key order the search starts with
  bool allow_restarts = true;
  // Wall-clock cap in seconds (0: none): the floor's probes, whose time the
  // rounds balance against the other probes' (needs a clock).
  double max_seconds = 0;
  // 0: the search ranks by its keys. Otherwise the keys are jittered per
  // restart from this seed (CanonicalSearch::decide): every seed is another
  // set of trees, so seeded probes are never skipped as repeats.
  uint64_t seed = 0;
  // The step that asks (kFloor, kCeiling, kBisection, kSweep or kSeeded),
  // for the caller's record of where plans come from.
  PlanSource step = PlanSource::kSweep;
};

enum class ProbeVerdict {
  kPlan,         // a plan with arena <= capacity (ProbeResult::arena)
  kRefuted,      // complete search: no plan has arena < next_capacity (> capacity)
  kOutOfBudget,  // node budget, deadline or cancel: nothing proven
};

struct ProbeResult {
  ProbeVerdict verdict = ProbeVerdict::kOutOfBudget;
  int64_t arena = 0;          // kPlan
  int64_t next_capacity = 0;  // kRefuted
};

// The bounds every probe shares. floor: proven, no plan has a smaller arena;
// ceiling: the smallest arena of a plan found (INT64_MAX: none yet).
// Invariants: floor and ceiling only move towards each other; the floor is a
// multiple of the granule (when it came from a refutation).
class CapacityBounds {
 public:
  CapacityBounds(int64_t floor, int64_t ceiling, int64_t granule);

  // A plan with this arena exists.
  void plan_found(int64_t arena);
  // A complete search refuted `capacity`; next_capacity is its smallest
  // capacity at which the search could differ (0 if unknown).
  void refuted(int64_t capacity, int64_t next_capacity);
  // Folds one probe's result in (kOutOfBudget changes nothing).
  void absorb(const CapacityProbe& probe, const ProbeResult& result);

  int64_t floor() const { return floor_; }
  int64_t ceiling() const { return ceiling_; }
  int64_t granule() const { return granule_; }
  bool closed() const { return floor_ >= ceiling_; }
  // The smallest multiple of the granule >= value (saturating).
  int64_t round_up(int64_t value) const;
  // The largest multiple of the granule <= value.
  int64_t round_down(int64_t value) const;

 private:
  int64_t floor_;
  int64_t ceiling_;
  int64_t granule_;
};

struct RoundSchedule {
  // Node budget of the first round's floor decision; doubles every round.
  int64_t base_budget = int64_t{1} << 17;
  // From this budget on, floor decisions run without restarts.
  int64_t proof_budget = int64_t{1} << 20;
  // Stop after the round whose budget reached this (0: only stop() ends it).
  int64_t max_budget = 0;
  // Key orders the probes rotate over (the search's key_order_count()).
  int32_t orders = 3;
  // Capacities the sweep spreads over the gap.
  int32_t sweep_points = 48;
  // Seeded restarts (step 5): node budget of each probe (0: the step is off),
  // how many steps below the ceiling they pick from, and the share of the
  // rounds' time (with a clock; else of its nodes) they take.
  int64_t seeded_budget = 0;
  int32_t seeded_levels = 16;
  double seeded_share = 0.5;
  // Every seeded_floor_every-th seeded probe (0: none) decides at the floor
  // instead of below the ceiling (step 5b): a plan there ends the call.
  int32_t seeded_floor_every = 0;
  int64_t seeded_floor_budget = 0;  // their node budget when above seeded_budget
  uint64_t seed = 1;                // the first seeded probe's seed; later ones count up
};

// Where a seeded restart decides (step 5): a capacity drawn uniformly from
// the `levels` steps below the ceiling (a step: 1/1024 of the ceiling, at
// least a granule), never below the floor. *k (1-based) is the step drawn.
// Needs a ceiling above the floor.
int64_t seeded_capacity(const CapacityBounds& bounds, int32_t levels, SplitMix64* draws, int64_t* k);

using DecideFn = std::function<StatusOr<ProbeResult>(const CapacityProbe&)>;
// Raises the floor some other way (relaxed sub-problems) with a node budget;
// returns false once stop() holds. May be empty.
using RaiseFloorFn = std::function<StatusOr<bool>(CapacityBounds*, int64_t node_budget)>;

struct RoundStats {
  int64_t probes = 0;   // decisions run
  int64_t skipped = 0;  // probes skipped as repeats of one already run
  int64_t rounds = 0;
  int64_t sweep_budget = 0;   // the sweep's budget (for the capacity just below the ceiling) at the end
  int64_t sweep_passes = 0;   // passes the sweep completed over the gap
  int64_t seeded_probes = 0;  // seeded restarts run (step 5)
  int64_t seeded_plans = 0;   // of them, those that lowered the ceiling
};

// clock (seconds, may be empty) lets the sweep match the floor's time: the
// floor's long searches cost several times more per node than the sweep's
// short ones (the overload check starts after 2^17 nodes).
// Runs rounds (above) until the bounds meet, stop() holds, or max_budget is
// spent. Errors: those of decide / raise_floor.
StatusOr<RoundStats> run_capacity_rounds(CapacityBounds* bounds, const RoundSchedule& schedule, const DecideFn& decide,
                                         const std::function<bool()>& stop, const RaiseFloorFn& raise_floor = {},
                                         const std::function<double()>& clock = {});

}  // namespace memplan::solver
