// heuristics_alone.cc — linked from the heuristics layer alone
// (tests/layering/tests.cmake): plans a small problem with the heuristic
// portfolio and checks the plan.
#include <cstdio>

#include "memplan/heuristics.h"
#include "memplan/validate.h"

int main() {
  // Three buffers that fit exactly in their load of 12 bytes: b sits on a,
  // then c takes a's place.
  memplan::Problem problem{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8},
                                       {.id = "b", .lower = 1, .upper = 3, .size = 4},
                                       {.id = "c", .lower = 2, .upper = 4, .size = 8}}};
  memplan::StatusOr<memplan::Plan> plan = memplan::plan_heuristics(problem);
  if (!plan.ok()) {
    std::fprintf(stderr, "plan_heuristics failed: %s\n", plan.status().to_string().c_str());
    return 1;
  }
  const memplan::ValidationResult check = memplan::validate(problem, *plan);
  if (!check.ok() || plan->arena != 12) {
    std::fprintf(stderr, "plan_heuristics: arena %lld, %s\n", static_cast<long long>(plan->arena),
                 check.ok() ? "valid" : check.message.c_str());
    return 1;
  }
  std::puts("heuristics layer: valid plan of 12 bytes");
  return 0;
}
