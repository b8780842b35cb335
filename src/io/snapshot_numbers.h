// snapshot_numbers.h — what the snapshot reader, the reconstruction and the
// extraction share: how an address is printed, PyTorch's block rounding and
// its small-pool segment size.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "memplan/snapshot.h"

namespace memplan::snapshot {

constexpr uint64_t kSmallSegmentBytes = uint64_t{2} << 20;  // PyTorch's kSmallBuffer

inline std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

inline uint64_t round_block(uint64_t bytes) {
  return bytes == 0 ? 0 : (bytes + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment;
}

}  // namespace memplan::snapshot
