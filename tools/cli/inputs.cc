// inputs.cc — reading the user's files and arguments (see inputs.h).
#include "inputs.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "exit_codes.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/json.h"
#include "memplan/trace.h"
#include "memplan/units.h"

namespace memplan::cli {

void throw_if_error(const Status& status, const std::string& context) {
  if (status.ok()) return;
  throw CommandError(context.empty() ? status.message() : context + ": " + status.message(),
                     exit_code_for(status.code()));
}

std::string source_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

namespace {

// A directory named where a file is expected is the user's mistake (the
// readers would fail on it with a less helpful error, or none).
void throw_if_directory(const std::string& path, const std::string& expected) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw CommandError(path + ": is a directory, not " + expected, kExitFailure);
}

}  // namespace

std::string read_input_or_throw(const std::string& path) {
  if (path == "-") {
    std::string text;
    char chunk[1 << 16];
    size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, stdin)) > 0) text.append(chunk, n);
    if (std::ferror(stdin)) throw CommandError("<stdin>: read failed", kExitFailure);
    return text;
  }
  throw_if_directory(path, "a file");
  StatusOr<std::string> text = read_text_file(path);
  throw_if_error(text.status());
  return std::move(text).value();
}

Trace parse_trace_or_throw(const std::string& bytes, const std::string& source) {
  StatusOr<Trace> trace = parse_trace({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, source);
  throw_if_error(trace.status());
  return std::move(trace).value();
}

Trace read_trace_or_throw(const std::string& path) {
  if (path == "-") return parse_trace_or_throw(read_input_or_throw(path), source_name(path));
  throw_if_directory(path, "a trace file");
  StatusOr<Trace> trace = read_trace(path);
  throw_if_error(trace.status());
  return std::move(trace).value();
}

namespace {
std::string_view trimmed_field(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

}  // namespace

// The `operator` column of a problem CSV that parse_problem_csv accepted (it
// ignores the column), one entry per buffer in row order; empty when the file
// has no such column. The reader skips blank lines; so does this, so rows and
// buffers line up. Ids with commas are not part of the format (csv.h).
std::vector<std::string> operator_column(std::string_view text, size_t buffers) {
  std::vector<std::string> operators;
  size_t column = std::string_view::npos;
  bool header = true;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (header && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
    if (trimmed_field(line).empty()) continue;
    size_t field = 0;
    for (size_t from = 0;; ++field) {
      const size_t comma = line.find(',', from);
      const std::string_view value = trimmed_field(line.substr(from, comma - from));
      if (header && value == "operator") column = field;
      if (!header && field == column) operators.emplace_back(value);
      if (comma == std::string_view::npos) break;
      from = comma + 1;
    }
    if (header && column == std::string_view::npos) return {};
    header = false;
  }
  operators.resize(buffers);
  return operators;
}

Problem read_problem_or_throw(const std::string& path, std::vector<std::string>* operators) {
  const std::string text = read_input_or_throw(path);
  StatusOr<Problem> problem = parse_problem_csv(text, source_name(path));
  throw_if_error(problem.status());
  if (operators != nullptr) *operators = operator_column(text, problem->size());
  return std::move(problem).value();
}

Plan read_plan_or_throw(const Problem& problem, const std::string& path) {
  const std::string text = read_input_or_throw(path);
  // A plan is JSON (as `memplan plan --json` writes it) when its first
  // non-blank character opens an object, else CSV.
  const size_t first = text.find_first_not_of(" \t\r\n");
  StatusOr<Plan> plan = first != std::string::npos && text[first] == '{'
                            ? parse_plan_json(problem, text, source_name(path))
                            : parse_plan_csv(problem, text, source_name(path));
  throw_if_error(plan.status());
  return std::move(plan).value();
}

std::vector<Bank> read_banks_or_throw(const std::string& bank_file, const std::vector<std::string>& bank_flags) {
  std::vector<Bank> banks;
  if (!bank_file.empty()) {
    StatusOr<std::vector<Bank>> parsed = parse_banks_csv(read_input_or_throw(bank_file), source_name(bank_file));
    throw_if_error(parsed.status(), "bad bank file");
    banks = std::move(*parsed);
  }
  for (const std::string& text : bank_flags) {
    Bank bank;
    std::string rest = text;
    if (const size_t at = rest.find('@'); at != std::string::npos) {
      bank.alignment = power_of_two_byte_size(rest.substr(at + 1), "--bank " + text);
      rest.resize(at);
    }
    if (const size_t eq = rest.find('='); eq != std::string::npos) {
      bank.capacity = byte_size(rest.substr(eq + 1));
      rest.resize(eq);
    }
    bank.name = rest;
    if (bank.name.empty())
      throw CommandError("--bank " + text + ": the bank needs a name (NAME[=CAPACITY][@ALIGNMENT])");
    banks.push_back(std::move(bank));
  }
  throw_if_error(check_banks(banks), "bad banks");
  return banks;
}

BankedPlan read_banked_plan_or_throw(const Problem& problem, std::span<const Bank> banks, const std::string& path) {
  StatusOr<BankedPlan> plan = parse_banked_plan_csv(problem, banks, read_input_or_throw(path), source_name(path));
  throw_if_error(plan.status());
  return std::move(plan).value();
}

void write_file_or_throw(const std::string& path, const std::string& text) {
  if (path == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
      throw CommandError("<stdout>: write failed", kExitFailure);
    }
    return;
  }
  throw_if_error(write_text_file(path, text));
}

void check_output_path_or_throw(const std::string& path, const std::string& what) {
  if (path.empty() || path == "-") return;
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path file(path);
  if (fs::is_directory(file, error)) throw CommandError(what + " " + path + ": is a directory", kExitFailure);
  const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, error)) {
    throw CommandError(what + " " + path + ": folder " + folder.string() + " does not exist", kExitFailure);
  }
  const bool exists = fs::exists(file, error);
  if (access(exists ? file.c_str() : folder.c_str(), W_OK) != 0) {
    throw CommandError(what + " " + path + ": " + (exists ? "file" : "folder " + folder.string()) + " is not writable",
                       kExitFailure);
  }
}

