// replay_config.cc — the runtime's knob table and its reading from MEMPLAN_*
// environment variables (the replay allocator's, and the pools').
#include <cerrno>
#include <cstdlib>
#include <string>

#include "memplan/pool.h"
#include "memplan/replay_config.h"

namespace memplan {
namespace {

constexpr ReplayKnob kKnobs[] = {
    {"MEMPLAN_PROFILE_ITERATIONS", "2",
     "iterations that must make the same request sequence (per thread) before the thread plans"},
    {"MEMPLAN_DEVIATIONS_TO_REPROFILE", "3", "consecutive deviating iterations after which a thread profiles again"},
    {"MEMPLAN_MIN_PLANNED_SIZE", "0", "requests below this many bytes stay with the backing allocator"},
    {"MEMPLAN_MAX_SLAB_BYTES", "1073741824", "largest slab of one thread (address space reserved per thread)"},
    {"MEMPLAN_MAX_THREADS", "64", "threads that get a slab; later ones use the backing allocator only"},
    {"MEMPLAN_MAX_REQUESTS", "1048576", "longest per-thread iteration that is profiled and planned"},
    {"MEMPLAN_HUGE_PAGES", "1", "advise transparent huge pages for slabs (0 or 1)"},
    {"MEMPLAN_SLAB_KEEP", "1", "keep a slab's memory while the thread re-profiles (1) or give it back (0)"},
    {"MEMPLAN_PLANNER", "portfolio", "planner run at the iteration boundary"},
    {"MEMPLAN_PLAN_TIME_LIMIT", "0.25", "time budget of one planning run in seconds"},
    {"MEMPLAN_PROFILE_BEFORE_FIRST_MARK", "1 (drop-in: 0)",
     "profile the requests made before the first mark as an iteration (0 or 1)"},
    {"MEMPLAN_TRIM_BACKING", "1",
     "after planning, before committing the slab, return the backing allocator's free memory to the OS (0 or 1)"},
    {"MEMPLAN_COLOR_SPAN", "0",
     "shift planned blocks of >= 4 KiB by different multiples of 64 B below this span (a multiple of 64; 0: off)"},
    {"MEMPLAN_PLAN_IN_BACKGROUND", "0",
     "plan on a thread of its own while the thread keeps profiling; adopt the plan at a later boundary (0 or 1)"},
};

Status parse_integer(const char* name, const char* text, int64_t min, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min) {
    return InvalidArgument(std::string(name) + "='" + text + "': expected an integer >= " + std::to_string(min));
  }
  *out = value;
  return Status::Ok();
}

Status parse_flag(const char* name, const char* text, bool* out) {
  const std::string value(text);
  if (value == "1" || value == "on" || value == "true" || value == "yes") {
    *out = true;
  } else if (value == "0" || value == "off" || value == "false" || value == "no") {
    *out = false;
  } else {
    return InvalidArgument(std::string(name) + "='" + text + "': expected 0 or 1");
  }
  return Status::Ok();
}

}  // namespace

std::span<const ReplayKnob> replay_knobs() { return kKnobs; }

StatusOr<ReplayConfig> replay_config_from_environment(EnvironmentLookup lookup) {
  if (!lookup) lookup = [](const char* name) -> const char* { return std::getenv(name); };
  ReplayConfig config;
  const char* v = nullptr;
  if ((v = lookup("MEMPLAN_PROFILE_ITERATIONS"))) {
    MEMPLAN_RETURN_IF_ERROR(parse_integer("MEMPLAN_PROFILE_ITERATIONS", v, 1, &config.profile_iterations));
  }
  if ((v = lookup("MEMPLAN_DEVIATIONS_TO_REPROFILE"))) {
    MEMPLAN_RETURN_IF_ERROR(parse_integer("MEMPLAN_DEVIATIONS_TO_REPROFILE", v, 1, &config.deviations_to_reprofile));
  }
  if ((v = lookup("MEMPLAN_MIN_PLANNED_SIZE"))) {
    MEMPLAN_RETURN_IF_ERROR(parse_integer("MEMPLAN_MIN_PLANNED_SIZE", v, 0, &config.min_planned_size));
  }
  if ((v = lookup("MEMPLAN_MAX_SLAB_BYTES"))) {
    MEMPLAN_RETURN_IF_ERROR(parse_integer("MEMPLAN_MAX_SLAB_BYTES", v, 4096, &config.max_slab_bytes));
  }
  if ((v = lookup("MEMPLAN_MAX_THREADS"))) {
    MEMPLAN_RETURN_IF_ERROR(parse_integer("MEMPLAN_MAX_THREADS", v, 0, &config.max_threads));
  }
  if ((v = lookup("MEMPLAN_MAX_REQUESTS"))) {
    MEMPLAN_RETURN_IF_ERROR(parse_integer("MEMPLAN_MAX_REQUESTS", v, 1, &config.max_requests));
  }
  if ((v = lookup("MEMPLAN_HUGE_PAGES"))) MEMPLAN_RETURN_IF_ERROR(parse_flag("MEMPLAN_HUGE_PAGES", v, &config.huge_pages));
  if ((v = lookup("MEMPLAN_SLAB_KEEP"))) MEMPLAN_RETURN_IF_ERROR(parse_flag("MEMPLAN_SLAB_KEEP", v, &config.keep_slab));
  if ((v = lookup("MEMPLAN_PLANNER"))) config.planner = v;
  if ((v = lookup("MEMPLAN_PROFILE_BEFORE_FIRST_MARK"))) {
    MEMPLAN_RETURN_IF_ERROR(
        parse_flag("MEMPLAN_PROFILE_BEFORE_FIRST_MARK", v, &config.profile_before_first_mark));
  }
  if ((v = lookup("MEMPLAN_TRIM_BACKING"))) MEMPLAN_RETURN_IF_ERROR(parse_flag("MEMPLAN_TRIM_BACKING", v, &config.trim_backing));
  if ((v = lookup("MEMPLAN_PLAN_IN_BACKGROUND"))) {
    MEMPLAN_RETURN_IF_ERROR(parse_flag("MEMPLAN_PLAN_IN_BACKGROUND", v, &config.plan_in_background));
  }
  if ((v = lookup("MEMPLAN_COLOR_SPAN"))) {
    MEMPLAN_RETURN_IF_ERROR(parse_integer("MEMPLAN_COLOR_SPAN", v, 0, &config.color_span_bytes));
    if (config.color_span_bytes % 64 != 0 || config.color_span_bytes > (int64_t{1} << 20)) {
      return InvalidArgument(std::string("MEMPLAN_COLOR_SPAN='") + v + "': expected a multiple of 64 up to 1 MiB");
    }
  }
  if ((v = lookup("MEMPLAN_PLAN_TIME_LIMIT"))) {
    errno = 0;
    char* end = nullptr;
    const double seconds = std::strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(seconds >= 0)) {
      return InvalidArgument(std::string("MEMPLAN_PLAN_TIME_LIMIT='") + v + "': expected seconds >= 0");
    }
    config.plan_time_limit_seconds = seconds;
  }
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
