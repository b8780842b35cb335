// caching_model.cc — PyTorch's CUDA caching allocator, simulated (see
// caching_model.h), and simulate_caching / simulate_expandable_segments.
//
//   allocate(bytes, stream):
//     1. round the size (round_size) and pick the pool (small <= 1 MiB);
//     2. best fit among the pool's free blocks of the stream (get_free_block);
//     3. none: garbage-collect if configured, then a new segment or mapped
//        pages (alloc_block); if that does not fit the capacity, free
//        oversize cached blocks and retry, then every cached segment and
//        retry; past that an out-of-memory (counted, served anyway);
//     4. split the block when the remainder is worth keeping (should_split).
//   free(address): the block merges with its free neighbours and returns
//     to its pool (free_block).
#include "simulate/caching_model.h"

#include <algorithm>
#include <limits>
#include <string>
#include <unordered_set>

#include "simulate/trace_driver.h"

namespace memplan::simulate {
namespace {

// c10/cuda/CUDACachingAllocator.cpp's constants.
constexpr uint64_t kMinBlockSize = 512;               // every block is a multiple of it
constexpr uint64_t kSmallSize = uint64_t{1} << 20;    // largest request of the small pool
constexpr uint64_t kSmallBuffer = uint64_t{2} << 20;  // a small pool segment (and its expandable page)
// A segment for large requests below kMinLargeAlloc, and the large pool's expandable page.
constexpr uint64_t kLargeBuffer = uint64_t{20} << 20;
constexpr uint64_t kMinLargeAlloc = uint64_t{10} << 20;
constexpr uint64_t kRoundLarge = uint64_t{2} << 20;  // larger segments are multiples of it
// c10/core/AllocatorConfig.cpp: the power-of-two intervals of roundup_power2_divisions.
constexpr size_t kRoundUpPowerOfTwoIntervals = 16;
constexpr uint64_t kRoundUpPowerOfTwoStart = uint64_t{1} << 20;
// Where cudaMalloc places segments (only their order matters).
constexpr uint64_t kSegmentAlignment = uint64_t{2} << 20;
// Address space of an expandable segment without a capacity (PyTorch takes
// 1 1/8 of the device's memory).
constexpr uint64_t kUnboundedExpandableSpace = uint64_t{1} << 44;
constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

int floor_log2(uint64_t v) { return 63 - __builtin_clzll(v); }
bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
uint64_t round_up(uint64_t v, uint64_t unit) { return (v + unit - 1) / unit * unit; }

uint64_t divisions_for(uint64_t size, const std::vector<uint64_t>& divisions) {
  if (divisions.empty()) return 0;
  if (divisions.size() == 1) return divisions[0];
  const int start = floor_log2(kRoundUpPowerOfTwoStart);
  const int log_size = floor_log2(size);
  const size_t index =
      std::min<size_t>(log_size > start ? static_cast<size_t>(log_size - start) : 0, kRoundUpPowerOfTwoIntervals - 1);
  return divisions[index];
}

// roundup_power2_next_division: the interval [2^k, 2^(k+1)) that holds
// `size` is cut into `divisions` equal steps; size goes up to the next step.
uint64_t next_division(uint64_t size, uint64_t divisions) {
  if (is_power_of_two(size)) return size;
  const uint64_t floor = uint64_t{1} << floor_log2(size);
  const uint64_t step = floor >> floor_log2(divisions);
  if (step == 0) return floor << 1;
  const uint64_t down = size & ~(step - 1);
  return down == size ? size : down + step;
}

// get_allocation_size: the segment cudaMalloc'd for a block of `size`.
uint64_t allocation_size(uint64_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return round_up(size, kRoundLarge);
}

}  // namespace

uint64_t caching_round_size(uint64_t bytes, const AllocatorSettings& settings) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  const uint64_t divisions = divisions_for(bytes, settings.roundup_power2_divisions);
  if (divisions > 1 && bytes > kMinBlockSize * divisions) return next_division(bytes, divisions);
  return round_up(bytes, kMinBlockSize);
}

