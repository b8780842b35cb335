// seeded_helpers.h — seeded restarts on threads of their own, beside
// solve_minimize's search (ExactOptions::threads).
//
// Why threads for this step only. On MiniMalloc's D and J the plans below
// the first few percent come from seeded restarts (capacity_rounds.h,
// step 5), at rates of one short decision in 100-200 once the plan is within
// 4 % of the load (docs/history/exact.md, "Choosing the default shares"):
// the minimiser's result is the number of
// such decisions it gets through. They are independent (each its own seed,
// its own tree), need only the current bounds, and report only a plan, so
// they parallelise without changing anything else: the caller's thread runs
// the whole schedule as with one thread, and each helper runs seeded
// decisions back to back:
//
//   loop until stop():
//     (floor, ceiling) <- the shared bounds (the caller publishes its own;
//                         a helper's plan lowers the ceiling at once)
//     c <- seeded_capacity(floor, ceiling)    (as step 5 draws it; every
//          floor_every-th decision: the floor, as step 5b)
//     decide c with node_budget nodes, jittered keys from a new seed
//     a plan below the shared best: keep its offsets, lower the ceiling
//     a complete refutation of c: raise the shared floor above c
//
// Each helper owns a CanonicalSearch (its own index: memory grows with the
// number of threads) and its own seed stream, so a run with threads is
// still repeatable per helper, but which plan arrives first depends on
// timing: results with threads > 1 vary from run to run.
//
// Thread-safety: publish, take_better and stats may be called from the
// caller's thread while the helpers run; the destructor stops and joins them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "memplan/exact.h"
#include "solver/canonical_search.h"
#include "solver/helper_exchange.h"

namespace memplan::solver {

class SeededHelpers : public HelperBounds {
 public:
  struct Config {
    int32_t threads = 1;      // helper threads to start
    int64_t node_budget = 0;  // per decision
    int32_t levels = 16;      // steps below the ceiling to draw from
    uint64_t seed = 1;        // helper i draws seeds from seed + i * 2^40 on
    int64_t granule = 1;      // every canonical arena is a multiple of it
    // Helper 0 first decides at the floor, as a decision at that capacity
    // runs (first key order, restarts, no jitter), with this many nodes and
    // at most floor_share of the time limit (0: no such dive). Most problems
    // fit at their load, some only after more nodes than the main thread's
    // first dive (MiniMalloc's E: 154,625).
    int64_t floor_budget = 0;
    double floor_share = 0.5;
    // Every floor_every-th seeded decision (0: none) is at the floor instead
    // of below the ceiling (capacity_rounds.h, step 5b).
    int32_t floor_every = 0;
    // Helper 0 runs this many seeded decisions at the floor before its dive.
    int32_t floor_first = 0;
    // Every seeded decision at the floor gets max(node_budget, this) nodes.
    int64_t floor_probe_budget = 0;
  };
  using Found = HelperPlan;
  struct Stats {
    int64_t nodes = 0;
    int64_t probes = 0;  // decisions run
    int64_t plans = 0;   // of them, those that lowered the shared ceiling
  };

  // Starts config.threads helpers at once. `stop` bounds them (deadline and
  // the caller's cancel); they also end when the bounds meet.
  SeededHelpers(const std::vector<CanonicalSearch::Item>& items, const ExactOptions& options, const StopCondition& stop,
                const Config& config, int64_t floor, int64_t ceiling);
  ~SeededHelpers();
  SeededHelpers(const SeededHelpers&) = delete;
  SeededHelpers& operator=(const SeededHelpers&) = delete;

  // publish, floor and take_better (HelperBounds) trade bounds and plans.
  // Stops the helpers and waits for them (also done by the destructor).
  void join();
  Stats stats() const;
  // Helper threads whose loop has not yet ended (by the bounds meeting, the
  // deadline, the caller's cancel or join). For tests that must see the
  // helpers stop on their own, before anyone joins them.
  int32_t running() const { return running_.load(std::memory_order_acquire); }

 private:
  void run(int32_t index);

  std::vector<CanonicalSearch::Item> items_;
  ExactOptions options_;
  StopCondition stop_;  // the caller's, with cancel replaced by halt_ (see run)
  const std::atomic<bool>* caller_cancel_;
  Config config_;
  std::atomic<bool> halt_{false};
  std::atomic<int64_t> nodes_{0}, probes_{0}, plans_{0};
  std::atomic<int32_t> running_{0};
  std::vector<std::thread> threads_;
};

}  // namespace memplan::solver
