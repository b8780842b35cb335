// bench/supermalloc/driver.cc: runs OmniMalloc's exact search (SuperMalloc) on one
// MiniMalloc-format CSV problem, for side-by-side measurement only.
//
// Not part of memplan's build (bench/CMakeLists.txt globs bench/*.cc only):
// bench/supermalloc_compare.sh compiles this file
// together with the C++ sources of an OmniMalloc checkout named on its command
// line. Nothing of OmniMalloc is kept in this repository.
//
// The driver repeats the steps of OmniMalloc's Python front end for its
// supermalloc allocator (as published), so that the measured search is the
// one its users get:
//   1. the deadline starts before any set-up;
//   2. a greedy portfolio (the search orders, input order, then the extra
//      greedy orders) gives the incumbent;
//   3. rounds of the threaded search, each with one member per (search order,
//      bound) pair, the bounds a short ladder from the incumbent towards the
//      load (one bound per three threads), until the search finds nothing
//      below the incumbent (proof, if time was left) or the budget runs out.
//
// Usage: supermalloc_driver PROBLEM.csv SECONDS THREADS [SOLUTION.csv]
// Prints one JSON object: load, arena, proven, wall_s, cpu_s. With
// SOLUTION.csv, writes the plan as id,lower,upper,size,offset for an
// independent check (memplan validate).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "allocators/supermalloc.hpp"

namespace {

struct Row {
  int64_t id, lower, upper, size;
};

std::vector<Row> read_problem(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<Row> rows;
  std::string line;
  std::getline(in, line);  // header: id,lower,upper,size
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream fields(line);
    Row r{};
    if (!(fields >> r.id >> r.lower >> r.upper >> r.size)) {
      throw std::runtime_error("bad line in " + path + ": " + line);
    }
    rows.push_back(r);
  }
  return rows;
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Exclusive bounds for one round: the incumbent, then one above the load, then
// a quarter and an eighth of the gap, as many as `rungs`.
std::vector<int64_t> bound_ladder(int64_t low, int64_t high, int rungs) {
  const int64_t gap = high - low;
  std::vector<int64_t> ladder = {high, low + 1, low + gap / 4, low + gap / 8};
  ladder.resize(std::min<size_t>(ladder.size(), static_cast<size_t>(rungs)));
  std::set<int64_t, std::greater<>> unique;
  for (int64_t b : ladder) {
    if (low < b && b <= high) unique.insert(b);
  }
  return {unique.begin(), unique.end()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: supermalloc_driver PROBLEM.csv SECONDS THREADS [SOLUTION.csv]\n";
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  namespace om = omnimalloc;
  const std::vector<Row> rows = read_problem(argv[1]);
  const double budget = std::stod(argv[2]);
  const int threads = std::stoi(argv[3]);

  std::vector<om::Allocation> allocations;
  allocations.reserve(rows.size());
  for (const Row& r : rows) allocations.emplace_back(r.id, r.size, r.lower, r.upper);

  const double cpu0 = cpu_seconds();
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration<double>(budget);
  auto remaining = [&] { return std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count()); };

  const std::vector<std::string> search_orders = {"WAT", "TAW", "TWA"};
  std::vector<std::string> greedy_orders = search_orders;
  greedy_orders.emplace_back("");
  for (const char* extra : {"AWT", "ATW", "WTA", "ZAT", "ZTA", "OAT", "OTA", "LAT", "UAT"}) {
    greedy_orders.emplace_back(extra);
  }

  const om::Partition base = om::Partition::from_allocations(allocations);
  std::vector<om::Partition> partitions;
  for (const auto& order : search_orders) partitions.push_back(base.reorder(order));
  om::Solution best = om::greedy_pack_portfolio(base, greedy_orders, remaining(), threads);
  const int64_t low = base.lower_bound();
  int64_t peak = best.peak;

  const int rungs = std::max(1, threads / static_cast<int>(partitions.size()));
  const om::SearchOptions options{
      .canonical = true, .dominance = true, .floor_inference = true, .monotonic_floor = true, .decompose = true};
  bool exhausted = false;
  while (peak > low) {
    if (remaining() <= 0) break;
    const std::vector<int64_t> bounds = bound_ladder(low, peak, rungs);
    std::vector<om::Partition> members;
    for (int64_t b : bounds) {
      for (const auto& p : partitions) members.push_back(p.with_bound(b));
    }
    std::optional<om::Solution> found =
        om::try_solve_many(members, bounds.front(), std::nullopt, options, remaining(), threads);
    if (!found) {
      exhausted = remaining() > 0;
      break;
    }
    best = std::move(*found);
    peak = best.peak;
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  const bool proven = peak <= low || exhausted;

  if (argc > 4) {
    std::ofstream out(argv[4]);
    out << "id,lower,upper,size,offset\n";
    for (const auto& a : best.allocations) {
      out << std::get<int64_t>(a.id()) << ',' << a.start() << ',' << a.end() << ',' << a.size() << ','
          << a.offset().value_or(-1) << '\n';
    }
  }
  std::cout << "{\"load\": " << low << ", \"arena\": " << peak << ", \"proven\": " << (proven ? "true" : "false")
            << ", \"wall_s\": " << wall << ", \"cpu_s\": " << cpu << "}\n";
  return 0;
}
