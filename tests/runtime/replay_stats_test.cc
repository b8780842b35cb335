// Tests of the counters' one table (kReplayCounters, memplan/replay_stats.h):
// the one printer keeps every field name the statistics line has had, cuts a
// long line safely, merges by each counter's rule, and the counter table of
// docs/runtime.md is the one the rows generate.
#include "memplan/replay_stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace memplan {
namespace {

ReplayStats numbered_stats() {
  ReplayStats s;
  s.threads = 2;
  s.iterations = 9;
  s.profiled = 100;
  s.served = 300;
  s.plans_loaded = 21;
  s.unplanned = 3;
  s.fallback = 4;
  s.busy = 1;
  s.small = 50;
  s.pooled = 43;
  s.pool_bytes = 65536;
  s.deviations = 5;
  s.background_plans = 6;
  s.plans = 7;
  s.reprofiles = 8;
  s.plan_failures = 10;
  s.invalid_frees = 11;
  s.slab_bytes = 4194304;
  s.planned_buffers = 12;
  s.operators = 13;
  s.plan_stall_ns = 12500000;
  s.max_plan_stall_ns = 3250000;
  s.plans_held = 14;
  s.variants = 15;
  s.growths = 16;
  s.arena_bytes = 4096;
  s.min_shape_load_bytes = 1024;
  s.max_shape_load_bytes = 2048;
  s.plan_bytes = 8192;
  s.evictions = 17;
  s.switches = 18;
  s.predictions_right = 19;
  s.predictions_wrong = 20;
  return s;
}

std::string line_of(const ReplayStats& s, const char* prefix, const char* unit_word) {
  char text[2048];
  const size_t n = format_replay_stats(s, prefix, unit_word, text, sizeof text);
  EXPECT_LT(n, sizeof text);
  EXPECT_EQ(n, std::strlen(text));
  return text;
}

TEST(ReplayStatsLine, PrintsEveryCounterUnderItsFieldName) {
  // Written out by hand: the names the drop-in's and the CUDA library's
  // lines have had (bench/e2e_common.py and bench/gpu/gpu_check.py read
  // them), with busy, background plans, planned buffers and operators added.
  EXPECT_EQ(line_of(numbered_stats(), "memplan replay", "threads"),
            "memplan replay: threads 2, iterations 9, profiled 100, served 300, unplanned 3, fallback 4 (busy 1), "
            "small 50, pooled 43, pool bytes 65536, deviations 5, background plans 6, plans 7, plans loaded 21, "
            "reprofiles 8, "
            "plan failures 10, invalid frees 11, slab bytes 4194304, planned buffers 12, operators 13, "
            "plan stall 12.500 ms (longest 3.250 ms), plans held 14, variants 15, growths 16, arena 4096 B, "
            "shape loads 1024..2048 B, plan bytes 8192, evictions 17, switches 18, predictions 19 right 20 wrong, "
            "served fraction 0.600, pooled fraction 0.086\n");
}

TEST(ReplayStatsLine, NamesTheLearningUnitAsTheAdapterDoes) {
  const std::string line = line_of(ReplayStats{}, "memplan cuda", "streams");
  EXPECT_EQ(line.rfind("memplan cuda: streams 0, iterations 0, ", 0), 0u) << line;
  EXPECT_NE(line.find(", served fraction 0.000, pooled fraction 0.000\n"), std::string::npos) << line;
}

TEST(ReplayStatsLine, ALineLongerThanTheBufferIsCutAndTerminated) {
  const std::string full = line_of(numbered_stats(), "memplan replay", "threads");
  char text[40];
  std::memset(text, 'x', sizeof text);
  EXPECT_EQ(format_replay_stats(numbered_stats(), "memplan replay", "threads", text, sizeof text), full.size());
  EXPECT_EQ(std::string(text), full.substr(0, sizeof text - 1));
}

TEST(ReplayStatsMerge, SumsCountsKeepsTheLongestStallAndTheSmallestNonzeroLoad) {
  ReplayStats into;
  into.served = 5;
  into.max_plan_stall_ns = 7;
  into.min_shape_load_bytes = 0;  // no shape yet
  into.max_shape_load_bytes = 100;
  ReplayStats from;
  from.served = 6;
  from.max_plan_stall_ns = 3;
  from.min_shape_load_bytes = 40;
  from.max_shape_load_bytes = 300;
  merge_replay_stats(into, from);
  EXPECT_EQ(into.served, 11u);
  EXPECT_EQ(into.max_plan_stall_ns, 7u);
  EXPECT_EQ(into.min_shape_load_bytes, 40u);
  EXPECT_EQ(into.max_shape_load_bytes, 300u);
  ReplayStats smaller;
  smaller.min_shape_load_bytes = 20;
  merge_replay_stats(into, smaller);
  EXPECT_EQ(into.min_shape_load_bytes, 20u);
  merge_replay_stats(into, ReplayStats{});  // a unit with no shape leaves the smallest as it is
  EXPECT_EQ(into.min_shape_load_bytes, 20u);
}

TEST(ReplayStatsRequests, CountEveryWayARequestWasAnswered) {
  EXPECT_EQ(replay_requests(numbered_stats()), 100u + 300u + 3u + 4u + 50u + 43u);
}

// docs/runtime.md of the source tree this test was compiled from (as in
// knob_table_test.cc).
std::filesystem::path runtime_docs() {
  const std::filesystem::path source(__FILE__);
  const std::filesystem::path relative = source.parent_path() / "../../docs/runtime.md";
  if (source.is_absolute()) return relative;
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  for (std::filesystem::path dir = std::filesystem::path(std::string(exe, n > 0 ? n : 0)).parent_path();
       !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    if (std::filesystem::exists(dir / relative)) return dir / relative;
  }
  return relative;
}

std::string markdown_table() {
  std::string out = "| counter | printed as | meaning |\n|---|---|---|\n";
  for (const ReplayCounter& c : kReplayCounters) {
    std::string printed = std::string(c.label) + "N" + c.suffix;
    while (!printed.empty() && printed.front() == ' ') printed.erase(0, 1);
    out += "| `" + std::string(c.name) + "` | `" + printed + "` | " + c.description + " |\n";
  }
  return out;
}

TEST(ReplayStatsTable, TheDocsTableIsTheOneTheRowsGenerate) {
  std::ifstream in(runtime_docs());
  ASSERT_TRUE(in) << "cannot read " << runtime_docs();
  std::stringstream text;
  text << in.rdbuf();
  const std::string docs = text.str();
  const std::string begin = "<!-- counter table: generated from kReplayCounters -->\n";
  const std::string end = "<!-- end of counter table -->";
  const size_t from = docs.find(begin);
  const size_t to = docs.find(end);
  ASSERT_NE(from, std::string::npos) << "docs/runtime.md has no '" << begin << "'";
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(docs.substr(from + begin.size(), to - from - begin.size()), markdown_table())
      << "docs/runtime.md's counter table differs from the rows; put this between the markers:\n"
      << markdown_table();
}

}  // namespace
}  // namespace memplan
