// render_alone.cc — linked from the model, the readers and writers, and the
// renderers, without any planner (tests/layering/tests.cmake): reads a
// problem and a plan from CSV text, validates the plan and draws it.
#include <cstdio>
#include <string>

#include "memplan/csv.h"
#include "memplan/render.h"
#include "memplan/validate.h"

int main() {
  // b sits on a, then c takes a's place: 12 bytes, the load.
  const memplan::StatusOr<memplan::Problem> problem =
      memplan::parse_problem_csv("id,lower,upper,size\na,0,2,8\nb,1,3,4\nc,2,4,8\n");
  if (!problem.ok()) {
    std::fprintf(stderr, "parse_problem_csv failed: %s\n", problem.status().to_string().c_str());
    return 1;
  }
  const memplan::StatusOr<memplan::Plan> plan =
      memplan::parse_plan_csv(*problem, "id,lower,upper,size,offset\na,0,2,8,0\nb,1,3,4,8\nc,2,4,8,0\n");
  if (!plan.ok()) {
    std::fprintf(stderr, "parse_plan_csv failed: %s\n", plan.status().to_string().c_str());
    return 1;
  }
  if (plan->arena != 12 || !memplan::validate(*problem, *plan).ok()) {
    std::fprintf(stderr, "parse_plan_csv did not give the valid 12-byte plan\n");
    return 1;
  }
  const std::string svg = memplan::render_svg(*problem, *plan);
  if (svg.find("<svg") == std::string::npos) {
    std::fprintf(stderr, "render_svg drew no SVG\n");
    return 1;
  }
  std::puts("model, io and render layers: a plan read, validated and drawn");
  return 0;
}
