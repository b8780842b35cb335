// small_pool.cc — the small-request pool's refill and check (Note
// [Small-request pool] in small_pool.h).
#include "runtime/small_pool.h"

#include "runtime/os/os_memory.h"

namespace memplan::runtime::fast {

void* SmallPool::refill(uint32_t c, bool huge_pages) {
  // What other threads freed: the whole stack at once.
  if (remote[c].load(std::memory_order_relaxed) != nullptr) {
    free_list[c] = remote[c].exchange(nullptr, std::memory_order_acquire);
    if (void* p = pop(c)) return p;
  }
  const uint64_t bytes = small_class_bytes(c);
  if (carve[c] == nullptr || carve[c] + bytes > carve_end[c]) {
    const uint64_t chunk = chunks_committed.get();
    if (chunk >= chunk_limit) return nullptr;
    unsigned char* start = base + (chunk << kSmallChunkShift);
    if (!os::commit(start, kSmallChunkBytes, huge_pages)) return nullptr;
    // Published before any block of the chunk leaves this thread.
    chunk_class[chunk].store(static_cast<uint8_t>(c + 1), std::memory_order_relaxed);
    chunks_committed.set(chunk + 1);
    carve[c] = start;
    carve_end[c] = start + kSmallChunkBytes;
  }
  void* p = carve[c];
  carve[c] += bytes;
  pooled.bump();
  return p;
}

const char* SmallPool::check() const {
  const uint64_t chunks = chunks_committed.get();
  if (chunks > chunk_limit) return "small pool: more chunks committed than its area holds";
  for (uint64_t k = 0; k < kSmallMaxChunks; ++k) {
    if ((chunk_class[k].load(std::memory_order_relaxed) != 0) != (k < chunks)) {
      return "small pool: a chunk's class disagrees with the committed count";
    }
  }
  for (uint32_t c = 0; c < kSmallClasses; ++c) {
    uint64_t walked = 0;
    for (const void* p = free_list[c]; p; p = *static_cast<void* const*>(p)) {
      if (class_of(p) != static_cast<int>(c)) return "small pool: a free block is not a block of its class";
      if (mark_of(p) != key) return "small pool: a free block does not carry the key";
      if (++walked > chunks * (kSmallChunkBytes / 16)) return "small pool: a free list has a cycle";
    }
    if (carve[c] != nullptr) {
      if (carve[c] > carve_end[c]) {
        return "small pool: a carve cursor is past its chunk";
      }
      const uint64_t chunk = static_cast<uint64_t>(carve_end[c] - 1 - base) >> kSmallChunkShift;
      if (chunk_class[chunk].load(std::memory_order_relaxed) != c + 1) {
        return "small pool: a carve cursor is in another class's chunk";
      }
    }
  }
  return nullptr;
}

}  // namespace memplan::runtime::fast
