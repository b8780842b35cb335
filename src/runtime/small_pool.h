// small_pool.h — the small-request pool of the replay allocator: size-class
// free lists in the upper half of each thread's window, for the requests that
// ReplayConfig::min_sequenced_size leaves out of the request sequence.
// Private to src/runtime.
//
// Note [Small-request pool]. Programs whose tensors keep their order while the
// small metadata requests around them vary with the input (a transformer's
// shape and stride arrays, a batching loop's per-request bookkeeping) plan
// well only when those requests take no tick (min_sequenced_size). They are
// then most of the requests by count and, without the pool, all go to the
// backing allocator. The pool serves them from memory of the thread's own
// window, with no lock and no system call once warm:
//
//   * 36 size classes up to 8 KiB: multiples of 16 B up to 256 B, then four
//     per doubling (320, 384, 448, 512, 640, ..., 4096, 5120, ..., 8192). A
//     request takes the smallest class that holds it, so at most 25% of a
//     block is slack.
//     Alignments of 32 and 64 (libtorch aligns its CPU storages to 64) round
//     the size up to the alignment first (small_class_aligned).
//   * The pool area of a window is cut into 64 KiB chunks, each given to one
//     class when first needed and committed pre-faulted (os::commit). A chunk
//     never changes class and is never given back while the allocator lives:
//     the pool's memory is the largest number of blocks of each class that
//     were live at once, rounded up to chunks (at most small_pool_bytes).
//   * Allocation pops the class's free list (owner only: no atomics), then
//     takes what other threads freed (one exchange), then carves the class's
//     current chunk, then commits a new chunk; when the area is full the
//     request goes to the backing allocator.
//   * A free finds the block's class from its chunk (a byte per chunk, so no
//     header and no size lookup) and pushes the block on the owner's free list
//     when the caller owns the window, else on the class's remote stack (a
//     lock-free push; the owner takes the whole stack at once, so there is no
//     ABA hazard).
//   * The second word of a free block holds the pool's key and allocation
//     clears it: a second free of the same block finds the key and is counted
//     as invalid and ignored, as a stale free of a slab block is. (A program
//     that stores exactly the key there in a live block and then frees it
//     loses that block to the pool, never more.)
//   * A record keeps its pool across threads: the next thread that claims the
//     record owns it, with whatever the last owner and others freed into it.
//
// What the pool does not do: serve alignments above 64 (they go to the
// backing allocator), return memory (a program whose small requests peak once
// keeps that peak), or serve a thread before it takes part in iterations
// (before its first mark in the drop-in, where the span before the first
// mark is the program's start-up).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/counter.h"

namespace memplan::runtime::fast {

constexpr uint32_t kSmallClasses = 36;
constexpr uint64_t kSmallMaxBytes = 8192;  // the largest class
constexpr unsigned kSmallChunkShift = 16;  // 64 KiB chunks
constexpr uint64_t kSmallChunkBytes = uint64_t{1} << kSmallChunkShift;
constexpr uint32_t kSmallMaxChunks = 1024;  // 64 MiB of pool per thread at most

// The class of a request of `size` bytes (size <= kSmallMaxBytes), computed.
constexpr uint32_t small_class_computed(uint64_t size) {
  const uint64_t s = size == 0 ? 0 : size - 1;
  if (s < 256) return static_cast<uint32_t>(s >> 4);
  const unsigned e = 63 - static_cast<unsigned>(__builtin_clzll(s));  // 8..12
  return 16 + (e - 8) * 4 + static_cast<uint32_t>((s >> (e - 2)) & 3);
}

// The same, looked up: every class boundary is a multiple of 16, so the
// class of `size` is the class of size rounded up to 16 (one byte per 16 B).
struct SmallClassOf {
  uint8_t of16[kSmallMaxBytes / 16 + 1];
};
constexpr SmallClassOf make_small_class_of() {
  SmallClassOf t{};
  for (uint64_t k = 0; k <= kSmallMaxBytes / 16; ++k) t.of16[k] = static_cast<uint8_t>(small_class_computed(k * 16));
  return t;
}
inline constexpr SmallClassOf kSmallClassOf = make_small_class_of();

// The class of a request of `size` bytes (size <= kSmallMaxBytes).
inline uint32_t small_class(uint64_t size) { return kSmallClassOf.of16[(size + 15) >> 4]; }

constexpr uint64_t kSmallMaxAlignment = 64;

// The bytes of a block of class c.
constexpr uint64_t small_class_bytes(uint32_t c) {
  return c < 16 ? (uint64_t{c} + 1) << 4 : (uint64_t{4 + (c - 16) % 4 + 1}) << (8 + (c - 16) / 4 - 2);
}

// ceil(2^32 / bytes of class c): for x < 2^16, (x * inverse) >> 32 is
// x / bytes exactly (the error, below 2^-16, is less than 1 / bytes), so a
// free tells a block boundary with a multiplication instead of a division.
constexpr uint64_t small_class_inverse(uint32_t c) {
  return ((uint64_t{1} << 32) + small_class_bytes(c) - 1) / small_class_bytes(c);
}

// Both per class, as tables for the free path (computed at compile time).
struct SmallClassTable {
  uint32_t bytes[kSmallClasses];
  uint64_t inverse[kSmallClasses];
};
constexpr SmallClassTable make_small_class_table() {
  SmallClassTable t{};
  for (uint32_t c = 0; c < kSmallClasses; ++c) {
    t.bytes[c] = static_cast<uint32_t>(small_class_bytes(c));
    t.inverse[c] = small_class_inverse(c);
  }
  return t;
}
inline constexpr SmallClassTable kSmallClassTable = make_small_class_table();

// The class of a request of `size` bytes aligned to `alignment` (a power of
// two), or -1 when the pool does not serve it. Blocks of a class lie at
// multiples of its size from a 64 KiB boundary, so a block is aligned to
// every power of two that divides its class's size: the size rounded up to
// the alignment picks such a class (below 256 B the class is that size; above
// it every class is a multiple of 64).
inline int small_class_aligned(uint64_t size, uint64_t alignment) {
  if (alignment > 16) {
    if (alignment > kSmallMaxAlignment) return -1;
    size = ((size == 0 ? 1 : size) + alignment - 1) & ~(alignment - 1);
  }
  if (size > kSmallMaxBytes) return -1;
  return static_cast<int>(small_class(size));
}

struct SmallPool {
  // The owner's side (the thread holding the record).
  void* free_list[kSmallClasses] = {};
  unsigned char* carve[kSmallClasses] = {};      // next uncarved block of the class's current chunk
  unsigned char* carve_end[kSmallClasses] = {};  // end of that chunk
  Counter pooled;                                // requests served from the pool
  Counter chunks_committed;                      // chunks in use (64 KiB each)

