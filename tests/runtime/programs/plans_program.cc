// plans_program.cc — a program run under the drop-in with plan files
// (MEMPLAN_PLANS / MEMPLAN_SAVE_PLANS), for tests/runtime/plans_preloaded.sh.
//
//   plans_program SEED SHAPE ITERATIONS
//
// Each iteration makes the same pseudo-random pattern of requests (drawn
// from SEED; every size scaled by SHAPE, so another SHAPE is the same
// program with other shapes): blocks are allocated, filled with values
// derived from their index and the iteration, some freed early and some
// late, and folded into a checksum — the program's output. Every block is
// checked against every block live at the same time: two live blocks that
// share a byte fail the run (exit 3), as does a block whose contents
// changed while it was live (exit 4). Prints the checksum and, when the
// drop-in is loaded, how many requests its slabs served in the first
// iteration.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
void memplan_mark(void) __attribute__((weak));
unsigned long long memplan_replay_served(void) __attribute__((weak));
}

namespace {

uint64_t next(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Block {
  unsigned char* p = nullptr;
  size_t size = 0;
  unsigned char fill = 0;
  int free_at = 0;  // the step after which it is freed
};

bool shares_bytes(const Block& a, const Block& b) { return a.p < b.p + b.size && b.p < a.p + a.size; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: plans_program SEED SHAPE ITERATIONS\n");
    return 2;
  }
  const uint64_t seed = std::strtoull(argv[1], nullptr, 10);
  const uint64_t shape = std::strtoull(argv[2], nullptr, 10);
  const int iterations = std::atoi(argv[3]);
  uint64_t checksum = 0;
  unsigned long long served_first = 0;
  if (memplan_mark) memplan_mark();  // start-up ends: the first iteration begins
  for (int it = 0; it < iterations; ++it) {
    const unsigned long long served_before = memplan_replay_served ? memplan_replay_served() : 0;
    uint64_t s = seed;
    const int steps = 40 + static_cast<int>(next(s) % 40);
    std::vector<Block> live;
    live.reserve(128);
    for (int step = 0; step < steps; ++step) {
      Block b;
      // At least MEMPLAN_MIN_SEQUENCED_SIZE's default: every request in the sequence.
      b.size = (8192 + next(s) % 8192) * shape;
      b.fill = static_cast<unsigned char>(step * 7 + it);
      b.free_at = step + 1 + static_cast<int>(next(s) % 12);
      b.p = static_cast<unsigned char*>(std::malloc(b.size));
      if (!b.p) return 5;
      for (const Block& other : live) {
        if (shares_bytes(b, other)) {
          std::fprintf(stderr, "iteration %d step %d: a block shares bytes with a live one\n", it, step);
          return 3;
        }
      }
      std::memset(b.p, b.fill, b.size);
      live.push_back(b);
      for (size_t i = 0; i < live.size();) {
        if (live[i].free_at > step) {
          ++i;
          continue;
        }
        for (size_t k = 0; k < live[i].size; k += 61) {
          if (live[i].p[k] != live[i].fill) {
            std::fprintf(stderr, "iteration %d: a live block's contents changed\n", it);
            return 4;
          }
          checksum = checksum * 1099511628211ull + live[i].p[k] + k;
        }
        std::free(live[i].p);
        live[i] = live.back();
        live.pop_back();
      }
    }
    for (const Block& b : live) {
      checksum = checksum * 31 + b.p[b.size - 1];
      std::free(b.p);
    }
    if (it == 0 && memplan_replay_served) served_first = memplan_replay_served() - served_before;
    if (memplan_mark) memplan_mark();
  }
  std::printf("checksum %llu\nserved in the first iteration %llu\n", static_cast<unsigned long long>(checksum),
              served_first);
  return 0;
}