CLI::Validator byte_size_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        StatusOr<int64_t> bytes = parse_bytes(text);
        return bytes.ok() ? std::string() : bytes.status().message();
      },
      // No description: the options already show BYTES as their type.
      "");
}

int64_t byte_size(const std::string& text) {
  StatusOr<int64_t> bytes = parse_bytes(text);
  throw_if_error(bytes.status());
  return *bytes;
}

int64_t power_of_two_byte_size(const std::string& text, const std::string& flag) {
  const int64_t bytes = byte_size(text);
  if (!is_power_of_two(bytes)) {
    throw CommandError(flag + ": " + std::to_string(bytes) + " is not a power of two", kExitFailure);
  }
  return bytes;
}

const PlannerInfo& planner_or_throw(const std::string& name) {
  if (const PlannerInfo* planner = find_planner(name)) return *planner;
  throw CommandError(unknown_planner_message(name), kExitFailure);
}

std::vector<const PlannerInfo*> planner_list_or_throw(const std::string& names) {
  std::vector<const PlannerInfo*> list;
  size_t begin = 0;
  while (begin <= names.size()) {
    size_t end = names.find(',', begin);
    if (end == std::string::npos) end = names.size();
    const std::string name = names.substr(begin, end - begin);
    if (!name.empty()) list.push_back(&planner_or_throw(name));
    begin = end + 1;
  }
  if (list.empty()) throw CommandError("no planner named in '" + names + "'", kExitFailure);
  return list;
}

std::string percent_gap(int64_t arena, int64_t load) {
  if (load <= 0) return arena == 0 ? "0.00%" : "n/a";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * gap(arena, load));
  return text;
}

std::string bytes_with_units(int64_t bytes) { return std::to_string(bytes) + " B (" + format_bytes(bytes) + ")"; }

}  // namespace memplan::cli
