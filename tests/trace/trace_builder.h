// trace_builder.h — builds in-memory traces for tests, one event per call, in
// sequence order, so that a test reads like the program it stands for.
#pragma once

#include <algorithm>
#include <cstdint>

#include "memplan/trace.h"

namespace memplan::testing {

class TraceBuilder {
 public:
  TraceBuilder& malloc(uint64_t pointer, uint64_t size, uint32_t thread = 0) {
    return add({.call = TraceCall::kMalloc, .thread = thread, .pointer = pointer, .size = size});
  }
  TraceBuilder& calloc(uint64_t pointer, uint64_t size, uint32_t thread = 0) {
    return add({.call = TraceCall::kCalloc, .thread = thread, .pointer = pointer, .size = size});
  }
  TraceBuilder& aligned(uint64_t pointer, uint64_t size, uint64_t alignment, uint32_t thread = 0) {
    return add({.call = TraceCall::kPosixMemalign,
                .thread = thread,
                .pointer = pointer,
                .size = size,
                .alignment = alignment});
  }
  TraceBuilder& free(uint64_t pointer, uint32_t thread = 0) {
    return add({.call = TraceCall::kFree, .thread = thread, .pointer = pointer});
  }
  // Takes two sequence numbers, like the tracer: the release one before the call.
  TraceBuilder& realloc(uint64_t old_pointer, uint64_t pointer, uint64_t size, uint32_t thread = 0) {
    const uint64_t release = next_sequence_++;
    add({.call = TraceCall::kRealloc, .thread = thread, .pointer = pointer, .old_pointer = old_pointer, .size = size});
    trace_.events.back().release_sequence = release;
    return *this;
  }
  // A realloc whose release sequence was taken `back` numbers before its own
  // (other threads' events took the ones in between).
  TraceBuilder& realloc_released_at(uint64_t release, uint64_t old_pointer, uint64_t pointer, uint64_t size,
                                    uint32_t thread) {
    add({.call = TraceCall::kRealloc, .thread = thread, .pointer = pointer, .old_pointer = old_pointer, .size = size});
    trace_.events.back().release_sequence = release;
    return *this;
  }
  // Reserves a sequence number without an event (e.g. for realloc_released_at).
  uint64_t take_sequence() { return next_sequence_++; }
  TraceBuilder& mark(uint32_t thread = 0) { return add({.call = TraceCall::kMark, .thread = thread}); }
  TraceBuilder& complete(bool complete = true) {
    trace_.complete = complete;
    return *this;
  }

  Trace build() const {
    Trace t = trace_;
    uint32_t threads = 0;
    for (const TraceEvent& e : t.events) {
      if (e.thread != kUnknownThread) threads = std::max(threads, e.thread + 1);
    }
    t.threads.resize(threads);
    for (uint32_t i = 0; i < threads; ++i) t.threads[i].os_tid = 1000 + i;
    for (const TraceEvent& e : t.events) {
      if (e.kind() != TraceEventKind::kMark) ++t.threads[e.thread].events;
    }
    t.pid = 4242;
    return t;
  }

 private:
  TraceBuilder& add(TraceEvent e) {
    e.sequence = next_sequence_++;
    e.time_ns = static_cast<int64_t>(e.sequence) * 10;
    trace_.events.push_back(e);
    return *this;
  }

  Trace trace_;
  uint64_t next_sequence_ = 1;
};

}  // namespace memplan::testing
