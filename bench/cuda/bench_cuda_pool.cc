// bench_cuda_pool.cc — device allocators replaying one iteration on cuda:0:
// microseconds per alloc+free pair (median over iterations) for
//   cudaMalloc        cudaMalloc / cudaFree (synchronous, the baseline);
//   cudaMallocAsync   cudaMallocAsync / cudaFreeAsync, the device's default pool;
//   no_pool           memplan's no_pool on cuda:0 (stream-ordered, its own pool);
//   page_unit         memplan's page_unit pool on cuda:0 (--page-unit BYTES,
//                     default 4 KiB; cached blocks are reused by rounded size);
// and the device memory each pool still holds after the last iteration (the
// default pool's release threshold is 0: it gives memory back at each
// synchronisation; memplan's own pool keeps it, and page_unit caches blocks).
//
// The iteration: a problem CSV (e.g. bench/data/torch/*.csv) turned into
// requests as bench_replay does (replay_iteration.h). No kernels run; the
// numbers are the allocators' host-side cost.
//
// Usage: bench_cuda_pool [--iterations N] [--page-unit BYTES] FILE.csv...
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "memplan/csv.h"
#include "memplan/pool.h"
#include "replay_iteration.h"

namespace {

struct Allocator {
  const char* name;
  std::function<void*(size_t)> allocate;
  std::function<void(void*)> free;
  std::function<size_t()> reserved;  // device bytes held by the allocator now (null: not visible)
};

size_t pool_reserved(cudaMemPool_t pool) {
  uint64_t value = 0;
  cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &value);
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 50;
  memplan::PoolOptions unit_options;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) {
      iterations = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--page-unit") && i + 1 < argc) {
      unit_options.page_unit_bytes = std::max<int64_t>(1, std::atoll(argv[++i]));
    } else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::printf("usage: bench_cuda_pool [--iterations N] [--page-unit BYTES] FILE.csv...\n");
      return 0;
    } else {
      files.push_back(argv[i]);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "bench_cuda_pool: no problem CSV given (try bench/data/torch/*.csv)\n");
    return 2;
  }
  memplan::StatusOr<memplan::DeviceAllocator*> device = memplan::device_allocator("cuda:0");
  if (!device.ok()) {
    std::fprintf(stderr, "bench_cuda_pool: %s\n", device.status().message().c_str());
    return 1;
  }
  cudaDeviceProp prop = {};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device: %s; %d iterations per allocator, median; page unit %lld B\n\n", prop.name, iterations,
              static_cast<long long>(unit_options.page_unit_bytes));
  std::printf("| problem | requests | allocator | us per pair | MiB held after |\n|---|---|---|---|---|\n");

  for (const std::string& file : files) {
    memplan::StatusOr<memplan::Problem> problem = memplan::read_problem_csv(file);
    if (!problem.ok()) {
      std::fprintf(stderr, "bench_cuda_pool: %s\n", problem.status().message().c_str());
      return 1;
    }
    const memplan::bench::Iteration iteration = memplan::bench::from_problem(*problem);
    auto no_pool = std::move(memplan::make_pool("no_pool", **device)).value();
    auto page_unit = std::move(memplan::make_pool("page_unit", **device, unit_options)).value();
    cudaMemPool_t default_pool = nullptr;
    cudaDeviceGetDefaultMemPool(&default_pool, 0);
    std::vector<Allocator> allocators = {
        {"cudaMalloc",
         [](size_t n) {
           void* p = nullptr;
           cudaMalloc(&p, n);
           return p;
         },
         [](void* p) { cudaFree(p); }, nullptr},
        {"cudaMallocAsync",
         [](size_t n) {
           void* p = nullptr;
           cudaMallocAsync(&p, n, cudaStreamLegacy);
           return p;
         },
         [](void* p) { cudaFreeAsync(p, cudaStreamLegacy); }, [&] { return pool_reserved(default_pool); }},
        {"memplan no_pool", [&](size_t n) { return no_pool->allocate(n, 256); }, [&](void* p) { no_pool->free(p); },
         nullptr},
        {"memplan page_unit", [&](size_t n) { return page_unit->allocate(n, 256); },
         [&](void* p) { page_unit->free(p); }, [&] { return static_cast<size_t>(page_unit->stats().cached_bytes); }},
    };
    for (Allocator& a : allocators) {
      std::vector<void*> blocks(problem->size(), nullptr);
      std::vector<double> us_per_pair;
      for (int it = 0; it < iterations + 2; ++it) {  // two untimed warm-up iterations
        const auto start = std::chrono::steady_clock::now();
        for (const memplan::bench::Event& e : iteration.events) {
          if (e.allocate) {
            blocks[e.buffer] = a.allocate(iteration.sizes[e.buffer]);
          } else {
            a.free(blocks[e.buffer]);
          }
        }
        cudaStreamSynchronize(cudaStreamLegacy);
        const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
        if (it >= 2) us_per_pair.push_back(us / static_cast<double>(problem->size()));
      }
      std::nth_element(us_per_pair.begin(), us_per_pair.begin() + us_per_pair.size() / 2, us_per_pair.end());
      const std::string held =
          a.reserved ? std::to_string(static_cast<double>(a.reserved()) / (1 << 20)).substr(0, 6) : "-";
      std::printf("| %s | %zu | %s | %.3f | %s |\n", file.substr(file.find_last_of('/') + 1).c_str(), problem->size(),
                  a.name, us_per_pair[us_per_pair.size() / 2], held.c_str());
    }
  }
  return 0;
}
