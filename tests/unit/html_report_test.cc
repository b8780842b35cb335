// html_report_test.cc — the HTML report embeds exactly the problem and plans it
// is given, as columns, and is self-contained (no address outside the file).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "memplan/bounds.h"
#include "memplan/render.h"
#include "memplan/validate.h"

namespace memplan {
namespace {

// Four buffers over ticks 0..4 (as in problem.h), stacked by hand into a valid plan.
Problem report_four_buffers() {
  return Problem{.buffers = {
                     {.id = "a", .lower = 0, .upper = 2, .size = 1024},
                     {.id = "b", .lower = 2, .upper = 4, .size = 1024},
                     {.id = "c", .lower = 0, .upper = 4, .size = 2048},
                     {.id = "d", .lower = 1, .upper = 2, .size = 512},
                 }};
}

// The text of the <script type="application/json"> element.
std::string embedded_text(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"memplan-data\">";
  const size_t begin = html.find(open);
  if (begin == std::string::npos) return "";
  const size_t from = begin + open.size();
  return html.substr(from, html.find("</script>", from) - from);
}

nlohmann::json embedded(const std::string& html) { return nlohmann::json::parse(embedded_text(html)); }

TEST(HtmlReport, EmbedsTheProblemAndPlanAsExactColumns) {
  const Problem problem = report_four_buffers();
  const std::vector<NamedPlan> plans = {{.name = "by hand", .plan = make_plan(problem, {0, 0, 1024, 3072})}};
  ASSERT_TRUE(validate(problem, plans[0].plan).ok());
  const nlohmann::json data = embedded(render_html_report(problem, plans, {.title = "four"}));
  EXPECT_EQ(data["format"], "memplan-report");
  EXPECT_EQ(data["title"], "four");
  EXPECT_EQ(data["ids"], nlohmann::json({"a", "b", "c", "d"}));
  EXPECT_EQ(data["lower"], nlohmann::json({0, 2, 0, 1}));
  EXPECT_EQ(data["upper"], nlohmann::json({2, 4, 4, 2}));
  EXPECT_EQ(data["size"], nlohmann::json({1024, 1024, 2048, 512}));
  EXPECT_EQ(data["load"], 3584);
  EXPECT_TRUE(data["capacity"].is_null());
  ASSERT_EQ(data["plans"].size(), 1u);
  EXPECT_EQ(data["plans"][0]["name"], "by hand");
  EXPECT_EQ(data["plans"][0]["offsets"], nlohmann::json({0, 0, 1024, 3072}));
  EXPECT_EQ(data["plans"][0]["arena"], 3584);
  EXPECT_EQ(data["plans"][0]["gap"], 0.0);
  EXPECT_EQ(data["plans"][0]["valid"], true);
  // Tick 1 is the peak (a, c and d live): largest first.
  EXPECT_EQ(data["peak_tick"], 1);
  EXPECT_EQ(data["peak_buffers"], nlohmann::json({2, 0, 3}));
  EXPECT_EQ(data["operator"], nlohmann::json::array());
}

TEST(HtmlReport, WritesSixtyFourBitIntegersExactly) {
  // 2^53 + 1 is not a double; the text must still carry every digit.
  const int64_t huge = (int64_t{1} << 53) + 1;
  const Problem problem{.buffers = {{.id = "x", .lower = huge, .upper = huge + 1, .size = huge}}};
  const std::vector<NamedPlan> plans = {{.name = "p", .plan = make_plan(problem, {huge + 1})}};
  const std::string text = embedded_text(render_html_report(problem, plans));
  EXPECT_NE(text.find("\"lower\":[9007199254740993]"), std::string::npos);
  EXPECT_NE(text.find("\"offsets\":[9007199254740994]"), std::string::npos);
}

TEST(HtmlReport, IsSelfContained) {
  const Problem problem = report_four_buffers();
  const std::vector<NamedPlan> plans = {{.name = "p", .plan = make_plan(problem, {0, 0, 1024, 3072})}};
  const std::string html = render_html_report(problem, plans);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find(" href="), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  // The script and the style are inline, once each.
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_NE(html.find("window.memplanReport"), std::string::npos);
  EXPECT_NE(html.find("</html>\n"), std::string::npos);
}

TEST(HtmlReport, IdsCannotCloseTheDataScript) {
  Problem problem = report_four_buffers();
  problem.buffers[0].id = "</script><img src=x onerror=alert(1)>&\"\\";
  const std::vector<NamedPlan> plans = {{.name = "</script>", .plan = make_plan(problem, {0, 0, 1024, 3072})}};
  const std::string html = render_html_report(problem, plans, {.title = "<b>"});
  const std::string text = embedded_text(html);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(text.find('>'), std::string::npos);
  const nlohmann::json data = nlohmann::json::parse(text);
  EXPECT_EQ(data["ids"][0], problem.buffers[0].id);
  EXPECT_EQ(data["plans"][0]["name"], "</script>");
  EXPECT_NE(html.find("<title>memplan report: &lt;b&gt;</title>"), std::string::npos);
}

TEST(HtmlReport, OperatorsAreATableOfNamesAndOneIndexPerBuffer) {
  const Problem problem = report_four_buffers();
  HtmlReportOptions options;
  options.operators = {"aten::conv2d", "", "aten::conv2d", "aten::relu"};
  const std::vector<NamedPlan> plans = {{.name = "p", .plan = make_plan(problem, {0, 0, 1024, 3072})}};
  const nlohmann::json data = embedded(render_html_report(problem, plans, options));
  EXPECT_EQ(data["operator_names"], nlohmann::json({"aten::conv2d", "aten::relu"}));
  EXPECT_EQ(data["operator"], nlohmann::json({0, -1, 0, 1}));
}

TEST(HtmlReport, ComparesSeveralPlansWithTheirGapsAndFlagsInvalidOnes) {
  const Problem problem = report_four_buffers();
  const std::vector<NamedPlan> plans = {
      {.name = "tight", .plan = make_plan(problem, {0, 0, 1024, 3072})},
      {.name = "loose", .plan = make_plan(problem, {0, 0, 1024, 3584})},
      {.name = "overlap", .plan = make_plan(problem, {0, 0, 512, 3072})},
  };
  const nlohmann::json data = embedded(render_html_report(problem, plans));
  ASSERT_EQ(data["plans"].size(), 3u);
  EXPECT_EQ(data["plans"][1]["arena"], 4096);
  EXPECT_NEAR(data["plans"][1]["gap"].get<double>(), 4096.0 / 3584.0 - 1.0, 1e-6);
  EXPECT_EQ(data["plans"][1]["valid"], true);
  EXPECT_EQ(data["plans"][2]["valid"], false);
  EXPECT_FALSE(data["plans"][2]["message"].get<std::string>().empty());
}

TEST(HtmlReport, APlanWithFewerOffsetsMarksTheRestUnplaced) {
  const Problem problem = report_four_buffers();
  Plan plan;
  plan.offsets = {0, 0};
  plan.arena = 1024;
  const std::vector<NamedPlan> plans = {{.name = "short", .plan = plan}};
  const nlohmann::json data = embedded(render_html_report(problem, plans));
  EXPECT_EQ(data["plans"][0]["offsets"], nlohmann::json({0, 0, -1, -1}));
}

TEST(HtmlReport, EmptyProblemGivesAPage) {
  const std::vector<NamedPlan> plans = {{.name = "empty", .plan = Plan{}}};
  const nlohmann::json data = embedded(render_html_report(Problem{}, plans));
  EXPECT_EQ(data["ids"], nlohmann::json::array());
  EXPECT_EQ(data["plans"][0]["arena"], 0);
}

TEST(HtmlReport, StaysCompactForManyBuffers) {
  // 100,000 buffers and one plan: columns, not objects, keep it near 30 bytes each.
  Problem problem;
  std::vector<int64_t> offsets;
  for (int i = 0; i < 100000; ++i) {
    problem.buffers.push_back({.id = std::to_string(i), .lower = i, .upper = i + 50, .size = 4096 + i});
    offsets.push_back(int64_t{8192} * (i % 50));
  }
  const std::vector<NamedPlan> plans = {{.name = "p", .plan = make_plan(problem, offsets)}};
  const std::string html = render_html_report(problem, plans);
  EXPECT_LT(html.size(), 100000u * 40);
}

}  // namespace
}  // namespace memplan