uint64_t address_base(const DeviceTrace& trace) {
  uint64_t top = uint64_t{1} << 40;
  for (const StartSegment& s : trace.start) top = std::max(top, s.address + s.size);
  return round_up(top + kLargeBuffer, kSegmentAlignment);
}

struct CachingModel::Segment {
  uint64_t base = 0;
  uint64_t size = 0;  // the address range (an expandable segment's whole reservation)
  uint64_t page = 0;  // mapping unit of an expandable segment
  bool expandable = false;
  std::list<std::unique_ptr<Segment>>::iterator self;
};

struct CachingModel::Block {
  uint64_t ptr = 0;
  uint64_t size = 0;
  uint64_t requested = 0;
  int64_t stream = 0;
  bool small = false;
  bool allocated = false;
  bool mapped = true;
  Block* prev = nullptr;  // neighbours in the segment
  Block* next = nullptr;
  Segment* segment = nullptr;
  int64_t gc_base = 0;  // the pool's get_free_block calls when it was cached
  std::list<std::unique_ptr<Block>>::iterator self;
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

namespace {
using Block = CachingModel::Block;
struct BySize {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};
struct ByAddress {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    return a->ptr < b->ptr;
  }
};
}  // namespace

struct CachingModel::Pool {
  explicit Pool(bool s) : small(s) {}
  bool small;
  std::set<Block*, BySize> blocks;       // free mapped blocks
  std::set<Block*, ByAddress> unmapped;  // unmapped ranges of expandable segments
  int64_t get_free_block_calls = 0;      // counted while garbage collection is on
};

struct CachingModel::Params {
  uint64_t size = 0;  // rounded
  int64_t stream = 0;
  Pool* pool = nullptr;
  uint64_t alloc_size = 0;
  Block* block = nullptr;
};

CachingModel::CachingModel(const AllocatorSettings& settings, bool expandable, AddressSpace& space)
    : settings_(settings),
      expandable_(expandable),
      max_split_size_(settings.max_split_size_mb > 0
                          ? static_cast<uint64_t>(settings.max_split_size_mb * static_cast<double>(uint64_t{1} << 20))
                          : kUnlimited),
      max_non_split_rounding_(
          static_cast<uint64_t>(settings.max_non_split_rounding_mb * static_cast<double>(uint64_t{1} << 20))),
      space_(space),
      small_(std::make_unique<Pool>(true)),
      large_(std::make_unique<Pool>(false)) {}

CachingModel::~CachingModel() = default;

Status CachingModel::check_settings(const AllocatorSettings& settings) {
  if (settings.max_split_size_mb < 0) return InvalidArgument("max_split_size_mb must not be negative");
  // CUDAAllocatorConfig::parseMaxSplitSize refuses sizes up to kLargeBuffer.
  if (settings.max_split_size_mb > 0 && settings.max_split_size_mb * (1 << 20) <= static_cast<double>(kLargeBuffer)) {
    return InvalidArgument("max_split_size_mb must be more than 20 (PyTorch's kLargeBuffer), got " +
                           std::to_string(settings.max_split_size_mb));
  }
  if (settings.max_non_split_rounding_mb * (1 << 20) < static_cast<double>(kLargeBuffer)) {
    return InvalidArgument("max_non_split_rounding_mb must be at least 20 (PyTorch's kLargeBuffer)");
  }
  const size_t n = settings.roundup_power2_divisions.size();
  if (n != 0 && n != 1 && n != kRoundUpPowerOfTwoIntervals) {
    return InvalidArgument("roundup_power2_divisions needs 1 or 16 entries, got " + std::to_string(n));
  }
  for (const uint64_t d : settings.roundup_power2_divisions) {
    if (d > 1 && !is_power_of_two(d)) {
      return InvalidArgument("roundup_power2_divisions must be powers of two, got " + std::to_string(d));
    }
  }
  if (settings.garbage_collection_threshold < 0 || settings.garbage_collection_threshold >= 1) {
    return InvalidArgument("garbage_collection_threshold must be in [0, 1)");
  }
  return Status::Ok();
}

