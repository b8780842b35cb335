// replay_config.cc — the runtime's knob table and its reading from MEMPLAN_*
// environment variables (the replay allocator's, and the pools').
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "memplan/planner.h"
#include "memplan/pool.h"
#include "memplan/replay_config.h"

namespace memplan {
namespace {

constexpr ReplayKnob kKnobs[] = {
    {"MEMPLAN_PROFILE_ITERATIONS", "2",
     "iterations that must make the same request sequence (per thread) before the thread plans"},
    {"MEMPLAN_DEVIATIONS_TO_REPROFILE", "3", "consecutive deviating iterations after which a thread profiles again"},
    {"MEMPLAN_MIN_PLANNED_SIZE", "0", "requests below this many bytes stay with the backing allocator"},
    {"MEMPLAN_MIN_SEQUENCED_SIZE", "4096",
     "requests below this many bytes take no place in the sequence: the small-request pool serves them"},
    {"MEMPLAN_SMALL_POOL_BYTES", "67108864",
     "most bytes of each thread's small-request pool (at most 64 MiB; 0: such requests go to the backing allocator)"},
    {"MEMPLAN_MAX_SLAB_BYTES", "1073741824", "largest slab of one thread (address space reserved per thread)"},
    {"MEMPLAN_MAX_THREADS", "64", "threads that get a slab; later ones use the backing allocator only"},
    {"MEMPLAN_MAX_REQUESTS", "1048576", "longest per-thread iteration that is profiled and planned"},
    {"MEMPLAN_HUGE_PAGES", "1", "advise transparent huge pages for slabs (0 or 1)"},
    {"MEMPLAN_SLAB_KEEP", "1", "keep a slab's memory while the thread re-profiles (1) or give it back (0)"},
    {"MEMPLAN_PLANNER", "portfolio", "planner run at the iteration boundary"},
    {"MEMPLAN_PLAN_TIME_LIMIT", "0.25", "time budget of one planning run in seconds"},
    {"MEMPLAN_PLAN_TOLERANCE", "0.01",
     "greedy_by_size's plan is kept when its arena is within this fraction of the load (in pages)"},
    {"MEMPLAN_PLAN_TIME_SHARE", "0.05",
     "most of the elapsed time planning may take beyond one full run (0..1); past it plans are quick"},
    {"MEMPLAN_PROFILE_BEFORE_FIRST_MARK", "1 (drop-in: 0)",
     "profile the requests made before the first mark as an iteration (0 or 1)"},
    {"MEMPLAN_TRIM_BACKING", "1",
     "after planning, before committing the slab, return the backing allocator's free memory to the OS, unless most "
     "recent iterations were mispredicted (0 or 1)"},
    {"MEMPLAN_COLOR_SPAN", "0",
     "shift planned blocks of >= 4 KiB by different multiples of 64 B below this span (a multiple of 64; 0: off)"},
    {"MEMPLAN_PLAN_IN_BACKGROUND", "1",
     "plan (and commit the slab) on a thread of its own while the thread keeps profiling; adopt the plan at a later "
     "boundary (0 or 1)"},
    {"MEMPLAN_UPPER_BOUND", "1",
     "iterations with the same requests and other sizes share one plan sized by the per-request maximum (0 or 1)"},
    {"MEMPLAN_MAX_PLANS", "8", "most variants (keys of memplan_mark_key) a thread keeps a profile or plan for"},
    {"MEMPLAN_MAX_PLAN_BYTES", "1073741824", "most bytes of plan arenas a thread keeps for its variants"},
    {"MEMPLAN_PREDICT", "1",
     "unkeyed marks: learn variants by request structure and predict the next one (0: one variant, as key 0)"},
};

Status parse_integer(const char* name, const char* text, int64_t min, int64_t* out,
                     int64_t max = std::numeric_limits<int64_t>::max()) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
    std::string expected = "expected an integer >= " + std::to_string(min);
    if (max != std::numeric_limits<int64_t>::max()) expected += " and <= " + std::to_string(max);
    return InvalidArgument(std::string(name) + "='" + text + "': " + expected);
  }
  *out = value;
  return Status::Ok();
}

Status parse_flag(const char* name, const char* text, bool* out) {
  const std::optional<bool> value = parse_switch(text);
  if (!value) return InvalidArgument(std::string(name) + "='" + text + "': expected 1/0, on/off, true/false or yes/no");
  *out = *value;
  return Status::Ok();
}

Status parse_share(const char* name, const char* text, double* out) {
  errno = 0;
  char* end = nullptr;
  const double share = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(share >= 0 && share <= 1)) {
    return InvalidArgument(std::string(name) + "='" + text + "': expected a fraction from 0 to 1");
  }
  *out = share;
  return Status::Ok();
}

Status parse_seconds(const char* name, const char* text, double* out) {
  errno = 0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(seconds >= 0)) {
    return InvalidArgument(std::string(name) + "='" + text + "': expected seconds >= 0");
  }
  *out = seconds;
  return Status::Ok();
}

Status parse_color_span(const char* name, const char* text, int64_t* out) {
  int64_t span = 0;
  MEMPLAN_RETURN_IF_ERROR(parse_integer(name, text, 0, &span));
  if (span % 64 != 0 || span > (int64_t{1} << 20)) {
    return InvalidArgument(std::string(name) + "='" + text + "': expected a multiple of 64 up to 1 MiB");
  }
  *out = span;
  return Status::Ok();
}

