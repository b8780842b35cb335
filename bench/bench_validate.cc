// bench_validate.cc — how the validator scales with the number of buffers.
//
// Shapes:
//   all-live  n buffers live during the same tick [0, 1), stacked one above
//             the other: every pair is live together (the live set is n).
//   dnn       generate_problem's DNN-like layer chain (short lifetimes, a few
//             skip connections), placed by greedy_by_size.
//   random    generate_problem's uniform random lifetimes on [0, 4n),
//             placed by greedy_by_size (the live set grows with n).
// The plans are valid, so the validator does all its work (an invalid plan
// stops at the first violation). Only the validate() call is timed; each cell
// is the median of --repeat runs.
//
// Usage: bench_validate [--sizes N,N,...] [--repeat K] [--shape NAME]...
//   --sizes   buffer counts (default 10000,100000,1000000)
//   --repeat  runs per cell, the median is printed (default 5)
//   --shape   all-live | dnn | random (repeatable; default all three)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "memplan/generate.h"
#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/validate.h"

#include "size_list.h"

namespace {

struct Case {
  memplan::Problem problem;
  memplan::Plan plan;
};

bool make_case(const std::string& shape, size_t n, Case* out) {
  if (shape == "all-live") {
    out->problem = {};
    out->problem.buffers.resize(n);
    std::vector<int64_t> offsets(n);
    int64_t top = 0;
    for (size_t i = 0; i < n; ++i) {
      memplan::Buffer& b = out->problem.buffers[i];
      b.id = std::to_string(i);
      b.lower = 0;
      b.upper = 1;
      b.size = 64 + static_cast<int64_t>(i % 7) * 32;
      offsets[i] = top;
      top += b.size;
    }
    out->plan = memplan::make_plan(out->problem, std::move(offsets));
    return true;
  }
  memplan::ProblemShape s;
  if (shape == "dnn")
    s = memplan::ProblemShape::kDnnLike;
  else if (shape == "random")
    s = memplan::ProblemShape::kRandomIntervals;
  else
    return false;
  out->problem = memplan::generate_problem({.shape = s, .buffers = n, .seed = 1});
  memplan::StatusOr<memplan::Plan> plan = memplan::plan_with("greedy_by_size", out->problem);
  if (!plan.ok()) {
    std::fprintf(stderr, "greedy_by_size failed on %s-%zu: %s\n", shape.c_str(), n, plan.status().to_string().c_str());
    return false;
  }
  out->plan = std::move(*plan);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {10'000, 100'000, 1'000'000};
  int repeat = 5;
  std::vector<std::string> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--sizes" && i + 1 < argc)
      sizes = parse_size_list(argv[++i]);
    else if (arg == "--repeat" && i + 1 < argc)
      repeat = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--shape" && i + 1 < argc)
      shapes.push_back(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--sizes N,N,...] [--repeat K] [--shape all-live|dnn|random]...\n", argv[0]);
      return 2;
    }
  }
  if (shapes.empty()) shapes = {"all-live", "dnn", "random"};

  std::printf("%-9s %9s %12s %14s %10s\n", "shape", "buffers", "max live", "median ms", "verdict");
  for (const std::string& shape : shapes) {
    for (size_t n : sizes) {
      Case c;
      if (!make_case(shape, n, &c)) {
        std::fprintf(stderr, "unknown shape '%s'\n", shape.c_str());
        return 2;
      }
      std::vector<double> ms;
      memplan::ValidationResult result;
      for (int r = 0; r < repeat; ++r) {
        const auto start = std::chrono::steady_clock::now();
        result = memplan::validate(c.problem, c.plan);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      }
      std::sort(ms.begin(), ms.end());
      // Most buffers live at one tick: what the old all-pairs sweep paid per start.
      std::vector<std::pair<int64_t, int>> events;
      for (const memplan::Buffer& b : c.problem.buffers) {
        events.emplace_back(b.lower, 1);
        events.emplace_back(b.upper, -1);
      }
      std::sort(events.begin(), events.end());
      long long live = 0, max_live = 0;
      for (const auto& e : events) max_live = std::max(max_live, live += e.second);
      std::printf("%-9s %9zu %12lld %14.1f %10s\n", shape.c_str(), n, max_live, ms[ms.size() / 2],
                  result.ok() ? "valid" : "INVALID");
      std::fflush(stdout);
    }
  }
  return 0;
}
