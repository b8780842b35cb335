// helper_exchange.h — what solve_minimize's thread and its helper threads
// (seeded_helpers.h, sat/sat_helper.h) share: a floor that only rises, a
// ceiling that only falls, and the helpers' best plan.
//
// Thread-safety: every member may be called from any thread. The bounds are
// lock-free; the plan is guarded by a mutex (taken only when a helper offers
// a plan or the caller takes one).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace memplan::solver {

// A plan a helper found: one offset per item.
struct HelperPlan {
  int64_t arena = 0;  // max over items of offset + size
  std::vector<int64_t> offsets;
  std::chrono::steady_clock::time_point at;  // when the helper found it
};

class BoundsExchange {
 public:
  BoundsExchange(int64_t floor, int64_t ceiling) : floor_(floor), ceiling_(ceiling) {}

  // Raises the floor to `floor` and lowers the ceiling to `ceiling` where
  // they improve; never the other way.
  void publish(int64_t floor, int64_t ceiling) {
    int64_t seen = floor_.load(std::memory_order_relaxed);
    while (seen < floor && !floor_.compare_exchange_weak(seen, floor, std::memory_order_relaxed)) {
    }
    seen = ceiling_.load(std::memory_order_relaxed);
    while (seen > ceiling && !ceiling_.compare_exchange_weak(seen, ceiling, std::memory_order_relaxed)) {
    }
  }
  int64_t floor() const { return floor_.load(std::memory_order_relaxed); }
  int64_t ceiling() const { return ceiling_.load(std::memory_order_relaxed); }

  // Keeps `plan` if it is below the best offered so far, and lowers the
  // ceiling to its arena. Returns whether it was kept.
  bool offer(HelperPlan plan) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (best_ && best_->arena <= plan.arena) return false;
    publish(floor(), plan.arena);
    best_ = std::move(plan);
    return true;
  }
  // The best plan offered, when its arena is below `than`.
  std::optional<HelperPlan> take_better(int64_t than) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!best_ || best_->arena >= than) return std::nullopt;
    return best_;
  }

 private:
  std::atomic<int64_t> floor_;
  std::atomic<int64_t> ceiling_;
  std::mutex mutex_;  // guards best_
  std::optional<HelperPlan> best_;
};

// The caller's side of a helper's exchange, shared by the helper classes
// (SeededHelpers, SatHelper): they inherit it and trade through exchange_.
class HelperBounds {
 public:
  // The caller's bounds: the shared floor only rises, the ceiling only falls.
  void publish(int64_t floor, int64_t ceiling) { exchange_.publish(floor, ceiling); }
  // The shared floor (raised by the caller, or by a helper's refutation).
  int64_t floor() const { return exchange_.floor(); }
  // The helpers' best plan, when its arena is below `than`.
  std::optional<HelperPlan> take_better(int64_t than) { return exchange_.take_better(than); }

 protected:
  HelperBounds(int64_t floor, int64_t ceiling) : exchange_(floor, ceiling) {}
  ~HelperBounds() = default;

  BoundsExchange exchange_;
};

}  // namespace memplan::solver
