// snapshot_reader_fuzz.cc — libFuzzer target for the pickle reader and the
// snapshot model built on it.
//
// For any bytes:
//   1. parse_pickle returns a document or an error naming the source and an
//      offset; it never crashes, hangs or trips a sanitizer, and never runs
//      anything (it has nothing to run);
//   2. a document's values can all be visited (every container's items, every
//      dict's pairs) with lengths that agree with what is visited;
//   3. a document that is a snapshot converts, reconstructs and extracts
//      without crashing: each device's window problem and every iteration's
//      problem pass check_problem, the peaks bound the start and end, and
//      the model trace frees only ids it allocated or started with.
// Any violation aborts, which libFuzzer reports as a crash with the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <vector>

#include "memplan/pickle.h"
#include "memplan/problem.h"
#include "memplan/snapshot.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "snapshot_reader_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Visits every value reachable from the root (iteratively: a deep pickle
// must not exhaust the stack here either), at most `budget` of them.
void visit_all(const memplan::pickle::Document& doc) {
  using memplan::pickle::Value;
  std::vector<Value> work = {doc.root()};
  std::unordered_set<uint64_t> seen;
  size_t budget = 1 << 20;
  while (!work.empty() && budget-- > 0) {
    const Value v = work.back();
    work.pop_back();
    if (!doc.is_container(v)) {
      (void)doc.text(v);
      (void)doc.number(v);
      continue;
    }
    if (!seen.insert(v.bits).second) continue;
    size_t count = 0;
    if (doc.kind(v) == memplan::pickle::Kind::kDict) {
      doc.for_each_pair(v, [&](Value k, Value x) {
        ++count;
        work.push_back(k);
        work.push_back(x);
      });
    } else {
      doc.for_each_item(v, [&](Value x) {
        ++count;
        work.push_back(x);
      });
    }
    if (count != doc.length(v)) fail("length disagrees with the items visited", std::to_string(count));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto doc = memplan::pickle::parse_pickle({data, size}, "fuzz.pickle");
  if (!doc.ok()) {
    const std::string message = doc.status().message();
    if (message.rfind("fuzz.pickle: offset ", 0) != 0) fail("error does not name the source and offset", message);
    return 0;
  }
  visit_all(*doc);
  auto snapshot = memplan::snapshot::snapshot_from_pickle(*doc, "fuzz.pickle");
  if (!snapshot.ok()) {
    if (snapshot.status().message().rfind("fuzz.pickle: ", 0) != 0)
      fail("error does not name the source", snapshot.status().message());
    return 0;
  }
  for (const memplan::snapshot::Device& device : snapshot->devices) {
    const memplan::snapshot::Window w = memplan::snapshot::reconstruct_window(*snapshot, device);
    if (w.peak_allocated.bytes < w.start_allocated || w.peak_allocated.bytes < w.end_allocated) {
      fail("peak allocated below the start or the end", std::to_string(w.peak_allocated.bytes));
    }
    if (w.peak_reserved.bytes < w.start_reserved)
      fail("peak reserved below the start", std::to_string(w.peak_reserved.bytes));
    for (size_t i : w.live_at_peak) {
      if (i >= w.blocks.size()) fail("live-at-peak index out of range", std::to_string(i));
    }
    (void)snapshot->describe_stack(device.events.empty() ? 0 : device.events.front().stack);
    const memplan::Problem problem = memplan::snapshot::window_problem(w);
    if (auto st = memplan::check_problem(problem); !st.ok()) fail("invalid window problem", st.message());
    const memplan::snapshot::Iterations its = memplan::snapshot::find_iterations(*snapshot, device, w);
    for (const auto& span : its.spans) {
      if (auto st = memplan::check_problem(memplan::snapshot::iteration_problem(w, span)); !st.ok()) {
        fail("invalid iteration problem", st.message());
      }
    }
    const memplan::simulate::DeviceTrace trace = memplan::snapshot::device_trace(w, device);
    std::unordered_set<uint64_t> live;
    for (const auto& s : trace.start) {
      uint64_t end = 0;
      for (const auto& b : s.blocks) {
        if (b.offset != end) fail("start blocks do not tile their segment", std::to_string(s.address));
        end = b.offset + b.size;
        if (b.allocated) live.insert(s.address + b.offset);
      }
      if (!s.blocks.empty() && end != s.size)
        fail("start blocks do not cover their segment", std::to_string(s.address));
    }
    for (const auto& r : trace.requests) {
      using Kind = memplan::simulate::Request::Kind;
      if (r.kind == Kind::kAlloc && !live.insert(r.id).second) fail("alloc of a live id", std::to_string(r.id));
      if (r.kind == Kind::kFree && live.erase(r.id) == 0) fail("free of an id not live", std::to_string(r.id));
    }
  }
  return 0;
}
