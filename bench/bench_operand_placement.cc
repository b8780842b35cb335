// bench_operand_placement.cc — does where a kernel's operands live change
// how fast the kernel runs? One BLAS sgemm (the libblas.so.3 libtorch
// links, called the way torch's mm and linear call it) with its three
// operands placed one factor at a time:
//
//   fresh          each operand in a mapping of its own (page-aligned, so
//                  all three agree modulo 4 KiB), as a large-block allocator
//                  hands them out
//   slab           in one slab, each at a 64 KiB boundary + the offsets
//                  named (A, B, C modulo 4 KiB); "huge" slabs are advised
//                  MADV_HUGEPAGE before they are touched
//
// Variants run interleaved: every round runs each variant once (one untimed
// call, then timed calls), the variants' order rotated each round; the table
// gives per shape and variant the median over rounds of ms per call and its
// ratio to `fresh`; "fresh again" is the same placement as `fresh`, so its
// ratio is the noise of the run. Every variant's C is compared bytewise with fresh's, so
// a row whose placement changed the result says so.
//
// Usage: bench_operand_placement [--rounds N] [--min-ms MS] [--shape NAME]...
//   --rounds N   rounds (default 7)
//   --min-ms MS  timed calls per variant and round: enough for MS ms
//                (default 60)
//   --shape NAME run only this shape, named by its first word (tf-qkv,
//                tf-ffn1, tf-ffn2, tf-big, resnet, vgg; repeatable;
//                default: all)
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                       const float* beta, float* c, const int* ldc);

namespace {

// A row-major product as torch makes it: mm is C[m,n] = A[m,k] B[k,n];
// linear is C[m,n] = A[m,k] W[n,k]^T (B holds W).
struct Shape {
  const char* name;
  bool linear;
  int m, n, k;
};

// The gemms of bench/e2e_training.py's transformer (d_model 64, feed-forward
// 256, 8 x 64 tokens), a larger transformer's, and convolutions as torch's
// slow_conv2d runs them per sample (weights [out, in*9] times columns
// [in*9, h*w]).
const Shape kShapes[] = {
    {"tf-qkv 512x192x64 linear", true, 512, 192, 64},  {"tf-ffn1 512x256x64 linear", true, 512, 256, 64},
    {"tf-ffn2 512x64x256 linear", true, 512, 64, 256}, {"tf-big 64x512x512 mm", false, 64, 512, 512},
    {"resnet 64x256x576 conv", false, 64, 256, 576},   {"vgg 256x256x2304 conv", false, 256, 256, 2304},
};

struct Variant {
  const char* name;
  bool fresh;
  bool huge;
  uint64_t off[3];  // A, B, C: offset modulo 4 KiB (slab variants)
};

const Variant kVariants[] = {
    {"fresh (page-aligned)", true, false, {0, 0, 0}},
    {"fresh again (noise control)", true, false, {0, 0, 0}},
    {"slab +0/+0/+0", false, false, {0, 0, 0}},
    {"slab +16/+16/+16", false, false, {16, 16, 16}},
    {"slab +64/+64/+64", false, false, {64, 64, 64}},
    {"slab +0/+64/+128", false, false, {0, 64, 128}},
    {"slab +0/+256/+512", false, false, {0, 256, 512}},
    {"slab +0/+1K/+2K", false, false, {0, 1024, 2048}},
    {"slab +0/+2K/+1K", false, false, {0, 2048, 1024}},
    {"slab +16/+1040/+2064", false, false, {16, 1040, 2064}},
    {"slab +0/+1344/+2688", false, false, {0, 1344, 2688}},
    {"huge slab +0/+0/+0", false, true, {0, 0, 0}},
    {"huge slab +0/+1K/+2K", false, true, {0, 1024, 2048}},
};
constexpr size_t kNumVariants = sizeof kVariants / sizeof kVariants[0];

constexpr uint64_t kRegion = 64 * 1024;
constexpr uint64_t kHuge = 2 * 1024 * 1024;

uint64_t round_up(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }

void* map_or_die(uint64_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("bench_operand_placement: mmap");
    std::exit(1);
  }
  return p;
}

// The three operands of one variant, filled with the same values as every
// other variant's.
struct Placed {
  float* op[3];
};