CachingModel::Pool& CachingModel::pool_of(bool small) { return small ? *small_ : *large_; }

CachingModel::Block* CachingModel::new_block() {
  blocks_.push_back(std::make_unique<Block>());
  Block* b = blocks_.back().get();
  b->self = std::prev(blocks_.end());
  return b;
}

void CachingModel::delete_block(Block* block) { blocks_.erase(block->self); }

void CachingModel::insert_free(Block* block) {
  Pool& pool = pool_of(block->small);
  block->gc_base = pool.get_free_block_calls;
  pool.blocks.insert(block);
}

bool CachingModel::fits(uint64_t bytes) const {
  return settings_.capacity_bytes == 0 || ignore_capacity_ || reserved_ + bytes <= settings_.capacity_bytes;
}

Status CachingModel::load_start(const std::vector<StartSegment>& start) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // (address, end)
  for (const StartSegment& s : start) ranges.emplace_back(s.address, s.address + s.size);
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      return InvalidArgument("start segments overlap at address " + std::to_string(ranges[i].first));
    }
  }
  for (size_t i = 0; i < start.size(); ++i) {
    const StartSegment& s = start[i];
    const std::string where = "start segment " + std::to_string(i) + " (address " + std::to_string(s.address) + ")";
    if (s.size == 0) return InvalidArgument(where + " has no bytes");
    std::vector<StartBlock> blocks = s.blocks;
    if (blocks.empty()) blocks.push_back({.offset = 0, .size = s.size});
    uint64_t at = 0;
    for (const StartBlock& b : blocks) {
      if (b.offset != at || b.size == 0) {
        return InvalidArgument(where + ": its blocks do not tile it (a block at offset " + std::to_string(b.offset) +
                               " where " + std::to_string(at) + " was expected, or an empty block)");
      }
      at += b.size;
    }
    if (at != s.size) return InvalidArgument(where + ": its blocks cover " + std::to_string(at) + " of its bytes");

    segments_.push_back(std::make_unique<Segment>());
    Segment* seg = segments_.back().get();
    seg->self = std::prev(segments_.end());
    seg->base = s.address;
    seg->size = s.size;
    seg->expandable = s.expandable;
    seg->page = s.small_pool ? kSmallBuffer : kLargeBuffer;
    Block* last = nullptr;
    for (const StartBlock& sb : blocks) {
      if (!sb.allocated && last != nullptr && !last->allocated) {
        last->size += sb.size;  // two free neighbours are one block
        continue;
      }
      Block* b = new_block();
      b->ptr = s.address + sb.offset;
      b->size = sb.size;
      b->stream = s.stream;
      b->small = s.small_pool;
      b->segment = seg;
      b->prev = last;
      if (last != nullptr) last->next = b;
      if (sb.allocated) {
        b->allocated = true;
        b->requested = sb.requested_size != 0 ? sb.requested_size : sb.size;
        if (!live_.emplace(b->ptr, b).second) return InvalidArgument(where + ": two blocks at one address");
        allocated_ += b->size;
        requested_ += b->requested;
      }
      last = b;
    }
    // An expandable segment grows past its mapped range in this model's mode.
    if (s.expandable && expandable_) {
      const uint64_t tail = settings_.capacity_bytes != 0
                                ? round_up(settings_.capacity_bytes + settings_.capacity_bytes / 8, seg->page)
                                : kUnboundedExpandableSpace;
      Block* t = new_block();
      t->ptr = s.address + s.size;
      t->size = tail;
      t->stream = s.stream;
      t->small = s.small_pool;
      t->segment = seg;
      t->mapped = false;
      t->prev = last;
      last->next = t;
      seg->size += tail;
      pool_of(s.small_pool).unmapped.insert(t);
    }
    for (Block* b = last; b != nullptr; b = b->prev) {
      if (!b->allocated && b->mapped) insert_free(b);
    }
    reserved_ += s.size;
  }
  return check_invariants();
}

uint64_t CachingModel::live_size(uint64_t address) const {
  const auto found = live_.find(address);
  return found == live_.end() ? 0 : found->second->size;
}

