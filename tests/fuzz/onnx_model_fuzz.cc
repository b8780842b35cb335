// onnx_model_fuzz.cc — libFuzzer target for the ONNX front end: bytes ->
// ModelProto (Debian's protobuf) -> shape inference (Debian's libonnx) ->
// memplan's graph walk -> Problem.
//
// Built when MEMPLAN_WITH_ONNX is ON in a fuzz build (the default there when
// libonnx-dev is installed). Debian's libonnx and libprotobuf are not
// instrumented, so the fuzzer is guided by coverage of memplan's own code
// only, and ASan sees memplan's accesses, not the libraries'; the parse and
// shape inference still run on every input, so a crash in them shows too. The first input byte picks the input shapes
// tried, so that models with a symbolic batch get past shape inference too.
//
// Properties checked on every input:
//   - an error has a message;
//   - an accepted model gives a problem that passes check_problem, whose
//     lifetimes lie inside [0, nodes], with one operator name per buffer, and
//     a naive plan of it passes the validator.
// The shape computations the front end evaluates (shape_values.cc) run on
// every accepted graph, with the values the fuzzer writes into Constant nodes
// and initializers.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "memplan/planner.h"
#include "memplan/validate.h"
#include "onnx_frontend.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memplan;
  if (size == 0) return 0;
  OnnxOptions options;
  const uint8_t selector = data[0];
  if (selector & 1) options.inputs.push_back({.name = "x", .dims = {static_cast<int64_t>(selector >> 1 & 7), 4}});
  if (selector & 16) options.inputs.push_back({.name = "input", .dims = {1, 3, 8, 8}});
  options.fold_constants = (selector & 32) == 0;
  StatusOr<OnnxExtraction> x = extract_onnx_model(std::span<const uint8_t>(data + 1, size - 1), "fuzz", options);
  if (!x.ok()) {
    require(!x.status().message().empty());
    return 0;
  }
  require(check_problem(x->problem).ok());
  require(x->operators.size() == x->problem.size());
  for (const Buffer& b : x->problem.buffers) {
    require(b.lower >= 0 && b.upper <= static_cast<int64_t>(x->nodes) && b.lower < b.upper);
  }
  StatusOr<Plan> plan = plan_with("naive", x->problem);
  if (plan.ok()) require(validate(x->problem, *plan).ok());
  return 0;
}
