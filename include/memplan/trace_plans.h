// trace_plans.h — a plan file from an allocation trace: what the drop-in
// would have learnt, had it served the traced run (memplan/plan_file.h,
// memplan/trace.h). `memplan extract TRACE --save-plans F` calls it.
#pragma once

#include <string>

#include "memplan/plan_file.h"
#include "memplan/status.h"
#include "memplan/trace.h"

namespace memplan {

// Replays the requests of the trace's first allocating thread — its
// allocations, reallocs and marks, and the frees of its blocks by any
// thread — through the drop-in's replay allocator with its defaults
// (start-up before the first mark not profiled; plans made at the boundary;
// the first iteration's profile kept), in the trace's order, and returns
// what it learnt as a drop-in plan file with one unit ("0": the thread that
// makes the first request) for `program` ("" for any program). Other
// threads' requests are left out. The replay holds the blocks the traced
// thread held, in real memory, so it needs that thread's peak. An error when
// the trace has no allocation or the allocator cannot start.
StatusOr<PlanFile> plans_from_trace(const Trace& trace, const std::string& program = "");

}  // namespace memplan
