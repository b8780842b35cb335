// planned_blocks.h — the blocks of a plan as allocators that do not trust the
// order of requests serve them (Note [Operator-scoped safety] in
// src/torch/torch_allocator.h): each block knows the blocks it shares bytes
// with, and is handed out only when neither it nor any of them is live.
//
// Users: the libtorch allocator (keys by operator: another interleaving of
// operators is not the profiled order) and the device replay allocator
// (runtime/device/: device memory cannot carry the drop-in's tick headers).
//
// Cost: link_overlaps sorts by offset and sweeps, O(n log n + overlaps);
// can_serve is O(1 + overlaps of the block), tens in the torchvision plans.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "memplan/status.h"

namespace memplan::runtime {

struct PlannedBlock {
  int64_t offset = 0;             // where the block starts in the slab
  int64_t size = 0;               // the request's size (bytes a request may use)
  std::vector<int32_t> overlaps;  // blocks sharing at least one byte with this one
  bool live = false;
};

// Fills every block's overlaps. Blocks of size 0 are taken as 1 byte long.
// `Block` is PlannedBlock or a type derived from it.
template <class Block>
void link_overlaps(std::vector<Block>& blocks) {
  std::vector<int32_t> by_offset(blocks.size());
  std::iota(by_offset.begin(), by_offset.end(), 0);
  std::sort(by_offset.begin(), by_offset.end(), [&](int32_t a, int32_t b) {
    return blocks[static_cast<size_t>(a)].offset < blocks[static_cast<size_t>(b)].offset;
  });
  for (size_t a = 0; a < by_offset.size(); ++a) {
    PlannedBlock& ea = blocks[static_cast<size_t>(by_offset[a])];
    for (size_t b = a + 1; b < by_offset.size(); ++b) {
      PlannedBlock& eb = blocks[static_cast<size_t>(by_offset[b])];
      if (eb.offset >= ea.offset + std::max<int64_t>(ea.size, 1)) break;
      ea.overlaps.push_back(by_offset[b]);
      eb.overlaps.push_back(by_offset[a]);
    }
  }
}

// True when block `i` may be handed out now: neither it nor a block sharing
// its bytes is live.
template <class Block>
bool can_serve(const std::vector<Block>& blocks, size_t i) {
  const PlannedBlock& block = blocks[i];
  if (block.live) return false;
  for (const int32_t k : block.overlaps) {
    if (blocks[static_cast<size_t>(k)].live) return false;
  }
  return true;
}

// The invariants of the live blocks: each is indexed by its offset in
// `live_at` (offset -> block), `live_count` counts them, no two share a byte,
// and none ends past `mapped_bytes` of slab.
template <class Block>
Status check_live_blocks(const std::vector<Block>& blocks, const std::unordered_map<int64_t, int32_t>& live_at,
                         int64_t live_count, size_t mapped_bytes) {
  std::vector<const PlannedBlock*> live;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!blocks[i].live) continue;
    const auto found = live_at.find(blocks[i].offset);
    if (found == live_at.end() || static_cast<size_t>(found->second) != i) {
      return Internal("live block at offset " + std::to_string(blocks[i].offset) + " is not indexed");
    }
    live.push_back(&blocks[i]);
  }
  if (static_cast<int64_t>(live.size()) != live_count || live.size() != live_at.size()) {
    return Internal("live block count " + std::to_string(live_count) + " disagrees with " + std::to_string(live.size()) +
                    " live blocks");
  }
  std::sort(live.begin(), live.end(), [](const PlannedBlock* a, const PlannedBlock* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < live.size(); ++i) {
    if (live[i - 1]->offset + live[i - 1]->size > live[i]->offset) {
      return Internal("live blocks at offsets " + std::to_string(live[i - 1]->offset) + " and " +
                      std::to_string(live[i]->offset) + " share bytes");
    }
  }
  if (!live.empty() && live.back()->offset + live.back()->size > static_cast<int64_t>(mapped_bytes)) {
    return Internal("a live block ends past the slab");
  }
  return Status::Ok();
}

}  // namespace memplan::runtime
