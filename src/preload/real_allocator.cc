// real_allocator.cc — the next allocator, the bootstrap arena and the
// reentrancy flag of memplan's preloaded libraries (real_allocator.h).
#include "preload/real_allocator.h"

#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

// glibc's own entry points, the fallback should dlsym(RTLD_NEXT) find nothing.
extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void __libc_free(void*);
extern "C" void* __libc_memalign(size_t, size_t);

namespace memplan::preload {

RealAllocator g_real;
uint64_t g_page_size = 4096;
std::atomic<int> g_boot{kCold};
__thread bool t_inside __attribute__((tls_model("initial-exec")));
alignas(64) unsigned char g_boot_arena[kBootArenaBytes];

namespace {

__thread bool t_resolving __attribute__((tls_model("initial-exec")));

// glibc's dlsym needs a few hundred bytes at most; kBootArenaBytes (256 KiB)
// leaves room for unusual dynamic linkers.
constexpr size_t kBootHeaderBytes = 16;  // the block's size, for realloc and malloc_usable_size
std::atomic<size_t> g_boot_used{0};

template <typename F>
void resolve(F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

void* fallback_aligned_alloc(size_t alignment, size_t size) { return __libc_memalign(alignment, size); }
int fallback_posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, size);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
size_t fallback_usable_size(void*) { return 0; }

void resolve_real_allocator() {
  resolve(g_real.malloc, "malloc");
  resolve(g_real.calloc, "calloc");
  resolve(g_real.realloc, "realloc");
  resolve(g_real.free, "free");
  resolve(g_real.posix_memalign, "posix_memalign");
  resolve(g_real.aligned_alloc, "aligned_alloc");
  resolve(g_real.memalign, "memalign");
  resolve(g_real.valloc, "valloc");
  resolve(g_real.pvalloc, "pvalloc");
  resolve(g_real.malloc_usable_size, "malloc_usable_size");
  resolve(g_real.exit_now, "_exit");
  // The four must come from one allocator: mixing theirs and glibc's would
  // free one allocator's blocks into the other.
  if (!g_real.malloc || !g_real.free || !g_real.calloc || !g_real.realloc) {
    g_real.malloc = __libc_malloc;
    g_real.calloc = __libc_calloc;
    g_real.realloc = __libc_realloc;
    g_real.free = __libc_free;
  }
  if (!g_real.memalign) g_real.memalign = __libc_memalign;
  if (!g_real.aligned_alloc) g_real.aligned_alloc = fallback_aligned_alloc;
  if (!g_real.posix_memalign) g_real.posix_memalign = fallback_posix_memalign;
  if (!g_real.malloc_usable_size) g_real.malloc_usable_size = fallback_usable_size;
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) g_page_size = static_cast<uint64_t>(page);
}

}  // namespace

bool ensure_ready_slow(ResolvedHook hook) {
  if (t_resolving) return false;
  int expected = kCold;
  if (g_boot.compare_exchange_strong(expected, kResolving, std::memory_order_acq_rel)) {
    t_resolving = true;
    resolve_real_allocator();
    t_resolving = false;
    if (hook) hook();
    g_boot.store(kReady, std::memory_order_release);
    return true;
  }
  while (g_boot.load(std::memory_order_acquire) != kReady) sched_yield();
  return true;
}

size_t boot_size(const void* p) {
  size_t size;
  memcpy(&size, static_cast<const unsigned char*>(p) - kBootHeaderBytes, sizeof size);
  return size;
}

void* boot_alloc(size_t size, size_t alignment) {
  if (alignment < kBootHeaderBytes) alignment = kBootHeaderBytes;
  if ((alignment & (alignment - 1)) != 0 || alignment > kBootArenaBytes / 2 || size > kBootArenaBytes) return nullptr;
  size_t used = g_boot_used.load(std::memory_order_relaxed);
  for (;;) {
    const size_t start = (used + kBootHeaderBytes + alignment - 1) & ~(alignment - 1);
    if (start + size > kBootArenaBytes) return nullptr;
    if (g_boot_used.compare_exchange_weak(used, start + size, std::memory_order_relaxed)) {
      memcpy(g_boot_arena + start - kBootHeaderBytes, &size, sizeof size);
      return g_boot_arena + start;  // static storage: already zero, as calloc needs
    }
  }
}

void* boot_realloc(void* p, size_t size) {
  void* q = boot_alloc(size, 16);
  if (q && p && is_boot_pointer(p)) {
    const size_t old = boot_size(p);
    memcpy(q, p, old < size ? old : size);
  }
  return q;
}

}  // namespace memplan::preload
