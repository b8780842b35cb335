// inputs.cc — reading the user's files and arguments (see inputs.h).
#include "inputs.h"

#include <cstdio>

#include "commands.h"
#include "exit_codes.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/units.h"

namespace memplan::cli {

void throw_if_error(const Status& status, const std::string& context) {
  if (status.ok()) return;
  throw CommandError(context.empty() ? status.message() : context + ": " + status.message(),
                     exit_code_for(status.code()));
}

Problem read_problem_or_throw(const std::string& path) {
  StatusOr<Problem> problem = read_problem_csv(path);
  throw_if_error(problem.status());
  return std::move(problem).value();
}

Plan read_plan_or_throw(const Problem& problem, const std::string& path) {
  StatusOr<Plan> plan = read_plan_csv(problem, path);
  throw_if_error(plan.status());
  return std::move(plan).value();
}

void write_file_or_throw(const std::string& path, const std::string& text) {
  throw_if_error(write_text_file(path, text));
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
  std::string known;
  for (const PlannerInfo& p : planners()) {
    if (!known.empty()) known += ", ";
    known += p.name;
  }
  throw CommandError("unknown planner '" + name + "' (registered: " + known + ")", kExitFailure);
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

std::string bytes_with_units(int64_t bytes) {
  return std::to_string(bytes) + " B (" + format_bytes(bytes) + ")";
}

}  // namespace memplan::cli
