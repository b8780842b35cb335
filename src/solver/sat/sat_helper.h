// sat_helper.h — a SAT solver (CaDiCaL, sat_encoding.h) on a thread of its
// own beside solve_minimize's search, when ExactOptions::threads > 1, the
// problem suits the encoding and the encoding is small (CaDiCaL builds only).
//
// Why. The exact search and the SAT solver fail on different problems. On
// generated packing puzzles of 200 buffers in 256 units the search leaves 4
// of 20 open after 3 s and decides none of those 4 at the load in 60 s; the
// SAT solver finds their plans at the load in 1.7 to 8.4 s. On MiniMalloc's
// A-K (about 1,000 units, 10-56 million clauses) it is the other way round
// (docs/history/exact.md, "No-overlap in (time x offset) as SAT"). So the
// helper takes the place of one seeded helper only
// when the encoding has at most kSatMaxClauses clauses.
//
// What it does, in rounds with a time slice that doubles (0.25 s first):
//   (floor, ceiling) <- the shared bounds
//   decide the floor       (a plan there is optimal; UNSAT raises the floor)
//   decide ceiling - 1 unit (a plan lowers the ceiling)
// A plan lowers the shared ceiling; UNSAT at C raises the shared floor above
// C: a proof, so the caller's lower bound rises with it. The solver keeps
// its learnt clauses from slice to slice and capacity to capacity.
//
// In solve_decision (Mode::kDecide, threads > 1) it races the search on the
// one capacity asked, and whichever answers first ends the other.
//
// Thread-safety: as SeededHelpers (publish, take_better and stats from the
// caller's thread; the destructor stops and joins the thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "memplan/exact.h"
#include "solver/canonical_search.h"
#include "solver/helper_exchange.h"

namespace memplan::solver {

// The largest encoding the helper builds (clauses of the pairs at the
// ceiling): about 1.4 million on the 256-unit puzzles, 10 million on A. At
// the limit CaDiCaL needs about half a gigabyte (exact.cc also keeps it
// within ExactOptions::memory_limit_bytes).
inline constexpr int64_t kSatMaxClauses = 4'000'000;

class SatHelper : public HelperBounds {
 public:
  using Found = HelperPlan;
  struct Stats {
    int64_t decisions = 0;    // solves run (one per slice and capacity)
    int64_t plans = 0;        // of them, plans that lowered the shared ceiling
    int64_t refutations = 0;  // UNSAT answers (each raised the floor)
  };

  // Whether the helper can run on these items with plans below `ceiling`:
  // no fixed offsets, every alignment divides the gcd g of the sizes, and the
  // encoding has at most max_clauses clauses. Sets *unit to g.
  static bool applies(const std::vector<CanonicalSearch::Item>& items, int64_t ceiling, int64_t max_clauses,
                      int64_t* unit);

  // What the thread does: kMinimize runs the rounds above until the bounds
  // meet; kDecide decides only the largest capacity below the ceiling, in
  // doubling slices, and ends at its first answer (solve_decision's race).
  enum class Mode { kMinimize, kDecide };

  // Starts the thread. `stop` bounds it (deadline and the caller's cancel).
  // `hint`: a plan's offsets (one per item, or empty) that the solver's
  // phases start from, so that its first solves look near that plan.
  // `finished`, when given, is set when the thread ends (for any reason), so
  // that a search racing it can use it as its cancel flag.
  SatHelper(const std::vector<CanonicalSearch::Item>& items, int64_t unit, const StopCondition& stop, int64_t floor,
            int64_t ceiling, std::vector<int64_t> hint = {}, Mode mode = Mode::kMinimize,
            std::atomic<bool>* finished = nullptr);
  ~SatHelper();
  SatHelper(const SatHelper&) = delete;
  SatHelper& operator=(const SatHelper&) = delete;

  // publish, floor and take_better (HelperBounds) trade bounds and plans.
  void join();
  Stats stats() const;

 private:
  void run();
  bool halted() const;

  std::vector<CanonicalSearch::Item> items_;
  int64_t unit_;
  std::vector<int64_t> hint_;
  Mode mode_;
  std::atomic<bool>* finished_;
  StopCondition stop_;
  std::atomic<bool> halt_{false};
  std::atomic<int64_t> decisions_{0}, plans_{0}, refutations_{0};
  std::thread thread_;
};

}  // namespace memplan::solver
