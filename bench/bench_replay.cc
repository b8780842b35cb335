// bench_replay.cc — one allocator replaying one iteration, measured: ns per
// alloc+free pair (median over iterations), minor page faults per iteration
// when every block's pages are written, and the process's peak RSS.
//
// The iteration is a problem's buffers turned into events (at each tick the
// buffers that end are freed, then those that start are allocated, in id
// order): a CSV (--csv FILE, e.g. a torch trace from bench/data/torch/) or a
// built-in pattern of 2,000 requests, 90% small (16 B - 2 KiB) and 10% large
// (64 KiB - 4 MiB), each freed 1-20 requests later.
//
// Allocators (--allocator):
//   malloc      malloc/free of whatever the process has: glibc, or the
//               allocator LD_PRELOADed by bench/replay_allocators.sh
//               (jemalloc, tcmalloc, mimalloc, libmemplan_replay.so; with the
//               drop-in, memplan_mark is found by dlsym and called after each
//               iteration);
//   replay      memplan::ReplayAllocator through its C++ API (glibc behind);
//   page_unit   memplan's page_unit_pool (memplan/pool.h);
//   none        no allocator (every request gets one fixed block): the
//               cost of the loop and the two indirect calls alone.
// With --threads N, N threads run the same iteration concurrently, each with
// its own blocks, in lock step (barrier, one mark, barrier); only the
// alloc/free loop is timed. Iteration steps:
//   1. warm-up: 4 untimed iterations with every block touched (the replay
//      allocator profiles 2, plans at the boundary, and serves from then on);
//   2. timed: --iterations iterations without touching; the median
//      iteration time over all threads divided by the iteration's pairs;
//   3. faults: 5 iterations touching one byte per 4 KiB of every block; minor
//      faults (getrusage, whole process) per iteration.
// Prints one table row (markdown) for the driver script to collect.
//
// Usage: bench_replay [--csv FILE] [--allocator malloc|replay|page_unit|none]
//                     [--label NAME] [--threads N] [--iterations N] [--planner NAME]
//                     [--min-planned-size BYTES] [--header]
#include <dlfcn.h>
#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "memplan/csv.h"
#include "memplan/pool.h"
#include "memplan/problem.h"
#include "memplan/replay.h"
#include "replay_iteration.h"

namespace {

using memplan::bench::Event;
using memplan::bench::from_problem;
using memplan::bench::Iteration;

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
    b.size =
        next() % 10 == 0 ? 65536 + static_cast<int64_t>(next() % (4 << 20)) : 16 + static_cast<int64_t>(next() % 2032);
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

// The allocator under test, called through plain function pointers so that
// every allocator pays the same call overhead in the loop.
struct Subject {
  void* (*alloc)(size_t) = nullptr;
  void (*release)(void*) = nullptr;
  void (*mark)() = nullptr;  // iteration boundary; may be nullptr
  bool touchable = true;     // false: every request shares one block, never written
};

memplan::ReplayAllocator* g_replay = nullptr;
memplan::MemoryPool* g_pool = nullptr;

Subject subject_for(const std::string& name) {
  Subject s;
  if (name == "malloc") {
    s.alloc = [](size_t n) { return std::malloc(n); };
    s.release = [](void* p) { std::free(p); };
    // Under libmemplan_replay.so the drop-in exports memplan_mark.
    s.mark = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "memplan_mark"));
  } else if (name == "replay") {
    s.alloc = [](size_t n) { return g_replay->allocate(n); };
    s.release = [](void* p) { g_replay->deallocate(p); };
    s.mark = [] { g_replay->mark(); };
  } else if (name == "none") {
    // No allocator: one fixed block. What the loop and the calls cost alone.
    static unsigned char block[1 << 16];
    s.alloc = [](size_t) -> void* { return block; };
    s.release = [](void* p) { asm volatile("" : : "r"(p) : "memory"); };
    s.touchable = false;
  } else if (name == "page_unit") {
    s.alloc = [](size_t n) { return g_pool->allocate(n, 16); };
    s.release = [](void* p) { g_pool->free(p); };
  }
  return s;
}