  // Fixed once the pool is set up.
  unsigned char* base = nullptr;  // the pool area (window + slab half)
  uint32_t chunk_limit = 0;       // chunks the area may hold
  uint64_t key = 0;               // marks free blocks
  const void* owner = nullptr;    // the record (fast::ThreadFast) that owns the window

  // Any thread.
  std::atomic<void*> remote[kSmallClasses] = {};
  std::atomic<uint8_t> chunk_class[kSmallMaxChunks] = {};  // class + 1 of each chunk; 0: not committed

  void setup(unsigned char* area, uint64_t area_bytes, const void* owning_record) {
    base = area;
    const uint64_t chunks = area_bytes >> kSmallChunkShift;
    chunk_limit = static_cast<uint32_t>(chunks < kSmallMaxChunks ? chunks : kSmallMaxChunks);
    key = reinterpret_cast<uintptr_t>(this) ^ 0x9e3779b97f4a7c15ull;
    owner = owning_record;
  }

  static void*& next_of(void* block) { return *static_cast<void**>(block); }
  static uint64_t mark_of(const void* block) {
    uint64_t m;
    std::memcpy(&m, static_cast<const unsigned char*>(block) + 8, sizeof m);
    return m;
  }
  static void set_mark(void* block, uint64_t m) { std::memcpy(static_cast<unsigned char*>(block) + 8, &m, sizeof m); }

  // The owner's pop of class c: nullptr when its free list is empty.
  [[gnu::always_inline]] void* pop(uint32_t c) {
    void* p = free_list[c];
    if (__builtin_expect(p == nullptr, 0)) return nullptr;
    free_list[c] = next_of(p);
    set_mark(p, 0);
    pooled.bump();
    return p;
  }

  // The owner's allocation of class c when pop() found nothing: what other
  // threads freed, the class's chunk, a new chunk; nullptr when the area is
  // full or the commit fails. Makes a system call only for a new chunk.
  void* refill(uint32_t c, bool huge_pages);

  // The class of block p of this pool, or -1 when p is not at a block
  // boundary of a committed chunk (a pointer into the area that the pool
  // never handed out).
  int class_of(const void* p) const {
    const uint64_t in_area = static_cast<uint64_t>(static_cast<const unsigned char*>(p) - base);
    const uint64_t chunk = in_area >> kSmallChunkShift;
    if (chunk >= chunk_limit) return -1;
    const uint32_t c1 = chunk_class[chunk].load(std::memory_order_relaxed);
    if (c1 == 0) return -1;
    const uint32_t c = c1 - 1;
    const uint64_t in_chunk = in_area & (kSmallChunkBytes - 1);
    const uint64_t index = (in_chunk * kSmallClassTable.inverse[c]) >> 32;
    if (index * kSmallClassTable.bytes[c] != in_chunk) return -1;  // interior pointer
    return static_cast<int>(c);
  }

  // Frees block p of class c; `by_owner` when the calling thread owns the
  // window. False (nothing changed) for a block that is already free.
  bool release(void* p, uint32_t c, bool by_owner) {
    if (mark_of(p) == key) return false;
    set_mark(p, key);
    if (by_owner) {
      next_of(p) = free_list[c];
      free_list[c] = p;
      return true;
    }
    void* head = remote[c].load(std::memory_order_relaxed);
    do {
      next_of(p) = head;
    } while (!remote[c].compare_exchange_weak(head, p, std::memory_order_release, std::memory_order_relaxed));
    return true;
  }

  // Checks the owner's free lists and carve cursors (run while no other
  // thread uses the pool): every free block lies at a block boundary of a
  // committed chunk of its class and carries the key. An error message, or
  // nullptr.
  const char* check() const;
};

}  // namespace memplan::runtime::fast
