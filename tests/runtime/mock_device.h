// mock_device.h — a device for the device replay allocator's tests, made of
// host memory, with streams that run queued "kernels" later, in order per
// stream and in any order across streams, as a GPU does.
//
// MockDevice is a DeviceMemory: reserve/commit/decommit map host pages (in
// granules of 64 KiB, to exercise the rounding the 2 MiB of CUDA's VMM
// needs), allocate/deallocate are the fallback (aligned host blocks, every
// one tracked: a free of a pointer it did not hand out is counted as an
// error; a freed block is never reused, as a stream-ordered free may still
// have work queued before it), and allocate can be made to fail.
//
// MockStreams holds one FIFO of operations per stream: a kernel that fills a
// block with a cookie, and a kernel that checks the cookie is still there. A
// program enqueues them when it allocates and before it frees (a tensor dies
// on the host while the kernels that use it are still queued, as in PyTorch),
// and run_some() executes queued operations of random streams. A check that
// finds another cookie is a block reused while work queued on another stream
// still used it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "runtime/device/device_replay.h"
#include "runtime/os/os_memory.h"

namespace memplan::runtime::testing {

class MockDevice final : public DeviceMemory {
 public:
  static constexpr size_t kGranule = size_t{64} << 10;

  size_t granularity() const override { return kGranule; }
  void* reserve(size_t bytes) override {
    // Over-reserve by a granule so that the window can start on one.
    void* raw = os::reserve(bytes + kGranule);
    if (raw == nullptr) return nullptr;
    const auto aligned = (reinterpret_cast<uintptr_t>(raw) + kGranule - 1) / kGranule * kGranule;
    reservations_[aligned] = {raw, bytes + kGranule};
    return reinterpret_cast<void*>(aligned);
  }
  void release(void* window, size_t) override {
    const auto found = reservations_.find(reinterpret_cast<uintptr_t>(window));
    if (found == reservations_.end()) {
      ++errors;
      return;
    }
    os::release(found->second.first, found->second.second);
    reservations_.erase(found);
  }
  bool commit(void* address, size_t bytes) override {
    if (bytes % kGranule != 0 || reinterpret_cast<uintptr_t>(address) % kGranule != 0) ++errors;
    ++commits;
    return os::commit(address, bytes, false);
  }
  // Unmapping memory that queued kernels still use would fault on a GPU: it
  // is counted (and the mapping left, so that the test goes on).
  void decommit(void* address, size_t bytes) override {
    if (in_use && in_use(address, bytes)) {
      ++unmapped_in_use;
      return;
    }
    os::decommit(address, bytes);
  }
  void* allocate(size_t bytes, void* stream) override {
    if (fail_allocations) return nullptr;
    void* p = std::aligned_alloc(512, (std::max<size_t>(bytes, 1) + 511) / 512 * 512);
    live_.insert(p);
    ++fallback_allocations;
    return p;
  }
  void deallocate(void* p, size_t, void*) override {
    if (live_.erase(p) == 0) {
      ++errors;
      return;
    }
    // cudaFreeAsync is ordered on its stream: work queued before it may still
    // use the block. The mock never reuses a fallback block (kept until the
    // device goes), so fallbacks cannot be what a stream check catches.
    freed_.push_back(p);
  }
  void trim() override { ++trims; }
  void synchronize(void* stream) override {
    ++synchronizes;
    if (on_synchronize) on_synchronize(stream);
  }

  size_t fallback_live() const { return live_.size(); }

  MockDevice() = default;
  MockDevice(const MockDevice&) = delete;
  MockDevice& operator=(const MockDevice&) = delete;
  ~MockDevice() override {
    for (void* p : freed_) std::free(p);
    for (void* p : live_) std::free(p);
  }

  bool fail_allocations = false;
  int64_t errors = 0;  // frees of unknown pointers, misaligned commits, unknown windows
  int64_t commits = 0;
  int64_t trims = 0;
  int64_t fallback_allocations = 0;
  int64_t synchronizes = 0;
  std::function<void(void*)> on_synchronize;  // the streams' drain, in the stream tests
  std::function<bool(void*, size_t)> in_use;  // queued kernels touch this range (the stream tests)
  int64_t unmapped_in_use = 0;                // decommits of memory queued kernels still used

