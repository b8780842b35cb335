// scenarios.h — the named scenario catalogue: small problems written once, run
// through several suites (conformance, exact solvers, CLI, benchmarks).
//
// Each scenario is a function returning a Scenario: a name (CamelCase, usable
// in test names), one line saying what it exercises, the problem, and — where
// it is proven by hand in the comment above the function — the optimal arena
// of the offsets form. A suite may check arena >= optimal_arena for every
// planner (no valid plan beats the optimum) and arena == optimal_arena for
// exact ones.
//
// Header-only because tests/CMakeLists.txt globs only the .cc files of
// tests/unit and tests/conformance into binaries; include it as
// "scenarios/scenarios.h".
//
// Unless a scenario says otherwise, problems have no capacity: planners are
// asked for the smallest arena they can find. Capacity variants are listed
// separately in capacity_scenarios().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memplan/generate.h"
#include "memplan/problem.h"

namespace memplan::scenarios {

struct Scenario {
  std::string name;         // CamelCase, unique in the catalogue
  std::string description;  // what the scenario exercises
  Problem problem;
  std::optional<int64_t> optimal_arena;  // bytes, when proven by hand
};

// Buffers get ids "b0", "b1", ... in the order given.
inline Problem buffers_of(std::vector<Buffer> buffers) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].id.empty()) buffers[i].id = "b" + std::to_string(i);
  }
  return Problem{.buffers = std::move(buffers)};
}

// No buffers: the arena is 0.
inline Scenario Empty() {
  return {.name = "Empty", .description = "a problem without buffers", .problem = {}, .optimal_arena = 0};
}

inline Scenario SingleBuffer() {
  return {.name = "SingleBuffer",
          .description = "one buffer",
          .problem = buffers_of({{.lower = 0, .upper = 1, .size = 42}}),
          .optimal_arena = 42};
}

// Zero-size buffers occupy no bytes; the optimum is the one real buffer live
// with them at every tick it has a neighbour: max(16, 8) = 16.
inline Scenario ZeroSizeBuffers() {
  return {.name = "ZeroSizeBuffers",
          .description = "zero-size buffers mixed with real ones, some live throughout",
          .problem = buffers_of({{.lower = 0, .upper = 4, .size = 16},
                                 {.lower = 1, .upper = 3, .size = 0},
                                 {.lower = 0, .upper = 6, .size = 0},
                                 {.lower = 4, .upper = 6, .size = 8},
                                 {.lower = 5, .upper = 9, .size = 0}}),
          .optimal_arena = 16};
}

// Every buffer is read by the next operator only: live sets are neighbours.
inline Scenario Chain() {
  std::vector<Buffer> buffers;
  const int64_t sizes[] = {32, 64, 16, 48, 8, 128, 24, 40, 96, 8};
  for (int64_t i = 0; i < 10; ++i) buffers.push_back({.lower = i, .upper = i + 2, .size = sizes[i]});
  return {.name = "Chain", .description = "a layer chain: buffer i lives [i, i+2)", .problem = buffers_of(buffers)};
}

// a feeds b and c, which both feed d. Load is 128 at ticks 2 and 3; it is met
// by a@0, b@64, c@96, d@0 (d starts after a ends).
inline Scenario Diamond() {
  return {.name = "Diamond",
          .description = "fan-out and fan-in: a -> {b, c} -> d",
          .problem = buffers_of({{.id = "a", .lower = 0, .upper = 3, .size = 64},
                                 {.id = "b", .lower = 1, .upper = 4, .size = 32},
                                 {.id = "c", .lower = 2, .upper = 4, .size = 32},
                                 {.id = "d", .lower = 3, .upper = 5, .size = 64}}),
          .optimal_arena = 128};
}

