// replay_fuzz.cc — libFuzzer target for the replay allocator
// (memplan/replay.h): a byte string is an iteration script that runs several
// times, with a mark after each run, so that the allocator profiles it, plans
// it and replays it; bytes that act only on some runs make later runs deviate.
//
// Input: byte 0 sets the number of runs (2..9, low 3 bits; doubled by bit
// 5, so that rotating variants get planned) and whether live blocks are kept
// across run boundaries (bit 4; otherwise every run ends by freeing them);
// bit 6 sets ReplayConfig::min_sequenced_size to 256 (smaller requests take
// no place in the sequence, so runs that differ only in them agree, and the
// small-request pool serves them); bit 7 sets it to 8193 with a pool of one
// 64 KiB chunk, so that the pool fills and sends requests to the backing
// allocator;
// the rest is a sequence of
// operations, each an opcode byte followed by its operands:
//   0-2  allocate (malloc; 2: aligned to 16 << (operand & 7)) of a size from
//        two operand bytes (scaled: tiny, small, or up to 256 KiB)
//   3    free the live block named by the operand
//   4    realloc the live block named by the operand to a size from two bytes
//   5    calloc of a size from two bytes
//   6    mark (an extra iteration boundary inside the script)
//   7    the next operation runs only on odd runs (a deviation)
//   8    free the live block named by the operand through an interior pointer
//        and again after the real free (invalid frees: ignored and counted)
//   9    the next operation runs only on runs r with r % 3 == operand % 3:
//        with 7, up to six structurally different variants in rotation, which
//        the learner tells apart and predicts (Note [Predicted variants])
// Properties checked after every operation: every live block keeps the
// cookie written into its first and last 512 bytes (checked on free and
// realloc), no two live blocks
// overlap, calloc'ed memory is zero, and at the end check_invariants holds.
// Violations abort.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "memplan/backing_allocator.h"
#include "memplan/replay.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

struct Live {
  unsigned char* p;
  size_t size;
  uint64_t serial;
};

unsigned char cookie(uint64_t serial, size_t i) { return static_cast<unsigned char>(serial * 131 + i * 7 + 1); }

// The bytes of a block that carry its cookie: the first and last 512 (all of
// a small block). Overlaps are caught by the address map; the cookie catches
// a block that was written through another one, which starts or ends there.
template <typename F>
void for_cookie_bytes(size_t size, F&& f) {
  constexpr size_t kEdge = 512;
  if (size <= 2 * kEdge) {
    for (size_t i = 0; i < size; ++i) f(i);
    return;
  }
  for (size_t i = 0; i < kEdge; ++i) f(i);
  for (size_t i = size - kEdge; i < size; ++i) f(i);
}

class Harness {
 public:
  explicit Harness(memplan::ReplayAllocator& a) : a_(a) {}

  void add(void* raw, size_t size) {
    if (!raw) return;
    auto* p = static_cast<unsigned char*>(raw);
    // No overlap with any live block: the neighbours in address order.
    auto next = by_address_.lower_bound(p);
    if (next != by_address_.end()) require(p + std::max<size_t>(size, 1) <= next->first);
    if (next != by_address_.begin()) {
      auto prev = std::prev(next);
      require(prev->first + std::max<size_t>(prev->second, 1) <= p);
    }
    const uint64_t serial = ++serial_;
    for_cookie_bytes(size, [&](size_t i) { p[i] = cookie(serial, i); });
    by_address_[p] = size;
    live_.push_back({p, size, serial});
  }

  void check(const Live& b, size_t bytes) const {
    for_cookie_bytes(b.size, [&](size_t i) {
      if (i < bytes) require(b.p[i] == cookie(b.serial, i));
    });
  }

  // Removes and returns the live block chosen by `pick`.
  bool take(uint8_t pick, Live* out) {
    if (live_.empty()) return false;
    const size_t k = pick % live_.size();
    *out = live_[k];
    live_[k] = live_.back();
    live_.pop_back();
    by_address_.erase(out->p);
    return true;
  }

  void free_one(uint8_t pick) {
    Live b;
    if (!take(pick, &b)) return;
    check(b, b.size);
    a_.deallocate(b.p);
  }

  void invalid_frees(uint8_t pick) {
    Live b;
    if (!take(pick, &b)) return;
    check(b, b.size);
    const bool slab = a_.owns(b.p);
    if (slab && b.size > 16) a_.deallocate(b.p + 16);  // interior pointer: ignored
    check(b, b.size);
    a_.deallocate(b.p);
    // Freeing again is harmless only while nothing else starts there.
    if (slab && by_address_.find(b.p) == by_address_.end()) a_.deallocate(b.p);
  }