// get_free_block.
bool CachingModel::get_free_block(Params& p) {
  Pool& pool = *p.pool;
  if (gc_active()) ++pool.get_free_block_calls;
  Block key;
  key.stream = p.stream;
  key.size = p.size;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
  if ((*it)->segment->expandable) {
    if (expandable_) {
      // A block before unmapped space counts as what it can grow to, so
      // that best fit prefers blocks that cannot grow.
      const auto growable = [](const Block* b) {
        return b->size + (b->next != nullptr && !b->next->mapped ? b->next->size : 0);
      };
      auto next = std::next(it);
      while ((*it)->segment->expandable && next != pool.blocks.end() && (*next)->stream == p.stream &&
             growable(*next) < growable(*it)) {
        it = next++;
      }
    } else {
      // Expandable segments turned off: only ordinary blocks serve.
      do {
        ++it;
      } while (it != pool.blocks.end() && (*it)->segment->expandable && (*it)->stream == p.stream);
      if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
    }
  }
  // Oversize blocks serve only oversize requests, and only close ones.
  if (p.size < max_split_size_ && (*it)->size >= max_split_size_) return false;
  if (p.size >= max_split_size_ && (*it)->size >= p.size + max_non_split_rounding_) return false;
  p.block = *it;
  pool.blocks.erase(it);
  return true;
}

// should_split.
bool CachingModel::should_split(const Block* block, uint64_t size) const {
  const uint64_t remaining = block->size - size;
  if (block->small || expandable_) return remaining >= kMinBlockSize;
  return size < max_split_size_ && remaining > kSmallSize;
}

// alloc_block: a new segment of the allocation size, or mapped pages.
bool CachingModel::alloc_block(Params& p) {
  if (!fits(p.alloc_size)) return false;
  if (expandable_) return try_allocate_expandable_block(p);
  segments_.push_back(std::make_unique<Segment>());
  Segment* seg = segments_.back().get();
  seg->self = std::prev(segments_.end());
  seg->base = space_.take(p.alloc_size, kSegmentAlignment);
  seg->size = p.alloc_size;
  Block* b = new_block();
  b->ptr = seg->base;
  b->size = p.alloc_size;
  b->stream = p.stream;
  b->small = p.pool->small;
  b->segment = seg;
  reserved_ += p.alloc_size;
  ++device_allocations_;
  record(SegmentEvent::Kind::kAlloc, b, b->ptr, b->size);
  p.block = b;
  return true;
}

// find_expandable_block: the lowest address of the stream's segments with
// room for `size` in free and unmapped neighbours, else a new segment.
CachingModel::Block* CachingModel::find_expandable_block(Params& p) {
  Pool& pool = *p.pool;
  const auto allocatable = [](const Block* b) { return b != nullptr && !b->allocated; };
  const auto has_room = [&](const Block* b) {
    uint64_t bytes = 0;
    while (bytes < p.size && allocatable(b)) {
      bytes += b->size;
      b = b->next;
    }
    return bytes >= p.size;
  };
  Block key;
  key.stream = p.stream;
  for (auto it = pool.unmapped.lower_bound(&key); it != pool.unmapped.end() && (*it)->stream == p.stream; ++it) {
    Block* c = *it;
    if (allocatable(c->prev)) c = c->prev;  // a free block just before the unmapped range
    if (has_room(c)) return c;
  }
  segments_.push_back(std::make_unique<Segment>());
  Segment* seg = segments_.back().get();
  seg->self = std::prev(segments_.end());
  seg->expandable = true;
  seg->page = pool.small ? kSmallBuffer : kLargeBuffer;
  // The capacity bounds the address space, but never below the request: past
  // the capacity (an out-of-memory request served so that the replay goes
  // on) the segment must still hold it.
  seg->size = settings_.capacity_bytes != 0
                  ? std::max(round_up(settings_.capacity_bytes + settings_.capacity_bytes / 8, seg->page),
                             round_up(p.size, seg->page))
                  : kUnboundedExpandableSpace;
  seg->base = space_.take(seg->size, seg->page);
  Block* b = new_block();
  b->ptr = seg->base;
  b->size = seg->size;
  b->stream = p.stream;
  b->small = pool.small;
  b->segment = seg;
  b->mapped = false;
  pool.unmapped.insert(b);
  return b;
}

