// mapped.h — containers for the replay allocator's profiles whose memory
// comes straight from the kernel (mmap) instead of the backing allocator.
//
// Why (Note [Profiles off the backing heap]). While a thread profiles, its
// requests go to the backing allocator (glibc, in the drop-in), and so would
// the profile's own arrays and its pointer -> tick table if they used malloc:
// thousands of small hash nodes and a few growing arrays, allocated in the
// middle of the program's tensors. In glibc's heap they split free chunks the
// program would otherwise have reused or coalesced, and the profiled
// iterations' peak RSS grows with them (squeezenet1_0 at batch 4 / 224 px
// under `memplan run`, ASLR off: peak 345 MiB with the profile in the heap,
// 331 MiB off it, 327 MiB under glibc alone; docs/history/runtime.md, "Memory:
// what serving added to the RSS, and what was done"). Kept in
// mappings of their own, the profiles leave the program's heap exactly as the
// program made it, and their memory goes back to the kernel when released.
//
//   * MappedAllocator<T>: a stateless std allocator; every allocation is one
//     private anonymous mapping rounded up to pages (fit for a few large
//     arrays that grow by doubling, not for many small objects).
//   * PointerTickMap: pointer -> tick, open addressing with linear probing
//     and backward-shift deletion (no tombstones), in one MappedAllocator
//     array that doubles when half full.
//
// Complexity: PointerTickMap insert / take are expected O(1) (load factor at
// most 1/2); clear is O(capacity) when anything was inserted since the last
// clear, O(1) otherwise. Allocation costs two system calls (reserve, commit)
// and deallocation one (munmap).
//
// Not thread-safe: each container belongs to one thread record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "runtime/os/os_memory.h"

namespace memplan::runtime {

template <class T>
struct MappedAllocator {
  using value_type = T;
  using is_always_equal = std::true_type;

  MappedAllocator() = default;
  template <class U>
  MappedAllocator(const MappedAllocator<U>&) noexcept {}

  static size_t mapped_bytes(size_t n) {
    const size_t page = os::page_size();
    return (n * sizeof(T) + page - 1) / page * page;
  }
  T* allocate(size_t n) {
    if (n == 0) return nullptr;  // mmap refuses empty mappings; deallocate(nullptr, 0) unmaps nothing
    if (n > SIZE_MAX / 2 / sizeof(T)) throw std::bad_alloc();
    const size_t bytes = mapped_bytes(n);
    void* p = os::reserve(bytes);
    if (!p) throw std::bad_alloc();
    // A private mapping of its own, read-write; no huge pages (profiles are small).
    if (!os::commit(p, bytes, false)) {
      os::release(p, bytes);
      throw std::bad_alloc();
    }
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept { os::release(p, mapped_bytes(n)); }

  template <class U>
  bool operator==(const MappedAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using MappedVector = std::vector<T, MappedAllocator<T>>;

// Live profiled blocks of one thread: backing pointer -> tick.
class PointerTickMap {
 public:
  // Adds or replaces p's tick. Throws std::bad_alloc when the table cannot grow.
  void insert(uintptr_t p, uint32_t tick) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    size_t i = home(p);
    while (slots_[i].key != 0 && slots_[i].key != p) i = (i + 1) & mask();
    if (slots_[i].key == 0) ++count_;
    slots_[i] = {p, tick};
    dirty_ = true;
  }
  // Removes p; its tick, or -1 when p is not in the table.
  int64_t take(uintptr_t p) {
    if (count_ == 0) return -1;
    size_t i = home(p);
    while (slots_[i].key != p) {
      if (slots_[i].key == 0) return -1;
      i = (i + 1) & mask();
    }
    const int64_t tick = slots_[i].tick;
    // Backward shift: move later entries of the probe run into the hole so
    // that every key stays reachable from its home slot without tombstones.
    size_t hole = i;
    for (size_t j = (i + 1) & mask(); slots_[j].key != 0; j = (j + 1) & mask()) {
      const size_t h = home(slots_[j].key);
      // j's entry may move to the hole when its home is not in (hole, j] cyclically.
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = {};
    --count_;
    return tick;
  }
  size_t size() const { return count_; }
  // Empties the table and keeps its mapping for the next iteration.
  void clear() {
    if (dirty_ && !slots_.empty()) std::memset(static_cast<void*>(slots_.data()), 0, slots_.size() * sizeof(Slot));
    count_ = 0;
    dirty_ = false;
  }
  // Empties the table and unmaps it.
  void release() {
    MappedVector<Slot>().swap(slots_);
    count_ = 0;
    dirty_ = false;
  }
  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    uintptr_t key = 0;  // 0: empty (never a block's address)
    uint32_t tick = 0;
  };
  size_t mask() const { return slots_.size() - 1; }
  size_t home(uintptr_t p) const {
    // Blocks are 16-byte aligned: drop the zero bits, then Fibonacci hashing.
    return static_cast<size_t>(((p >> 4) * 0x9E3779B97F4A7C15ull) >> 32) & mask();
  }
  void grow() {
    // A page of slots at first: one mapping serves the usual few hundred live blocks.
    const size_t capacity = slots_.empty() ? 256 : slots_.size() * 2;
    MappedVector<Slot> old(capacity);
    old.swap(slots_);
    count_ = 0;
    for (const Slot& s : old) {
      if (s.key != 0) insert(s.key, s.tick);
    }
  }

  MappedVector<Slot> slots_;
  size_t count_ = 0;
  bool dirty_ = false;
};

}  // namespace memplan::runtime
