// backing_allocator.h — the allocator an online allocator falls back to:
// every request it does not serve from a slab (while profiling, for requests
// the plan leaves out, after a deviation) goes here. The replay allocator's
// drop-in passes glibc's (or a preloaded allocator's) functions, the libtorch
// allocator c10's alloc_cpu / free_cpu, tests a mock that counts calls.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>

#include <malloc.h>

namespace memplan {

// The least alignment of every block an online allocator or a memory pool
// hands out, and of every request it passes to a BackingAllocator: what
// malloc promises. One constant for both sides of the promise — the replay
// allocator asks for it, the pools' host backing (memplan/pool.h) gives it.
inline constexpr size_t kMinAlignment = 16;
static_assert(kMinAlignment >= alignof(std::max_align_t), "blocks must be aligned as malloc's are");
static_assert((kMinAlignment & (kMinAlignment - 1)) == 0, "an alignment is a power of two");

// The allocator that requests go to when they are not served from a slab.
// Alignments are powers of two >= kMinAlignment. Every function may be called
// from any thread; allocate* return nullptr when out of memory.
class BackingAllocator {
 public:
  virtual ~BackingAllocator() = default;
  virtual void* allocate(size_t size, size_t alignment) = 0;
  virtual void* allocate_zeroed(size_t size) = 0;
  virtual void* reallocate(void* p, size_t size) = 0;
  virtual void deallocate(void* p) = 0;
  virtual size_t usable_size(void* p) = 0;
  // Returns memory the allocator holds but no live block uses to the OS
  // (glibc: malloc_trim(0)). Called at most once per plan, on the planning
  // thread, when config.trim_backing is set. The default keeps everything.
  virtual void release_free_memory() {}
};

// A BackingAllocator over the C heap (posix_memalign, calloc, realloc,
// free), sizes of 0 taken as 1: for replays outside the drop-in — a trace
// replayed into plans, tests, benchmarks. Not for the drop-in itself, whose
// malloc is the one being replaced.
class HeapBacking : public BackingAllocator {
 public:
  void* allocate(size_t size, size_t alignment) override {
    void* p = nullptr;
    return posix_memalign(&p, std::max(alignment, sizeof(void*)), std::max<size_t>(size, 1)) == 0 ? p : nullptr;
  }
  void* allocate_zeroed(size_t size) override { return std::calloc(1, std::max<size_t>(size, 1)); }
  void* reallocate(void* p, size_t size) override { return std::realloc(p, std::max<size_t>(size, 1)); }
  void deallocate(void* p) override { std::free(p); }
  size_t usable_size(void* p) override { return malloc_usable_size(p); }
};

}  // namespace memplan