// map_block: maps the pages under [to_map, to_map + size) and merges the
// mapped block with free neighbours.
bool CachingModel::map_block(Block* to_map, uint64_t size) {
  const Segment& seg = *to_map->segment;
  const uint64_t offset = to_map->ptr - seg.base;
  const uint64_t begin = offset / seg.page * seg.page;
  const uint64_t end = round_up(offset + size, seg.page);
  const uint64_t mapped = std::min(end - begin, to_map->size);
  if (!fits(mapped)) return false;  // cuMemCreate out of memory
  Pool& pool = pool_of(to_map->small);
  pool.unmapped.erase(to_map);
  to_map->mapped = true;
  if (mapped < to_map->size) {
    Block* rest = new_block();
    rest->ptr = to_map->ptr + mapped;
    rest->size = to_map->size - mapped;
    rest->stream = to_map->stream;
    rest->small = to_map->small;
    rest->segment = to_map->segment;
    rest->mapped = false;
    rest->prev = to_map;
    rest->next = to_map->next;
    if (rest->next != nullptr) rest->next->prev = rest;
    to_map->next = rest;
    to_map->size = mapped;
    pool.unmapped.insert(rest);
  }
  record(SegmentEvent::Kind::kMap, to_map, to_map->ptr, mapped);
  try_merge_blocks(to_map, to_map->prev);
  try_merge_blocks(to_map, to_map->next);
  insert_free(to_map);
  reserved_ += mapped;
  ++device_allocations_;
  return true;
}

// try_allocate_expandable_block.
bool CachingModel::try_allocate_expandable_block(Params& p) {
  Block* candidate = find_expandable_block(p);
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, p.size))) return false;
  while (candidate->size < p.size) {
    // free -> unmapped: map what is missing; the mapped range absorbs candidate.
    Block* next = candidate->next;
    if (next == nullptr) return false;  // the segment's address space ends here
    if (!map_block(next, std::min(p.size - candidate->size, next->size))) return false;
    candidate = next;
  }
  p.pool->blocks.erase(candidate);
  p.block = candidate;
  return true;
}

// alloc_found_block: split off the remainder when worth it.
CachingModel::Block* CachingModel::take_found_block(Params& p, uint64_t requested) {
  Block* block = p.block;
  if (should_split(block, p.size)) {
    Block* remaining = block;
    block = new_block();
    block->ptr = remaining->ptr;
    block->size = p.size;
    block->stream = remaining->stream;
    block->small = remaining->small;
    block->segment = remaining->segment;
    block->prev = remaining->prev;
    if (block->prev != nullptr) block->prev->next = block;
    block->next = remaining;
    remaining->prev = block;
    remaining->ptr += p.size;
    remaining->size -= p.size;
    insert_free(remaining);
  }
  block->allocated = true;
  block->requested = requested;
  allocated_ += block->size;
  requested_ += requested;
  live_[block->ptr] = block;
  return block;
}

uint64_t CachingModel::allocate(uint64_t bytes, int64_t stream) {
  Params p;
  p.size = caching_round_size(bytes, settings_);
  p.stream = stream;
  p.pool = &pool_of(p.size <= kSmallSize);
  p.alloc_size = allocation_size(p.size);
  bool found = get_free_block(p);
  if (!found) {
    if (gc_active()) garbage_collect_cached_blocks();
    found = alloc_block(p) || (release_available_cached_blocks(p) && alloc_block(p));
    if (!found) {
      release_cached();
      found = alloc_block(p);
    }
  }
  if (!found) {
    // PyTorch raises OutOfMemoryError here; the replay goes on past the capacity.
    ++out_of_memory_;
    ignore_capacity_ = true;
    found = get_free_block(p) || alloc_block(p);
    ignore_capacity_ = false;
  }
  return take_found_block(p, bytes)->ptr;
}