Status parse_planner(const char* name, const char* text, std::string* out) {
  if (find_planner(text) == nullptr) {
    return InvalidArgument(std::string(name) + "='" + text + "': no such planner (registered: " + planner_names() +
                           ")");
  }
  *out = text;
  return Status::Ok();
}

}  // namespace

std::span<const ReplayKnob> replay_knobs() { return kKnobs; }

std::optional<bool> parse_switch(const char* text) {
  if (text == nullptr) return std::nullopt;
  std::string value(text);
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (value == "1" || value == "on" || value == "true" || value == "yes") return true;
  if (value == "0" || value == "off" || value == "false" || value == "no") return false;
  return std::nullopt;
}

ReplayConfig read_replay_config(EnvironmentLookup lookup, std::vector<std::string>* rejected) {
  if (!lookup) lookup = [](const char* name) -> const char* { return std::getenv(name); };
  ReplayConfig config;
  // Each knob is read on its own: a malformed value leaves that knob at its
  // default and is reported; the others still apply.
  auto read = [&](const char* name, auto parse, auto* field) {
    const char* text = lookup(name);
    if (text == nullptr) return;
    auto value = *field;
    const Status status = parse(name, text, &value);
    if (status.ok()) {
      *field = value;
    } else if (rejected != nullptr) {
      rejected->push_back(status.message());
    }
  };
  read("MEMPLAN_PROFILE_ITERATIONS", [](auto n, auto t, int64_t* o) { return parse_integer(n, t, 1, o); },
       &config.profile_iterations);
  read("MEMPLAN_DEVIATIONS_TO_REPROFILE", [](auto n, auto t, int64_t* o) { return parse_integer(n, t, 1, o); },
       &config.deviations_to_reprofile);
  read("MEMPLAN_MIN_PLANNED_SIZE", [](auto n, auto t, int64_t* o) { return parse_integer(n, t, 0, o); },
       &config.min_planned_size);
  read("MEMPLAN_MIN_SEQUENCED_SIZE", [](auto n, auto t, int64_t* o) { return parse_integer(n, t, 0, o); },
       &config.min_sequenced_size);
  read("MEMPLAN_SMALL_POOL_BYTES",
       [](auto n, auto t, int64_t* o) { return parse_integer(n, t, 0, o, int64_t{64} << 20); },
       &config.small_pool_bytes);
  read("MEMPLAN_MAX_SLAB_BYTES", [](auto n, auto t, int64_t* o) { return parse_integer(n, t, 4096, o); },
       &config.max_slab_bytes);
  read("MEMPLAN_MAX_THREADS", [](auto n, auto t, int64_t* o) { return parse_integer(n, t, 0, o); },
       &config.max_threads);
  read("MEMPLAN_MAX_REQUESTS", [](auto n, auto t, int64_t* o) { return parse_integer(n, t, 1, o); },
       &config.max_requests);
  read("MEMPLAN_HUGE_PAGES", parse_flag, &config.huge_pages);
  read("MEMPLAN_SLAB_KEEP", parse_flag, &config.keep_slab);
  read("MEMPLAN_PLANNER", parse_planner, &config.planner);
  read("MEMPLAN_PLAN_TIME_LIMIT", parse_seconds, &config.plan_time_limit_seconds);
  read("MEMPLAN_PLAN_TIME_SHARE", parse_share, &config.plan_time_share);
  read("MEMPLAN_PLAN_TOLERANCE", parse_share, &config.plan_tolerance);
  read("MEMPLAN_PROFILE_BEFORE_FIRST_MARK", parse_flag, &config.profile_before_first_mark);
  read("MEMPLAN_TRIM_BACKING", parse_flag, &config.trim_backing);
  read("MEMPLAN_COLOR_SPAN", parse_color_span, &config.color_span_bytes);
  read("MEMPLAN_PLAN_IN_BACKGROUND", parse_flag, &config.plan_in_background);
  read("MEMPLAN_UPPER_BOUND", parse_flag, &config.upper_bound_plans);
  read("MEMPLAN_MAX_PLANS", [](auto n, auto t, int64_t* o) { return parse_integer(n, t, 1, o); }, &config.max_plans);
  read("MEMPLAN_MAX_PLAN_BYTES", [](auto n, auto t, int64_t* o) { return parse_integer(n, t, 0, o); },
       &config.max_plan_bytes);
  read("MEMPLAN_PREDICT", parse_flag, &config.predict_variants);
  return config;
}

StatusOr<ReplayConfig> replay_config_from_environment(EnvironmentLookup lookup) {
  std::vector<std::string> rejected;
  ReplayConfig config = read_replay_config(lookup, &rejected);
  if (!rejected.empty()) return InvalidArgument(rejected.front());
  return config;
}

StatusOr<PoolOptions> pool_options_from_environment(EnvironmentLookup lookup) {
  if (!lookup) lookup = [](const char* name) -> const char* { return std::getenv(name); };
  PoolOptions options;
  StatusOr<ReplayConfig> replay = replay_config_from_environment(lookup);
  if (!replay.ok()) return replay.status();
  options.replay = std::move(replay).value();
  const char* v = nullptr;
  if ((v = lookup("MEMPLAN_POOL_PAGE_UNIT"))) {
    MEMPLAN_RETURN_IF_ERROR(parse_integer("MEMPLAN_POOL_PAGE_UNIT", v, 1, &options.page_unit_bytes));
  }
  if ((v = lookup("MEMPLAN_POOL_MAX_CACHED"))) {
    MEMPLAN_RETURN_IF_ERROR(parse_integer("MEMPLAN_POOL_MAX_CACHED", v, 0, &options.max_cached_bytes));
  }
  return options;
}

}  // namespace memplan
