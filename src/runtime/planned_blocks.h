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
#include <vector>

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

}  // namespace memplan::runtime
