// json.h — plans as JSON, for tools that consume memplan's results.
//
//   {"planner": "portfolio", "seconds": 0.012, "arena": 1048576, "load": 1048576,
//    "gap": 0.0, "buffers": 154,
//    "offsets": [{"id": "0", "lower": 995328, "upper": 1000448, "size": 656384, "offset": 0}, ...]}
//
// Keys appear in this order. "capacity" (after "gap") is present only when the
// problem has one; "alignment" (before "offset") only when some buffer's
// effective alignment is > 1. "offsets" is in problem order, lifetimes are
// half-open [lower, upper), sizes and offsets are bytes, "seconds" is the
// planning wall-clock time. Ids that are not valid UTF-8 are written with
// U+FFFD replacing the bad bytes; writing never fails.
#pragma once

#include <string>

#include "memplan/plan.h"
#include "memplan/problem.h"

namespace memplan {

struct PlanReport {
  std::string planner;  // registry name of the planner that made the plan
  double seconds = 0;   // wall-clock planning time in seconds
  int64_t load = 0;     // the problem's load bound in bytes
};

std::string format_plan_json(const Problem& problem, const Plan& plan, const PlanReport& report);

}  // namespace memplan
