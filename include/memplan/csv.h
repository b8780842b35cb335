// csv.h — the problem and plan CSV format shared with MiniMalloc and idealloc.
//
// Problem files: a header row, then one buffer per row, no quoting:
//     id,lower,upper,size[,alignment][,offset]
// with the half-open lifetime [lower, upper). The older header
//     buffer,start,end,size
// (also `buffer_id` for id, `begin` for start) has an INCLUSIVE `end`; it is
// converted here, once, to upper = end + 1. Columns may come in any order;
// unknown columns (e.g. MiniMalloc's `hint`) are ignored.
//
// Plan files are problem files with an `offset` column: reading one as a
// problem makes every offset fixed; parse_plan_csv instead matches rows to an
// existing problem's buffers by id and returns their offsets as a Plan.
//
// Every error names the source, the line (1-based) and the field, e.g.
//     model.csv:17: field 'size': "12x" is not an integer
#pragma once

#include <string>
#include <string_view>

#include "memplan/plan.h"
#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

// Parses problem CSV text; `source` names it in errors (a file name).
StatusOr<Problem> parse_problem_csv(std::string_view text, std::string_view source = "<input>");
// Reads and parses a file.
StatusOr<Problem> read_problem_csv(const std::string& path);

// id,lower,upper,size (+ alignment when any buffer has one > 1, + offset when any is fixed).
std::string format_problem_csv(const Problem& problem);
// id,lower,upper,size[,alignment],offset — one row per buffer, in problem order.
std::string format_plan_csv(const Problem& problem, const Plan& plan);

// Offsets for `problem`'s buffers from plan CSV text (matched by id; every
// buffer must appear exactly once, with the same lifetime and size).
StatusOr<Plan> parse_plan_csv(const Problem& problem, std::string_view text, std::string_view source = "<input>");
StatusOr<Plan> read_plan_csv(const Problem& problem, const std::string& path);

// Whole-file helpers with errors that name the path.
StatusOr<std::string> read_text_file(const std::string& path);
Status write_text_file(const std::string& path, std::string_view text);

}  // namespace memplan
