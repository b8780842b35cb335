// sat_helper.cc — the SAT helper thread of sat_helper.h.
#include "solver/sat/sat_helper.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <utility>

#include "solver/sat/sat_encoding.h"
#include "solver/sections.h"

namespace memplan::solver {

namespace {

using Clock = std::chrono::steady_clock;

// What the encoding takes from the items, sizes in units of g.
struct EncodingInput {
  std::vector<int64_t> lower, upper;
  std::vector<int32_t> size;
};

EncodingInput encoding_input(const std::vector<CanonicalSearch::Item>& items, int64_t g) {
  EncodingInput in;
  for (const auto& item : items) {
    in.lower.push_back(item.lower);
    in.upper.push_back(item.upper);
    in.size.push_back(static_cast<int32_t>(std::min<int64_t>(item.size / g, INT32_MAX)));
  }
  return in;
}

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
  for (const auto& item : items) {
    if (g % item.alignment != 0) return false;
  }
  const int64_t cmax = (ceiling - 1) / g;
  if (cmax > (1 << 20)) return false;  // beyond any useful encoding
  const EncodingInput in = encoding_input(items, g);
  // Pairs first counted cheaply: the layout itself needs memory per pair.
  const LayoutSize measured = measure_sections(in.lower, in.upper);
  if (measured.overlapping_pairs * 2 > max_clauses) return false;
  const SectionLayout layout = build_sections(in.lower, in.upper);
  if (sat_pair_clauses(layout, in.size, static_cast<int32_t>(cmax)) > max_clauses) return false;
  *unit = g;
  return true;
}

SatHelper::SatHelper(const std::vector<CanonicalSearch::Item>& items, int64_t unit, const StopCondition& stop,
                     int64_t floor, int64_t ceiling, std::vector<int64_t> hint, Mode mode, std::atomic<bool>* finished)
    : HelperBounds(floor, ceiling),
      items_(items),
      unit_(unit),
      hint_(std::move(hint)),
      mode_(mode),
      finished_(finished),
      stop_(stop) {
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
  // A decision is counted before its plan or refutation (released), so
  // reading those first (acquire) gives decisions >= plans + refutations.
  const int64_t plans = plans_.load(std::memory_order_acquire);
  const int64_t refutations = refutations_.load(std::memory_order_acquire);
  return {.decisions = decisions_.load(std::memory_order_relaxed), .plans = plans, .refutations = refutations};
}

void SatHelper::run() {
  const int64_t g = unit_;
  const EncodingInput in = encoding_input(items_, g);
  const std::vector<int32_t>& size = in.size;
  // Capacities in units: at or above the shared floor, below the shared ceiling.
  auto floor_units = [&] { return ceil_div(exchange_.floor(), g); };
  auto below_ceiling_units = [&] { return (exchange_.ceiling() - 1) / g; };
  const int32_t cmax = static_cast<int32_t>(below_ceiling_units());
  const int32_t first = static_cast<int32_t>(std::min<int64_t>(floor_units(), cmax));
  if (cmax < first) return;
  const SectionLayout layout = build_sections(in.lower, in.upper);
  CaDiCaL::Solver solver;
  solver.set("quiet", 1);
  const SatEncoding encoding(solver, layout, size, in.lower, in.upper, cmax, first, SatRules{});
  if (hint_.size() == items_.size()) {
    std::vector<int32_t> units(items_.size());
    for (size_t i = 0; i < items_.size(); ++i) {
      units[i] = static_cast<int32_t>(std::clamp<int64_t>(hint_[i] / g, 0, std::max(0, cmax - size[i])));
    }
    encoding.set_phases(solver, units);
  }
  SolveDeadline slice_end([this] { return halted(); });
  solver.connect_terminator(&slice_end);

  // Decides capacity c (units) for `slice` seconds: true when it answered.
  auto decide = [&](int32_t c, double slice) -> bool {
    slice_end.arm(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(slice)));
    solver.assume(encoding.fit(c));
    const int answer = solver.solve();
    decisions_.fetch_add(1, std::memory_order_relaxed);
    if (answer == 20) {                                      // UNSAT: no plan fits in c units
      refutations_.fetch_add(1, std::memory_order_release);  // after decisions_: see stats()
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
    if (exchange_.offer(std::move(found))) plans_.fetch_add(1, std::memory_order_release);  // see stats()
    return true;
  };

  double slice = 0.25;
  if (mode_ == Mode::kDecide) {
    // One capacity: the largest below the ceiling, until it is answered.
    while (!halted() && !decide(cmax, slice)) slice = std::min(slice * 2, 60.0);
    return;
  }
  // The encoded range of capacities, clamped to the shared bounds now.
  auto at_floor = [&] { return std::max<int64_t>(floor_units(), first); };
  auto below_ceiling = [&] { return std::min<int64_t>(below_ceiling_units(), cmax); };
  while (!halted()) {
    if (below_ceiling() < at_floor()) break;  // the bounds met
    decide(static_cast<int32_t>(at_floor()), slice);
    if (halted()) break;
    if (below_ceiling() > at_floor()) decide(static_cast<int32_t>(below_ceiling()), slice);
    slice = std::min(slice * 2, 60.0);
  }
}

}  // namespace memplan::solver
