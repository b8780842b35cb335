// json.cc — a plan and its report as one JSON document (format in json.h).
//
// Keys keep the documented order (nlohmann::ordered_json) so that the output
// reads like the example in json.h and diffs well. Buffer ids are user bytes
// and may not be valid UTF-8; the dump replaces bad sequences with U+FFFD
// instead of throwing, so writing never fails.
#include "memplan/json.h"

#include <nlohmann/json.hpp>

#include "memplan/bounds.h"

namespace memplan {

std::string format_plan_json(const Problem& problem, const Plan& plan, const PlanReport& report) {
  using Json = nlohmann::ordered_json;
  bool with_alignment = false;
  for (size_t i = 0; i < problem.size(); ++i) with_alignment |= problem.alignment_of(i) > 1;

  Json doc;
  doc["planner"] = report.planner;
  doc["seconds"] = report.seconds;
  doc["arena"] = plan.arena;
  doc["load"] = report.load;
  doc["gap"] = gap(plan.arena, report.load);
  if (problem.capacity) doc["capacity"] = *problem.capacity;
  if (report.lower_bound > 0) doc["lower_bound"] = report.lower_bound;
  if (!report.result.empty()) doc["result"] = report.result;
  doc["buffers"] = problem.size();
  Json offsets = Json::array();
  for (size_t i = 0; i < problem.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    Json row;
    row["id"] = b.id;
    row["lower"] = b.lower;
    row["upper"] = b.upper;
    row["size"] = b.size;
    if (with_alignment) row["alignment"] = problem.alignment_of(i);
    // A plan of the wrong length is a caller bug; null marks the missing offset
    // rather than inventing one.
    if (i < plan.offsets.size()) {
      row["offset"] = plan.offsets[i];
    } else {
      row["offset"] = nullptr;
    }
    offsets.push_back(std::move(row));
  }
  doc["offsets"] = std::move(offsets);
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

StatusOr<Plan> parse_plan_json(const Problem& problem, std::string_view text, std::string_view source) {
  using Json = nlohmann::json;
  const std::string where(source);
  Json doc = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidArgument(where + ": not valid JSON");
  if (!doc.is_object() || !doc.contains("offsets") || !doc["offsets"].is_array()) {
    return InvalidArgument(where + ": no \"offsets\" array (a plan as `memplan plan --json` writes it)");
  }
  const Json& rows = doc["offsets"];
  if (rows.size() != problem.size()) {
    return InvalidArgument(where + ": \"offsets\" has " + std::to_string(rows.size()) + " entries, the problem " +
                           std::to_string(problem.size()) + " buffers");
  }
  std::vector<int64_t> offsets(problem.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const Json& row = rows[i];
    const std::string entry = where + ": offsets[" + std::to_string(i) + "]";
    if (!row.is_object()) return InvalidArgument(entry + ": not an object");
    if (!row.contains("id") || !row["id"].is_string())
      return InvalidArgument(entry + ", field id: missing or not a string");
    if (row["id"].get<std::string>() != problem.buffers[i].id) {
      return InvalidArgument(entry + ", field id: '" + row["id"].get<std::string>() + "' where the problem has '" +
                             problem.buffers[i].id + "'");
    }
    if (!row.contains("offset") || !row["offset"].is_number_integer()) {
      return InvalidArgument(entry + ", field offset: missing or not an integer");
    }
    const int64_t offset = row["offset"].get<int64_t>();
    if (offset < 0 || (row["offset"].is_number_unsigned() && row["offset"].get<uint64_t>() > INT64_MAX)) {
      return InvalidArgument(entry + ", field offset: " + row["offset"].dump() + " is out of range");
    }
    if (offset > (int64_t{1} << 62) - problem.buffers[i].size) {
      return InvalidArgument(entry + ", field offset: offset + size exceeds 2^62 bytes");
    }
    offsets[i] = offset;
  }
  return make_plan(problem, std::move(offsets));
}

}  // namespace memplan
