// generate.h — seeded random problems for property tests and benchmarks.
//
// Deterministic for a given (shape, buffers, seed) on every platform: the
// generator uses its own PRNG (splitmix64/xoshiro) and its own distributions,
// not <random>'s implementation-defined ones.
//
// Shapes:
//   kDnnLike        a layer chain: each layer's output lives until its consumer
//                   (next layer), some outputs are also read by a layer further
//                   ahead (skip connections), plus short-lived workspaces;
//                   sizes drawn from a few "tensor shapes" scaled per stage.
//   kRandomIntervals uniform random lifetimes on [0, 4n) and sizes.
//   kHeavyTailed    random lifetimes, sizes from a Pareto-like distribution
//                   (many tiny buffers, a few huge ones).
//   kNested         lifetimes nested like brackets (stack discipline).
//   kEqualSizes     random lifetimes, all buffers the same size.
//   kPuzzle         a [0, T) x [0, max_size) rectangle cut into pieces by
//                   guillotine cuts, a few pieces dropped: fits in max_size
//                   bytes by construction, often not at its load.
#pragma once

#include <cstdint>
#include <string_view>

#include "memplan/problem.h"

namespace memplan {

enum class ProblemShape { kDnnLike, kRandomIntervals, kHeavyTailed, kNested, kEqualSizes, kPuzzle };

struct GenerateOptions {
  ProblemShape shape = ProblemShape::kDnnLike;
  size_t buffers = 100;        // number of buffers to generate
  uint64_t seed = 1;           // same seed, same problem
  int64_t max_size = 1 << 20;  // largest buffer size in bytes (before scaling by shape)
  // If > 1, buffers get random power-of-two alignments in [1, max_alignment].
  int64_t max_alignment = 1;
  // Probability (0..1) that a buffer gets a fixed offset (placed by a naive stack
  // of the fixed buffers, so the fixed ones never conflict with each other).
  double fixed_offset_probability = 0;
};

Problem generate_problem(const GenerateOptions& options);

// "dnn" | "random" | "heavy" | "nested" | "equal" | "puzzle" -> shape; false if unknown.
bool parse_problem_shape(std::string_view name, ProblemShape* shape);
std::string_view problem_shape_name(ProblemShape shape);

}  // namespace memplan
