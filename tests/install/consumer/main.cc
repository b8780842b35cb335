// Plans a three-buffer problem with the default planner through the installed
// library and checks the plan with the validator. Exit 0 iff all is well.
#include <cstdio>

#include <memplan/bounds.h>
#include <memplan/planner.h>
#include <memplan/validate.h>

int main() {
  memplan::Problem problem{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 64},
                                       {.id = "b", .lower = 1, .upper = 3, .size = 32},
                                       {.id = "c", .lower = 2, .upper = 4, .size = 64}}};
  auto plan = memplan::plan_with(memplan::kDefaultPlanner, problem);
  if (!plan.ok()) {
    std::fprintf(stderr, "plan failed: %s\n", plan.status().to_string().c_str());
    return 1;
  }
  auto result = memplan::validate(problem, *plan);
  if (!result.ok()) {
    std::fprintf(stderr, "invalid plan: %s\n", result.message.c_str());
    return 1;
  }
  std::printf("arena %lld bytes, load %lld bytes\n", static_cast<long long>(plan->arena),
              static_cast<long long>(memplan::load(problem)));
  return plan->arena >= memplan::load(problem) ? 0 : 1;
}
