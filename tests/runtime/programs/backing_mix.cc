// backing_mix.cc — run under the drop-in with each MEMPLAN_BACKING value:
// mixes every allocation function the drop-in interposes, frees and
// reallocates blocks the next allocator made before the drop-in's
// constructor ran (early_blocks.cc), reallocates across the slab, mimalloc
// and next-allocator sides, and checks every byte, every alignment and every
// malloc_usable_size. Also checks which library's malloc and operator new
// the process resolves. Prints "backing_mix: ok" on success; exits 1 with the
// first failure otherwise.
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#ifdef MEMPLAN_MIMALLOC_SONAME
#include <mimalloc.h>  // option names only
#endif

extern "C" void* memplan_early_blocks[64];
extern "C" unsigned long long memplan_early_requests_seen;

namespace {

int g_failures = 0;
#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "backing_mix: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      if (++g_failures > 10) exit(1);                                         \
    }                                                                         \
  } while (0)

uint64_t g_rng = 0x9e3779b97f4a7c15ull;
uint64_t next_random() {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

struct Block {
  unsigned char* p = nullptr;
  size_t size = 0;
  unsigned char cookie = 0;
};

void fill(Block& b) { memset(b.p, b.cookie, b.size); }
bool intact(const Block& b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (b.p[i] != b.cookie) return false;
  }
  return true;
}

// Every byte malloc_usable_size reports is writable and the block survives it.
void check_usable(const Block& b) {
  const size_t usable = malloc_usable_size(b.p);
  CHECK(usable >= b.size);
  memset(b.p + b.size, 0xee, usable - b.size);
}

const char* library_of(const char* symbol) {
  Dl_info info{};
  void* address = dlsym(RTLD_DEFAULT, symbol);
  if (!address || !dladdr(address, &info) || !info.dli_fname) return "?";
  return info.dli_fname;
}

void (*g_mark)() = nullptr;

uint8_t g_cookie = 1;

Block make(int kind, size_t size) {
  Block b{.size = size, .cookie = g_cookie++};
  switch (kind) {
    case 0:
      b.p = static_cast<unsigned char*>(malloc(size));
      break;
    case 1: {
      b.p = static_cast<unsigned char*>(calloc(1, size));
      for (size_t i = 0; i < size; ++i) CHECK(b.p[i] == 0);
      break;
    }
    case 2: {
      void* p = nullptr;
      const size_t alignment = size_t{32} << (next_random() % 8);
      CHECK(posix_memalign(&p, alignment, size) == 0);
      CHECK(reinterpret_cast<uintptr_t>(p) % alignment == 0);
      b.p = static_cast<unsigned char*>(p);
      break;
    }
    default: {
      const size_t alignment = size_t{64} << (next_random() % 6);
      b.p = static_cast<unsigned char*>(aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment));
      CHECK(reinterpret_cast<uintptr_t>(b.p) % alignment == 0);
      break;
    }
  }
  CHECK(b.p != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(b.p) % 16 == 0);
  fill(b);
  return b;
}

// Grows or shrinks a block with realloc, checking the kept bytes.
void resize(Block& b, size_t size) {
  auto* q = static_cast<unsigned char*>(realloc(b.p, size));
  CHECK(q != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(q) % 16 == 0);
  b.p = q;
  CHECK(intact(b, b.size < size ? b.size : size));
  b.size = size;
  fill(b);
}

}  // namespace

int main() {
  // Is the drop-in preloaded alone (the next allocator is glibc's), or with
  // an allocator under it?
  const char* preload = getenv("LD_PRELOAD");
  const bool next_is_glibc = preload && !strchr(preload, ' ') && !strchr(preload, ':');
  // Symbols: the program's malloc is the drop-in's; unless preloaded by the
  // user, mimalloc's malloc and operator new never win, whatever the backing.
  const char* malloc_from = library_of("malloc");
  CHECK(strstr(malloc_from, "memplan_replay") != nullptr);
  CHECK(strstr(library_of("free"), "memplan_replay") != nullptr);
  if (next_is_glibc) {
    CHECK(strstr(library_of("_Znwm"), "mimalloc") == nullptr);
    CHECK(strstr(library_of("_ZdlPv"), "mimalloc") == nullptr);
    CHECK(dlsym(RTLD_DEFAULT, "mi_malloc") == nullptr);
  }
  g_mark = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "memplan_mark"));
  CHECK(g_mark != nullptr);

  // Blocks from before the drop-in's constructor: measure, grow one, shrink
  // one, free the rest.
  CHECK(memplan_early_requests_seen == 0);
  for (int i = 0; i < 63; ++i) {
    Block b{.p = static_cast<unsigned char*>(memplan_early_blocks[i]),
            .size = 8 + size_t(i) * 97 + (i % 8 == 0 ? 200000 : 0),
            .cookie = static_cast<unsigned char>(0x40 + i)};
    CHECK(intact(b, b.size));
    check_usable(b);
    if (i % 4 == 1) {
      resize(b, b.size * 3 + 1000);
      check_usable(b);
    } else if (i % 4 == 2) {
      resize(b, b.size / 2 + 1);
    }
    if (i % 5 == 0) {
      free(realloc(b.p, 0));  // the next allocator's rule: null (glibc) or a new block
    } else {
      free(b.p);
    }
  }
  CHECK(strlen(static_cast<char*>(memplan_early_blocks[63])) > 0);
  free(memplan_early_blocks[63]);

  // Iterations with the same request sequence (the generator restarts at each
  // mark), so that the drop-in plans and serves blocks from a slab; among
  // them, blocks of every kind that outlive iterations, reallocated across
  // sides.
  // Under the mimalloc backing, mimalloc's decommit delay after each mark:
  // Note [Purge window] (replay_interpose.cc) sets it to 0 at the trim that
  // comes with a plan and restores it two boundaries later.
  long (*decommit_delay)() = nullptr;
