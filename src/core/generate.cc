// generate.cc — seeded random problems for property tests and benchmarks.
//
// A seed must name the same problem on every platform and compiler, so the
// generator uses no <random> distribution (their algorithms are
// implementation-defined) and no libm transcendental function (not correctly
// rounded everywhere). It owns:
//   - xoshiro256** as the stream, seeded through splitmix64 (the seeding its
//     authors recommend, so that nearby seeds give unrelated streams);
//   - uniform integers by multiply-high with rejection (unbiased);
//   - uniform doubles from the top 53 bits (exact, so comparisons against a
//     probability are reproducible);
//   - heavy tails from a geometric number of doublings instead of pow().
//
// Steps for every shape:
//   1. Clamp the options so that the result always passes check_problem
//      (sizes in [1, max_size]; total bytes far below 2^62).
//   2. Draw lifetimes and sizes by shape (see each make_* below).
//   3. If max_alignment > 1, give each buffer a power-of-two alignment whose
//      exponent is uniform in [0, log2(max_alignment)].
//   4. With fixed_offset_probability, pin a buffer at the top of a stack of the
//      buffers pinned before it, so fixed buffers never conflict with each
//      other whatever their lifetimes.
// Cost O(n) time and memory for every shape; ids are "0", "1", ... in order.
#include "memplan/generate.h"

#include <algorithm>
#include <bit>
#include <string>
#include <vector>

namespace memplan {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Random {
 public:
  explicit Random(uint64_t seed) {
    for (uint64_t& word : state_) word = splitmix64(seed);
  }

  // xoshiro256** (Blackman & Vigna 2018).
  uint64_t next() {
    const uint64_t result = std::rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = std::rotl(state_[3], 45);
    return result;
  }

  // Uniform in [lo, hi] (inclusive, lo <= hi), without modulo bias: Lemire's
  // multiply-high, redrawing the few values that would favour low results.
  int64_t uniform(int64_t lo, int64_t hi) {
    const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
    if (range == 0) return static_cast<int64_t>(next());  // the whole 64-bit range
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * range;
    if (static_cast<uint64_t>(m) < range) {
      const uint64_t threshold = (0 - range) % range;
      while (static_cast<uint64_t>(m) < threshold) m = static_cast<unsigned __int128>(next()) * range;
    }
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + static_cast<uint64_t>(m >> 64));
  }

  // Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  bool chance(double p) { return unit() < p; }

  template <typename T, size_t N>
  const T& pick(const T (&choices)[N]) {
    return choices[uniform(0, static_cast<int64_t>(N) - 1)];
  }

 private:
  uint64_t state_[4];
};

int floor_log2(int64_t x) { return 63 - std::countl_zero(static_cast<uint64_t>(x)); }

// floor(sqrt(x)) by bisection, exact for every int64_t x >= 0 (no libm).
int64_t isqrt(int64_t x) {
  int64_t lo = 0, hi = int64_t{1} << 32;  // hi * hi > x always
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (mid <= x / mid ? lo : hi) = mid;
  }
  return lo;
}

// Uniform in [2^k, 2^(k+1)) with k uniform: every order of magnitude up to
// max_size is equally likely, as in real tensor populations.
int64_t log_uniform_size(Random& rng, int64_t max_size) {
  const int k = static_cast<int>(rng.uniform(0, floor_log2(max_size)));
  const int64_t lo = int64_t{1} << k;
  return rng.uniform(lo, std::min(max_size, 2 * lo - 1));
}

// P(size >= 2^k) falls like 0.7^k, i.e. like size^-0.51: a Pareto tail with
// index about one half, so most buffers are tiny and a few reach max_size.
int64_t heavy_tailed_size(Random& rng, int64_t max_size) {
  const int top = floor_log2(max_size);
  int k = std::min(3, top);  // the tail starts at 8 bytes
  while (k < top && rng.chance(0.7)) ++k;
  const int64_t lo = int64_t{1} << k;
  return rng.uniform(lo, std::min(max_size, 2 * lo - 1));
}

// Lifetimes on [0, 4n) whose lengths are uniform in [1, 8·sqrt(n) + 8]: about
// sqrt(n) buffers are live at a time, so conflicts are plentiful on small
// problems while sweeps over live sets stay affordable on huge ones.
class RandomLifetimes {
 public:
  explicit RandomLifetimes(size_t n)
      : horizon_(4 * static_cast<int64_t>(n)), max_length_(8 * isqrt(static_cast<int64_t>(n)) + 8) {}

  void draw(Random& rng, Buffer& b) const {
    b.lower = rng.uniform(0, horizon_ - 1);
    b.upper = b.lower + rng.uniform(1, std::min(max_length_, horizon_ - b.lower));
  }

 private:
  int64_t horizon_;
  int64_t max_length_;
};

void make_random_intervals(Random& rng, int64_t max_size, std::vector<Buffer>& buffers) {
  const RandomLifetimes lifetimes(buffers.size());
  for (Buffer& b : buffers) {
    lifetimes.draw(rng, b);
    b.size = rng.uniform(1, max_size);
  }
}