// Lifetimes nested like brackets. Load is 56 at tick 6 (8 + 16 + 32); it is
// met by stacking each bracket on its parent: outer@0, both 16-byte ones @8,
// the 4-byte ones and the 32-byte one @24.
inline Scenario NestedLifetimes() {
  return {.name = "NestedLifetimes",
          .description = "stack discipline: every two lifetimes are disjoint or nested",
          .problem = buffers_of({{.lower = 0, .upper = 10, .size = 8},
                                 {.lower = 1, .upper = 5, .size = 16},
                                 {.lower = 2, .upper = 3, .size = 4},
                                 {.lower = 3, .upper = 4, .size = 4},
                                 {.lower = 5, .upper = 9, .size = 16},
                                 {.lower = 6, .upper = 8, .size = 32}}),
          .optimal_arena = 56};
}

// With equal sizes a plan is a colouring of the interval graph, and interval
// graphs are perfect: as many slots as buffers live at once (4, at ticks 2..5)
// suffice, so the optimum is 4 * 100.
inline Scenario EqualSizes() {
  const int64_t lifetimes[][2] = {{0, 3}, {1, 4}, {2, 5}, {3, 6}, {0, 6}, {4, 8}, {6, 9}, {7, 10}, {8, 10}, {5, 7}};
  std::vector<Buffer> buffers;
  for (const auto& l : lifetimes) buffers.push_back({.lower = l[0], .upper = l[1], .size = 100});
  return {.name = "EqualSizes",
          .description = "every buffer 100 bytes: planning is interval colouring",
          .problem = buffers_of(buffers),
          .optimal_arena = 400};
}

// A 1 GiB buffer live throughout plus 64-byte buffers, exactly two live at each
// tick: the optimum is 2^30 + 2 * 64.
inline Scenario OneHugeBuffer() {
  std::vector<Buffer> buffers = {{.id = "huge", .lower = 0, .upper = 10, .size = int64_t{1} << 30}};
  for (int64_t i = 0; i < 20; ++i) buffers.push_back({.lower = i % 10, .upper = i % 10 + 1, .size = 64});
  return {.name = "OneHugeBuffer",
          .description = "one 1 GiB buffer live throughout, small ones around it",
          .problem = buffers_of(buffers),
          .optimal_arena = (int64_t{1} << 30) + 128};
}

inline Scenario ManyTinyBuffers() {
  std::vector<Buffer> buffers;
  for (int64_t i = 0; i < 1000; ++i) {
    buffers.push_back({.lower = i / 4, .upper = i / 4 + 1 + i % 5, .size = 1 + (i * 7) % 8});
  }
  return {.name = "ManyTinyBuffers",
          .description = "1000 buffers of 1..8 bytes with short overlapping lifetimes",
          .problem = buffers_of(buffers)};
}

// TensorFlow Lite's greedy-by-size example, given as inclusive task records
// {size, first_task, last_task}. Half-open: [0,2) 16, [1,3) 8, [2,4) 64,
// [3,5) 32, [4,6) 8. Load is 96 at tick 3; it is met by 64@0, 32@64, 16@0,
// the first 8@64 (gone before 32 arrives), the second 8@0.
inline Scenario TfliteChain() {
  const TaskRecord records[] = {{.size = 16, .first_task = 0, .last_task = 1},
                                {.size = 8, .first_task = 1, .last_task = 2},
                                {.size = 64, .first_task = 2, .last_task = 3},
                                {.size = 32, .first_task = 3, .last_task = 4},
                                {.size = 8, .first_task = 4, .last_task = 5}};
  StatusOr<Problem> problem = problem_from_task_records(records);
  return {.name = "TfliteChain",
          .description = "TensorFlow Lite's chain example, from inclusive task records",
          .problem = problem.ok() ? std::move(problem).value() : Problem{},
          .optimal_arena = 96};
}

// MiniMalloc's examples/input.12.csv (Apache-2.0, google/minimalloc), copied
// as data: upstream runs it at capacity 12. Load is 12 at tick 0 (b1+b3+b5),
// so 12 is optimal; a plan exists (b5@0, b3@4, b1 and b2 and b4 @8).
inline Problem minimalloc_input12_problem() {
  return Problem{.buffers = {{.id = "b1", .lower = 0, .upper = 3, .size = 4},
                             {.id = "b2", .lower = 3, .upper = 9, .size = 4},
                             {.id = "b3", .lower = 0, .upper = 9, .size = 4},
                             {.id = "b4", .lower = 9, .upper = 21, .size = 4},
                             {.id = "b5", .lower = 0, .upper = 21, .size = 4}}};
}

