// device_trace.h — what a device allocator was asked, and with which
// settings: the vocabulary the snapshot reader (io) produces and the
// allocator models (allocator_model.h) replay. A core header: it includes
// nothing of the runtime, so that the readers can name a trace without
// reaching the runtime's configuration through the models.
//
// A trace is a start state (the segments held before the first request and
// the blocks they were split into) and the requests after it; allocator_model.h
// says how the models read one.
#pragma once

#include <cstdint>
#include <vector>

namespace memplan::simulate {

// One block of a start segment; blocks tile their segment in address order.
struct StartBlock {
  uint64_t offset = 0;  // from the segment's address
  uint64_t size = 0;
  bool allocated = false;
  uint64_t requested_size = 0;  // what the program asked for (allocated blocks); 0: size
};

struct StartSegment {
  uint64_t address = 0;
  uint64_t size = 0;
  int64_t stream = 0;
  bool small_pool = false;         // PyTorch's small pool (blocks of at most 1 MiB)
  bool expandable = false;         // a mapped range of an expandable segment
  std::vector<StartBlock> blocks;  // empty: one free block of the whole segment
};

struct Request {
  enum class Kind : uint8_t {
    kAlloc,
    kFree,
    // The recorded allocator gave its cached free segments back here (a
    // snapshot's segment_free or segment_unmap not caused by a model's own
    // rule: torch.cuda.empty_cache(), or an out-of-memory retry on a full
    // device). Every model releases what release_cached_blocks would: the
    // caching models their unsplit free segments and fully free pages, memplan
    // its fallback's cache. id and size are ignored.
    kEmptyCache,
  };
  Kind kind = Kind::kAlloc;
  uint64_t id = 0;
  uint64_t size = 0;  // bytes requested (kAlloc)
  int64_t stream = 0;
};

struct DeviceTrace {
  int device = 0;
  std::vector<StartSegment> start;
  std::vector<Request> requests;
};

// PyTorch's allocator settings (PYTORCH_CUDA_ALLOC_CONF, or a snapshot's
// allocator_settings). Defaults are PyTorch's.
struct AllocatorSettings {
  // Blocks of at least this many MiB are never split, and serve only
  // requests of at least this size that are within max_non_split_rounding_mb
  // of them. 0: unlimited. (A snapshot's max_split_size is in bytes, -1 for
  // unlimited.)
  double max_split_size_mb = 0;
  // How much larger than such a request an unsplit block may be (newer
  // PyTorch; older ones fix it at 20 MiB, kLargeBuffer).
  double max_non_split_rounding_mb = 20;
  // Divisions of each power-of-two size interval that a request is rounded up
  // to: one entry applies to every size; sixteen entries are the intervals
  // [1 MiB, 2 MiB), [2 MiB, 4 MiB), ... (the first also covers all smaller
  // sizes, the last all larger ones). Each 0, 1 or a power of two; empty or
  // 0/1: round to 512 bytes only. A snapshot's allocator_settings keys them
  // by the interval's start in MiB ("1", "2", ... "32768"): entry i is key 2^i.
  std::vector<uint64_t> roundup_power2_divisions;
  // Grow one segment per stream and pool instead of allocating new ones
  // (simulate_caching honours it too: it is simulate_expandable_segments then).
  bool expandable_segments = false;
  // With capacity_bytes: free cached large segments not reused for the longest
  // time once reserved bytes pass this fraction of the capacity. 0: off.
  double garbage_collection_threshold = 0;
  // The device's memory (bytes): a segment that would take reserved bytes
  // past it fails as cudaMalloc would, and the allocator frees cached
  // segments and retries; past that the request is an out-of-memory
  // (counted, and served anyway so that the replay goes on). 0: unlimited.
  uint64_t capacity_bytes = 0;
};

}  // namespace memplan::simulate