  void reallocate(uint8_t pick, size_t size) {
    Live b;
    if (!take(pick, &b)) return;
    check(b, b.size);
    void* q = a_.reallocate(b.p, size);
    if (!q) {
      if (size == 0) return;      // realloc(p, 0) freed it
      by_address_[b.p] = b.size;  // failed: p is still valid
      live_.push_back(b);
      return;
    }
    Live moved{static_cast<unsigned char*>(q), b.size, b.serial};
    check(moved, std::min(b.size, size));
    add(q, size);
  }

  void free_all() {
    while (!live_.empty()) free_one(0);
  }

 private:
  memplan::ReplayAllocator& a_;
  std::vector<Live> live_;
  std::map<unsigned char*, size_t> by_address_;
  uint64_t serial_ = 0;
};

size_t size_from(uint8_t hi, uint8_t lo) {
  const size_t v = (size_t{hi} << 8) | lo;
  switch (hi >> 6) {
    case 0:
      return v & 63;  // tiny, including 0
    case 1:
      return v & 4095;  // small
    case 2:
      return (v & 0x3fff) * 2;  // up to 32 KiB
    default:
      return (v & 0x3fff) * 16;  // up to 256 KiB
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || size > 4096) return 0;
  memplan::HeapBacking backing;
  memplan::ReplayConfig config;
  config.profile_iterations = 2;
  config.deviations_to_reprofile = 2;
  config.max_slab_bytes = int64_t{1} << 26;
  config.max_threads = 1;
  config.planner = "greedy_by_size";
  config.huge_pages = false;
  config.plan_in_background = false;  // deterministic: the plan is adopted at the boundary that made it
  config.min_sequenced_size = 0;      // every request in the sequence unless bit 6 or 7 says otherwise
  if (data[0] & 0x40) config.min_sequenced_size = 256;
  if (data[0] & 0x80) {
    config.min_sequenced_size = 8193;
    config.small_pool_bytes = 64 << 10;
  }
  memplan::ReplayAllocator a(config, backing);
  require(a.init_status().ok());
  Harness h(a);
  const int runs = (2 + data[0] % 8) * ((data[0] & 0x20) ? 2 : 1);
  for (int run = 0; run < runs; ++run) {
    bool only_odd = false;
    int only_third = -1;  // op 9: the next operation runs only on runs r with r % 3 == only_third
    for (size_t i = 1; i < size;) {
      const uint8_t op = data[i++] % 10;
      auto operand = [&]() -> uint8_t { return i < size ? data[i++] : 0; };
      const bool skip = (only_odd && run % 2 == 0) || (only_third >= 0 && run % 3 != only_third);
      only_odd = false;
      only_third = -1;
      switch (op) {
        case 0:
        case 1: {
          const uint8_t hi = operand(), lo = operand();
          if (!skip) h.add(a.allocate(size_from(hi, lo)), size_from(hi, lo));
          break;
        }
        case 2: {
          const uint8_t hi = operand(), lo = operand(), al = operand();
          const size_t alignment = size_t{16} << (al & 7);
          if (skip) break;
          void* p = a.allocate(size_from(hi, lo), alignment);
          require(!p || reinterpret_cast<uintptr_t>(p) % alignment == 0);
          h.add(p, size_from(hi, lo));
          break;
        }
        case 3: {
          const uint8_t pick = operand();
          if (!skip) h.free_one(pick);
          break;
        }
        case 4: {
          const uint8_t pick = operand(), hi = operand(), lo = operand();
          if (!skip) h.reallocate(pick, size_from(hi, lo));
          break;
        }
        case 5: {
          const uint8_t hi = operand(), lo = operand();
          if (skip) break;
          const size_t n = size_from(hi, lo);
          auto* p = static_cast<unsigned char*>(a.allocate_zeroed(n));
          for (size_t k = 0; p && k < n; ++k) require(p[k] == 0);
          h.add(p, n);
          break;
        }
        case 6:
          if (!skip) a.mark();
          break;
        case 7:
          only_odd = true;
          break;
        case 8: {
          const uint8_t pick = operand();
          if (!skip) h.invalid_frees(pick);
          break;
        }
        case 9:
          only_third = operand() % 3;
          break;
      }
    }
    // Bit 4 of byte 0 keeps the run's live blocks across the boundary.
    if ((data[0] & 0x10) == 0) h.free_all();
    a.mark();
  }
  require(a.check_invariants().ok());
  h.free_all();
  require(a.check_invariants().ok());
  return 0;
}
