// torch_profile.h — PyTorch profiler memory events as planning problems.
//
// `torch.profiler.profile(profile_memory=True)` records every allocation and
// free of PyTorch's allocators; `prof.export_chrome_trace(path)` writes them
// to a chrome trace (JSON) as instant events named "[memory]":
//
//     {"ph": "i", "name": "[memory]", "pid": 7, "tid": 7, "ts": 90.447,
//      "args": {"Addr": 417884736, "Bytes": 288, "Total Allocated": 292,
//               "Total Reserved": 0, "Device Type": 0, "Device Id": -1}}
//
// Bytes is negative for a free. Operators are complete ("ph": "X") events
// with a start `ts` and a `dur` in microseconds; `prof.step()` wraps each step
// in a span named "ProfilerStep#N". The document is an object with a
// "traceEvents" array (or, as the chrome format also allows, the bare array).
//
// Steps. Step N is the span of "ProfilerStep#N" (in the categories of
// operator spans below: Kineto's copy on the GPU timeline, category
// gpu_user_annotation, is skipped); a memory event belongs to it when its
// time lies in the span (any thread). A trace without step spans is
// one iteration, numbered 0, holding every memory event.
//
// Ticks. A step becomes a problem like an iteration of a memplan trace
// (trace.h): its memory events, ordered by time (file order for equal times),
// are ticks 0, 1, ...; a block allocated at tick a and freed at tick f (same
// Addr, Device Type and Device Id) lives [a, f). Blocks not freed in the step
// escape it and blocks freed in it but allocated before it are inherited:
// both are counted and left out, as `memplan extract` does for traces.
//
// Operators. Each buffer is attributed to the innermost operator span ("X"
// events other than ProfilerStep spans, in categories cpu_op or
// user_annotation, or with no category) of the same pid and tid that contains
// the allocation's time: of the spans that contain it, the one that starts
// last (then the shortest). "" when none does.
//
// Errors name the source, the event's index in traceEvents and the field:
//     prof.json: traceEvents[12]: field 'args.Bytes': not an integer
// The reader never throws, never aborts, and keeps nothing of the document
// once parsed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

inline constexpr uint32_t kNoProfileOperator = 0xFFFFFFFFu;

// One "[memory]" event.
struct ProfileMemoryEvent {
  double time_us = 0;                // ts
  int64_t bytes = 0;                 // > 0 allocation, < 0 free (never 0)
  uint64_t address = 0;              // Addr
  int64_t device_type = 0;           // Device Type (0 = CPU)
  int64_t device_id = -1;            // Device Id
  uint32_t op = kNoProfileOperator;  // innermost enclosing operator: index into TorchProfile::operators
};

// One "ProfilerStep#N" span.
struct ProfileStep {
  int64_t number = 0;
  double begin_us = 0;  // ts
  double end_us = 0;    // ts + dur
};

struct TorchProfile {
  std::vector<ProfileMemoryEvent> events;  // sorted by time (stable)
  std::vector<ProfileStep> steps;          // sorted by number, numbers unique
  std::vector<std::string> operators;      // distinct operator names
  size_t trace_events = 0;                 // entries in traceEvents
};

// Parses an exported chrome trace. Fails on invalid JSON (with its byte
// offset), on a document without trace events, on a "[memory]" event with a
// missing or malformed field, on two ProfilerStep spans with one number, and
// on a trace with no "[memory]" events at all (recorded without
// profile_memory=True).
StatusOr<TorchProfile> parse_torch_profile(std::string_view text, std::string_view source = "<profile>");
StatusOr<TorchProfile> read_torch_profile(const std::string& path);

struct ProfileExtraction {
  Problem problem;                     // ids are the allocation's tick
  std::vector<std::string> operators;  // per buffer: its operator, "" when unknown
  int64_t step = 0;
  bool whole_trace = false;  // the trace has no steps: every event
  size_t events = 0;         // memory events in the step = ticks
  size_t escaped = 0;        // allocated in the step, not freed in it
  uint64_t escaped_bytes = 0;
  size_t inherited = 0;       // freed in the step, allocated before it
  size_t below_min_size = 0;  // allocated and freed in it, below min_size
  uint64_t below_min_size_bytes = 0;
  size_t reused_live = 0;  // an address allocated again while live (a lost free)
};

// The buffers allocated and freed within step `step` (0 for a trace without
// steps). Every buffer gets `alignment` (a power of two); buffers smaller
// than `min_size` bytes are left out and counted.
StatusOr<ProfileExtraction> extract_profile_step(const TorchProfile& profile, int64_t step, uint64_t min_size = 0,
                                                 int64_t alignment = 16);

// The steps a profile has: the ProfilerStep numbers, or {0} without steps.
std::vector<int64_t> profile_step_numbers(const TorchProfile& profile);

}  // namespace memplan