 private:
  std::map<uintptr_t, std::pair<void*, size_t>> reservations_;
  std::set<void*> live_;
  std::vector<void*> freed_;
};

class MockDevices final : public DeviceSet {
 public:
  explicit MockDevices(int count) : devices_(static_cast<size_t>(count)) {}
  DeviceMemory* device(int index) override {
    return index >= 0 && static_cast<size_t>(index) < devices_.size() ? &devices_[static_cast<size_t>(index)] : nullptr;
  }
  MockDevice& operator[](int index) { return devices_[static_cast<size_t>(index)]; }

 private:
  std::deque<MockDevice> devices_;
};

class MockStreams {
 public:
  explicit MockStreams(int streams, uint64_t seed) : queues_(static_cast<size_t>(streams)), rng_(seed) {}

  static void* handle(int stream) { return reinterpret_cast<void*>(static_cast<uintptr_t>(0x5000 + 16 * stream)); }

  // A kernel on `stream` that writes `cookie` over [p, p + bytes).
  void fill(int stream, void* p, size_t bytes, unsigned char cookie) {
    queue(stream).push_back({p, bytes, cookie, true});
  }
  // A kernel on `stream` that checks [p, p + bytes) still holds `cookie`.
  void check(int stream, void* p, size_t bytes, unsigned char cookie) {
    queue(stream).push_back({p, bytes, cookie, false});
  }

  // Runs up to `count` queued kernels, each the head of a random non-empty stream.
  void run_some(int count) {
    for (int i = 0; i < count; ++i) {
      std::vector<size_t> ready;
      for (size_t s = 0; s < queues_.size(); ++s) {
        if (!queues_[s].empty()) ready.push_back(s);
      }
      if (ready.empty()) return;
      run_head(ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng_)]);
    }
  }
  // Runs everything (a device synchronize).
  void drain() {
    for (size_t s = 0; s < queues_.size(); ++s) drain(static_cast<int>(s));
  }
  // Runs everything queued on one stream (a stream synchronize).
  void drain(int stream) {
    while (!queue(stream).empty()) run_head(static_cast<size_t>(stream));
  }
  void drain_handle(void* stream) {
    for (size_t s = 0; s < queues_.size(); ++s) {
      if (handle(static_cast<int>(s)) == stream) drain(static_cast<int>(s));
    }
  }

  // Drops every queued kernel unrun (after a test proved it would have faulted).
  void discard() {
    for (auto& q : queues_) q.clear();
  }

  // True when a queued kernel touches [p, p + bytes).
  bool touches(const void* p, size_t bytes) const {
    const auto* lo = static_cast<const unsigned char*>(p);
    for (const auto& q : queues_) {
      for (const Op& op : q) {
        const auto* at = static_cast<const unsigned char*>(op.p);
        if (at < lo + bytes && lo < at + op.bytes) return true;
      }
    }
    return false;
  }

  int64_t corrupted = 0;  // checks that found another cookie

 private:
  struct Op {
    void* p;
    size_t bytes;
    unsigned char cookie;
    bool fill;
  };
  std::deque<Op>& queue(int stream) { return queues_[static_cast<size_t>(stream)]; }
  void run_head(size_t s) {
    const Op op = queues_[s].front();
    queues_[s].pop_front();
    auto* bytes = static_cast<unsigned char*>(op.p);
    if (op.fill) {
      std::memset(bytes, op.cookie, op.bytes);
      return;
    }
    for (size_t i = 0; i < op.bytes; i += 61) {
      if (bytes[i] != op.cookie) {
        ++corrupted;
        return;
      }
    }
    if (op.bytes > 0 && bytes[op.bytes - 1] != op.cookie) ++corrupted;
  }
  std::vector<std::deque<Op>> queues_;
  std::mt19937_64 rng_;
};

}  // namespace memplan::runtime::testing