// try_merge_blocks: `src` (a neighbour of `dst`) joins dst when it is free
// and in the same mapping state. dst is in no set while it changes.
uint64_t CachingModel::try_merge_blocks(Block* dst, Block* src) {
  if (src == nullptr || src->allocated || dst->mapped != src->mapped) return 0;
  Pool& pool = pool_of(src->small);
  if (src->mapped) {
    pool.blocks.erase(src);
  } else {
    pool.unmapped.erase(src);
  }
  if (dst->prev == src) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev != nullptr) dst->prev->next = dst;
  } else {
    dst->next = src->next;
    if (dst->next != nullptr) dst->next->prev = dst;
  }
  const uint64_t subsumed = src->size;
  dst->size += subsumed;
  delete_block(src);
  return subsumed;
}

// free_block.
void CachingModel::free_block(Block* block) {
  try_merge_blocks(block, block->prev);
  try_merge_blocks(block, block->next);
  insert_free(block);
}

bool CachingModel::free(uint64_t address) {
  const auto found = live_.find(address);
  if (found == live_.end()) return false;
  Block* block = found->second;
  live_.erase(found);
  allocated_ -= block->size;
  requested_ -= block->requested;
  block->allocated = false;
  block->requested = 0;
  free_block(block);
  return true;
}

// release_block: cudaFree of an unsplit cached segment.
void CachingModel::release_block(Block* block) {
  pool_of(block->small).blocks.erase(block);
  reserved_ -= block->size;
  ++device_frees_;
  record(SegmentEvent::Kind::kFree, block, block->ptr, block->size);
  segments_.erase(block->segment->self);
  delete_block(block);
}

// release_available_cached_blocks: with max_split_size set, free one cached
// oversize segment large enough for the request, else the largest ones until
// their bytes would be.
bool CachingModel::release_available_cached_blocks(const Params& p) {
  if (max_split_size_ == kUnlimited) return false;
  Pool& pool = *p.pool;
  Block key;
  key.stream = p.stream;
  key.size = std::max(p.size, max_split_size_);
  const auto releasable = [](const Block* b) { return !b->is_split() && !b->segment->expandable; };
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != p.stream) {
    if (it == pool.blocks.begin()) return false;
    uint64_t released = 0;
    std::vector<Block*> chosen;
    --it;
    while (released < key.size && (*it)->size >= max_split_size_ && (*it)->stream == p.stream) {
      if (releasable(*it)) {
        released += (*it)->size;
        chosen.push_back(*it);
      }
      if (it == pool.blocks.begin()) break;
      --it;
    }
    for (Block* b : chosen) release_block(b);
    return released >= key.size;
  }
  if (!releasable(*it)) return false;
  release_block(*it);
  return true;
}

// unmap_block: unmaps the whole pages inside a free expandable block; the
// partial pages at either end stay mapped as free blocks.
void CachingModel::unmap_block(Block* block) {
  const Segment& seg = *block->segment;
  const uint64_t offset = block->ptr - seg.base;
  const uint64_t begin = round_up(offset, seg.page);
  const uint64_t end = (offset + block->size) / seg.page * seg.page;
  if (begin >= end) return;
  Pool& pool = pool_of(block->small);
  pool.blocks.erase(block);
  const uint64_t before = begin - offset;
  const uint64_t after = offset + block->size - end;
  const auto piece = [&](uint64_t at, uint64_t size) {
    Block* b = new_block();
    b->ptr = seg.base + at;
    b->size = size;
    b->stream = block->stream;
    b->small = block->small;
    b->segment = block->segment;
    return b;
  };
  if (before > 0) {
    Block* b = piece(offset, before);
    b->prev = block->prev;
    if (b->prev != nullptr) b->prev->next = b;
    b->next = block;
    block->prev = b;
    insert_free(b);
  }
  if (after > 0) {
    Block* b = piece(end, after);
    b->next = block->next;
    if (b->next != nullptr) b->next->prev = b;
    b->prev = block;
    block->next = b;
    insert_free(b);
  }
  block->ptr = seg.base + begin;
  block->size = end - begin;
  block->mapped = false;
  record(SegmentEvent::Kind::kUnmap, block, block->ptr, block->size);
  try_merge_blocks(block, block->prev);
  try_merge_blocks(block, block->next);
  pool.unmapped.insert(block);
  reserved_ -= end - begin;
  ++device_frees_;
}

