// trace.h — allocation traces of running programs, and how an iteration of a
// trace becomes a planning problem.
//
// A trace is the sequence of allocation events a process made: every malloc,
// calloc, realloc, aligned allocation and free, plus iteration marks that the
// program (or a signal) placed at its iteration boundaries. The LD_PRELOAD
// tracer libmemplan_trace.so writes traces (see docs/capture.md and
// memplan/mark.h); this header reads them, writes them (for tests and tools),
// and extracts problems from them.
//
// Order. Every event carries a sequence number from one process-wide counter:
// `events` is sorted by it, and it is the causal order of the allocator's
// state — a free takes its number before the memory is released, an
// allocation after it is obtained, so a pointer freed by one thread and
// reused by another is always freed first in the trace. A realloc takes two:
// `release_sequence` before the call (from then on its old pointer may be
// reused by others) and `sequence` after it.
//
// Iterations. Marks split the trace: iteration 0 is everything before the
// first mark (the whole trace when there are no marks), iteration N >= 1 is
// the span from the N-th mark to the next one, or to the end of the trace for
// the last (that one is "open": it also holds the program's teardown). Mark
// after the last iteration too to close it.
//
// Ticks. An iteration becomes a problem with lifetimes in event ticks: the
// k-th event after the mark is tick k (from 0). A buffer allocated at tick a
// and freed at tick f lives [a, f). A realloc at tick r ends its old buffer at
// r + 1 and starts the new one at r, so the two overlap for the copy.
//
// Thread-safety: plain values; the functions are pure and reentrant.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

// The function that made an event.
enum class TraceCall : uint8_t {
  kMalloc = 0,
  kCalloc = 1,
  kRealloc = 2,
  kReallocArray = 3,
  kPosixMemalign = 4,
  kAlignedAlloc = 5,
  kMemalign = 6,
  kValloc = 7,
  kPvalloc = 8,
  kFree = 9,
  kMark = 10,
};
std::string_view trace_call_name(TraceCall call);

enum class TraceEventKind : uint8_t { kAlloc, kRealloc, kFree, kMark };
TraceEventKind kind_of(TraceCall call);

// Operator attribution. A program that knows which operator it is running
// (libtorch, through memplan's RecordFunction recorder) can tell the tracer;
// each event then carries the innermost operator of its thread. Events of a
// trace without operator records all have kNoOperator.
inline constexpr uint32_t kNoOperator = 0xFFFFFFFFu;

struct TraceEvent {
  TraceCall call = TraceCall::kMalloc;
  uint32_t thread = 0;            // index of the thread in Trace::threads (kUnknownThread for a
                                  // mark from a signal on a thread that had not allocated)
  uint64_t sequence = 0;          // process-wide order, unique, > 0
  uint64_t release_sequence = 0;  // realloc: taken before the call (<= sequence); else 0
  int64_t time_ns = 0;            // since the trace started (0 when traced with MEMPLAN_TRACE_TIME=off)
  uint64_t pointer = 0;           // allocations: the result (0 = failed); free: the pointer freed;
                                  // realloc: the result (0 = failed, or freed by a size-0 realloc)
  uint64_t old_pointer = 0;       // realloc: the pointer passed in
  uint64_t size = 0;              // bytes requested (calloc: nmemb * size); 0 for free and mark
  uint64_t alignment = 0;         // aligned calls: the alignment asked for; 0 = malloc's default
  uint32_t op = kNoOperator;      // the innermost operator running on the thread when the call
                                  // was made (an index into Trace::operators), if it was recorded

  TraceEventKind kind() const { return kind_of(call); }
  bool operator==(const TraceEvent&) const = default;
};

inline constexpr uint32_t kUnknownThread = 0xFFFFFFFFu;

struct TraceThread {
  int64_t os_tid = 0;   // the kernel's thread id (0 when unknown)
  uint64_t events = 0;  // events this thread recorded (marks not counted)
  bool operator==(const TraceThread&) const = default;
};

struct Trace {
  int64_t pid = 0;                     // the traced process
  std::vector<TraceEvent> events;      // strictly increasing sequence
  std::vector<TraceThread> threads;    // indexed by TraceEvent::thread
  bool complete = false;               // the tracer's exit handler wrote its end block
  uint64_t missed_events = 0;          // calls seen but not recorded (e.g. malloc inside a signal
                                       // handler that interrupted the tracer)
  uint64_t dropped_marks = 0;          // marks beyond the tracer's mark store
  uint64_t file_bytes = 0;             // size of the file read (0 for a trace built in memory)
  std::vector<std::string> operators;  // operator names, indexed by TraceEvent::op ("" = never
                                       // named: its name record was lost with an incomplete trace)

