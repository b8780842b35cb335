// operator_recorder.h — tells libmemplan_trace.so which libtorch operator is
// running, so that a trace attributes every allocation to the innermost
// operator of its thread (MemoMalloc's operator provenance).
//
// Why through the tracer and not a recording c10 allocator: much of what an
// operator allocates never passes c10's CPU allocator (oneDNN's scratch
// buffers, posix_memalign in BLAS, std::vector inside kernels). The preloaded
// tracer sees all of it; the recorder only adds operator enter/exit records
// to the same per-thread stream (trace format version 2), which take no
// sequence numbers, so iterations and extracted problems are unchanged.
//
// How: a client of the operator identity (operator_identity.h: the one
// RecordFunction callback memplan registers, shared with the libtorch
// allocator) that asks it to forward operators to the tracer: each name's
// id is announced once with memplan_trace_operator_name, then every operator
// start calls memplan_trace_operator_enter(id) and its end
// memplan_trace_operator_exit(). Cost per operator: the callback (the
// dispatcher's, ~100-200 ns) and two tracer records (~20 ns).
//
// Without the tracer preloaded the symbols are missing; install() then
// returns false and installs nothing.
#pragma once

#include <cstdint>
#include <memory>

#include "torch/operator_identity.h"

namespace memplan::torch_trace {

class OperatorRecorder {
 public:
  // Installs the callback if libmemplan_trace.so is loaded in this process.
  // False (and nothing installed) if it is not.
  bool install();
  // Removes the callback (also done by the destructor).
  void remove() { client_.reset(); }

  bool installed() const { return client_ != nullptr; }
  // Distinct operator names seen so far.
  static uint32_t operators_named() { return torch_identity::operators_named(); }

 private:
  std::unique_ptr<torch_identity::Client> client_;
};

}  // namespace memplan::torch_trace
