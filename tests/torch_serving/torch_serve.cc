// torch_serve.cc — runs a TorchScript module through memplan's libtorch
// allocator and checks it against libtorch's default CPU allocator:
//
//   memplan_torch_serve MODEL.pt [--batch B] [--size S] [--threads T] [--iterations N]
//                      [--shapes BxS,BxS,...] [--plain-marks]
//
// First N passes with the default allocator (the reference output, which must
// be the same in every pass), then the TorchReplayAllocator is installed and N
// passes run, one IterationGuard each. With --shapes the input rotates among
// the given batch x size pairs (N passes over the whole list, a reference per
// shape), and each pass is marked with the allocator's shape key of its input
// (TorchReplayAllocator::mark(inputs): one plan per shape), or with a plain
// mark under --plain-marks (to see what keys buy). Exits 0 only if every replayed
// pass gives the reference's bytes, requests were served from the slab, and
// the allocator's invariants hold; prints the statistics either way.
// Knobs come from the MEMPLAN_* environment (docs/runtime.md), plan files
// (MEMPLAN_PLANS, MEMPLAN_SAVE_PLANS) too.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "torch/torch_allocator.h"

namespace {

struct Options {
  std::string model;
  int64_t batch = 1;
  int64_t size = 64;
  int64_t threads = 1;
  int64_t iterations = 8;
  std::vector<std::pair<int64_t, int64_t>> shapes;  // --shapes: (batch, size) in turn
  bool plain_marks = false;
};

bool parse_shapes(const std::string& text, std::vector<std::pair<int64_t, int64_t>>& out) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    long long batch = 0, size = 0;
    char tail = 0;
    if (std::sscanf(item.c_str(), "%lldx%lld%c", &batch, &size, &tail) != 2 || batch <= 0 || size <= 0) return false;
    out.emplace_back(batch, size);
    start = comma + 1;
  }
  return !out.empty();
}

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
    } else if (arg == "--shapes") {
      if (i + 1 >= argc || !parse_shapes(argv[++i], options.shapes)) return false;
    } else if (arg == "--plain-marks") {
      options.plain_marks = true;
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
    std::fprintf(stderr,
                 "usage: %s MODEL.pt [--batch B] [--size S] [--threads T] [--iterations N] [--shapes BxS,...] "
                 "[--plain-marks]\n",
                 argv[0]);
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
  const bool rotating = !options.shapes.empty();
  if (!rotating) options.shapes.emplace_back(options.batch, options.size);
  at::manual_seed(0);
  std::vector<at::Tensor> inputs;
  for (const auto& [batch, size] : options.shapes) inputs.push_back(at::randn({batch, 3, size, size}));
  const size_t kinds = inputs.size();
  const int64_t passes = options.iterations * static_cast<int64_t>(kinds);
  c10::InferenceMode inference;

  std::vector<std::vector<unsigned char>> reference(kinds);
  for (int64_t i = 0; i < passes; ++i) {
    const size_t k = static_cast<size_t>(i) % kinds;
    const std::vector<unsigned char> out = bytes_of(module.forward({inputs[k]}).toTensor());
    if (reference[k].empty()) reference[k] = out;
    if (out != reference[k]) {
      std::fprintf(stderr, "the default allocator's pass %lld differs from its first pass on that shape\n",
                   (long long)i);
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
  for (int64_t i = 0; i < passes; ++i) {
    const size_t k = static_cast<size_t>(i) % kinds;
    const std::vector<c10::IValue> args{inputs[k]};
    at::Tensor out;
    if (rotating) {
      // A boundary before each pass, naming the shape it runs (or not).
      if (options.plain_marks) {
        (*allocator)->mark();
      } else {
        (*allocator)->mark(args);
      }
      out = module.forward(args).toTensor();
    } else {
      memplan::IterationGuard iteration(**allocator);
      out = module.forward(args).toTensor();
    }
    if (bytes_of(out) != reference[k]) {
      std::fprintf(stderr, "replayed pass %lld differs from the default allocator's output\n", (long long)i);
      ++mismatches;
    }
  }
  if (rotating) (*allocator)->mark();
  const memplan::Status invariants = (*allocator)->check_invariants();
  const auto s = (*allocator)->stats();
  (*allocator)->uninstall();
  std::printf(
      "memplan torch: iterations %llu, operators %llu, profiled %llu, served %llu, unplanned %llu, fallback %llu "
      "(busy %llu), deviations %llu, plans %llu, plans loaded %llu, reprofiles %llu, plan failures %llu, "
      "slab %llu bytes, %llu planned buffers, plans held %llu (%llu bytes), growths %llu, evictions %llu\n",
      (unsigned long long)s.iterations, (unsigned long long)s.operators, (unsigned long long)s.profiled,
      (unsigned long long)s.served, (unsigned long long)s.unplanned, (unsigned long long)s.fallback,
      (unsigned long long)s.busy, (unsigned long long)s.deviations, (unsigned long long)s.plans,
      (unsigned long long)s.plans_loaded, (unsigned long long)s.reprofiles, (unsigned long long)s.plan_failures,
      (unsigned long long)s.slab_bytes, (unsigned long long)s.planned_buffers, (unsigned long long)s.plans_held,
      (unsigned long long)s.plan_bytes, (unsigned long long)s.growths, (unsigned long long)s.evictions);
  const uint64_t requests = s.profiled + s.served + s.unplanned + s.fallback;
  std::printf("served %.1f%% of %llu requests\n",
              requests ? 100.0 * static_cast<double>(s.served) / static_cast<double>(requests) : 0.0,
              (unsigned long long)requests);
  if (!invariants.ok()) {
    std::fprintf(stderr, "invariants: %s\n", invariants.message().c_str());
    return 1;
  }
  if (mismatches != 0) return 1;
  if (s.served == 0) {
    std::fprintf(stderr, "nothing was served from the slab\n");
    return 1;
  }
  std::printf("all %lld replayed passes match the default allocator's output (%zu shape(s))\n", (long long)passes,
              kinds);
  return 0;
}