  // Indices into `events` of the marks, in order.
  std::vector<size_t> mark_indices() const;
  // Iterations 0..marks (iteration 0 is the span before the first mark).
  int64_t iteration_count() const;
};

// Parses trace bytes; `source` names them in errors. Never crashes on damaged
// input: a bad magic, an unknown version, a truncated or corrupted block, or
// inconsistent events are errors naming the byte offset.
StatusOr<Trace> parse_trace(std::span<const uint8_t> bytes, std::string_view source = "<trace>");
StatusOr<Trace> read_trace(const std::string& path);

// Encodes a trace in the file format the tracer writes (version 2): one event
// block per thread and run of up to 4096 events, a mark block, and an end block
// if `complete`. Fails on events that are not sorted, reference unknown
// threads or operators, or have a release_sequence after their sequence. Only
// a realloc's release_sequence is written; the reader gives other events 0.
// Operators are written as the tracer writes them (an enter record where a
// thread's operator changes, names first), so only the innermost operator of
// each event survives a round trip, which is all a Trace holds.
StatusOr<std::string> format_trace(const Trace& trace);
Status write_trace(const std::string& path, const Trace& trace);

// The events of one iteration: indices [begin, end) into Trace::events,
// excluding the marks that bound it.
struct IterationSpan {
  size_t begin = 0;
  size_t end = 0;
  bool closed = false;  // ends at a mark (not at the end of the trace)
};
StatusOr<IterationSpan> iteration_span(const Trace& trace, int64_t iteration);

struct ExtractOptions {
  // Buffers smaller than this many bytes are left out (and counted).
  uint64_t min_size = 0;
  // Every buffer gets at least this alignment: 16 is what malloc guarantees on
  // 64-bit glibc, so a plan served in place of malloc must keep it. 1 drops it.
  int64_t alignment = 16;
};

// A problem extracted from one iteration, and what was left out of it.
struct Extraction {
  Problem problem;  // ids are the allocation's tick, in allocation order
  int64_t iteration = 0;
  size_t events = 0;   // events in the iteration = ticks 0..events-1
  size_t escaped = 0;  // allocated in the iteration, not freed in it
  uint64_t escaped_bytes = 0;
  size_t inherited = 0;       // freed (or realloc'ed) in the iteration, allocated before it
  size_t below_min_size = 0;  // allocated and freed in the iteration, smaller than min_size
  uint64_t below_min_size_bytes = 0;
  size_t failed = 0;       // allocation calls that returned null
  size_t reused_live = 0;  // allocations of a pointer the trace still had live (a lost free)
};

// The buffers allocated and freed within `iteration` as a Problem (see Ticks
// above). Fails if the iteration does not exist or a size exceeds 2^62.
StatusOr<Extraction> extract_iteration(const Trace& trace, int64_t iteration, const ExtractOptions& options = {});

// Per-iteration statistics, for `memplan trace-info`.
struct IterationSummary {
  int64_t iteration = 0;
  bool closed = false;
  size_t events = 0;
  size_t allocations = 0;  // allocation and realloc calls that returned memory
  size_t frees = 0;
  uint64_t allocated_bytes = 0;  // sum of their sizes
  // size_histogram[k] counts allocations with 2^(k-1) < size <= 2^k (k = 0: size <= 1).
  std::array<uint64_t, 65> size_histogram{};
  uint64_t peak_live_bytes = 0;       // most bytes live in the whole process during the iteration
                                      // (counting from the start of the trace)
  uint64_t peak_iteration_bytes = 0;  // most bytes live that were allocated in this iteration
  size_t threads = 0;                 // threads with events in the iteration
  // True when this iteration made the same sequence of (call, size, alignment)
  // allocations as the previous one (iterations >= 2; iteration 1 compares
  // with nothing and is false).
  bool repeats_previous = false;
};
std::vector<IterationSummary> summarize_iterations(const Trace& trace);

// Allocation calls (allocations and reallocs that returned memory) per
// innermost operator, over the events [begin, end) of a trace: what
// `memplan trace-info` ranks. Sorted by bytes, then allocations, descending;
// allocations made outside any operator are one row with op == kNoOperator.
// Empty when the trace has no operator records.
struct OperatorSummary {
  uint32_t op = kNoOperator;
  size_t allocations = 0;
  uint64_t bytes = 0;
};
std::vector<OperatorSummary> summarize_operators(const Trace& trace, size_t begin, size_t end);

}  // namespace memplan
