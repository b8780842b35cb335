// sat_helper.cc — the SAT helper thread of sat_helper.h.
#include "solver/sat/sat_helper.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>
#include <utility>

#include "solver/sat/sat_encoding.h"
#include "solver/sections.h"

namespace memplan::solver {

namespace {

using Clock = std::chrono::steady_clock;

// Stops a solve at the end of its slice, or when the helper must stop.
class SliceEnd : public CaDiCaL::Terminator {
 public:
  explicit SliceEnd(const std::function<bool()>& halted) : halted_(halted) {}
  void arm(Clock::time_point at) { at_ = at; }
  bool terminate() override { return Clock::now() >= at_ || halted_(); }

 private:
  const std::function<bool()>& halted_;
  Clock::time_point at_{};
};

int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace

bool SatHelper::applies(const std::vector<CanonicalSearch::Item>& items, int64_t ceiling, int64_t max_clauses,
                        int64_t* unit) {
  if (items.empty() || ceiling <= 0) return false;
  int64_t g = 0;
  for (const auto& item : items) {
    if (item.fixed_offset >= 0) return false;
    g = std::gcd(g, item.size);
  }
  std::vector<int64_t> lower, upper;
  std::vector<int32_t> size;
  for (const auto& item : items) {
    if (g % item.alignment != 0) return false;
    lower.push_back(item.lower);
    upper.push_back(item.upper);
    size.push_back(static_cast<int32_t>(std::min<int64_t>(item.size / g, INT32_MAX)));
  }
  const int64_t cmax = (ceiling - 1) / g;
  if (cmax > (1 << 20)) return false;  // beyond any useful encoding
  // Pairs first counted cheaply: the layout itself needs memory per pair.
  const LayoutSize measured = measure_sections(lower, upper);
  if (measured.overlapping_pairs * 2 > max_clauses) return false;
  const SectionLayout layout = build_sections(lower, upper);
  if (sat_pair_clauses(layout, size, static_cast<int32_t>(cmax)) > max_clauses) return false;
  *unit = g;
  return true;
}

SatHelper::SatHelper(const std::vector<CanonicalSearch::Item>& items, int64_t unit, const StopCondition& stop,
                     int64_t floor, int64_t ceiling, std::vector<int64_t> hint, Mode mode,
                     std::atomic<bool>* finished)
    : items_(items), unit_(unit), hint_(std::move(hint)), mode_(mode), finished_(finished), stop_(stop),
      exchange_(floor, ceiling) {
  thread_ = std::thread([this] {
    run();
    if (finished_ != nullptr) finished_->store(true, std::memory_order_relaxed);
  });
}

SatHelper::~SatHelper() { join(); }

void SatHelper::join() {
  halt_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

bool SatHelper::halted() const { return halt_.load(std::memory_order_relaxed) || stop_.reached(); }

SatHelper::Stats SatHelper::stats() const {
  return {.decisions = decisions_.load(std::memory_order_relaxed),
          .plans = plans_.load(std::memory_order_relaxed),
          .refutations = refutations_.load(std::memory_order_relaxed)};
}

void SatHelper::run() {
  const int64_t g = unit_;
  std::vector<int64_t> lower, upper;
  std::vector<int32_t> size;
  for (const auto& item : items_) {
    lower.push_back(item.lower);
    upper.push_back(item.upper);
    size.push_back(static_cast<int32_t>(item.size / g));
  }
  const int32_t cmax = static_cast<int32_t>((exchange_.ceiling() - 1) / g);
  const int32_t first = static_cast<int32_t>(std::min<int64_t>(ceil_div(exchange_.floor(), g), cmax));
  if (cmax < first) return;
  const SectionLayout layout = build_sections(lower, upper);
  CaDiCaL::Solver solver;
  solver.set("quiet", 1);
  const SatEncoding encoding(solver, layout, size, lower, upper, cmax, first, SatRules{});
  if (hint_.size() == items_.size()) {
    std::vector<int32_t> units(items_.size());
    for (size_t i = 0; i < items_.size(); ++i) {
      units[i] = static_cast<int32_t>(std::clamp<int64_t>(hint_[i] / g, 0, std::max(0, cmax - size[i])));
    }
    encoding.set_phases(solver, units);
  }
  const std::function<bool()> halted = [this] { return this->halted(); };
  SliceEnd slice_end(halted);
  solver.connect_terminator(&slice_end);

  // Decides capacity c (units) for `slice` seconds: true when it answered.
  auto decide = [&](int32_t c, double slice) -> bool {
    slice_end.arm(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(slice)));
    solver.assume(encoding.fit(c));
    const int answer = solver.solve();
    decisions_.fetch_add(1, std::memory_order_relaxed);
    if (answer == 20) {  // UNSAT: no plan fits in c units
      refutations_.fetch_add(1, std::memory_order_relaxed);
      exchange_.publish((static_cast<int64_t>(c) + 1) * g, exchange_.ceiling());
      return true;
    }
    if (answer != 10) return false;
    const std::vector<int32_t> units = encoding.offsets(solver);
    Found found;
    found.offsets.resize(items_.size());
    for (size_t i = 0; i < items_.size(); ++i) {
      found.offsets[i] = static_cast<int64_t>(units[i]) * g;
      found.arena = std::max(found.arena, found.offsets[i] + items_[i].size);
    }
    found.at = Clock::now();
    if (exchange_.offer(std::move(found))) plans_.fetch_add(1, std::memory_order_relaxed);
    return true;
  };

  double slice = 0.25;
  if (mode_ == Mode::kDecide) {
    // One capacity: the largest below the ceiling, until it is answered.
    while (!halted() && !decide(cmax, slice)) slice = std::min(slice * 2, 60.0);
    return;
  }
  while (!halted()) {
    const int64_t floor = exchange_.floor();
    const int64_t ceiling = exchange_.ceiling();
    const int64_t at_floor = std::max<int64_t>(ceil_div(floor, g), first);
    const int64_t below_ceiling = std::min<int64_t>((ceiling - 1) / g, cmax);
    if (below_ceiling < at_floor) break;  // the bounds met
    decide(static_cast<int32_t>(at_floor), slice);
    if (halted()) break;
    const int64_t again = std::min<int64_t>((exchange_.ceiling() - 1) / g, cmax);
    if (again > std::max<int64_t>(ceil_div(exchange_.floor(), g), first)) {
      decide(static_cast<int32_t>(again), slice);
    }
    slice = std::min(slice * 2, 60.0);
  }
}

}  // namespace memplan::solver