#ifdef MEMPLAN_MIMALLOC_SONAME
  const char* backing = getenv("MEMPLAN_BACKING");
  static long (*option_get)(mi_option_t) = nullptr;
  if (backing && strcmp(backing, "mimalloc") == 0) {
    if (void* library = dlopen(MEMPLAN_MIMALLOC_SONAME, RTLD_LAZY | RTLD_NOLOAD)) {
      option_get = reinterpret_cast<long (*)(mi_option_t)>(dlsym(library, "mi_option_get"));
    }
    CHECK(option_get != nullptr);
    if (option_get) decommit_delay = [] { return option_get(mi_option_decommit_delay); };
  }
#endif
  std::vector<long> delays;
  std::vector<Block> kept;
  for (int iteration = 0; iteration < 12; ++iteration) {
    g_mark();
    if (decommit_delay) delays.push_back(decommit_delay());
    g_rng = 0x9e3779b97f4a7c15ull;
    std::vector<Block> live;
    for (int i = 0; i < 40; ++i) live.push_back(make(i % 4, 4096 + size_t(i) * 1024));
    // A slab (or backing) block grows past its plan: it moves to the backing.
    if (iteration >= 8) resize(live[5], 300000);
    for (Block& b : live) check_usable(b);
    for (int k = 0; k < 30; ++k) {
      Block b = make(static_cast<int>(next_random() % 4), 1 + next_random() % 70000);
      kept.push_back(b);
    }
    for (int k = 0; k < 10; ++k) {
      const size_t at = next_random() % kept.size();
      resize(kept[at], 1 + next_random() % 100000);
    }
    while (kept.size() > 200) {
      const size_t at = next_random() % kept.size();
      CHECK(intact(kept[at], kept[at].size));
      free(kept[at].p);
      kept[at] = kept.back();
      kept.pop_back();
    }
    for (Block& b : live) {
      CHECK(intact(b, b.size));
      free(b.p);
    }
  }
  if (decommit_delay) {
    // mimalloc's own delay before the first plan, 0 for at most two marks
    // from a plan's trim, and mimalloc's again after two marks without one.
    CHECK(delays.front() > 0);
    int zeros_in_a_row = 0, zeros = 0;
    for (const long d : delays) {
      zeros_in_a_row = d == 0 ? zeros_in_a_row + 1 : 0;
      zeros += d == 0;
      CHECK(d == 0 || d == delays.front());
      CHECK(zeros_in_a_row <= 2);
    }
    CHECK(zeros >= 1);
    g_mark();  // empty iterations: deviations, no plan, no trim
    g_mark();
    CHECK(decommit_delay() == delays.front());
  }
  // Small blocks of every size: glibc's 16-byte alignment holds.
  std::vector<void*> small;
  for (size_t size = 0; size <= 600; ++size) {
    void* p = malloc(size);
    CHECK(p != nullptr && reinterpret_cast<uintptr_t>(p) % 16 == 0);
    small.push_back(p);
    void* q = calloc(size, 3);
    CHECK(q != nullptr && reinterpret_cast<uintptr_t>(q) % 16 == 0);
    small.push_back(q);
  }
  for (void* p : small) free(p);
  // realloc(p, 0) frees and returns null, as glibc's does, unless another
  // allocator is preloaded under the drop-in (then the rule is its own for
  // its blocks).
  for (size_t k = 0; k < kept.size(); ++k) {
    CHECK(intact(kept[k], kept[k].size));
    if (k % 7 == 0 && next_is_glibc) {
      CHECK(realloc(kept[k].p, 0) == nullptr);
    } else {
      free(kept[k].p);
    }
  }
  // A huge block (beyond any arena's small classes) and memalign.
  Block huge = make(0, size_t{96} << 20);
  check_usable(huge);
  resize(huge, size_t{130} << 20);
  free(huge.p);
  void* m = memalign(4096, 12345);
  CHECK(m && reinterpret_cast<uintptr_t>(m) % 4096 == 0);
  free(m);

  using Count = unsigned long long (*)();
  auto served = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "memplan_replay_served"));
  printf("backing_mix: malloc from %s, served %llu\n", malloc_from, served ? served() : 0ull);
  if (g_failures) return 1;
  printf("backing_mix: ok\n");
  return 0;
}