// Runs one iteration; with `touch`, writes one byte per 4 KiB of every block.
void run(const Subject& s, const Iteration& it, std::vector<void*>& pointers, bool touch) {
  for (const Event& e : it.events) {
    if (e.allocate) {
      void* p = s.alloc(it.sizes[e.buffer]);
      pointers[e.buffer] = p;
      if (touch && p && s.touchable) {
        auto* bytes = static_cast<volatile unsigned char*>(p);
        for (size_t k = 0; k < it.sizes[e.buffer]; k += 4096) bytes[k] = 1;
      }
    } else {
      s.release(pointers[e.buffer]);
    }
  }
}

int64_t minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Measured {
  double ns_per_pair = 0;
  double faults_per_iteration = 0;
  double ms_per_touched_iteration = 0;
  double warmup_ms = 0;  // the untimed first iterations (profiling and planning, for replay)
};

Measured measure(const Subject& s, const Iteration& it, int threads, int iterations) {
  constexpr int kWarmup = 4;
  constexpr int kTouched = 5;
  using Clock = std::chrono::steady_clock;
  std::barrier sync(threads);
  std::vector<std::vector<double>> samples(static_cast<size_t>(threads));
  int64_t faults_before = 0, faults_after = 0;
  Clock::time_point touched_start, touched_end;
  double warmup_ms = 0;
  // Thread 0 marks between two barriers, when no thread is inside an iteration.
  auto boundary = [&](int id) {
    sync.arrive_and_wait();
    if (id == 0 && s.mark) s.mark();
    sync.arrive_and_wait();
  };
  auto body = [&](int id) {
    std::vector<void*> pointers(it.sizes.size(), nullptr);
    // Reserved up front: a vector growing inside the timed loop would change
    // the thread's request sequence from one iteration to the next.
    samples[static_cast<size_t>(id)].reserve(static_cast<size_t>(iterations));
    const auto warm_start = Clock::now();
    for (int i = 0; i < kWarmup; ++i) {
      run(s, it, pointers, true);
      boundary(id);
    }
    if (id == 0) warmup_ms = std::chrono::duration<double, std::milli>(Clock::now() - warm_start).count();
    for (int i = 0; i < iterations; ++i) {
      const auto t0 = Clock::now();
      run(s, it, pointers, false);
      const auto t1 = Clock::now();
      samples[static_cast<size_t>(id)].push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
      boundary(id);
    }
    if (id == 0) {
      faults_before = minor_faults();
      touched_start = Clock::now();
    }
    sync.arrive_and_wait();
    for (int i = 0; i < kTouched; ++i) {
      run(s, it, pointers, true);
      boundary(id);
    }
    if (id == 0) {
      faults_after = minor_faults();
      touched_end = Clock::now();
    }
  };
  std::vector<std::thread> workers;
  for (int id = 1; id < threads; ++id) workers.emplace_back(body, id);
  body(0);
  for (auto& w : workers) w.join();
  std::vector<double> all;
  for (const auto& v : samples) all.insert(all.end(), v.begin(), v.end());
  Measured m;
  m.warmup_ms = warmup_ms;
  m.ns_per_pair = median(all) / static_cast<double>(it.sizes.size());
  m.faults_per_iteration = static_cast<double>(faults_after - faults_before) / kTouched;
  m.ms_per_touched_iteration =
      std::chrono::duration<double, std::milli>(touched_end - touched_start).count() / kTouched;
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  std::string csv;
  std::string allocator = "replay";
  std::string label;
  std::string planner = "portfolio";
  int iterations = 50;
  int threads = 1;
  int64_t min_planned_size = 0;
  bool header = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--csv" && i + 1 < argc) {
      csv = argv[++i];
    } else if (a == "--allocator" && i + 1 < argc) {
      allocator = argv[++i];
    } else if (a == "--label" && i + 1 < argc) {
      label = argv[++i];
    } else if (a == "--iterations" && i + 1 < argc) {
      iterations = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::clamp(std::atoi(argv[++i]), 1, 64);
    } else if (a == "--planner" && i + 1 < argc) {
      planner = argv[++i];
    } else if (a == "--min-planned-size" && i + 1 < argc) {
      min_planned_size = std::atoll(argv[++i]);
    } else if (a == "--header") {
      header = true;
    } else {
      std::fprintf(stderr,
                   "usage: bench_replay [--csv FILE] [--allocator malloc|replay|page_unit|none] [--label NAME] "
                   "[--threads N] [--iterations N] [--planner NAME] [--min-planned-size BYTES] [--header]\n");
      return 1;
    }
  }
  if (header) {
    std::printf(
        "| iteration | threads | allocator | ns per alloc+free (median) | minor faults per iteration "
        "(touched) | ms per touched iteration | peak RSS MiB | served from slab |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    return 0;
  }
  Iteration it;
  std::string trace_name = "built-in";
  if (!csv.empty()) {
    auto problem = memplan::read_problem_csv(csv);
    if (!problem.ok()) {
      std::fprintf(stderr, "bench_replay: %s\n", problem.status().message().c_str());
      return 1;
    }
    it = from_problem(*problem);
    trace_name = csv.substr(csv.find_last_of('/') + 1);
  } else {
    it = builtin_pattern();
  }
  if (label.empty()) label = allocator;

  GlibcBacking backing;
  // The MEMPLAN_* knobs apply to the C++ subject as they do to the drop-in
  // (bench/replay_ir.sh plans both at the boundary); the options below win.
  memplan::ReplayConfig config = memplan::read_replay_config(nullptr, nullptr);
  config.planner = planner;
  config.min_planned_size = min_planned_size;
  config.max_slab_bytes = int64_t{4} << 30;
  config.max_threads = threads + 2;
  std::unique_ptr<memplan::ReplayAllocator> replay;
  std::unique_ptr<memplan::MemoryPool> pool;
  if (allocator == "replay") {
    replay = std::make_unique<memplan::ReplayAllocator>(config, backing);
    g_replay = replay.get();
  } else if (allocator == "page_unit") {
    auto made = memplan::make_pool("page_unit", memplan::cpu_device_allocator());
    if (!made.ok()) {
      std::fprintf(stderr, "bench_replay: %s\n", made.status().message().c_str());
      return 1;
    }
    pool = std::move(made).value();
    g_pool = pool.get();
  } else if (allocator != "malloc" && allocator != "none") {
    std::fprintf(stderr, "bench_replay: unknown allocator %s\n", allocator.c_str());
    return 1;
  }
  const Subject s = subject_for(allocator);
  const Measured m = measure(s, it, threads, iterations);

  std::string served = "-";
  if (replay) {
    const memplan::ReplayStats st = replay->stats();
    char text[160];
    std::snprintf(
        text, sizeof text, "%llu of %llu; slab %.1f MiB; warm-up %.0f ms; plan stall %.1f ms",
        static_cast<unsigned long long>(st.served),
        static_cast<unsigned long long>(static_cast<uint64_t>(4 + iterations + 5) * threads * it.sizes.size()),
        st.slab_bytes / 1048576.0, m.warmup_ms, st.max_plan_stall_ns / 1e6);
    served = text;
  } else if (s.mark) {
    using Served = unsigned long long (*)();
    if (auto f = reinterpret_cast<Served>(dlsym(RTLD_DEFAULT, "memplan_replay_served"))) {
      served = std::to_string(f()) + " requests";
    }
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("| %s (%zu allocs) | %d | %s | %.1f | %.1f | %.2f | %.1f | %s |\n", trace_name.c_str(), it.sizes.size(),
              threads, label.c_str(), m.ns_per_pair, m.faults_per_iteration, m.ms_per_touched_iteration,
              usage.ru_maxrss / 1024.0, served.c_str());
  return 0;
}
