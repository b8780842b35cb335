// json.h — plans as JSON, for tools that consume memplan's results.
//
//   {"planner": "portfolio", "seconds": 0.012, "arena": 1048576, "load": 1048576,
//    "gap": 0.0, "buffers": 154,
//    "offsets": [{"id": "0", "lower": 995328, "upper": 1000448, "size": 656384, "offset": 0}, ...]}
//
// Keys appear in this order. "capacity" (after "gap") is present only when the
// problem has one; "lower_bound" (proven, bytes) and "result" (what the run
// ended in: "optimal", "fits", "best found (time limit)", ... see
// plan_ending_name in planning.h) follow it when the report sets them; "alignment" (before "offset") only when some
// buffer's effective alignment is > 1. "offsets" is in problem order, lifetimes are half-open [lower, upper), sizes and
// offsets are bytes, "seconds" is the planning wall-clock time. Ids that are not valid UTF-8 are written with U+FFFD
// replacing the bad bytes; writing never fails.
#pragma once

#include <string>
#include <string_view>

#include "memplan/plan.h"
#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

struct PlanReport {
  std::string planner;      // registry name of the planner that made the plan
  double seconds = 0;       // wall-clock planning time in seconds
  int64_t load = 0;         // the problem's load bound in bytes
  int64_t lower_bound = 0;  // proven lower bound in bytes (0: not written)
  std::string result;       // what the run ended in (empty: not written)
};

std::string format_plan_json(const Problem& problem, const Plan& plan, const PlanReport& report);

// Reads the offsets of a plan written by format_plan_json back, for `problem`:
// "offsets" must list every buffer of the problem, in problem order, each with
// the same "id" and an integer "offset" (other keys are read as written and
// not checked); the arena is recomputed from the offsets. Errors name the
// source, the entry's index and the key (kInvalidArgument).
StatusOr<Plan> parse_plan_json(const Problem& problem, std::string_view text, std::string_view source = "<input>");

}  // namespace memplan
