// render_test.cc — the SVG heap map is well-formed and shows what it promises.
#include <gtest/gtest.h>

#include <string>

#include "memplan/bounds.h"
#include "memplan/planner.h"
#include "memplan/render.h"
#include "memplan/validate.h"

namespace memplan {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) ++n;
  return n;
}

// The <g> that holds one <rect> per drawn buffer.
std::string buffers_group(const std::string& svg) {
  const size_t begin = svg.find("<g id=\"buffers\"");
  if (begin == std::string::npos) return "";
  return svg.substr(begin, svg.find("</g>", begin) - begin);
}

// Four buffers over ticks 0..4 (as in problem.h), stacked by hand into a valid plan.
Problem four_buffers() {
  return Problem{.buffers = {
                     {.id = "a", .lower = 0, .upper = 2, .size = 1024},
                     {.id = "b", .lower = 2, .upper = 4, .size = 1024},
                     {.id = "c", .lower = 0, .upper = 4, .size = 2048},
                     {.id = "d", .lower = 1, .upper = 2, .size = 512},
                 }};
}

Plan four_buffers_plan(const Problem& problem) { return make_plan(problem, {0, 0, 1024, 3072}); }

TEST(RenderSvg, DrawsOneRectanglePerBufferWithTooltip) {
  const Problem problem = four_buffers();
  const Plan plan = four_buffers_plan(problem);
  ASSERT_TRUE(validate(problem, plan).ok());
  const std::string svg = render_svg(problem, plan);
  const std::string buffers = buffers_group(svg);
  EXPECT_EQ(count(buffers, "<rect "), problem.size());
  EXPECT_EQ(count(buffers, "<title>"), problem.size());
  EXPECT_NE(buffers.find("<title>d: ticks [1, 2), 512 B (512 B) at offset 3072</title>"), std::string::npos);
}

TEST(RenderSvg, IsBalancedXmlWithOneRootElement) {
  const Problem problem = four_buffers();
  const std::string svg = render_svg(problem, four_buffers_plan(problem));
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_EQ(count(svg, "<svg"), 1u);
  EXPECT_NE(svg.find("</svg>\n"), std::string::npos);
  EXPECT_EQ(count(svg, "<g "), count(svg, "</g>"));
  EXPECT_EQ(count(svg, "<text"), count(svg, "</text>"));
  EXPECT_EQ(count(svg, "<title>"), count(svg, "</title>"));
}

TEST(RenderSvg, DrawsLoadDashedAndArenaSolidAtTheirHeights) {
  // Load 3584 B at tick 1; the plan above leaves a 0-byte gap, so make one with a
  // gap by lifting d: arena 4096 > load 3584.
  const Problem problem = four_buffers();
  const Plan plan = make_plan(problem, {0, 0, 1024, 3584});
  ASSERT_TRUE(validate(problem, plan).ok());
  ASSERT_EQ(load(problem), 3584);
  const std::string svg = render_svg(problem, plan);
  const size_t load_line = svg.find("<line id=\"load-line\"");
  const size_t arena_line = svg.find("<line id=\"arena-line\"");
  ASSERT_NE(load_line, std::string::npos);
  ASSERT_NE(arena_line, std::string::npos);
  EXPECT_NE(svg.substr(load_line, svg.find("/>", load_line) - load_line).find("stroke-dasharray"), std::string::npos);
  EXPECT_EQ(svg.substr(arena_line, svg.find("/>", arena_line) - arena_line).find("stroke-dasharray"),
            std::string::npos);
  EXPECT_NE(svg.find("load 3.50 KiB"), std::string::npos);
  EXPECT_NE(svg.find("arena 4.00 KiB"), std::string::npos);
  // y grows downwards in SVG: the higher arena line has the smaller y.
  auto y_of_line = [&](size_t pos) {
    const size_t y = svg.find("y1=\"", pos) + 4;
    return std::stod(svg.substr(y, svg.find('"', y) - y));
  };
  EXPECT_LT(y_of_line(arena_line), y_of_line(load_line));
}

TEST(RenderSvg, CaptionNamesPlannerArenaLoadAndGap) {
  const Problem problem = four_buffers();
  const Plan plan = make_plan(problem, {0, 0, 1024, 3584});
  const std::string svg = render_svg(problem, plan, {.planner = "by_hand", .title = "four buffers"});
  const size_t caption = svg.find("<text id=\"caption\"");
  ASSERT_NE(caption, std::string::npos);
  const std::string text = svg.substr(caption, svg.find("</text>", caption) - caption);
  EXPECT_NE(text.find("by_hand: arena 4.00 KiB (4096 B)"), std::string::npos);
  EXPECT_NE(text.find("load 3.50 KiB (3584 B)"), std::string::npos);
  EXPECT_NE(text.find("gap 14.29%"), std::string::npos);
  EXPECT_NE(svg.find(">four buffers</text>"), std::string::npos);
}

TEST(RenderSvg, EscapesIdsWithMarkupCharacters) {
  Problem problem{.buffers = {{.id = "x<y>&\"z\"", .lower = 0, .upper = 3, .size = 64}}};
  const std::string svg = render_svg(problem, make_plan(problem, {0}), {.title = "a&b"});
  EXPECT_NE(svg.find("x&lt;y&gt;&amp;&quot;z&quot;: ticks [0, 3)"), std::string::npos);
  EXPECT_EQ(svg.find("x<y>"), std::string::npos);
  EXPECT_NE(svg.find(">a&amp;b</text>"), std::string::npos);
}

