// slab.h — the one block of memory a plan is served from.
//
// A slab is one read-write mapping placed inside a window of reserved address
// space. The window is reserved once (PROT_NONE, no commit charge) and may
// hold successive slabs: committing maps the first `bytes` of it read-write
// and pre-faults every page (huge pages advised where the kernel offers them),
// so serving a plan from it causes no page faults; releasing turns the range
// back into a reservation and gives the memory to the kernel. Keeping the
// window reserved means a pointer into it is recognised by a range check even
// after the slab is gone.
//
// Invariants (check_invariants): the window and the mapping start on a page
// boundary; the mapping's length is a whole number of pages no larger than
// the window; an empty slab maps nothing.
//
// Ownership and threads: a Slab is move-only and owns its mapping, not the
// window. Changes of the mapping (commit, release) are not thread-safe: the
// learner makes them under its slab mutex, from the owning thread at
// iteration boundaries or from a planner thread that grows the slab for a
// plan it made (runtime/learner.h, PlanJob). Growing maps only the pages
// past the current mapping, so blocks served from the mapped part meanwhile
// are untouched. mapped_bytes() and contains() may be read from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "memplan/status.h"

namespace memplan::runtime {

// Where a slab's memory comes from when it is not the process's own address
// space: a device's virtual address window (the device replay allocator,
// runtime/device/). Commit maps [address, address + bytes) of the window,
// decommit unmaps a range that commits mapped (one or more of them); both are
// called with whole granules.
class SlabMemory {
 public:
  virtual ~SlabMemory() = default;
  // The commit unit in bytes (a power of two; 2 MiB for CUDA's VMM).
  virtual size_t granularity() const = 0;
  virtual bool commit(void* address, size_t bytes) = 0;
  virtual void decommit(void* address, size_t bytes) = 0;
};

class Slab {
 public:
  Slab() = default;
  // A slab that will live in [window, window + window_bytes); nothing mapped
  // yet. `memory`: who maps it (nullptr: the OS, pre-faulted pages).
  Slab(void* window, size_t window_bytes, SlabMemory* memory = nullptr)
      : window_(static_cast<unsigned char*>(window)), window_bytes_(window_bytes), memory_(memory) {}
  Slab(Slab&& other) noexcept;
  Slab& operator=(Slab&& other) noexcept;
  Slab(const Slab&) = delete;
  Slab& operator=(const Slab&) = delete;
  ~Slab() { release(); }

  // Maps at least `bytes` (rounded up to pages), pre-faulted unless
  // `prefault` is false (then prefault() may fault them in later). An
  // existing mapping is kept as it is (its contents are not cleared); a
  // smaller one is grown by mapping only the pages past it. Fails if `bytes`
  // exceeds the window or the kernel refuses the mapping (the existing
  // mapping then stays).
  Status commit(size_t bytes, bool huge_pages, bool prefault = true);
  // Faults in the first `bytes` mapped (rounded up to pages; at most the
  // mapping) without changing their contents, while blocks may be served
  // from them (os::prefault); a device's memory is always resident. Under
  // the same lock as commit and release.
  void prefault(size_t bytes);
  // Gives back the pages past the first `bytes` (rounded up to pages) and
  // keeps the rest mapped with their contents: nothing may be served from
  // the pages given back (Note [The slab fits its plans], variants.cc). A
  // slab on a device's memory keeps its mapping (the unit's granules hold
  // more than the slab: Note [Resident blocks], device_replay.cc). Under the
  // same lock as commit and release.
  void shrink(size_t bytes);
  // Gives the memory back to the kernel; the window stays reserved.
  void release();

  unsigned char* base() const { return window_; }
  size_t mapped_bytes() const { return mapped_bytes_.load(std::memory_order_acquire); }
  size_t window_bytes() const { return window_bytes_; }
  bool contains(const void* p) const {
    return static_cast<size_t>(static_cast<const unsigned char*>(p) - window_) < mapped_bytes();
  }

  Status check_invariants() const;

 private:
  unsigned char* window_ = nullptr;
  size_t window_bytes_ = 0;
  std::atomic<size_t> mapped_bytes_{0};
  SlabMemory* memory_ = nullptr;
  // The commit unit: a page, or the device's granule.
  size_t unit() const;
  size_t in_units(size_t bytes) const;  // rounded up to whole units
  bool map(unsigned char* at, size_t bytes, bool huge_pages, bool prefault);
  void unmap(unsigned char* at, size_t bytes);
};

}  // namespace memplan::runtime
