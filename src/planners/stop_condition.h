// stop_condition.h — when a planner must give up: the caller's cancel flag
// (PlanOptions::cancel) or the end of its time limit
// (PlanOptions::time_limit_seconds) (internal header).
//
// A planner builds one at entry (the clock starts there) and calls
// should_stop() once per unit of work in its long loops (a buffer placed, a
// peeling round, an object chosen). The flag and the clock are read on the
// first call — so that a flag raised before planning stops the planner before
// any work — and then every kPollInterval calls: a relaxed atomic load and a
// steady_clock read per 256 units cost nothing measurable. When should_stop()
// says true, status() is the error to return: kCancelled when the flag is
// raised, else kDeadlineExceeded.
//
// A composite planner (the portfolio) gives the planners it runs the same flag
// and the time left, with options_for_nested().
//
// Not thread-safe: one per planner run.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "memplan/planner.h"
#include "memplan/status.h"

namespace memplan {

class StopCondition {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr uint32_t kPollInterval = 256;

  StopCondition(const PlanOptions& options, std::string_view planner)
      : options_(options), planner_(planner), has_deadline_(options.time_limit_seconds > 0) {
    if (has_deadline_) {
      deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(options.time_limit_seconds));
    }
  }

  // True when the planner must stop; reads the flag and the clock on the
  // first call and then every kPollInterval calls.
  bool should_stop() {
    if (stopped_) return true;
    if (calls_++ % kPollInterval != 0) return false;
    return should_stop_now();
  }

  // True when the planner must stop; reads the flag and the clock now.
  bool should_stop_now() {
    if (!stopped_) stopped_ = cancelled() || (has_deadline_ && Clock::now() >= deadline_);
    return stopped_;
  }

  bool cancelled() const { return options_.cancel != nullptr && options_.cancel->load(std::memory_order_relaxed); }

  // The error to return once should_stop() said true.
  Status status() const {
    if (cancelled()) return Cancelled(std::string(planner_) + " was cancelled");
    return DeadlineExceeded(std::string(planner_) + " ran out of its time limit of " +
                            std::to_string(options_.time_limit_seconds) + " s");
  }

  // Options for a planner run within this one: the same flag and seed, and
  // the time left (at least a microsecond, so that 0 does not mean "no limit").
  PlanOptions options_for_nested() const {
    PlanOptions nested = options_;
    if (has_deadline_) {
      const double left = std::chrono::duration<double>(deadline_ - Clock::now()).count();
      nested.time_limit_seconds = left > 1e-6 ? left : 1e-6;
    }
    return nested;
  }

  bool has_deadline() const { return has_deadline_; }
  Clock::time_point deadline() const { return deadline_; }

 private:
  const PlanOptions& options_;
  std::string_view planner_;
  bool has_deadline_ = false;
  Clock::time_point deadline_{};
  uint32_t calls_ = 0;
  bool stopped_ = false;
};

}  // namespace memplan
