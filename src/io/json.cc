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

}  // namespace memplan
