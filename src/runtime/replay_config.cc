// replay_config.cc — the replay knobs' table (runtime/knob_table.h): each
// row names its MEMPLAN_* variable, its type, its ReplayConfig field and its
// help; reading the environment, `memplan run --help` and the knob table of
// docs/runtime.md come from it. The pools' knobs are in pool.cc.
#include <cctype>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "memplan/replay_config.h"
#include "runtime/knob_table.h"

namespace memplan {
namespace {

using runtime::Knob;
using runtime::KnobType;
using C = ReplayConfig;

constexpr Knob<C> kKnobs[] = {
    {"MEMPLAN_PROFILE_ITERATIONS", KnobType::kInteger, &C::profile_iterations,
     "iterations that must make the same request sequence (per thread) before the thread plans (`memplan run "
     "--profile-iterations K`)",
     1},
    {"MEMPLAN_DEVIATIONS_TO_REPROFILE", KnobType::kInteger, &C::deviations_to_reprofile,
     "consecutive deviating iterations after which a thread profiles again", 1},
    {"MEMPLAN_MIN_PLANNED_SIZE", KnobType::kInteger, &C::min_planned_size,
     "requests below this many bytes stay with the backing allocator (they keep their tick)", 0},
    {"MEMPLAN_MIN_SEQUENCED_SIZE", KnobType::kInteger, &C::min_sequenced_size,
     "requests below this many bytes take no tick (iterations that differ only in them agree): the small-request "
     "pool serves them; 0: every request takes a tick",
     0},
    {"MEMPLAN_SMALL_POOL_BYTES", KnobType::kInteger, &C::small_pool_bytes,
     "most bytes of each thread's small-request pool (0: the requests below MEMPLAN_MIN_SEQUENCED_SIZE go to the "
     "backing allocator)",
     0, int64_t{64} << 20},
    {"MEMPLAN_MAX_SLAB_BYTES", KnobType::kInteger, &C::max_slab_bytes,
     "largest slab of one thread (address space reserved per thread, rounded up to a power of two)", 4096},
    {"MEMPLAN_MAX_THREADS", KnobType::kInteger, &C::max_threads,
     "threads that get a slab; later ones use the backing allocator only", 0},
    {"MEMPLAN_MAX_REQUESTS", KnobType::kInteger, &C::max_requests,
     "longest per-thread iteration that is profiled and planned", 1},
    {"MEMPLAN_HUGE_PAGES", KnobType::kSwitch, &C::huge_pages, "advise transparent huge pages for slabs"},
    {"MEMPLAN_SLAB_KEEP", KnobType::kSwitch, &C::keep_slab,
     "keep a slab's memory while the thread re-profiles (1) or give it back (0)"},
    {"MEMPLAN_PLANNER", KnobType::kPlanner, &C::planner,
     "planner run at the iteration boundary when greedy_by_size's plan is more than MEMPLAN_PLAN_TOLERANCE above "
     "the load in pages (`memplan run --planner NAME`)"},
    {"MEMPLAN_PLAN_TIME_LIMIT", KnobType::kSeconds, &C::plan_time_limit_seconds,
     "time budget of one planning run in seconds"},
    {"MEMPLAN_PLAN_TOLERANCE", KnobType::kFraction, &C::plan_tolerance,
     "greedy_by_size's plan is kept, and MEMPLAN_PLANNER not run, when its arena is within this fraction of the load "
     "(in pages; 0: only a page-optimal one)"},
    {"MEMPLAN_PLAN_TIME_SHARE", KnobType::kFraction, &C::plan_time_share,
     "most of the elapsed time planning may take beyond one full run (1: no budget); past it plans get what is left, "
     "down to greedy_by_size's alone"},
    {"MEMPLAN_PROFILE_BEFORE_FIRST_MARK", KnobType::kSwitch, &C::profile_before_first_mark,
     "profile the requests made before the first mark as an iteration; the drop-in's default is 0, since there that "
     "span is the program's start-up"},
    {"MEMPLAN_TRIM_BACKING", KnobType::kSwitch, &C::trim_backing,
     "after planning, before committing the slab, return the backing allocator's free memory to the OS, unless most "
     "recent iterations were mispredicted"},
    {"MEMPLAN_COLOR_SPAN", KnobType::kInteger, &C::color_span_bytes,
     "shift planned blocks of >= 4 KiB by different multiples of 64 B below this span, so that they do not all "
     "share their address bits below the page size (0: off)",
     0, int64_t{1} << 20, 64},
    {"MEMPLAN_PLAN_IN_BACKGROUND", KnobType::kSwitch, &C::plan_in_background,
     "plan (and commit the slab) on a thread of its own while the thread keeps profiling; adopt the plan at a later "
     "boundary (0: plan at the boundary)"},
    {"MEMPLAN_UPPER_BOUND", KnobType::kSwitch, &C::upper_bound_plans,
     "iterations with the same requests and other sizes share one plan sized by the per-request maximum"},
    {"MEMPLAN_MAX_PLANS", KnobType::kInteger, &C::max_plans,
     "most variants (keys of memplan_mark_key) a thread keeps a profile or plan for", 1},
    {"MEMPLAN_MAX_PLAN_BYTES", KnobType::kInteger, &C::max_plan_bytes,
     "most bytes of plan arenas a thread keeps for its variants (least recently used evicted first)", 0},
    {"MEMPLAN_PREDICT", KnobType::kSwitch, &C::predict_variants,
     "unkeyed marks: learn variants by request structure and predict the next one (0: one variant, as key 0)"},
    {"MEMPLAN_STATS", KnobType::kSwitch, &C::print_stats,
     "the drop-in and the CUDA pluggable allocator: print the statistics to stderr at exit, with the plan stall "
     "(`memplan run --stats`)"},
    {"MEMPLAN_BACKING", KnobType::kChoice, &C::backing,
     "the drop-in's and the libtorch allocator's backing, for every request the slabs do not serve: mimalloc "
     "(loaded privately; the drop-in's default when built with it) or next (the drop-in: the next malloc in the "
     "lookup order, glibc's or one preloaded after the drop-in; the libtorch allocator: c10::alloc_cpu, its default)",
     0, std::numeric_limits<int64_t>::max(), 1, "mimalloc|next"},
    {"MEMPLAN_PLANS", KnobType::kPath, &C::plans_file,
     "the drop-in, the libtorch allocator and the CUDA library: a plan file to serve from the first iteration "
     "(`memplan run --plans F`), learnt by an earlier run of the same command (or, for the CUDA library, made by "
     "`memplan snapshot --save-plans`); a file of another adapter or program is ignored with one line"},
    {"MEMPLAN_SAVE_PLANS", KnobType::kPath, &C::save_plans_file,
     "the drop-in, the libtorch allocator and the CUDA library: write what was learnt to this plan file at exit "
     "(`memplan run --save-plans F`; the libtorch allocator when uninstalled), for MEMPLAN_PLANS"},
};

}  // namespace

std::span<const ReplayKnob> replay_knobs() {
  static const std::vector<ReplayKnob> described = runtime::describe_knobs<ReplayConfig>(kKnobs);
  return described;
}

std::optional<bool> parse_switch(const char* text) {
  if (text == nullptr) return std::nullopt;
  std::string value(text);
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (value == "1" || value == "on" || value == "true" || value == "yes") return true;
  if (value == "0" || value == "off" || value == "false" || value == "no") return false;
  return std::nullopt;
}

ReplayConfig read_replay_config(EnvironmentLookup lookup, std::vector<std::string>* rejected,
                                const ReplayConfig& base) {
  return runtime::read_knobs<ReplayConfig>(kKnobs, lookup, rejected, base);
}

StatusOr<ReplayConfig> replay_config_from_environment(EnvironmentLookup lookup) {
  std::vector<std::string> rejected;
  ReplayConfig config = read_replay_config(lookup, &rejected);
  if (!rejected.empty()) return InvalidArgument(rejected.front());
  return config;
}

}  // namespace memplan
