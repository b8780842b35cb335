// bench_replay.cc — the replay allocator's fast path against glibc malloc on
// a repeated iteration: ns per alloc+free pair, and minor page faults and
// time per iteration when every block's pages are written.
//
// The iteration is a problem's buffers turned into events (at each tick the
// buffers that end are freed, then those that start are allocated, in id
// order): a CSV (--csv FILE, e.g. a torch trace extracted with `memplan
// extract`) or a built-in pattern of 2,000 requests, 90% of them small
// (16 B - 2 KiB) and 10% large (64 KiB - 4 MiB), each freed 1-20 requests later.
// Both allocators run the same event sequence on one thread; the replay
// allocator is first taken through profiling and planning (not timed), and
// its timed iterations include one mark each.
//
// Usage: bench_replay [--csv FILE] [--iterations N] [--planner NAME]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "memplan/csv.h"
#include "memplan/problem.h"
#include "memplan/replay.h"

namespace {

struct Event {
  bool allocate;
  uint32_t buffer;
};

struct Iteration {
  std::vector<size_t> sizes;
  std::vector<Event> events;
};

Iteration from_problem(const memplan::Problem& problem) {
  Iteration it;
  std::vector<std::pair<int64_t, int64_t>> keyed;  // (tick * 2 + kind, buffer): frees before allocations
  for (size_t i = 0; i < problem.size(); ++i) {
    it.sizes.push_back(static_cast<size_t>(std::max<int64_t>(problem.buffers[i].size, 1)));
    keyed.push_back({problem.buffers[i].lower * 2 + 1, static_cast<int64_t>(i)});
    keyed.push_back({problem.buffers[i].upper * 2, static_cast<int64_t>(i)});
  }
  std::sort(keyed.begin(), keyed.end());
  for (const auto& [key, buffer] : keyed) it.events.push_back({(key & 1) != 0, static_cast<uint32_t>(buffer)});
  return it;
}

Iteration builtin_pattern() {
  memplan::Problem problem;
  uint64_t state = 12345;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (int i = 0; i < 2000; ++i) {
    memplan::Buffer b;
    b.id = std::to_string(i);
    b.lower = i;
    b.upper = i + 1 + static_cast<int64_t>(next() % 20);
    b.size = next() % 10 == 0 ? 65536 + static_cast<int64_t>(next() % (4 << 20)) : 16 + static_cast<int64_t>(next() % 2032);
    problem.buffers.push_back(b);
  }
  return from_problem(problem);
}

class GlibcBacking final : public memplan::BackingAllocator {
 public:
  void* allocate(size_t size, size_t alignment) override {
    if (alignment <= 16) return std::malloc(size);
    void* p = nullptr;
    return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
  }
  void* allocate_zeroed(size_t size) override { return std::calloc(1, size); }
  void* reallocate(void* p, size_t size) override { return std::realloc(p, size); }
  void deallocate(void* p) override { std::free(p); }
  size_t usable_size(void*) override { return 0; }
};

int64_t minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Runs one iteration; with `touch`, writes one byte per 4 KiB of every block.
template <typename Alloc, typename Free>
void run(const Iteration& it, std::vector<void*>& pointers, bool touch, Alloc&& alloc, Free&& release) {
  for (const Event& e : it.events) {
    if (e.allocate) {
      void* p = alloc(it.sizes[e.buffer]);
      pointers[e.buffer] = p;
      if (touch && p) {
        auto* bytes = static_cast<volatile unsigned char*>(p);
        for (size_t k = 0; k < it.sizes[e.buffer]; k += 4096) bytes[k] = 1;
      }
    } else {
      release(pointers[e.buffer]);
    }
  }
}

struct Result {
  double ns_per_pair = 0;
  double ms_per_iteration_touched = 0;
  double faults_per_iteration_touched = 0;
};

template <typename Alloc, typename Free, typename Mark>
Result measure(const Iteration& it, int iterations, Alloc&& alloc, Free&& release, Mark&& mark) {
  using Clock = std::chrono::steady_clock;
  std::vector<void*> pointers(it.sizes.size(), nullptr);
  Result r;
  const auto t0 = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    run(it, pointers, false, alloc, release);
    mark();
  }
  const auto t1 = Clock::now();
  r.ns_per_pair = std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations / it.sizes.size();
  const int64_t f0 = minor_faults();
  const auto t2 = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    run(it, pointers, true, alloc, release);
    mark();
  }
  const auto t3 = Clock::now();
  r.ms_per_iteration_touched = std::chrono::duration<double, std::milli>(t3 - t2).count() / iterations;
  r.faults_per_iteration_touched = static_cast<double>(minor_faults() - f0) / iterations;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string csv;
  std::string planner = "portfolio";
  int iterations = 50;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--csv" && i + 1 < argc) {
      csv = argv[++i];
    } else if (a == "--iterations" && i + 1 < argc) {
      iterations = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--planner" && i + 1 < argc) {
      planner = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_replay [--csv FILE] [--iterations N] [--planner NAME]\n");
      return 1;
    }
  }
  Iteration it;
  if (csv.empty()) {
    it = builtin_pattern();
  } else {
    auto problem = memplan::read_problem_csv(csv);
    if (!problem.ok()) {
      std::fprintf(stderr, "bench_replay: %s\n", problem.status().message().c_str());
      return 1;
    }
    it = from_problem(*problem);
  }
  size_t total = 0;
  for (size_t s : it.sizes) total += s;
  std::printf("iteration: %s, %zu allocations, %.1f MiB allocated in all; %d timed iterations each\n",
              csv.empty() ? "built-in pattern" : csv.c_str(), it.sizes.size(), total / 1048576.0, iterations);

  // glibc: a few untimed iterations first, so that its heap is warm too.
  auto glibc_alloc = [](size_t n) { return std::malloc(n); };
  auto glibc_free = [](void* p) { std::free(p); };
  {
    std::vector<void*> pointers(it.sizes.size());
    for (int i = 0; i < 3; ++i) run(it, pointers, true, glibc_alloc, glibc_free);
  }
  const Result glibc = measure(it, iterations, glibc_alloc, glibc_free, [] {});

  GlibcBacking backing;
  memplan::ReplayConfig config;
  config.planner = planner;
  config.max_slab_bytes = int64_t{8} << 30;
  config.max_threads = 4;
  memplan::ReplayAllocator replay(config, backing);
  auto replay_alloc = [&replay](size_t n) { return replay.allocate(n); };
  auto replay_free = [&replay](void* p) { replay.deallocate(p); };
  const auto plan_start = std::chrono::steady_clock::now();
  {
    std::vector<void*> pointers(it.sizes.size());
    for (int i = 0; i < config.profile_iterations + 1; ++i) {
      run(it, pointers, true, replay_alloc, replay_free);
      replay.mark();
    }
  }
  const double warmup_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - plan_start).count();
  const memplan::ReplayStats before = replay.stats();
  const Result replayed = measure(it, iterations, replay_alloc, replay_free, [&replay] { replay.mark(); });
  const memplan::ReplayStats after = replay.stats();
  const uint64_t requests = 2ull * iterations * it.sizes.size();

  std::printf("replay: planner %s, slab %.1f MiB, %.1f ms to profile %lld iterations and plan; "
              "timed iterations: %.1f%% served from the slab, %llu deviations\n",
              planner.c_str(), after.slab_bytes / 1048576.0, warmup_ms,
              static_cast<long long>(config.profile_iterations), 100.0 * (after.served - before.served) / requests,
              static_cast<unsigned long long>(after.deviations - before.deviations));
  std::printf("\n%-16s %14s %22s %22s\n", "allocator", "ns/alloc+free", "ms/iteration (touch)", "minor faults/iteration");
  std::printf("%-16s %14.1f %22.3f %22.1f\n", "glibc malloc", glibc.ns_per_pair, glibc.ms_per_iteration_touched,
              glibc.faults_per_iteration_touched);
  std::printf("%-16s %14.1f %22.3f %22.1f\n", "memplan replay", replayed.ns_per_pair,
              replayed.ms_per_iteration_touched, replayed.faults_per_iteration_touched);
  return 0;
}
