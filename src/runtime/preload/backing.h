// backing.h — the drop-in's backing allocator: the allocator behind the
// slabs, which gets every request they do not serve (MEMPLAN_BACKING).
//
//   next      the next malloc in the lookup order (src/preload/
//             real_allocator.h): glibc's, or one preloaded after the drop-in.
//   mimalloc  the system's libmimalloc, loaded with dlopen(RTLD_LOCAL) and
//             called through its prefixed API (mi_malloc, mi_free, ...). Its
//             own malloc and free never join the process's lookup scope, so
//             they interpose nothing, and nothing it does re-enters memplan
//             except its few calls of free() on what libc handed it, which
//             the rules below send back to the next allocator.
//
// Note [Backing ownership]: with mimalloc, two allocators hold blocks the
// program frees through one free(): mimalloc's, and the next allocator's
// (blocks made before the drop-in's constructor chose the backing, by code
// that calls the next allocator directly, and by the fallback below). The
// test that tells them apart is an address range: mimalloc is told to take
// memory only from arenas (mi_option_limit_os_alloc) and one large arena is
// reserved for it at load (address space only, backed on first touch), so
// every block it returns lies in one of its arenas' ranges, which no other
// allocator can map over. The test is a subtraction and a compare, inlined
// into free; mimalloc's own mi_is_in_heap_region is a call into the library
// and, in 2.0, consults a map that covers only part of the address space.
// When the arenas are full mimalloc returns null and the request goes to the
// next allocator, whose block is then routed there by the same test.
//
// Rules kept for the program:
//   * Every block is at least 16-byte aligned, as glibc's are (mimalloc's
//     requests are rounded up to 16 bytes: its size classes that are
//     multiples of 16 hold 16-aligned blocks).
//   * realloc(p, 0) frees p and returns null, as glibc's does.
//   * realloc of the next allocator's block stays with it (it may grow in
//     place); realloc of a mimalloc block that mimalloc cannot grow moves to
//     the next allocator.
//   * malloc_usable_size asks the allocator that owns the block.
#pragma once

#include <errno.h>
#include <string.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "preload/real_allocator.h"
#include "runtime/os/mimalloc_library.h"

namespace memplan::preload {

using runtime::os::MimallocApi;
// Filled by select_backing; read-only afterwards.
extern MimallocApi g_mi;
// True once select_backing chose mimalloc. Set in the drop-in's constructor,
// before any thread but the loading one runs the program.
extern bool g_use_mimalloc;

// Note [Trimming mimalloc] (runtime/os/mimalloc_library.cc): mi_collect frees
// only the calling thread's heap, and MEMPLAN_TRIM_BACKING trims on the
// planning thread. A trim request therefore bumps g_collect_epoch; each
// thread collects its own heap at its next call into mimalloc that sees a
// newer epoch (the slow paths only: the slab fast path never comes here).
extern std::atomic<uint32_t> g_collect_epoch;
extern __thread uint32_t t_collect_epoch __attribute__((tls_model("initial-exec")));
void collect_this_thread();
inline void collect_if_asked() {
  if (__builtin_expect(g_collect_epoch.load(std::memory_order_relaxed) != t_collect_epoch, 0)) collect_this_thread();
}
// Asks every thread to collect its mimalloc heap, collects this one's.
void request_collect();

// Note [Backing ownership]: the address ranges of mimalloc's arenas.
constexpr int kMaxMimallocArenas = 4;
struct ArenaRange {
  uintptr_t begin = 0;
  uintptr_t size = 0;  // 0: unused
};
extern ArenaRange g_mi_arenas[kMaxMimallocArenas];
extern int g_mi_arena_count;

inline bool mimalloc_owns(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (__builtin_expect(a - g_mi_arenas[0].begin < g_mi_arenas[0].size, 1)) return true;
  for (int i = 1; i < g_mi_arena_count; ++i) {
    if (a - g_mi_arenas[i].begin < g_mi_arenas[i].size) return true;
  }
  return false;
}

// Chooses the backing allocator by MEMPLAN_BACKING's value ("mimalloc" or
// "next"). Returns null when that one is in use, else why not (a static
// string): the backing is then the next allocator.
const char* select_backing(const char* name);

// Blocks of mimalloc, rounded up to 16 bytes (see the rules above); SIZE_MAX
// on overflow.
inline size_t mimalloc_request(size_t size) { return size > SIZE_MAX - 15 ? SIZE_MAX : (size + 15) & ~size_t{15}; }

inline void* backing_malloc(size_t size) {
  if (g_use_mimalloc) {
    collect_if_asked();
    if (void* p = g_mi.malloc(mimalloc_request(size))) return p;
  }
  return g_real.malloc(size);
}

inline void* backing_zalloc(size_t bytes) {
  if (g_use_mimalloc) {
    collect_if_asked();
    if (void* p = g_mi.zalloc(mimalloc_request(bytes))) return p;
  }
  return g_real.calloc(1, bytes);
}

// alignment: a power of two (the callers check).
inline void* backing_memalign(size_t alignment, size_t size) {
  if (alignment <= 16) return backing_malloc(size);
  if (g_use_mimalloc) {
    if (void* p = g_mi.malloc_aligned(size, alignment)) return p;
  }
  return g_real.memalign(alignment, size);
}

inline void backing_free(void* p) {
  if (mimalloc_owns(p)) {
    g_mi.free(p);
    return;
  }
  g_real.free(p);
}

inline size_t backing_usable_size(void* p) {
  return mimalloc_owns(p) ? g_mi.usable_size(p) : g_real.malloc_usable_size(p);
}

inline void* backing_realloc(void* p, size_t size) {
  if (!p) return backing_malloc(size);
  if (!mimalloc_owns(p)) return g_real.realloc(p, size);
  if (size == 0) {
    g_mi.free(p);
    return nullptr;
  }
  if (void* q = g_mi.realloc(p, mimalloc_request(size))) return q;
  // mimalloc is full (p is still valid): move the block to the next allocator.
  void* q = g_real.malloc(size);
  if (!q) return nullptr;
  const size_t old = g_mi.usable_size(p);
  memcpy(q, p, old < size ? old : size);
  g_mi.free(p);
  return q;
}

}  // namespace memplan::preload