void make_heavy_tailed(Random& rng, int64_t max_size, std::vector<Buffer>& buffers) {
  const RandomLifetimes lifetimes(buffers.size());
  for (Buffer& b : buffers) {
    lifetimes.draw(rng, b);
    b.size = heavy_tailed_size(rng, max_size);
  }
}

void make_equal_sizes(Random& rng, int64_t max_size, std::vector<Buffer>& buffers) {
  const RandomLifetimes lifetimes(buffers.size());
  const int64_t size = rng.uniform(std::max<int64_t>(1, max_size / 8), max_size);
  for (Buffer& b : buffers) {
    lifetimes.draw(rng, b);
    b.size = size;
  }
}

// A random bracket sequence, one tick per bracket: each step opens a buffer
// (while some remain to open) or closes the innermost open one. Because no two
// brackets share a tick, any two lifetimes are disjoint or one contains the
// other. Opening is likelier while few are open (probability 1/(1 + 0.15·depth)),
// which holds the depth near half a dozen instead of letting it wander like a
// fair random walk's, up to sqrt(n).
void make_nested(Random& rng, int64_t max_size, std::vector<Buffer>& buffers) {
  std::vector<size_t> open;
  size_t next = 0;
  int64_t tick = 0;
  while (next < buffers.size() || !open.empty()) {
    const bool must_open = open.empty();
    const bool may_open = next < buffers.size();
    const double p_open = 1.0 / (1.0 + 0.15 * static_cast<double>(open.size()));
    if (may_open && (must_open || rng.chance(p_open))) {
      buffers[next].lower = tick;
      buffers[next].size = log_uniform_size(rng, max_size);
      open.push_back(next++);
    } else {
      buffers[open.back()].upper = tick;
      open.pop_back();
    }
    ++tick;
  }
}

// A layer chain, ticks = operator index. Operator t writes one output that its
// successor reads, so it lives [t, t+2); a quarter of the outputs also feed a
// residual add 2..4 operators ahead and a few feed a long (U-Net style) skip
// 8..64 ahead; about a third of the operators use a scratch workspace live
// only during [t, t+1). The network has 3..5 stages; each stage halves the
// spatial size and doubles the channels of the one before, and an operator's
// output has a few channel variants of its stage's tensor (bottleneck,
// expansion), so sizes repeat the way real activations do.
void make_dnn_like(Random& rng, int64_t max_size, std::vector<Buffer>& buffers) {
  const int64_t n = static_cast<int64_t>(buffers.size());
  const int64_t element_bytes = rng.pick({int64_t{1}, int64_t{2}, int64_t{4}});  // int8, fp16, fp32
  const int stages = static_cast<int>(rng.uniform(3, 5));
  int64_t spatial = rng.pick({int64_t{224}, int64_t{112}, int64_t{64}, int64_t{56}, int64_t{32}});
  int64_t channels = rng.pick({int64_t{16}, int64_t{32}, int64_t{64}});
  // The widest output is a 4x expansion of stage 0; shrink the network until it fits.
  while (4 * channels * spatial * spatial * element_bytes > max_size && (spatial > 1 || channels > 1)) {
    if (spatial > 1)
      spatial /= 2;
    else
      channels /= 2;
  }
  auto activation = [&](int stage) {
    const int64_t h = std::max<int64_t>(1, spatial >> stage);
    return std::max<int64_t>(1, channels * h * h * element_bytes) << stage;  // channels double per stage
  };
  // Channel variants of an output relative to its stage's tensor, in quarters.
  const int64_t output_quarters[] = {4, 4, 4, 4, 2, 8, 16};
  const int64_t workspace_quarters[] = {1, 2, 4, 8};

  int64_t next = 0;
  for (int64_t op = 0; next < n; ++op) {
    const int stage = static_cast<int>(std::min<int64_t>(stages - 1, next * stages / n));
    const int64_t tensor = activation(stage);
    Buffer& out = buffers[next++];
    out.lower = op;
    int64_t last_reader = op + 1;
    if (rng.chance(0.25)) last_reader = op + rng.uniform(2, 4);
    if (rng.chance(0.02)) last_reader = op + rng.uniform(8, 64);
    out.upper = last_reader + 1;
    out.size = std::clamp<int64_t>(tensor * rng.pick(output_quarters) / 4, 1, max_size);
    if (next < n && rng.chance(0.35)) {
      Buffer& workspace = buffers[next++];
      workspace.lower = op;
      workspace.upper = op + 1;
      workspace.size = std::clamp<int64_t>(tensor * rng.pick(workspace_quarters) / 4, 1, max_size);
    }
  }
}

