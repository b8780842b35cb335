// operator_summary.cc — allocations per operator (memplan trace-info).
//
//   1. Over the events [begin, end), add each allocation call that returned
//      memory to the row of its innermost operator (TraceEvent::op).
//   2. Sort the rows by bytes, then allocations, descending (ties by id, so
//      the order is reproducible).
// Cost: O(n + k log k) for n events and k operators.
#include <algorithm>
#include <unordered_map>

#include "memplan/trace.h"

namespace memplan {

std::vector<OperatorSummary> summarize_operators(const Trace& trace, size_t begin, size_t end) {
  if (trace.operators.empty()) return {};
  end = std::min(end, trace.events.size());
  std::unordered_map<uint32_t, OperatorSummary> rows;
  for (size_t i = begin; i < end; ++i) {
    const TraceEvent& e = trace.events[i];
    const TraceEventKind kind = e.kind();
    if ((kind != TraceEventKind::kAlloc && kind != TraceEventKind::kRealloc) || e.pointer == 0) continue;
    OperatorSummary& row = rows[e.op];
    row.op = e.op;
    ++row.allocations;
    row.bytes += e.size;
  }
  std::vector<OperatorSummary> out;
  out.reserve(rows.size());
  for (const auto& [op, row] : rows) out.push_back(row);
  std::sort(out.begin(), out.end(), [](const OperatorSummary& a, const OperatorSummary& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.allocations != b.allocations) return a.allocations > b.allocations;
    return a.op < b.op;
  });
  return out;
}

}  // namespace memplan