inline Scenario MinimallocInput12() {
  return {.name = "MinimallocInput12",
          .description = "MiniMalloc's input.12.csv example, without its capacity",
          .problem = minimalloc_input12_problem(),
          .optimal_arena = 12};
}

// Buffer i lives [i, i+3) with growing sizes: each step of the staircase
// replaces the smallest live buffer by a larger one.
inline Scenario Staircase() {
  std::vector<Buffer> buffers;
  for (int64_t i = 0; i < 12; ++i) buffers.push_back({.lower = i, .upper = i + 3, .size = 16 * (i + 1)});
  return {.name = "Staircase",
          .description = "staggered lifetimes [i, i+3) with sizes growing by step",
          .problem = buffers_of(buffers)};
}

// Two groups that never meet in time, interleaved in the input so a planner
// cannot rely on input order to see them. Group A (ticks 0..4) is three
// buffers live together: 10 + 20 + 30 = 60. Group B (ticks 5..9) needs 70
// (20 throughout plus one 50 at a time). The optimum is max(60, 70).
inline Scenario TwoPartitions() {
  return {.name = "TwoPartitions",
          .description = "two groups of buffers disjoint in time, interleaved in input order",
          .problem = buffers_of({{.lower = 0, .upper = 5, .size = 10},
                                 {.lower = 5, .upper = 7, .size = 50},
                                 {.lower = 0, .upper = 5, .size = 20},
                                 {.lower = 7, .upper = 10, .size = 50},
                                 {.lower = 0, .upper = 5, .size = 30},
                                 {.lower = 5, .upper = 10, .size = 20}}),
          .optimal_arena = 70};
}

// Every buffer lives at tick 0, so nothing can be reused: the optimum is the
// sum of sizes.
inline Scenario AllLiveAtOnce() {
  std::vector<Buffer> buffers;
  for (int64_t i = 1; i <= 6; ++i) buffers.push_back({.lower = 0, .upper = 1 + i % 3, .size = 10 * i});
  return {.name = "AllLiveAtOnce",
          .description = "six buffers all live at tick 0",
          .problem = buffers_of(buffers),
          .optimal_arena = 210};
}

// Sizes that are not multiples of their alignments, alignments from 1 to 4096.
inline Scenario AlignedBuffers() {
  return {.name = "AlignedBuffers",
          .description = "odd sizes with per-buffer alignments from 1 to 4096 bytes",
          .problem = buffers_of({{.lower = 0, .upper = 4, .size = 100, .alignment = 4096},
                                 {.lower = 0, .upper = 4, .size = 3, .alignment = 8},
                                 {.lower = 1, .upper = 3, .size = 5000, .alignment = 256},
                                 {.lower = 2, .upper = 6, .size = 1, .alignment = 1},
                                 {.lower = 3, .upper = 5, .size = 4097, .alignment = 4096},
                                 {.lower = 4, .upper = 6, .size = 64, .alignment = 64},
                                 {.lower = 5, .upper = 8, .size = 7, .alignment = 2}})};
}

// The problem's default alignment (64) applies to every buffer whose own is
// smaller; one buffer asks for more (128).
inline Scenario DefaultAlignment() {
  Problem problem = buffers_of({{.lower = 0, .upper = 2, .size = 1},
                                {.lower = 1, .upper = 3, .size = 65},
                                {.lower = 1, .upper = 4, .size = 130, .alignment = 128},
                                {.lower = 2, .upper = 5, .size = 63},
                                {.lower = 3, .upper = 5, .size = 64, .alignment = 8}});
  problem.alignment = 64;
  return {.name = "DefaultAlignment", .description = "a problem-wide alignment of 64 bytes", .problem = problem};
}