// A packing puzzle in the style of MiniMalloc's "challenging" suite: the
// rectangle [0, T) ticks x [0, H) bytes, H = max_size, is cut into n + r
// pieces by guillotine cuts (a random piece is cut across time or across
// memory at a random point, the axis drawn in proportion to the piece's
// relative extent along it), then r = max(1, n/16) random pieces are dropped.
// Each piece is a buffer (its time extent is the lifetime, its height the
// size), so the problem fits in H bytes by construction and its optimum lies
// between the load and H. T = max(8, (n + r)/2) ticks (more if H is tiny):
// few ticks per piece, so many pieces start and end together, which makes
// the puzzles tight the way the suite's 1024-tick instances are.
void make_puzzle(Random& rng, int64_t max_size, std::vector<Buffer>& buffers) {
  const int64_t n = static_cast<int64_t>(buffers.size());
  if (n == 0) return;
  const int64_t dropped = std::max<int64_t>(1, n / 16);
  const int64_t pieces = n + dropped;
  const int64_t height = max_size;
  const int64_t span = std::max<int64_t>({8, pieces / 2, (pieces + height - 1) / height});
  struct Piece {
    int64_t t0, t1, y0, y1;
  };
  std::vector<Piece> cut{{0, span, 0, height}};
  cut.reserve(static_cast<size_t>(pieces));
  while (static_cast<int64_t>(cut.size()) < pieces) {
    // span x height >= pieces cells, so some piece is wider or taller than 1
    // until enough pieces exist; a random draw finds one quickly because
    // cuts favour the pieces' longer relative sides.
    Piece& p = cut[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(cut.size()) - 1))];
    const int64_t w = p.t1 - p.t0, h = p.y1 - p.y0;
    if (w < 2 && h < 2) continue;
    const double rel_w = static_cast<double>(w) / static_cast<double>(span);
    const double rel_h = static_cast<double>(h) / static_cast<double>(height);
    const bool across_time = h < 2 || (w >= 2 && rng.unit() * (rel_w + rel_h) < rel_w);
    Piece other = p;
    if (across_time) {
      const int64_t at = rng.uniform(p.t0 + 1, p.t1 - 1);
      p.t1 = at;
      other.t0 = at;
    } else {
      const int64_t at = rng.uniform(p.y0 + 1, p.y1 - 1);
      p.y1 = at;
      other.y0 = at;
    }
    cut.push_back(other);
  }
  for (int64_t k = 0; k < dropped; ++k) {
    const size_t i = static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(cut.size()) - 1));
    cut[i] = cut.back();
    cut.pop_back();
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    buffers[i].lower = cut[i].t0;
    buffers[i].upper = cut[i].t1;
    buffers[i].size = cut[i].y1 - cut[i].y0;
  }
}

}  // namespace

Problem generate_problem(const GenerateOptions& options) {
  const int64_t n = static_cast<int64_t>(options.buffers);
  // Keep every sum of aligned sizes (and every fixed-offset stack) below 2^61,
  // well inside check_problem's 2^62 limit.
  const int64_t max_alignment =
      options.max_alignment > 1 ? int64_t{1} << std::min(30, floor_log2(options.max_alignment)) : 1;
  const int64_t size_cap = std::max<int64_t>(1, (int64_t{1} << 61) / std::max<int64_t>(n, 1) - max_alignment);
  const int64_t max_size = std::clamp<int64_t>(options.max_size, 1, size_cap);

  Problem problem;
  problem.buffers.resize(options.buffers);
  Random rng(options.seed);
  switch (options.shape) {
    case ProblemShape::kDnnLike:
      make_dnn_like(rng, max_size, problem.buffers);
      break;
    case ProblemShape::kRandomIntervals:
      make_random_intervals(rng, max_size, problem.buffers);
      break;
    case ProblemShape::kHeavyTailed:
      make_heavy_tailed(rng, max_size, problem.buffers);
      break;
    case ProblemShape::kNested:
      make_nested(rng, max_size, problem.buffers);
      break;
    case ProblemShape::kEqualSizes:
      make_equal_sizes(rng, max_size, problem.buffers);
      break;
    case ProblemShape::kPuzzle:
      make_puzzle(rng, max_size, problem.buffers);
      break;
  }

  const int max_exponent = floor_log2(max_alignment);
  int64_t fixed_top = 0;
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    Buffer& b = problem.buffers[i];
    b.id = std::to_string(i);
    if (max_exponent > 0) b.alignment = int64_t{1} << rng.uniform(0, max_exponent);
    if (options.fixed_offset_probability > 0 && rng.chance(options.fixed_offset_probability)) {
      b.offset = align_up(fixed_top, b.alignment);
      fixed_top = *b.offset + b.size;
    }
  }
  return problem;
}

bool parse_problem_shape(std::string_view name, ProblemShape* shape) {
  for (ProblemShape s : {ProblemShape::kDnnLike, ProblemShape::kRandomIntervals, ProblemShape::kHeavyTailed,
                         ProblemShape::kNested, ProblemShape::kEqualSizes, ProblemShape::kPuzzle}) {
    if (problem_shape_name(s) == name) {
      *shape = s;
      return true;
    }
  }
  return false;
}

std::string_view problem_shape_name(ProblemShape shape) {
  switch (shape) {
    case ProblemShape::kDnnLike:
      return "dnn";
    case ProblemShape::kRandomIntervals:
      return "random";
    case ProblemShape::kHeavyTailed:
      return "heavy";
    case ProblemShape::kNested:
      return "nested";
    case ProblemShape::kEqualSizes:
      return "equal";
    case ProblemShape::kPuzzle:
      return "puzzle";
  }
  return "unknown";
}

}  // namespace memplan
