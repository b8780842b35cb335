// bench_block_alignment.cc — what Note [Aligned large blocks]
// (src/runtime/profile_plan.cc) costs in arena on captured problems.
//
// Each CSV problem becomes the profile the drop-in would agree on: its
// buffers of at least min_sequenced_size (4 KiB; smaller ones go to the
// small-request pool), in order of their first tick, each freed at the tick
// count of its last. "before" is that profile's problem as the runtime built
// it without the rule (the request's alignment, a header of max(16 B,
// alignment)); "after" is plan_profile's problem with the drop-in's block
// layout, i.e. with the rule. Both are planned by greedy_by_size (the plan
// the runtime keeps when it is within a page-rounded 1% of the load) and
// validated; the table gives both arenas, the difference and how many
// buffers asked for less than 64 B. Every file runs twice: as captured
// (libtorch asks for 64 B) and as a program that asks malloc's 16 B for
// everything would make it (every alignment set to 16).
//
// Usage: bench_block_alignment FILE.csv...   (e.g. bench/data/torch/*.csv)
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "memplan/csv.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "runtime/profile.h"
#include "runtime/replay_records.h"

namespace {

using memplan::runtime::Profile;

// The sequence profile of a problem's buffers of at least `min_size` bytes.
Profile profile_of(const memplan::Problem& problem, int64_t min_size) {
  std::vector<const memplan::Buffer*> kept;
  for (const memplan::Buffer& b : problem.buffers) {
    if (b.size >= min_size) kept.push_back(&b);
  }
  std::stable_sort(kept.begin(), kept.end(), [](auto* x, auto* y) { return x->lower < y->lower; });
  std::vector<int64_t> lowers;
  for (auto* b : kept) lowers.push_back(b->lower);
  Profile p;
  for (auto* b : kept) {
    p.requests.push_back({.size = static_cast<uint64_t>(b->size), .alignment = static_cast<uint64_t>(b->alignment)});
    // Ticks are request counts: freed after every request made before its end.
    p.uppers.push_back(std::lower_bound(lowers.begin(), lowers.end(), b->upper) - lowers.begin());
  }
  return p;
}

// The problem the runtime built before the rule: header max(16, alignment).
memplan::Problem problem_before(const Profile& p) {
  memplan::Problem problem;
  for (size_t i = 0; i < p.size(); ++i) {
    const memplan::runtime::Request& r = p.requests[i];
    memplan::Buffer b;
    b.id = std::to_string(i);
    b.lower = static_cast<int64_t>(i);
    b.upper = std::max<int64_t>(p.uppers[i], b.lower + 1);
    b.size = static_cast<int64_t>(memplan::runtime::header_bytes(r.alignment) + r.size);
    b.alignment = static_cast<int64_t>(r.alignment);
    problem.buffers.push_back(std::move(b));
  }
  return problem;
}

int64_t arena_of(const memplan::Problem& problem) {
  memplan::StatusOr<memplan::Plan> plan = memplan::plan_with("greedy_by_size", problem, {});
  if (!plan.ok() || !memplan::validate(problem, *plan).ok()) return -1;
  return plan->arena;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_block_alignment FILE.csv...\n");
    return 2;
  }
  memplan::ReplayConfig config;
  config.planner = "greedy_by_size";
  const memplan::runtime::BlockLayout layout{.header_bytes = &memplan::runtime::header_bytes,
                                             .max_arena = uint64_t{1} << 40};
  std::printf("| problem | planned buffers | asked < 64 B | arena before (B) | arena after (B) | change |\n");
  std::printf("|---|---|---|---|---|---|\n");
  int failures = 0;
  for (int i = 1; i < argc; ++i) {
    memplan::StatusOr<memplan::Problem> problem = memplan::read_problem_csv(argv[i]);
    if (!problem.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[i], problem.status().to_string().c_str());
      ++failures;
      continue;
    }
    for (const bool as_malloc : {false, true}) {
      if (as_malloc) {
        for (memplan::Buffer& b : problem->buffers) b.alignment = 16;
      }
      const Profile profile = profile_of(*problem, config.min_sequenced_size);
      size_t under = 0;
      for (const auto& r : profile.requests) under += r.alignment < memplan::runtime::kLargeBlockAlignment;
      const int64_t before = arena_of(problem_before(profile));
      memplan::runtime::PreparedPlan after;
      const memplan::Status status = memplan::runtime::plan_profile(profile, config, layout, after);
      if (before < 0 || !status.ok()) {
        std::fprintf(stderr, "%s: planning failed\n", argv[i]);
        ++failures;
        continue;
      }
      const std::string name =
          std::string(argv[i]).substr(std::string(argv[i]).find_last_of('/') + 1) + (as_malloc ? ", all 16 B" : "");
      std::printf("| %s | %zu | %zu | %lld | %llu | %+.3f%% |\n", name.c_str(), profile.size(), under,
                  static_cast<long long>(before), static_cast<unsigned long long>(after.arena),
                  100.0 * (static_cast<double>(after.arena) / static_cast<double>(before) - 1.0));
    }
  }
  return failures ? 1 : 0;
}
