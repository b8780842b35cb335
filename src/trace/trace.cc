// trace.cc — trace vocabulary: call names and kinds, marks and iteration spans.
#include <string>

#include "memplan/trace.h"

namespace memplan {

std::string_view trace_call_name(TraceCall call) {
  switch (call) {
    case TraceCall::kMalloc:
      return "malloc";
    case TraceCall::kCalloc:
      return "calloc";
    case TraceCall::kRealloc:
      return "realloc";
    case TraceCall::kReallocArray:
      return "reallocarray";
    case TraceCall::kPosixMemalign:
      return "posix_memalign";
    case TraceCall::kAlignedAlloc:
      return "aligned_alloc";
    case TraceCall::kMemalign:
      return "memalign";
    case TraceCall::kValloc:
      return "valloc";
    case TraceCall::kPvalloc:
      return "pvalloc";
    case TraceCall::kFree:
      return "free";
    case TraceCall::kMark:
      return "mark";
  }
  return "unknown";
}

TraceEventKind kind_of(TraceCall call) {
  switch (call) {
    case TraceCall::kRealloc:
    case TraceCall::kReallocArray:
      return TraceEventKind::kRealloc;
    case TraceCall::kFree:
      return TraceEventKind::kFree;
    case TraceCall::kMark:
      return TraceEventKind::kMark;
    default:
      return TraceEventKind::kAlloc;
  }
}

std::vector<size_t> Trace::mark_indices() const {
  std::vector<size_t> marks;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind() == TraceEventKind::kMark) marks.push_back(i);
  }
  return marks;
}

int64_t Trace::iteration_count() const { return static_cast<int64_t>(mark_indices().size()) + 1; }

StatusOr<IterationSpan> iteration_span(const Trace& trace, int64_t iteration) {
  const std::vector<size_t> marks = trace.mark_indices();
  if (iteration < 0 || iteration > static_cast<int64_t>(marks.size())) {
    return NotFound("iteration " + std::to_string(iteration) + " is not in the trace: it has " +
                    std::to_string(marks.size()) + " marks, so iterations 0.." + std::to_string(marks.size()) +
                    " (0 is the span before the first mark)");
  }
  const auto k = static_cast<size_t>(iteration);
  IterationSpan span;
  span.begin = k == 0 ? 0 : marks[k - 1] + 1;
  span.closed = k < marks.size();
  span.end = span.closed ? marks[k] : trace.events.size();
  return span;
}

}  // namespace memplan
