// bench_tracer.cc — what the allocation tracer costs: a million allocations
// (and their frees) replayed with and without libmemplan_trace.so preloaded.
//
// The program runs itself as a child process for each measurement, once
// plainly and once under the tracer, several times each, and prints a table:
// ns per event for each, the difference (the tracer's cost per event), and
// the bytes per event of the trace it wrote; and the cost again with the
// clock read on every event (MEMPLAN_TRACE_TIME=1; the default reads it on
// every 8th) and never (MEMPLAN_TRACE_TIME=off). The workload is generated before
// the clock starts (a deterministic mix of small and large sizes with a
// bounded live set, like a network's temporaries), so only malloc and free
// are timed. Runs with 1 and 2 threads show the cost of the shared sequence
// counter.
//
// usage: bench_tracer [--allocations N] [--repeats R] [--library PATH]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "memplan/trace.h"

namespace {

// One step of the replay: allocate `size` bytes into `slot` (freeing what was there).
struct Step {
  uint32_t slot;
  uint32_t size;
};

constexpr uint32_t kSlots = 4096;  // the most blocks live at once, per thread

std::vector<Step> make_workload(size_t allocations, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Step> steps(allocations);
  for (Step& s : steps) {
    s.slot = static_cast<uint32_t>(rng() % kSlots);
    // Mostly small (16 B .. 4 KiB), one in 32 larger (up to 64 KiB): all
    // below glibc's mmap threshold, so the allocator itself stays fast and the
    // tracer's share is visible rather than buried under system calls.
    const uint64_t r = rng();
    s.size = (r % 32 == 0) ? static_cast<uint32_t>(4096 + (r >> 8) % (60u << 10))
                           : static_cast<uint32_t>(16 + (r >> 8) % 4080);
  }
  return steps;
}

// Replays the workload; returns the events made (allocations + frees).
uint64_t replay(const std::vector<Step>& steps) {
  std::vector<void*> slots(kSlots, nullptr);
  uint64_t events = 0;
  for (const Step& s : steps) {
    if (slots[s.slot]) {
      std::free(slots[s.slot]);
      ++events;
    }
    void* p = std::malloc(s.size);
    static_cast<volatile char*>(p)[0] = 1;  // keep the allocation
    slots[s.slot] = p;
    ++events;
  }
  for (void* p : slots) {
    if (p) {
      std::free(p);
      ++events;
    }
  }
  return events;
}

// Child mode: replay on `threads` threads, print "<ns> <events>".
int run_child(size_t allocations, int threads) {
  std::vector<std::vector<Step>> workloads;
  for (int t = 0; t < threads; ++t) workloads.push_back(make_workload(allocations / threads, 1 + t));
  std::vector<uint64_t> events(threads, 0);
  // An untimed pass first: the heap grows and its pages are faulted in, so the
  // timed pass measures malloc and free, not the kernel zeroing new pages.
  {
    std::vector<std::thread> warm;
    for (int t = 0; t < threads; ++t) warm.emplace_back([&, t] { replay(workloads[t]); });
    for (auto& th : warm) th.join();
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { events[t] = replay(workloads[t]); });
  for (auto& th : pool) th.join();
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  uint64_t total = 0;
  for (uint64_t e : events) total += e;
  std::printf("%lld %llu\n", static_cast<long long>(ns), static_cast<unsigned long long>(total));
  return 0;
}

struct Measurement {
  double seconds = 0;
  uint64_t events = 0;
};

// Runs this program as a child in replay mode, optionally under the tracer.
bool measure(const std::string& self, size_t allocations, int threads, const std::string& library,
             const std::string& trace_path, const char* clock_period, Measurement* out) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t child = fork();
  if (child == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    if (!library.empty()) {
      setenv("LD_PRELOAD", library.c_str(), 1);
      setenv("MEMPLAN_TRACE_FILE", trace_path.c_str(), 1);
      if (clock_period) {
        setenv("MEMPLAN_TRACE_TIME", clock_period, 1);
      } else {
        unsetenv("MEMPLAN_TRACE_TIME");
      }
      unsetenv("MEMPLAN_TRACE_PID");
    } else {
      unsetenv("LD_PRELOAD");
    }
    const std::string n = std::to_string(allocations), t = std::to_string(threads);
    execl(self.c_str(), self.c_str(), "--child", n.c_str(), t.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  char buffer[128] = {};
  const ssize_t got = read(fds[0], buffer, sizeof buffer - 1);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  long long ns = 0;
  unsigned long long events = 0;
  if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      std::sscanf(buffer, "%lld %llu", &ns, &events) != 2) {
    return false;
  }
  out->seconds = static_cast<double>(ns) * 1e-9;
  out->events = events;
  return true;
}

std::string find_library(const std::string& requested) {
  if (!requested.empty()) return requested;
#ifdef MEMPLAN_TRACE_PRELOAD_BUILD_PATH
  return MEMPLAN_TRACE_PRELOAD_BUILD_PATH;
#else
  return "";
#endif
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  size_t allocations = 1000000;
  int repeats = 5;
  std::string library_arg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--child" && i + 2 < argc)
      return run_child(std::strtoull(argv[i + 1], nullptr, 10), std::atoi(argv[i + 2]));
    if (a == "--allocations" && i + 1 < argc) {
      allocations = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--repeats" && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--library" && i + 1 < argc) {
      library_arg = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_tracer [--allocations N] [--repeats R] [--library PATH]\n");
      return 2;
    }
  }
  const std::string library = find_library(library_arg);
  if (library.empty() || !std::filesystem::exists(library)) {
    std::fprintf(stderr, "bench_tracer: libmemplan_trace.so not found; pass --library PATH\n");
    return 1;
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string trace_path =
      (std::filesystem::temp_directory_path() / ("bench_tracer_" + std::to_string(getpid()) + ".trace")).string();

  std::printf("tracer cost: %zu allocations and their frees, replayed; median (min) of %d runs each\n", allocations,
              repeats);
  std::printf("library: %s\n\n", library.c_str());
  std::printf("%7s  %9s  %13s  %13s  %13s  %13s  %13s  %11s  %9s\n", "threads", "events", "plain ns/ev", "traced ns/ev",
              "cost ns/ev", "cost, clock 1", "cost, no clock", "bytes/event", "recorded");
  for (int threads : {1, 2}) {
    std::vector<double> plain, traced, every, untimed;
    uint64_t events = 0;
    double bytes_per_event = 0;
    uint64_t recorded = 0;
    for (int r = 0; r < repeats; ++r) {
      Measurement m;
      if (!measure(self, allocations, threads, "", "", nullptr, &m)) {
        std::fprintf(stderr, "bench_tracer: the plain run failed\n");
        return 1;
      }
      plain.push_back(m.seconds * 1e9 / static_cast<double>(m.events));
      events = m.events;
      if (!measure(self, allocations, threads, library, trace_path, "off", &m)) {
        std::fprintf(stderr, "bench_tracer: the traced run (no clock) failed\n");
        return 1;
      }
      untimed.push_back(m.seconds * 1e9 / static_cast<double>(m.events));
      if (!measure(self, allocations, threads, library, trace_path, "1", &m)) {
        std::fprintf(stderr, "bench_tracer: the traced run (clock on every event) failed\n");
        return 1;
      }
      every.push_back(m.seconds * 1e9 / static_cast<double>(m.events));
      if (!measure(self, allocations, threads, library, trace_path, nullptr, &m)) {
        std::fprintf(stderr, "bench_tracer: the traced run failed\n");
        return 1;
      }
      traced.push_back(m.seconds * 1e9 / static_cast<double>(m.events));
      auto trace = memplan::read_trace(trace_path);
      if (!trace.ok()) {
        std::fprintf(stderr, "bench_tracer: %s\n", trace.status().to_string().c_str());
        return 1;
      }
      recorded = trace->events.size();
      bytes_per_event = static_cast<double>(trace->file_bytes) / static_cast<double>(trace->events.size());
      std::filesystem::remove(trace_path);
    }
    const double p = median(plain), t = median(traced), u = median(untimed), e = median(every);
    const double p_min = *std::min_element(plain.begin(), plain.end());
    const double t_min = *std::min_element(traced.begin(), traced.end());
    const double u_min = *std::min_element(untimed.begin(), untimed.end());
    const double e_min = *std::min_element(every.begin(), every.end());
    char plain_cell[32], traced_cell[32], cost_cell[32], untimed_cell[32], every_cell[32];
    std::snprintf(plain_cell, sizeof plain_cell, "%.1f (%.1f)", p, p_min);
    std::snprintf(traced_cell, sizeof traced_cell, "%.1f (%.1f)", t, t_min);
    std::snprintf(cost_cell, sizeof cost_cell, "%.1f (%.1f)", t - p, t_min - p_min);
    std::snprintf(untimed_cell, sizeof untimed_cell, "%.1f (%.1f)", u - p, u_min - p_min);
    std::snprintf(every_cell, sizeof every_cell, "%.1f (%.1f)", e - p, e_min - p_min);
    std::printf("%7d  %9llu  %13s  %13s  %13s  %13s  %13s  %11.2f  %9llu\n", threads,
                static_cast<unsigned long long>(events), plain_cell, traced_cell, cost_cell, every_cell, untimed_cell,
                bytes_per_event, static_cast<unsigned long long>(recorded));
  }
  std::printf(
      "\nns/ev: wall time of the replay / events (allocations + frees), per process, all threads together.\n"
      "cost: traced - plain, with the default clock (read on every 8th event of a thread); clock 1: read on\n"
      "every event (MEMPLAN_TRACE_TIME=1); no clock: MEMPLAN_TRACE_TIME=off. Each process replays\n"
      "once untimed (growing the heap) and once timed; recorded: events in its trace (both passes,\n"
      "plus the process's own start-up and exit allocations).\n");
  return 0;
}
