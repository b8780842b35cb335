// torchscript_trace.cc — memplan_torchscript_trace: loads a TorchScript model,
// runs its forward pass on a random image for a few marked iterations, and,
// when run under the tracer, writes an operator-attributed trace:
//
//   python3 -c "import torch, torchvision; m = torchvision.models.resnet18(weights=None).eval();
//               torch.jit.trace(m, torch.randn(1, 3, 64, 64)).save('resnet18.pt')"
//   memplan trace --output resnet18.trace -- memplan_torchscript_trace resnet18.pt --size 64
//   memplan trace-info resnet18.trace      # ... and the top operators by bytes
//
// Steps: parse the options; torch::set_num_threads; load the module and put
// it in eval mode; install the operator recorder (a no-op without the
// tracer); run 2 unmarked warm-up passes under c10::InferenceMode; then
// `iterations` passes, each preceded by memplan_mark(), and a closing mark.
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "memplan/mark.h"
#include "torch/operator_recorder.h"

#pragma weak memplan_mark

namespace {

struct Options {
  std::string model;
  int iterations = 4;
  int size = 64;
  int threads = 1;
  bool operators = true;  // --no-operators: trace allocations only (to see what the recorder costs)
};

int usage(const char* why) {
  std::fprintf(stderr,
               "memplan_torchscript_trace: %s\n"
               "usage: memplan_torchscript_trace MODEL.pt [--iterations N (4)] [--size PX (64)] [--threads N (1)]\n"
               "                                 [--no-operators]\n",
               why);
  return 2;
}

bool parse_int(const char* text, int low, int* out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < low || v > 1'000'000) return false;
  *out = static_cast<int>(v);
  return true;
}

// This thread's CPU time: with one intra-op thread the pass runs here, and
// unlike the wall clock it does not count time other processes took the core.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

void mark() {
  if (memplan_mark) memplan_mark();
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    int* target = nullptr;
    int low = 1;
    if (std::strcmp(arg, "--iterations") == 0)
      target = &options.iterations;
    else if (std::strcmp(arg, "--size") == 0)
      target = &options.size, low = 8;
    else if (std::strcmp(arg, "--threads") == 0)
      target = &options.threads;
    if (std::strcmp(arg, "--no-operators") == 0) {
      options.operators = false;
    } else if (target) {
      if (i + 1 >= argc || !parse_int(argv[i + 1], low, target)) {
        return usage((std::string(arg) + " needs an integer >= " + std::to_string(low)).c_str());
      }
      ++i;
    } else if (arg[0] == '-' || !options.model.empty()) {
      return usage((std::string("unexpected argument '") + arg + "'").c_str());
    } else {
      options.model = arg;
    }
  }
  if (options.model.empty()) return usage("no model given");

  torch::set_num_threads(options.threads);
  torch::jit::script::Module module;
  try {
    module = torch::jit::load(options.model);
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "memplan_torchscript_trace: cannot load '%s': %s\n", options.model.c_str(),
                 e.what_without_backtrace());
    return 1;
  }
  module.eval();

  memplan::torch_trace::OperatorRecorder recorder;
  const bool attributed = options.operators && recorder.install();
  std::vector<torch::jit::IValue> inputs{torch::randn({1, 3, options.size, options.size})};
  std::vector<double> ms, cpu_ms;
  ms.reserve(options.iterations);  // growing them inside the loop would add allocations to the iterations
  cpu_ms.reserve(options.iterations);
  try {
    c10::InferenceMode guard;
    for (int i = 0; i < 2; ++i) module.forward(inputs);
    for (int i = 0; i < options.iterations; ++i) {
      mark();
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = thread_cpu_ms();
      module.forward(inputs);
      cpu_ms.push_back(thread_cpu_ms() - cpu_start);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    mark();
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "memplan_torchscript_trace: forward failed: %s\n", e.what_without_backtrace());
    return 1;
  }
  recorder.remove();
  std::sort(ms.begin(), ms.end());
  std::sort(cpu_ms.begin(), cpu_ms.end());
  std::printf("%s: %d forward passes at %dx%d, median %.2f ms wall, %.2f ms CPU; operators %s (%u named)\n",
              options.model.c_str(), options.iterations, options.size, options.size, ms[ms.size() / 2],
              cpu_ms[cpu_ms.size() / 2],
              attributed          ? "recorded into the trace"
              : options.operators ? "not recorded (the tracer is not preloaded)"
                                  : "not recorded (--no-operators)",
              memplan::torch_trace::OperatorRecorder::operators_named());
  return 0;
}
