// json_test.cc — the JSON plan report: documented keys in documented order,
// numbers that match the plan, and output that is always valid JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "memplan/bounds.h"
#include "memplan/json.h"
#include "memplan/plan.h"
#include "memplan/problem.h"

namespace memplan {
namespace {

using Json = nlohmann::ordered_json;

Problem two_buffers() {
  return Problem{
      .buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8}, {.id = "b", .lower = 1, .upper = 3, .size = 4}}};
}

TEST(JsonPlan, WritesReportAndOneEntryPerBufferInDocumentedOrder) {
  const Problem p = two_buffers();
  const Plan plan = make_plan(p, {0, 8});
  const std::string text = format_plan_json(p, plan, {.planner = "naive", .seconds = 0.25, .load = load(p)});
  const Json doc = Json::parse(text);

  std::vector<std::string> keys;
  for (const auto& [key, value] : doc.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"planner", "seconds", "arena", "load", "gap", "buffers", "offsets"}));
  EXPECT_EQ(doc["planner"], "naive");
  EXPECT_DOUBLE_EQ(doc["seconds"].get<double>(), 0.25);
  EXPECT_EQ(doc["arena"], 12);
  EXPECT_EQ(doc["load"], 12);
  EXPECT_DOUBLE_EQ(doc["gap"].get<double>(), 0.0);
  EXPECT_EQ(doc["buffers"], 2);
  ASSERT_EQ(doc["offsets"].size(), 2u);
  EXPECT_EQ(doc["offsets"][1], Json::parse(R"({"id":"b","lower":1,"upper":3,"size":4,"offset":8})"));
}

TEST(JsonPlan, GapIsArenaOverLoadMinusOne) {
  const Problem p = two_buffers();
  const Plan plan = make_plan(p, {0, 12});  // arena 16 over a load of 12
  const Json doc = Json::parse(format_plan_json(p, plan, {.planner = "x", .load = 12}));
  EXPECT_DOUBLE_EQ(doc["gap"].get<double>(), 16.0 / 12.0 - 1.0);
}

TEST(JsonPlan, AddsCapacityAndAlignmentOnlyWhenTheProblemHasThem) {
  Problem p = two_buffers();
  const Json plain = Json::parse(format_plan_json(p, make_plan(p, {0, 8}), {}));
  EXPECT_FALSE(plain.contains("capacity"));
  EXPECT_FALSE(plain["offsets"][0].contains("alignment"));

  p.capacity = 64;
  p.buffers[1].alignment = 8;
  const Json rich = Json::parse(format_plan_json(p, make_plan(p, {0, 8}), {}));
  EXPECT_EQ(rich["capacity"], 64);
  EXPECT_EQ(rich["offsets"][0]["alignment"], 1);
  EXPECT_EQ(rich["offsets"][1]["alignment"], 8);
}

TEST(JsonPlan, EmptyProblemHasAnEmptyOffsetList) {
  const Json doc = Json::parse(format_plan_json(Problem{}, Plan{}, {.planner = "naive"}));
  EXPECT_EQ(doc["arena"], 0);
  EXPECT_EQ(doc["buffers"], 0);
  EXPECT_TRUE(doc["offsets"].is_array());
  EXPECT_TRUE(doc["offsets"].empty());
}

TEST(JsonPlan, IdsThatAreNotUtf8StillGiveValidJson) {
  Problem p = two_buffers();
  p.buffers[0].id =
      "bad\xff\xfe"
      "id\"quote\n";
  std::string text;
  ASSERT_NO_THROW(text = format_plan_json(p, make_plan(p, {0, 8}), {}));
  Json doc;
  ASSERT_NO_THROW(doc = Json::parse(text)) << text;
  const std::string id = doc["offsets"][0]["id"];
  EXPECT_EQ(id.rfind("bad", 0), 0u);
  EXPECT_NE(id.find("id\"quote\n"), std::string::npos);
}

TEST(JsonPlan, PlanOfTheWrongLengthMarksMissingOffsetsAsNull) {
  const Problem p = two_buffers();
  const Plan short_plan{.offsets = {0}, .arena = 8};
  const Json doc = Json::parse(format_plan_json(p, short_plan, {}));
  EXPECT_EQ(doc["offsets"][0]["offset"], 0);
  EXPECT_TRUE(doc["offsets"][1]["offset"].is_null());
}

}  // namespace
}  // namespace memplan
