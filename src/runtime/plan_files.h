// plan_files.h — the one rule every adapter follows for MEMPLAN_PLANS and
// MEMPLAN_SAVE_PLANS (memplan/plan_file.h; Note [Plans from a file],
// learner_saved.cc): what is loaded, what is refused, and the one line the
// user reads about it. Private to memplan's runtime.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "memplan/plan_file.h"
#include "memplan/status.h"

namespace memplan::runtime {

// Reads `path`, checks it is for `adapter` and `program` (plan_file_mismatch)
// and hands it to `take` (the adapter's load_plans). Returns the line to
// print: what was loaded, or why the file is ignored (unreadable, malformed,
// another adapter or program, refused by `take`); the process then learns as
// if no file had been given.
std::string load_plans_line(const std::string& path, std::string_view adapter, std::string_view program,
                            const std::function<Status(const PlanFile&)>& take);

// Writes `file` to `path`; returns the line to print (what was written, or
// why nothing was). A file without units (nothing learnt) is not written:
// the file at `path` stays as it was.
std::string save_plans_line(const PlanFile& file, const std::string& path);

}  // namespace memplan::runtime
