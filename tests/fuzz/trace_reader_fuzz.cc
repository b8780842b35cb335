// trace_reader_fuzz.cc — libFuzzer target for the trace file reader and the
// trace -> problem extraction that runs on whatever the reader accepts.
//
// Properties checked on every input the reader accepts:
//   - writing the trace and reading it back gives the same events, with the
//     same operators (format version 2 operator records);
//   - iteration and operator statistics can be computed, and every
//     operator they name is in the trace's table;
//   - every iteration extracts to a problem that passes check_problem, and a
//     naive plan of it passes the validator.
// Inputs the reader rejects must be rejected with a message, never a crash.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "memplan/planner.h"
#include "memplan/trace.h"
#include "memplan/validate.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memplan;
  StatusOr<Trace> trace = parse_trace(std::span<const uint8_t>(data, size), "fuzz");
  if (!trace.ok()) {
    require(!trace.status().message().empty());
    return 0;
  }
  StatusOr<std::string> bytes = format_trace(*trace);
  if (bytes.ok()) {
    const auto* p = reinterpret_cast<const uint8_t*>(bytes->data());
    StatusOr<Trace> again = parse_trace(std::span<const uint8_t>(p, bytes->size()), "fuzz-rewritten");
    require(again.ok());
    require(again->events.size() == trace->events.size());
    for (size_t i = 0; i < trace->events.size(); ++i) {
      require(again->events[i].sequence == trace->events[i].sequence);
      require(again->events[i].size == trace->events[i].size);
      require(again->events[i].pointer == trace->events[i].pointer);
      const uint32_t op = trace->events[i].op;
      require(again->events[i].op == op);
      if (op != kNoOperator) require(again->operators[op] == trace->operators[op]);
    }
  }
  (void)summarize_iterations(*trace);
  for (const OperatorSummary& row : summarize_operators(*trace, 0, trace->events.size())) {
    require(row.op == kNoOperator || row.op < trace->operators.size());
  }
  const int64_t iterations = std::min<int64_t>(trace->iteration_count(), 4);
  for (int64_t it = 0; it < iterations; ++it) {
    StatusOr<Extraction> extraction = extract_iteration(*trace, it);
    if (!extraction.ok()) continue;
    require(check_problem(extraction->problem).ok());
    StatusOr<Plan> plan = plan_with("naive", extraction->problem);
    require(plan.ok());
    require(validate(extraction->problem, *plan).ok());
  }
  return 0;
}
