// caching_model.h — PyTorch's CUDA caching allocator as a simulation: the
// blocks, pools and segments of one device, on a simulated address space.
// Used by simulate_caching and simulate_expandable_segments, and as the
// fallback of the memplan models (memplan_model.cc).
//
// The rules, with the functions of c10/cuda/CUDACachingAllocator.cpp they
// come from (docs/snapshots.md, "Allocator models", says each in full):
//   round_size            request -> block size (512 B, power-of-two divisions)
//   get_pool              <= 1 MiB: small pool, else large; both per stream
//   get_allocation_size   new segment: 2 MiB (small), 20 MiB (< 10 MiB), else 2 MiB multiple
//   get_free_block        best fit by (stream, size, address); oversize blocks
//                         (>= max_split_size) only for requests >= max_split_size
//                         within max_non_split_rounding (kLargeBuffer) of them
//   should_split          small: remainder >= 512 B; large: request < max_split_size
//                         and remainder > 1 MiB; expandable: remainder >= 512 B
//   alloc_block           a new segment, or (expandable) mapped pages
//   free_block            merge with free neighbours of the same segment
//   release_available_cached_blocks / release_cached_blocks / garbage_collect_cached_blocks
//                         what frees cached segments when a segment does not fit
//
// Invariants (check_invariants): blocks of a segment tile it in address
// order; two free neighbours are never both mapped (they merge); every free
// mapped block is in its pool's size set, every unmapped one in its pool's
// unmapped set; reserved bytes = the sum of mapped segment bytes.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "memplan/allocator_model.h"
#include "memplan/status.h"

namespace memplan::simulate {

// A simulated device's virtual address space: ranges are handed out upwards
// from a base and never reused (only their order matters to the models).
class AddressSpace {
 public:
  explicit AddressSpace(uint64_t base) : next_(base) {}
  uint64_t take(uint64_t bytes, uint64_t alignment) {
    const uint64_t at = (next_ + alignment - 1) / alignment * alignment;
    next_ = at + bytes;
    return at;
  }

 private:
  uint64_t next_;
};

// The lowest address a model hands out for `trace`: above every start
// segment, so that new ranges never collide with recorded ones.
uint64_t address_base(const DeviceTrace& trace);

class CachingModel {
 public:
  // `expandable`: expandable_segments:True (settings.expandable_segments is ignored).
  CachingModel(const AllocatorSettings& settings, bool expandable, AddressSpace& space);
  ~CachingModel();
  CachingModel(const CachingModel&) = delete;
  CachingModel& operator=(const CachingModel&) = delete;

  // InvalidArgument when the settings are out of PyTorch's range.
  static Status check_settings(const AllocatorSettings& settings);

  // The recorded segments before the first request; allocated blocks become
  // live at their addresses. Call once, before any request.
  Status load_start(const std::vector<StartSegment>& start);

  // A block for `bytes` on `stream`: its address. Never fails; past the
  // capacity it counts an out-of-memory and goes on.
  uint64_t allocate(uint64_t bytes, int64_t stream);
  // False when no live block starts at `address`.
  bool free(uint64_t address);
  // release_cached_blocks: every unsplit free segment and every fully free page.
  void release_cached();

  uint64_t reserved() const { return reserved_; }
  uint64_t allocated() const { return allocated_; }
  uint64_t requested() const { return requested_; }
  uint64_t device_allocations() const { return device_allocations_; }
  uint64_t device_frees() const { return device_frees_; }
  uint64_t out_of_memory() const { return out_of_memory_; }
  // Segment events are recorded (with this request index) when `events` is set.
  void record_events(std::vector<SegmentEvent>* events) { events_ = events; }
  void set_request_index(int64_t index) { request_index_ = index; }
  // The size of the live block at `address` (0: none).
  uint64_t live_size(uint64_t address) const;

  Status check_invariants() const;

  struct Block;
  struct Pool;
  struct Segment;

 private:
  struct Params;
  Pool& pool_of(bool small);
  const Pool& pool_of_const(bool small) const { return small ? *small_ : *large_; }
  bool gc_active() const;
  bool get_free_block(Params& p);
  bool alloc_block(Params& p);
  bool try_allocate_expandable_block(Params& p);
  Block* find_expandable_block(Params& p);
  bool map_block(Block* to_map, uint64_t size);
  void unmap_block(Block* block);
  bool should_split(const Block* block, uint64_t size) const;
  Block* take_found_block(Params& p, uint64_t requested);
  void free_block(Block* block);
  uint64_t try_merge_blocks(Block* dst, Block* src);
  bool release_available_cached_blocks(const Params& p);
  void release_blocks(Pool& pool);
  void release_block(Block* block);
  void garbage_collect_cached_blocks();
  bool fits(uint64_t bytes) const;
  Block* new_block();
  void delete_block(Block* block);
  void insert_free(Block* block);

  AllocatorSettings settings_;
  bool expandable_;
  uint64_t max_split_size_;
  uint64_t max_non_split_rounding_;
  AddressSpace& space_;
  std::unique_ptr<Pool> small_;
  std::unique_ptr<Pool> large_;
  std::list<std::unique_ptr<Block>> blocks_;
  std::list<std::unique_ptr<Segment>> segments_;
  std::unordered_map<uint64_t, Block*> live_;
  uint64_t reserved_ = 0;
  uint64_t allocated_ = 0;
  uint64_t requested_ = 0;
  uint64_t device_allocations_ = 0;
  uint64_t device_frees_ = 0;
  uint64_t out_of_memory_ = 0;
  bool ignore_capacity_ = false;  // while an out-of-memory request is served anyway
  std::vector<SegmentEvent>* events_ = nullptr;
  int64_t request_index_ = -1;
  void record(SegmentEvent::Kind kind, const Block* block, uint64_t address, uint64_t bytes);
};

}  // namespace memplan::simulate
