// real_allocator.h — what every LD_PRELOAD library of memplan needs before it
// can interpose malloc: the next allocator in the lookup order (glibc's,
// normally), found with dlsym(RTLD_NEXT); a static bootstrap arena for the
// calls dlsym itself makes while that lookup runs; and a per-thread
// reentrancy flag. Shared by libmemplan_trace.so (src/trace/preload/) and
// libmemplan_replay.so (src/runtime/preload/); each library links its own
// copy (real_allocator.cc), with hidden visibility, so their states never mix.
//
// Bootstrapping, step by step (ensure_ready):
//   1. The first call, whoever makes it (often ld.so or another library's
//      constructor, before the preloaded library's own runs), moves the state
//      from cold to resolving and looks every function up with dlsym.
//   2. While that thread is inside dlsym its allocation calls return false
//      from ensure_ready: the caller serves them from the boot arena (a bump
//      allocator over static, zeroed storage with a 16-byte size header), and
//      free() ignores arena pointers forever after.
//   3. A function dlsym cannot find falls back to glibc's __libc_* entry
//      points (or memalign, for the aligned forms).
//   4. The library's hook runs (still before any other thread proceeds), then
//      the state becomes ready. Other threads that arrive meanwhile wait.
// Cost once ready: one acquire load (a plain load on x86) per call.
//
// Nothing here allocates through malloc, throws, or needs the C++ runtime:
// the tracer is built without it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memplan::preload {

struct RealAllocator {
  void* (*malloc)(size_t) = nullptr;
  void* (*calloc)(size_t, size_t) = nullptr;
  void* (*realloc)(void*, size_t) = nullptr;
  void (*free)(void*) = nullptr;
  int (*posix_memalign)(void**, size_t, size_t) = nullptr;
  void* (*aligned_alloc)(size_t, size_t) = nullptr;
  void* (*memalign)(size_t, size_t) = nullptr;
  void* (*valloc)(size_t) = nullptr;   // nullptr when missing (obsolete): use memalign
  void* (*pvalloc)(size_t) = nullptr;  // nullptr when missing (obsolete): use memalign
  size_t (*malloc_usable_size)(void*) = nullptr;
  void (*exit_now)(int) = nullptr;  // _exit
};
// Filled by ensure_ready; read-only afterwards.
extern RealAllocator g_real;
// Bytes per page (sysconf), set by ensure_ready.
extern uint64_t g_page_size;

enum BootState : int { kCold = 0, kResolving = 1, kReady = 2 };
extern std::atomic<int> g_boot;

// Runs once, on the resolving thread, after the lookup and before any thread
// sees the library ready (the tracer stamps its clock there).
using ResolvedHook = void (*)();
bool ensure_ready_slow(ResolvedHook hook);

// True once the real functions are known. False only for the thread that is
// resolving them (inside dlsym): it must use the boot arena.
inline bool ensure_ready(ResolvedHook hook = nullptr) {
  if (__builtin_expect(g_boot.load(std::memory_order_acquire) == kReady, 1)) return true;
  return ensure_ready_slow(hook);
}

// The boot arena (step 2). Inline: every free asks.
constexpr size_t kBootArenaBytes = 256 * 1024;
extern unsigned char g_boot_arena[kBootArenaBytes];
inline bool is_boot_pointer(const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  return b >= g_boot_arena && b < g_boot_arena + kBootArenaBytes;
}
// The size a boot block was allocated with.
size_t boot_size(const void* p);
// nullptr when the arena is exhausted or the alignment is not a power of two.
void* boot_alloc(size_t size, size_t alignment);
// realloc inside the arena (p: nullptr or a boot block).
void* boot_realloc(void* p, size_t size);

// Set while a thread runs the library's own code, so that allocations it makes
// there pass straight to the real allocator instead of re-entering it.
extern __thread bool t_inside __attribute__((tls_model("initial-exec")));

class ReentrancyGuard {
 public:
  ReentrancyGuard() : was_(t_inside) { t_inside = true; }
  ~ReentrancyGuard() { t_inside = was_; }
  ReentrancyGuard(const ReentrancyGuard&) = delete;
  ReentrancyGuard& operator=(const ReentrancyGuard&) = delete;
  static bool active() { return t_inside; }

 private:
  bool was_;
};

}  // namespace memplan::preload