// release_blocks: every unsplit cached segment, every fully free page.
void CachingModel::release_blocks(Pool& pool) {
  std::vector<Block*> to_release;
  std::vector<Block*> to_unmap;
  for (Block* b : pool.blocks) {
    if (b->segment->expandable) {
      to_unmap.push_back(b);
    } else if (!b->is_split()) {
      to_release.push_back(b);
    }
  }
  for (Block* b : to_release) release_block(b);
  for (Block* b : to_unmap) {
    unmap_block(b);
    if (!b->mapped && !b->is_split()) {
      // The whole segment is unmapped: its address range goes too.
      pool.unmapped.erase(b);
      segments_.erase(b->segment->self);
      delete_block(b);
    }
  }
}

void CachingModel::release_cached() {
  release_blocks(*large_);
  release_blocks(*small_);
}

// garbage_collect_cached_blocks: free unsplit cached large segments that
// waited longer than the average, until reserved bytes are back under the
// threshold.
void CachingModel::garbage_collect_cached_blocks() {
  const auto threshold =
      static_cast<uint64_t>(settings_.garbage_collection_threshold * static_cast<double>(settings_.capacity_bytes));
  if (reserved_ <= threshold) return;
  const uint64_t target = reserved_ - threshold;
  const auto age = [&](const Block* b) { return large_->get_free_block_calls - b->gc_base; };
  const auto freeable = [](const Block* b) { return !b->is_split() && !b->segment->expandable; };
  int64_t total_age = 0;
  int64_t count = 0;
  for (const Block* b : large_->blocks) {
    if (freeable(b)) {
      total_age += age(b);
      ++count;
    }
  }
  uint64_t reclaimed = 0;
  bool freed = true;
  while (reclaimed < target && freed && count > 0) {
    const double age_threshold = static_cast<double>(total_age) / static_cast<double>(count);
    freed = false;
    std::vector<Block*> old;
    for (Block* b : large_->blocks) {
      if (freeable(b) && static_cast<double>(age(b)) >= age_threshold) old.push_back(b);
    }
    for (Block* b : old) {
      freed = true;
      reclaimed += b->size;
      total_age -= age(b);
      --count;
      release_block(b);
    }
  }
}

void CachingModel::record(SegmentEvent::Kind kind, const Block* block, uint64_t address, uint64_t bytes) {
  if (events_ == nullptr) return;
  events_->push_back({.kind = kind,
                      .request_index = request_index_,
                      .address = address,
                      .bytes = bytes,
                      .stream = block->stream,
                      .small_pool = block->small});
}

bool CachingModel::gc_active() const {
  return settings_.garbage_collection_threshold > 0 && settings_.capacity_bytes != 0;
}

