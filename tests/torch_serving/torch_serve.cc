// torch_serve.cc — runs a TorchScript module through memplan's libtorch
// allocator and checks it against libtorch's default CPU allocator:
//
//   memplan_torch_serve MODEL.pt [--batch B] [--size S] [--threads T] [--iterations N]
//
// First N passes with the default allocator (the reference output, which must
// be the same in every pass), then the TorchReplayAllocator is installed and N
// passes run, one IterationGuard each. Exits 0 only if every replayed
// pass gives the reference's bytes, requests were served from the slab, and
// the allocator's invariants hold; prints the statistics either way.
// Knobs come from the MEMPLAN_* environment (docs/runtime.md).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/torch/torch_allocator.h"

namespace {

struct Options {
  std::string model;
  int64_t batch = 1;
  int64_t size = 64;
  int64_t threads = 1;
  int64_t iterations = 8;
};

bool parse(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](int64_t& out) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      out = std::strtoll(argv[++i], &end, 10);
      return *end == '\0' && out > 0;
    };
    if (arg == "--batch") {
      if (!value(options.batch)) return false;
    } else if (arg == "--size") {
      if (!value(options.size)) return false;
    } else if (arg == "--threads") {
      if (!value(options.threads)) return false;
    } else if (arg == "--iterations") {
      if (!value(options.iterations)) return false;
    } else if (options.model.empty() && arg.rfind("--", 0) != 0) {
      options.model = arg;
    } else {
      return false;
    }
  }
  return !options.model.empty();
}

std::vector<unsigned char> bytes_of(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  return {p, p + c.nbytes()};
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, options)) {
    std::fprintf(stderr, "usage: %s MODEL.pt [--batch B] [--size S] [--threads T] [--iterations N]\n", argv[0]);
    return 2;
  }
  at::set_num_threads(static_cast<int>(options.threads));
  torch::jit::script::Module module;
  try {
    module = torch::jit::load(options.model);
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "%s: cannot load the module: %s\n", options.model.c_str(), e.what_without_backtrace());
    return 2;
  }
  module.eval();
  at::manual_seed(0);
  const at::Tensor input = at::randn({options.batch, 3, options.size, options.size});
  c10::InferenceMode inference;

  std::vector<unsigned char> reference;
  for (int64_t i = 0; i < options.iterations; ++i) {
    const std::vector<unsigned char> out = bytes_of(module.forward({input}).toTensor());
    if (i == 0) reference = out;
    if (out != reference) {
      std::fprintf(stderr, "the default allocator's pass %lld differs from its first pass\n", (long long)i);
      return 1;
    }
  }

  auto config = memplan::replay_config_from_environment();
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().message().c_str());
    return 2;
  }
  auto allocator = memplan::torch_serving::TorchReplayAllocator::create(*config);
  if (!allocator.ok()) {
    std::fprintf(stderr, "cannot create the allocator: %s\n", allocator.status().message().c_str());
    return 1;
  }
  if (auto s = (*allocator)->install(); !s.ok()) {
    std::fprintf(stderr, "cannot install the allocator: %s\n", s.message().c_str());
    return 1;
  }
  int64_t mismatches = 0;
  for (int64_t i = 0; i < options.iterations; ++i) {
    memplan::IterationGuard iteration(**allocator);
    const at::Tensor out = module.forward({input}).toTensor();
    if (bytes_of(out) != reference) {
      std::fprintf(stderr, "replayed pass %lld differs from the default allocator's output\n", (long long)i);
      ++mismatches;
    }
  }
  const memplan::Status invariants = (*allocator)->check_invariants();
  const auto s = (*allocator)->stats();
  (*allocator)->uninstall();
  std::printf(
      "memplan torch: iterations %llu, operators %llu, profiled %llu, served %llu, unplanned %llu, fallback %llu "
      "(busy %llu), deviations %llu, plans %llu, reprofiles %llu, plan failures %llu, slab %llu bytes, "
      "%llu planned buffers\n",
      (unsigned long long)s.iterations, (unsigned long long)s.operators, (unsigned long long)s.profiled,
      (unsigned long long)s.served, (unsigned long long)s.unplanned, (unsigned long long)s.fallback,
      (unsigned long long)s.busy, (unsigned long long)s.deviations, (unsigned long long)s.plans,
      (unsigned long long)s.reprofiles, (unsigned long long)s.plan_failures, (unsigned long long)s.slab_bytes,
      (unsigned long long)s.planned_buffers);
  if (!invariants.ok()) {
    std::fprintf(stderr, "invariants: %s\n", invariants.message().c_str());
    return 1;
  }
  if (mismatches != 0) return 1;
  if (s.served == 0) {
    std::fprintf(stderr, "nothing was served from the slab\n");
    return 1;
  }
  std::printf("all %lld replayed passes match the default allocator's output (%zu bytes)\n",
              (long long)options.iterations, reference.size());
  return 0;
}
