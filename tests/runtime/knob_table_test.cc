// Tests of the runtime's knob tables (replay_knobs(), pool_knobs(); rows in
// src/runtime/replay_config.cc and pool.cc): each listed default is what a
// default-constructed options struct holds and reads back unchanged, every
// variable is listed once, the drop-in's own default, and the table of
// docs/runtime.md is the one the rows generate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "memplan/pool.h"
#include "memplan/replay_config.h"

namespace memplan {
namespace {

std::vector<ReplayKnob> every_knob() {
  std::vector<ReplayKnob> knobs(replay_knobs().begin(), replay_knobs().end());
  knobs.insert(knobs.end(), pool_knobs().begin(), pool_knobs().end());
  return knobs;
}

// The environment: every knob set to its listed default.
std::map<std::string, std::string>* g_environment = nullptr;
const char* from_map(const char* name) {
  const auto found = g_environment->find(name);
  return found == g_environment->end() ? nullptr : found->second.c_str();
}

// The knob table of docs/runtime.md, as the rows generate it.
std::string markdown_table() {
  std::string out = "| variable | type | default | meaning |\n|---|---|---|---|\n";
  for (const ReplayKnob& knob : every_knob()) {
    out += "| `" + std::string(knob.variable) + "` | " + knob.type + " | " + knob.default_value + " | " +
           std::string(knob.description) + " |\n";
  }
  return out;
}

// docs/runtime.md of the source tree this test was compiled from: __FILE__
// is absolute, or relative to the build folder, which holds this program
// (or one of its parents does).
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

TEST(KnobTable, EveryVariableIsListedOnce) {
  std::set<std::string> seen;
  for (const ReplayKnob& knob : every_knob()) {
    EXPECT_TRUE(seen.insert(std::string(knob.variable)).second) << knob.variable;
    EXPECT_EQ(knob.variable.substr(0, 8), "MEMPLAN_");
    EXPECT_FALSE(knob.type.empty());
    EXPECT_FALSE(knob.description.empty());
  }
  EXPECT_EQ(replay_knobs().size(), 26u);
  EXPECT_EQ(pool_knobs().size(), 2u);
}

TEST(KnobTable, ListedDefaultsAreTheStructsAndReadBackUnchanged) {
  std::map<std::string, std::string> environment;
  for (const ReplayKnob& knob : every_knob()) environment[std::string(knob.variable)] = knob.default_value;
  g_environment = &environment;
  std::vector<std::string> rejected;
  const ReplayConfig read = read_replay_config(from_map, &rejected);
  EXPECT_TRUE(rejected.empty()) << rejected.front();
  const ReplayConfig defaults;
  EXPECT_EQ(read.profile_iterations, defaults.profile_iterations);
  EXPECT_EQ(read.small_pool_bytes, defaults.small_pool_bytes);
  EXPECT_EQ(read.planner, defaults.planner);
  EXPECT_EQ(read.plan_time_limit_seconds, defaults.plan_time_limit_seconds);
  EXPECT_EQ(read.plan_tolerance, defaults.plan_tolerance);
  EXPECT_EQ(read.plan_time_share, defaults.plan_time_share);
  EXPECT_EQ(read.profile_before_first_mark, defaults.profile_before_first_mark);
  EXPECT_EQ(read.print_stats, defaults.print_stats);
  EXPECT_EQ(read.backing, defaults.backing);
  const StatusOr<PoolOptions> pool = pool_options_from_environment(from_map);
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  EXPECT_EQ(pool->page_unit_bytes, PoolOptions{}.page_unit_bytes);
  EXPECT_EQ(pool->max_cached_bytes, PoolOptions{}.max_cached_bytes);
  g_environment = nullptr;
}

TEST(KnobTable, AnUnsetKnobKeepsTheCallersBase) {
  std::map<std::string, std::string> environment = {{"MEMPLAN_STATS", "on"}};
  g_environment = &environment;
  ReplayConfig base;
  base.profile_before_first_mark = false;  // the drop-in's default
  const ReplayConfig read = read_replay_config(from_map, nullptr, base);
  EXPECT_FALSE(read.profile_before_first_mark);
  EXPECT_TRUE(read.print_stats);
  environment["MEMPLAN_PROFILE_BEFORE_FIRST_MARK"] = "1";
  EXPECT_TRUE(read_replay_config(from_map, nullptr, base).profile_before_first_mark);
  g_environment = nullptr;
}

TEST(KnobTable, AMalformedKnobNamesItselfAndWhatItTakes) {
  std::map<std::string, std::string> environment = {{"MEMPLAN_COLOR_SPAN", "100"},
                                                    {"MEMPLAN_STATS", "maybe"},
                                                    {"MEMPLAN_BACKING", "glibc"},
                                                    {"MEMPLAN_POOL_PAGE_UNIT", "0"}};
  g_environment = &environment;
  std::vector<std::string> rejected;
  read_replay_config(from_map, &rejected);
  ASSERT_EQ(rejected.size(), 3u);
  EXPECT_EQ(rejected[0], "MEMPLAN_COLOR_SPAN='100': expected a multiple of 64 up to 1 MiB");
  EXPECT_EQ(rejected[1], "MEMPLAN_STATS='maybe': expected 1/0, on/off, true/false or yes/no");
  EXPECT_EQ(rejected[2], "MEMPLAN_BACKING='glibc': expected one of mimalloc, next");
  environment.erase("MEMPLAN_COLOR_SPAN");
  environment.erase("MEMPLAN_STATS");
  environment.erase("MEMPLAN_BACKING");
  EXPECT_EQ(pool_options_from_environment(from_map).status().message(),
            "MEMPLAN_POOL_PAGE_UNIT='0': expected an integer >= 1");
  g_environment = nullptr;
}

TEST(KnobTable, TheDocsTableIsTheOneTheRowsGenerate) {
  std::ifstream in(runtime_docs());
  ASSERT_TRUE(in) << "cannot read " << runtime_docs();
  std::stringstream text;
  text << in.rdbuf();
  const std::string docs = text.str();
  const std::string begin = "<!-- knob table: generated from replay_knobs() and pool_knobs() -->\n";
  const std::string end = "<!-- end of knob table -->";
  const size_t from = docs.find(begin);
  const size_t to = docs.find(end);
  ASSERT_NE(from, std::string::npos) << "docs/runtime.md has no '" << begin << "'";
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(docs.substr(from + begin.size(), to - from - begin.size()), markdown_table())
      << "docs/runtime.md's knob table differs from the rows; put this between the markers:\n"
      << markdown_table();
}

}  // namespace
}  // namespace memplan