// Fixed buffers sit where the user put them, leaving a hole below one of them
// that free buffers can use; one fixed offset is aligned to 16.
inline Scenario FixedOffsets() {
  return {.name = "FixedOffsets",
          .description = "buffers pinned at fixed offsets, with free buffers around and under them",
          .problem =
              buffers_of({{.id = "pinned_high", .lower = 0, .upper = 4, .size = 64, .offset = 128},
                          {.id = "pinned_low", .lower = 2, .upper = 6, .size = 32, .offset = 0},
                          {.id = "pinned_aligned", .lower = 5, .upper = 8, .size = 48, .alignment = 16, .offset = 256},
                          {.lower = 0, .upper = 2, .size = 64},
                          {.lower = 1, .upper = 5, .size = 32, .alignment = 32},
                          {.lower = 4, .upper = 8, .size = 200},
                          {.lower = 6, .upper = 8, .size = 16}})};
}

// Sizes above 2^32 bytes: a planner that narrows sizes or offsets to 32 bits
// produces overlapping or wrapped offsets. Three live together: 3 * 2^40.
inline Scenario TerabyteBuffers() {
  const int64_t tib = int64_t{1} << 40;
  return {.name = "TerabyteBuffers",
          .description = "sizes and offsets beyond 32 bits",
          .problem = buffers_of({{.lower = 0, .upper = 3, .size = tib},
                                 {.lower = 1, .upper = 4, .size = tib + 1},
                                 {.lower = 2, .upper = 5, .size = tib - 1},
                                 {.lower = 3, .upper = 6, .size = 5}}),
          .optimal_arena = 3 * tib};
}

// Ticks far from zero and below it: a planner that indexes arrays by tick, or
// narrows ticks to 32 bits, fails here.
inline Scenario DistantTicks() {
  const int64_t far = int64_t{1} << 40;
  return {.name = "DistantTicks",
          .description = "negative ticks and ticks beyond 2^32",
          .problem = buffers_of({{.lower = -5, .upper = -2, .size = 24},
                                 {.lower = -3, .upper = 1, .size = 40},
                                 {.lower = 0, .upper = far, .size = 8},
                                 {.lower = far - 1, .upper = far + 2, .size = 16},
                                 {.lower = far + 1, .upper = far + 4, .size = 32}})};
}

// Generated problems: realistic network activations, and a hard mix.
inline Scenario DnnLike() {
  return {.name = "DnnLike",
          .description = "300 activations of a generated layer chain with skip connections",
          .problem = generate_problem({.shape = ProblemShape::kDnnLike, .buffers = 300, .seed = 7})};
}

inline Scenario HeavyTailedMixed() {
  return {.name = "HeavyTailedMixed",
          .description = "200 heavy-tailed buffers with alignments up to 4096 and 5% fixed offsets",
          .problem = generate_problem({.shape = ProblemShape::kHeavyTailed,
                                       .buffers = 200,
                                       .seed = 11,
                                       .max_alignment = 4096,
                                       .fixed_offset_probability = 0.05})};
}

inline std::vector<Scenario> all_scenarios() {
  return {Empty(),           SingleBuffer(),    ZeroSizeBuffers(),   Chain(),
          Diamond(),         NestedLifetimes(), EqualSizes(),        OneHugeBuffer(),
          ManyTinyBuffers(), TfliteChain(),     MinimallocInput12(), Staircase(),
          TwoPartitions(),   AllLiveAtOnce(),   AlignedBuffers(),    DefaultAlignment(),
          FixedOffsets(),    TerabyteBuffers(), DistantTicks(),      DnnLike(),
          HeavyTailedMixed()};
}

// Scenarios with a capacity. A planner must return a valid plan within it or
// a non-OK status; never an OK plan above the capacity.
inline std::vector<Scenario> capacity_scenarios() {
  Scenario tight{.name = "MinimallocInput12AtCapacity12",
                 .description = "input.12.csv at its upstream capacity of 12 bytes (exactly the optimum)",
                 .problem = minimalloc_input12_problem(),
                 .optimal_arena = 12};
  tight.problem.capacity = 12;
  Scenario roomy = Diamond();
  roomy.name = "DiamondWithRoomyCapacity";
  roomy.description = "the diamond with capacity = sum of sizes, which any stacking meets";
  roomy.problem.capacity = 192;
  return {tight, roomy};
}

}  // namespace memplan::scenarios