Status CachingModel::check_invariants() const {
  uint64_t mapped = 0;
  uint64_t live_bytes = 0;
  size_t free_mapped = 0;
  size_t unmapped = 0;
  std::unordered_set<const Segment*> seen;
  for (const auto& owned : blocks_) {
    const Block* head = owned.get();
    if (head->prev != nullptr) continue;
    const Segment* seg = head->segment;
    if (!seen.insert(seg).second) return Internal("two first blocks in one segment");
    if (head->ptr != seg->base) return Internal("a segment's first block is not at its base");
    uint64_t bytes = 0;
    for (const Block* b = head; b != nullptr; b = b->next) {
      if (b->segment != seg) return Internal("a block's neighbour is in another segment");
      if (b->ptr != seg->base + bytes) return Internal("the blocks of a segment leave a gap");
      bytes += b->size;
      if (b->mapped) mapped += b->size;
      if (b->allocated) {
        live_bytes += b->size;
        if (!b->mapped) return Internal("an allocated block is not mapped");
        const auto found = live_.find(b->ptr);
        if (found == live_.end() || found->second != b) return Internal("an allocated block is not live");
      } else if (b->mapped) {
        ++free_mapped;
        if (pool_of_const(b->small).blocks.count(const_cast<Block*>(b)) == 0) {
          return Internal("a free block is not in its pool");
        }
      } else {
        ++unmapped;
        if (pool_of_const(b->small).unmapped.count(const_cast<Block*>(b)) == 0) {
          return Internal("an unmapped range is not in its pool");
        }
      }
      if (b->next != nullptr && !b->allocated && !b->next->allocated && b->mapped == b->next->mapped) {
        return Internal("two free neighbours were not merged");
      }
    }
    if (bytes != seg->size) return Internal("a segment's blocks do not cover it");
  }
  if (seen.size() != segments_.size()) return Internal("a segment without blocks");
  if (free_mapped != small_->blocks.size() + large_->blocks.size()) return Internal("a pool holds a stale block");
  if (unmapped != small_->unmapped.size() + large_->unmapped.size()) return Internal("a pool holds a stale range");
  if (mapped != reserved_) return Internal("reserved bytes differ from the mapped segments");
  if (live_bytes != allocated_) return Internal("allocated bytes differ from the live blocks");
  return Status::Ok();
}

namespace {

// The caching model under the trace driver: a block's handle is its address.
struct CachingDriven {
  CachingModel& model;
  ModelResult& r;

  void begin_request(int64_t index) { model.set_request_index(index); }
  StatusOr<uint64_t> allocate(int64_t, const Request& q) { return model.allocate(q.size, q.stream); }
  bool free(uint64_t address) { return model.free(address); }
  void empty_cache() { model.release_cached(); }
  void end_request(int64_t index) {
    if (model.reserved() > r.peak_reserved_bytes) {
      r.peak_reserved_bytes = model.reserved();
      r.peak_request_index = index;
    }
    r.peak_allocated_bytes = std::max(r.peak_allocated_bytes, model.allocated());
    r.peak_requested_bytes = std::max(r.peak_requested_bytes, model.requested());
  }
};

StatusOr<ModelResult> replay_caching(const DeviceTrace& trace, const AllocatorSettings& settings, bool expandable) {
  MEMPLAN_RETURN_IF_ERROR(CachingModel::check_settings(settings));
  AddressSpace space(address_base(trace));
  CachingModel model(settings, expandable, space);
  MEMPLAN_RETURN_IF_ERROR(model.load_start(trace.start));
  std::unordered_map<uint64_t, uint64_t> address_of;  // request id -> the model's block
  for (const StartSegment& s : trace.start) {
    for (const StartBlock& b : s.blocks) {
      if (b.allocated) address_of.emplace(s.address + b.offset, s.address + b.offset);
    }
  }
  ModelResult r;
  CachingDriven driven{model, r};
  model.record_events(&r.segment_events);
  r.start_reserved_bytes = model.reserved();
  r.peak_reserved_bytes = model.reserved();
  r.peak_allocated_bytes = model.allocated();
  r.peak_requested_bytes = model.requested();
  MEMPLAN_RETURN_IF_ERROR(drive_requests(trace, address_of, driven));
  r.final_reserved_bytes = model.reserved();
  r.device_allocations = model.device_allocations();
  r.device_frees = model.device_frees();
  r.out_of_memory = model.out_of_memory();
  r.requests = trace.requests.size();
  model.record_events(nullptr);
  MEMPLAN_RETURN_IF_ERROR(model.check_invariants());
  return r;
}

}  // namespace

StatusOr<ModelResult> simulate_caching(const DeviceTrace& trace, const AllocatorSettings& settings) {
  return replay_caching(trace, settings, settings.expandable_segments);
}

StatusOr<ModelResult> simulate_expandable_segments(const DeviceTrace& trace, const AllocatorSettings& settings) {
  return replay_caching(trace, settings, true);
}

}  // namespace memplan::simulate
