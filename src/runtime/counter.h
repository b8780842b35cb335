// counter.h — a statistics counter written by one owner and read racily by
// stats(): a plain load and store, no atomic read-modify-write, so that the
// replay fast path can count what it serves for the price of an add.
#pragma once

#include <atomic>
#include <cstdint>

namespace memplan::runtime {

struct Counter {
  std::atomic<uint64_t> value{0};
  void bump() { value.store(value.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
  void set(uint64_t v) { value.store(v, std::memory_order_relaxed); }
  uint64_t get() const { return value.load(std::memory_order_relaxed); }
};

}  // namespace memplan::runtime
