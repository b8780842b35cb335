// early_blocks.cc — a shared library the backing test program links: its
// constructor allocates blocks before the preloaded drop-in's constructor
// runs (ld.so initialises the program's dependencies, loaded after the
// preloaded library, first), when memplan still passes every call to the
// next allocator. The program frees, reallocates and measures them after the
// drop-in has chosen its backing allocator.
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
__attribute__((visibility("default"))) void* memplan_early_blocks[64];
__attribute__((visibility("default"))) unsigned long long memplan_early_requests_seen = ~0ull;
}

namespace {

__attribute__((constructor)) void allocate_early() {
  // The drop-in's request count is 0 until its constructor built the allocator.
  using Count = unsigned long long (*)();
  auto count = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "memplan_replay_requests"));
  memplan_early_requests_seen = count ? count() : 0;
  for (int i = 0; i < 64; ++i) {
    const size_t size = 8 + size_t(i) * 97 + (i % 8 == 0 ? 200000 : 0);
    void* p = (i % 3 == 0) ? calloc(1, size) : malloc(size);
    memset(p, 0x40 + i, size);
    memplan_early_blocks[i] = p;
  }
  memplan_early_blocks[63] = strdup(getenv("PATH") ? getenv("PATH") : "no PATH");
}

}  // namespace
