// csv.h — the problem and plan CSV format shared with MiniMalloc and idealloc.
//
// Problem files: a header row, then one buffer per row, no quoting:
//     id,lower,upper,size[,alignment][,offset]
// with the half-open lifetime [lower, upper). The older header
//     buffer,start,end,size
// (also `buffer_id` for id, `begin` for start) has an INCLUSIVE `end`; it is
// converted here, once, to upper = end + 1. Columns may come in any order;
// unknown columns (MiniMalloc's `hint` and `gaps`) are ignored: a buffer with
// gaps is read as live for its whole lifetime, which is safe, only less tight.
// An empty `offset` field means the buffer has no fixed offset. Two optional
// columns serve memory banks (banks.h): `bank`, the name of the bank a buffer
// is pinned to (empty: any), and `priority`, a non-negative integer (empty:
// size x lifetime). Single-arena planning ignores both; the writer adds each
// only when some buffer has it set.
//
// What the reader forgives: CRLF line endings, a missing final newline, blank
// lines (they are skipped and still counted for line numbers), spaces and tabs
// around fields, a UTF-8 byte-order mark. Everything else is an error: a file
// without a header (empty or blank), a missing or repeated column, a row with
// a different number of fields than the header, an integer field that is empty
// or not wholly a decimal integer ("12x", "1.5", "+3", "0x10"), a value outside
// int64 (end + 1 included), an empty id, a duplicate id, a negative size, an
// empty lifetime (lower >= upper; end < start for inclusive ends), an alignment
// that is not a power of two, a fixed offset that is negative, misaligned, or
// with offset + size above 2^62, and a total size above 2^62 (problem.h). A
// header with no rows is a valid problem with no buffers.
//
// Plan files are problem files with an `offset` column: reading one as a
// problem makes every offset fixed; parse_plan_csv instead matches rows to an
// existing problem's buffers by id and returns their offsets as a Plan.
//
// The format has no place for a Problem's capacity (MiniMalloc puts it in the
// file name) or its default alignment: the writers fold the default into each
// buffer's `alignment` column, so reading back gives an equivalent problem,
// and an identical one when capacity is unset and the default alignment is 1.
// Ids are written as they are; ids with ',', line breaks or surrounding
// spaces (never produced by the reader) do not survive a round trip.
//
// Every error names the source, the line (1-based) and the field, e.g.
//     model.csv:17: field 'size': "12x" is not an integer
// Readers never throw, never abort, and take time linear in the input.
#pragma once

#include <span>
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
// The same with an `operator` column when `operators` is not empty: one name
// per buffer (missing ones empty), which `memplan report` shows and the reader
// ignores. Commas become ';' and line breaks spaces, since fields are unquoted.
std::string format_problem_csv(const Problem& problem, std::span<const std::string> operators);
// id,lower,upper,size[,alignment],offset — one row per buffer, in problem order.
std::string format_plan_csv(const Problem& problem, const Plan& plan);

// Offsets for `problem`'s buffers from plan CSV text (matched by id; every
// buffer must appear exactly once, with the same lifetime and size, and with the
// same alignment when the file has that column). Needs an `offset` column with
// no empty fields. Does not validate the plan: a misaligned or overlapping
// offset is read as written, for memplan::validate to explain.
StatusOr<Plan> parse_plan_csv(const Problem& problem, std::string_view text, std::string_view source = "<input>");
StatusOr<Plan> read_plan_csv(const Problem& problem, const std::string& path);

// Whole-file helpers with errors that name the path (kNotFound when the file
// does not exist, kIoError otherwise).
StatusOr<std::string> read_text_file(const std::string& path);
Status write_text_file(const std::string& path, std::string_view text);

}  // namespace memplan
