// seeded_helpers.cc — the helper threads of seeded_helpers.h.
// Per decision: the search's nodes (node_budget at most) plus one
// O(items) arena scan when it finds a plan; a mutex only then.
#include "solver/seeded_helpers.h"

#include <algorithm>

#include "core/splitmix.h"
#include "solver/capacity_rounds.h"

namespace memplan::solver {

SeededHelpers::SeededHelpers(const std::vector<CanonicalSearch::Item>& items, const ExactOptions& options,
                             const StopCondition& stop, const Config& config, int64_t floor, int64_t ceiling)
    : HelperBounds(floor, ceiling),
      items_(items),
      options_(options),
      stop_(stop),
      caller_cancel_(stop.cancel),
      config_(config) {
  // The helpers poll halt_ inside a decision; the caller's cancel between
  // decisions (a decision is short) and through join().
  stop_.cancel = &halt_;
  threads_.reserve(static_cast<size_t>(std::max(config.threads, 0)));
  running_.store(std::max(config.threads, 0), std::memory_order_relaxed);
  for (int32_t i = 0; i < config.threads; ++i) {
    threads_.emplace_back([this, i] {
      run(i);
      running_.fetch_sub(1, std::memory_order_release);
    });
  }
}

SeededHelpers::~SeededHelpers() { join(); }

void SeededHelpers::join() {
  halt_.store(true, std::memory_order_relaxed);
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

SeededHelpers::Stats SeededHelpers::stats() const {
  // A probe's nodes are added before it is counted (release), so reading the
  // count first (acquire) gives nodes >= probes, as a caller expects.
  const int64_t probes = probes_.load(std::memory_order_acquire);
  return {.nodes = nodes_.load(std::memory_order_relaxed),
          .probes = probes,
          .plans = plans_.load(std::memory_order_relaxed)};
}

void SeededHelpers::run(int32_t index) {
  CanonicalSearch search(items_, options_);
  const int32_t orders = std::max(search.key_order_count(), 1);
  uint64_t seed = config_.seed + (static_cast<uint64_t>(index) << 40);
  SplitMix64 draws{.state = splitmix64_mix(seed)};
  auto halted = [&] {
    return halt_.load(std::memory_order_relaxed) ||
           (caller_cancel_ != nullptr && caller_cancel_->load(std::memory_order_relaxed)) || stop_.reached();
  };
  // One decision at `capacity` in `bounds`, counted and folded into the
  // shared bounds: a refutation raises the floor (verdicts do not depend on
  // the ordering: a seeded refutation is a proof), a plan is offered.
  auto probe = [&](CapacityBounds& bounds, int64_t capacity, int64_t budget, const StopCondition& stop,
                   int32_t first_order, uint64_t probe_seed) {
    ExactStats stats;
    const SearchVerdict verdict =
        search.decide(capacity, budget, stop, &stats, /*allow_restarts=*/true, first_order, probe_seed);
    nodes_.fetch_add(stats.nodes, std::memory_order_relaxed);
    probes_.fetch_add(1, std::memory_order_release);  // after its nodes: see stats()
    if (verdict == SearchVerdict::kExhausted) {
      bounds.refuted(capacity, search.next_capacity());
      exchange_.publish(bounds.floor(), bounds.ceiling());
    } else if (verdict == SearchVerdict::kFound) {
      int64_t arena = 0;
      for (size_t i = 0; i < items_.size(); ++i) arena = std::max(arena, search.offsets()[i] + items_[i].size);
      if (exchange_.offer({.arena = arena, .offsets = search.offsets(), .at = std::chrono::steady_clock::now()})) {
        plans_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  };
  // Helper 0 first: the dive at the floor (Config::floor_budget), as the
  // decision at that capacity runs (first key order, no jitter).
  if (index == 0 && config_.floor_budget > 0 && !halted()) {
    CapacityBounds bounds(exchange_.floor(), exchange_.ceiling(), config_.granule);
    if (!bounds.closed()) {
      StopCondition dive_stop = stop_;
      if (options_.time_limit_seconds > 0 && config_.floor_share > 0) {
        const auto cap = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(config_.floor_share * options_.time_limit_seconds));
        dive_stop.deadline = dive_stop.has_deadline ? std::min(dive_stop.deadline, cap) : cap;
        dive_stop.has_deadline = true;
      }
      for (int32_t i = 0; i < config_.floor_first && !halted() && !bounds.closed(); ++i) {
        probe(bounds, bounds.floor(), std::max(config_.node_budget, config_.floor_probe_budget), stop_, i % orders,
              seed++);
        bounds.refuted(exchange_.floor() - 1, exchange_.floor());
        bounds.plan_found(exchange_.ceiling());
      }
      if (!bounds.closed() && !halted()) {
        probe(bounds, bounds.floor(), config_.floor_budget, dive_stop, /*first_order=*/0, /*probe_seed=*/0);
      }
    }
  }
  for (int64_t count = 1; !halted(); ++count) {
    CapacityBounds bounds(exchange_.floor(), exchange_.ceiling(), config_.granule);
    if (bounds.closed()) break;
    int64_t k = 1;
    const bool at_floor = config_.floor_every > 0 && count % config_.floor_every == 0;
    const int64_t capacity = at_floor ? bounds.floor() : seeded_capacity(bounds, config_.levels, &draws, &k);
    probe(bounds, capacity, at_floor ? std::max(config_.node_budget, config_.floor_probe_budget) : config_.node_budget,
          stop_, static_cast<int32_t>(k % orders), seed++);
  }
}

}  // namespace memplan::solver