Placed place(const Variant& v, const uint64_t (&bytes)[3], const std::vector<float> (&source)[3]) {
  Placed p{};
  if (v.fresh) {
    for (int i = 0; i < 3; ++i) p.op[i] = static_cast<float*>(map_or_die(bytes[i] + v.off[i]));
  } else {
    uint64_t total = 0;
    for (int i = 0; i < 3; ++i) total += round_up(bytes[i] + v.off[i], kRegion);
    char* raw = static_cast<char*>(map_or_die(total + kHuge));
    char* base = reinterpret_cast<char*>(round_up(reinterpret_cast<uintptr_t>(raw), kHuge));
    if (v.huge && madvise(base, total, MADV_HUGEPAGE) != 0) std::perror("bench_operand_placement: madvise");
    uint64_t at = 0;
    for (int i = 0; i < 3; ++i) {
      p.op[i] = reinterpret_cast<float*>(base + at + v.off[i]);
      at += round_up(bytes[i] + v.off[i], kRegion);
    }
  }
  for (int i = 0; i < 3; ++i) std::memcpy(p.op[i], source[i].data(), bytes[i]);
  return p;
}

void run_gemm(const Shape& s, const Placed& p) {
  const float one = 1.0f, zero = 0.0f;
  // Column-major view of the row-major product, as torch's cpublas::gemm.
  if (s.linear) {
    sgemm_("T", "N", &s.n, &s.m, &s.k, &one, p.op[1], &s.k, p.op[0], &s.k, &zero, p.op[2], &s.n);
  } else {
    sgemm_("N", "N", &s.n, &s.m, &s.k, &one, p.op[1], &s.n, p.op[0], &s.k, &zero, p.op[2], &s.n);
  }
}

double seconds_of(const Shape& s, const Placed& p, int calls) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) run_gemm(s, p);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void bench_shape(const Shape& s, int rounds, double min_ms) {
  const uint64_t bytes[3] = {uint64_t(s.m) * s.k * 4, uint64_t(s.k) * s.n * 4, uint64_t(s.m) * s.n * 4};
  std::vector<float> source[3];
  uint32_t state = 12345;
  for (int i = 0; i < 3; ++i) {
    source[i].resize(bytes[i] / 4);
    for (float& x : source[i]) {
      state = state * 1664525u + 1013904223u;
      x = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
    }
  }
  std::vector<Placed> placed;
  for (const Variant& v : kVariants) placed.push_back(place(v, bytes, source));
  // Calls per timing: enough for min_ms on the fresh placement.
  run_gemm(s, placed[0]);
  const double once = seconds_of(s, placed[0], 1);
  const int calls = std::max(1, static_cast<int>(min_ms / 1e3 / std::max(once, 1e-9)));
  std::vector<std::vector<double>> ms(kNumVariants);
  for (int r = 0; r < rounds; ++r) {
    for (size_t j = 0; j < kNumVariants; ++j) {
      const size_t v = (j + static_cast<size_t>(r)) % kNumVariants;
      run_gemm(s, placed[v]);  // untimed: warm the caches and TLB
      ms[v].push_back(seconds_of(s, placed[v], calls) * 1e3 / calls);
    }
  }
  const double base = median(ms[0]);
  for (size_t v = 0; v < kNumVariants; ++v) {
    const bool same = std::memcmp(placed[v].op[2], placed[0].op[2], bytes[2]) == 0;
    std::printf("| %s | %s | %.3f | %.3f | %s |\n", s.name, kVariants[v].name, median(ms[v]), median(ms[v]) / base,
                same ? "yes" : "NO");
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  double min_ms = 60;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (arg == "--min-ms" && i + 1 < argc) {
      min_ms = std::atof(argv[++i]);
    } else if (arg == "--shape" && i + 1 < argc) {
      only.emplace_back(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_operand_placement [--rounds N] [--min-ms MS] [--shape NAME]...\n");
      return 2;
    }
  }
  if (rounds < 1 || min_ms <= 0) {
    std::fprintf(stderr, "bench_operand_placement: --rounds and --min-ms must be positive\n");
    return 2;
  }
  std::printf("sgemm (libblas.so.3), median ms per call over %d interleaved rounds; ratio to fresh\n\n", rounds);
  std::printf("| shape (m x n x k) | operands A / B / C (offset mod 4 KiB) | ms | ratio | C identical |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const Shape& s : kShapes) {
    const std::string key = std::string(s.name).substr(0, std::string(s.name).find(' '));
    if (!only.empty() && std::find(only.begin(), only.end(), key) == only.end()) continue;
    bench_shape(s, rounds, min_ms);
  }
  return 0;
}
