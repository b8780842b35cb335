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
// How: one global at::RecordFunction callback for the FUNCTION scope (ATen
// operators, on every thread). Its start callback gives the operator's name
// a small integer id (once per name, under a mutex; then from a per-thread
// cache keyed by the name's address, which ATen keeps for the life of the
// operator) and calls memplan_trace_operator_enter(id); its end callback
// calls memplan_trace_operator_exit(). Cost per operator: two RecordFunction
// callbacks (the dispatcher's, ~100-200 ns) and two tracer records (~20 ns).
//
// Without the tracer preloaded the symbols are missing; install() then
// returns false and installs nothing.
#pragma once

#include <cstdint>

namespace memplan::torch_trace {

class OperatorRecorder {
 public:
  // Installs the callback if libmemplan_trace.so is loaded in this process.
  // False (and nothing installed) if it is not.
  bool install();
  // Removes the callback (also done by the destructor).
  void remove();
  ~OperatorRecorder() { remove(); }

  bool installed() const { return handle_ != 0; }
  // Distinct operator names seen so far.
  static uint32_t operators_named();

 private:
  uint64_t handle_ = 0;
};

}  // namespace memplan::torch_trace
