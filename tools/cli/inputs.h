// inputs.h — how the commands read what the user gives them: files, byte
// sizes, planner names. Each turns a library error into a CommandError, so a
// command's callback reads as its happy path.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/banks.h"
#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/problem.h"
#include "memplan/status.h"
#include "memplan/trace.h"

namespace memplan::cli {

// Throws CommandError (with exit_code_for(status.code())) unless ok; `context`
// prefixes the message when not empty.
void throw_if_error(const Status& status, const std::string& context = "");

// Every file argument may be "-": standard input for what is read, standard
// output for what is written. A directory given as a file is a user error.
std::string read_input_or_throw(const std::string& path);
// With `operators`, also its operator column (operator_column, below).
Problem read_problem_or_throw(const std::string& path, std::vector<std::string>* operators = nullptr);
// The `operator` column of a problem CSV's text that parse_problem_csv
// accepted (the reader ignores the column), one entry per buffer in row order
// ("" past the rows that have one); empty when the file has no such column.
std::vector<std::string> operator_column(std::string_view text, size_t buffers);
Trace read_trace_or_throw(const std::string& path);
// A trace from bytes already read (standard input); `source` names it in errors.
Trace parse_trace_or_throw(const std::string& bytes, const std::string& source);
// How messages name a file argument: "<stdin>" for "-", else the path.
std::string source_name(const std::string& path);
// A plan as CSV, or as JSON (what `memplan plan --json` writes), told apart by
// the first character.
Plan read_plan_or_throw(const Problem& problem, const std::string& path);
// The banks of --bank-file FILE (first) and of each --bank
// NAME[=CAPACITY][@ALIGNMENT] flag ("sram=512KiB@64"; "dram": unbounded),
// fastest first, checked (check_banks).
std::vector<Bank> read_banks_or_throw(const std::string& bank_file, const std::vector<std::string>& bank_flags);
// A banked plan file (banks.h: bank and offset columns) for `problem`.
BankedPlan read_banked_plan_or_throw(const Problem& problem, std::span<const Bank> banks, const std::string& path);
void write_file_or_throw(const std::string& path, const std::string& text);
// Before the work starts: the folder of `path` exists and it can be written
// ("-" and "" pass). `what` names the option in the message ("--output").
void check_output_path_or_throw(const std::string& path, const std::string& what);

// CLI11 validator for byte-size options ("4096", "64K", "1.5MiB", "2GB").
CLI::Validator byte_size_validator();
// The value of a byte-size option that passed byte_size_validator().
int64_t byte_size(const std::string& text);
// As byte_size, and a power of two; `flag` names the option in the error.
int64_t power_of_two_byte_size(const std::string& text, const std::string& flag);

// The registered planner called `name`; throws CommandError naming it and
// listing the registered ones otherwise.
const PlannerInfo& planner_or_throw(const std::string& name);
// "a,b,c" -> planners, in the given order, each checked as above.
std::vector<const PlannerInfo*> planner_list_or_throw(const std::string& names);

// "12.34%" (gap as a percentage with two decimals; "n/a" when load is 0 and
// arena is not).
std::string percent_gap(int64_t arena, int64_t load);

// `<bytes> B (<human>)`, e.g. "1048576 B (1.00 MiB)".
std::string bytes_with_units(int64_t bytes);

}  // namespace memplan::cli
