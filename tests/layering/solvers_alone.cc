// solvers_alone.cc — linked from the heuristics and solver layers, without
// the registry (tests/layering/tests.cmake): the exact solver proves the
// optimum of a small problem and refutes a capacity below it.
#include <cstdio>

#include "memplan/exact.h"
#include "memplan/validate.h"

int main() {
  memplan::Problem problem{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8},
                                       {.id = "b", .lower = 1, .upper = 3, .size = 4},
                                       {.id = "c", .lower = 2, .upper = 4, .size = 8},
                                       {.id = "d", .lower = 0, .upper = 4, .size = 4}}};
  auto minimum = memplan::solve_minimize(problem);
  if (!minimum.ok() || minimum->outcome != memplan::ExactOutcome::kOptimal || !minimum->plan ||
      minimum->plan->arena != 16 || !memplan::validate(problem, *minimum->plan).ok()) {
    std::fprintf(stderr, "solve_minimize did not prove the optimum of 16 bytes\n");
    return 1;
  }
  auto below = memplan::solve_decision(problem, 15);
  if (!below.ok() || below->outcome != memplan::ExactOutcome::kInfeasible) {
    std::fprintf(stderr, "solve_decision did not refute 15 bytes\n");
    return 1;
  }
  std::puts("solver layer: optimum 16 bytes proven, 15 bytes refuted");
  return 0;
}