TEST(RenderSvg, TooltipsNameTheOperatorWhenKnown) {
  const Problem problem = four_buffers();
  const Plan plan = four_buffers_plan(problem);
  // Three names for four buffers: "" and a missing name both mean unknown.
  const std::string svg = render_svg(problem, plan, {.operators = {"aten::conv2d", "", "MatMul <attn>"}});
  const std::string group = buffers_group(svg);
  EXPECT_NE(group.find("<title>a: ticks [0, 2), 1024 B (1.00 KiB) at offset 0, from aten::conv2d</title>"),
            std::string::npos)
      << group;
  EXPECT_NE(group.find("<title>b: ticks [2, 4), 1024 B (1.00 KiB) at offset 0</title>"), std::string::npos) << group;
  EXPECT_NE(group.find("at offset 1024, from MatMul &lt;attn&gt;</title>"), std::string::npos) << group;
  EXPECT_NE(group.find("<title>d: ticks [1, 2), 512 B (512 B) at offset 3072</title>"), std::string::npos) << group;
  EXPECT_EQ(count(group, ", from "), 2u);
  EXPECT_EQ(count(buffers_group(render_svg(problem, plan)), ", from "), 0u);
}

TEST(RenderSvg, SameIdGetsSameColourInEveryPicture) {
  Problem one{.buffers = {{.id = "conv1", .lower = 0, .upper = 3, .size = 64}}};
  Problem two{.buffers = {{.id = "other", .lower = 0, .upper = 1, .size = 8},
                          {.id = "conv1", .lower = 5, .upper = 9, .size = 32}}};
  auto fill_of = [](const std::string& svg, const std::string& id) {
    const size_t title = svg.find("<title>" + id + ":");
    const size_t fill = svg.rfind("fill=\"", title) + 6;
    return svg.substr(fill, 7);
  };
  const std::string a = render_svg(one, make_plan(one, {0}));
  const std::string b = render_svg(two, make_plan(two, {0, 0}));
  EXPECT_EQ(fill_of(a, "conv1"), fill_of(b, "conv1"));
  EXPECT_EQ(fill_of(a, "conv1")[0], '#');
}

TEST(RenderSvg, LabelsAxesInTicksAndBinaryUnits) {
  Problem problem{.buffers = {{.id = "big", .lower = 0, .upper = 100, .size = 3 << 20}}};
  const std::string svg = render_svg(problem, make_plan(problem, {0}));
  EXPECT_NE(svg.find("time (ticks)"), std::string::npos);
  EXPECT_NE(svg.find(">1 MiB</text>"), std::string::npos);
  EXPECT_NE(svg.find(">2 MiB</text>"), std::string::npos);
  EXPECT_NE(svg.find(">100</text>"), std::string::npos);
}

TEST(RenderSvg, MergesBuffersTooSmallToSeeAndStaysSmall) {
  // 60,000 one-tick buffers of 64 B beside one big buffer: each small one is a
  // fraction of a pixel in both dimensions.
  Problem problem;
  std::vector<int64_t> offsets;
  problem.buffers.push_back({.id = "big", .lower = 0, .upper = 60000, .size = 1 << 30});
  offsets.push_back(0);
  for (int i = 0; i < 60000; ++i) {
    problem.buffers.push_back({.id = "t" + std::to_string(i), .lower = i, .upper = i + 1, .size = 64});
    offsets.push_back(int64_t{1} << 30);
  }
  const Plan plan = make_plan(problem, offsets);
  ASSERT_TRUE(validate(problem, plan).ok());
  const std::string svg = render_svg(problem, plan);
  EXPECT_EQ(count(svg, "<title>t"), 0u);
  EXPECT_NE(svg.find("<title>big:"), std::string::npos);
  EXPECT_NE(svg.find("<path id=\"merged-buffers\""), std::string::npos);
  EXPECT_NE(svg.find("60000 buffers smaller than 0.5 px"), std::string::npos);
  EXPECT_LT(svg.size(), 100u * 1024);
}

TEST(RenderSvg, ManyVisibleBuffersStayUnderTwentyMegabytes) {
  // 60,000 buffers, each wide enough to be drawn on its own.
  Problem problem;
  std::vector<int64_t> offsets;
  for (int i = 0; i < 60000; ++i) {
    problem.buffers.push_back({.id = "buffer_" + std::to_string(i), .lower = 0, .upper = 10, .size = 4096});
    offsets.push_back(int64_t{4096} * i);
  }
  const Plan plan = make_plan(problem, offsets);
  const std::string svg = render_svg(problem, plan, {.merge_below_px = 0});
  EXPECT_EQ(count(buffers_group(svg), "<rect "), 60000u);
  EXPECT_LT(svg.size(), 20u << 20);
}

TEST(RenderSvg, EmptyProblemGivesAnEmptyMap) {
  const std::string svg = render_svg(Problem{}, Plan{});
  EXPECT_NE(svg.find("arena 0 B (0 B)"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

TEST(RenderSvg, ShowsCapacityWhenNearTheArena) {
  Problem problem = four_buffers();
  problem.capacity = 4096;
  const std::string svg = render_svg(problem, four_buffers_plan(problem));
  EXPECT_NE(svg.find("<line id=\"capacity-line\""), std::string::npos);
}

}  // namespace
}  // namespace memplan
