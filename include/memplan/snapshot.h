// snapshot.h — PyTorch CUDA memory snapshots: read, reconstruct, extract.
//
// `torch.cuda.memory._record_memory_history()` then `_dump_snapshot(path)`
// writes a pickle of plain data (read by pickle.h, which runs nothing):
//
//   {"segments": [ {device, address, total_size, stream, segment_type
//                   ("small"|"large"), is_expandable?, blocks: [ {address,
//                   size, requested_size, state, frames} ]} ],
//    "device_traces": [ [ {action, addr, size, stream, time_us?, frames?} ]
//                       per device ],
//    "allocator_settings": {...}, "external_annotations": [...]}   (newer)
//
// `segments` is the state at dump time; `device_traces` the window of events
// that led to it (the last ones the ring buffer kept). Actions: alloc,
// free_requested, free_completed (older files: free), segment_alloc,
// segment_free, segment_map, segment_unmap (expandable segments), snapshot
// (a marker), oom (addr = free device bytes, size = the request). Frames are
// {filename, line, name}, interned here: a snapshot's many repeated stacks
// cost one entry each.
//
// Reconstruction (reconstruct_window). The window's events are paired by
// address: an alloc opens a block, its free_completed closes it (the moment
// the allocator can reuse it). A free of an address the window never
// allocated is a block allocated before the window; so is a block allocated
// at dump time that the window never touched. Undoing the segment events
// from the dump-time segments gives what was reserved at the start. The
// forward replay then gives the allocated and reserved curves and peaks.
// Allocated bytes count what the program requested (the events' sizes).
// Inconsistencies are named warnings (Window::warnings), not errors: an
// alloc of an address already live, an end state that contradicts the
// events, reserved bytes that would go below zero.
//
// Extraction (window_problem, iteration_problem). Each alloc and free is a
// tick; a block is a buffer [alloc tick, free tick) of its requested size
// rounded up to 512 bytes (PyTorch's smallest block and its alignment),
// aligned to 512. Blocks live before the window live from tick 0; blocks
// live at its end live to its end. An iteration's problem holds every block
// live in its span, clipped to it.
//
// Iterations (find_iterations): the spans between `snapshot` markers when
// the window has any; else between "ProfilerStep#N" START annotations; else
// the longest repeating run of the alloc sequence (size and stream of each
// alloc) that holds at least two periods, cut where the fewest bytes are
// live.
//
// Errors (StatusOr): a file that is not a pickle of plain data (pickle.h),
// or whose structure is not a snapshot: the message names the file and the
// field path, e.g. "x.pickle: device_traces[0][17].size: not an integer".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/device_trace.h"
#include "memplan/pickle.h"
#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan::snapshot {

enum class Action : uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kSnapshot,
  kOom,
};
std::string_view action_name(Action action);  // as in the file: "alloc", "free_requested", ...

struct Frame {
  uint32_t filename = 0;  // index into Snapshot::strings
  uint32_t name = 0;      // index into Snapshot::strings
  int64_t line = 0;
};

struct Event {
  Action action = Action::kAlloc;
  uint32_t stack = 0;  // index into Snapshot::stacks (0: no frames)
  int64_t stream = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  int64_t time_us = 0;  // 0 when the file has none
};

enum class BlockState : uint8_t { kActiveAllocated, kActivePendingFree, kInactive };

struct Block {
  uint64_t address = 0;
  uint64_t size = 0;            // the block's size (rounded by the allocator)
  uint64_t requested_size = 0;  // what was asked for (0 for inactive blocks in some files)
  BlockState state = BlockState::kInactive;
  uint32_t stack = 0;
};

struct Segment {
  uint64_t address = 0;
  uint64_t total_size = 0;
  int64_t stream = 0;
  bool small_pool = false;  // segment_type "small"
  bool expandable = false;
  std::vector<Block> blocks;  // in address order
};

struct Device {
  int device = 0;
  std::vector<Segment> segments;  // dump-time state
  std::vector<Event> events;      // the window, in order
};

struct Annotation {
  bool start = true;  // stage START (else END)
  std::string name;
  int device = 0;
  int64_t time_us = 0;
};

struct Snapshot {
  std::vector<Device> devices;  // every device with segments or events, by number
  std::vector<std::string> strings;
  std::vector<Frame> frames;
  std::vector<std::vector<uint32_t>> stacks;  // frame indices, innermost first; stacks[0] is empty
  bool newer_format = false;                  // has allocator_settings
  std::string alloc_conf;                     // PYTORCH_CUDA_ALLOC_CONF as recorded
  simulate::AllocatorSettings settings;       // parsed from allocator_settings (PyTorch's defaults if absent)
  std::vector<Annotation> annotations;
  std::vector<std::string> warnings;  // fields ignored or defaulted
  uint64_t file_bytes = 0;

  const Device* find_device(int device) const;
  // Who allocated, in words the user recognises. Frames of thread entry
  // (libstdc++'s execute_native_thread_routine, start_thread, clone, ...) and
  // of generated code (torch.compile's torchinductor_*/….py, Triton) are
  // never chosen. In order:
  //   1. "file.py:12 name" of the innermost Python frame outside torch and
  //      site-packages;
  //   2. on the autograd backward thread (no such frame), the node it ran:
  //      "AddmmBackward0 (autograd backward)";
  //   3. the innermost library Python frame, else the innermost frame with
  //      a line number;
  // with ", cuBLAS workspace" / ", cuDNN workspace" (in parentheses) when
  // the block is that library's scratch space. "" if nothing names it.
  std::string describe_stack(uint32_t stack) const;
};

// Reads a snapshot file (streaming the pickle) or converts a parsed pickle.
StatusOr<Snapshot> read_snapshot(const std::string& path);
StatusOr<Snapshot> snapshot_from_pickle(const pickle::Document& document, std::string_view source);

// ---- reconstruction ----------------------------------------------------------------------

// One block the window knows: allocated in it, or allocated before it and
// freed in it or still allocated at dump time.
struct WindowBlock {
  uint64_t address = 0;
  uint64_t size = 0;  // requested bytes
  int64_t stream = 0;
  uint32_t stack = 0;        // who allocated it (0: unknown, allocated before the window)
  int64_t alloc_event = -1;  // index into Device::events; -1: before the window
  int64_t free_event = -1;   // its free_completed; -1: allocated at the end
  int64_t alloc_tick = 0;    // ticks as in the problems; 0 before the window
  int64_t free_tick = 0;     // end of window + 1 when still allocated
};

// Where a curve reached its peak.
struct Peak {
  uint64_t bytes = 0;
  int64_t event = -1;  // the event after which it was first reached; -1: at the start
  int64_t time_us = 0;
};

// Reserved minus allocated at the peak of reserved bytes, by segment.
struct SegmentUse {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t allocated = 0;  // requested bytes of the blocks live in it
  int64_t stream = 0;
  bool small_pool = false;
};

struct OomEvent {
  int64_t event = 0;
  int64_t time_us = 0;
  uint64_t requested = 0;
  uint64_t device_free = 0;          // as PyTorch recorded it
  uint64_t allocated = 0;            // bytes allocated then
  uint64_t reserved = 0;             // bytes reserved then
  std::vector<size_t> largest_live;  // WindowBlock indices, largest first (at most 10)
  uint32_t stack = 0;                // the failing request's frames (the oom event's own; 0: none recorded)
  // The largest range of a segment held then that no live block covers
  // (each block its requested size rounded to 512 B): a request larger than
  // it needed a new segment. Set for the first 100 oom events.
  uint64_t largest_free_block = 0;
};

// The most bytes allocated and reserved over a run of events.
struct UsageSample {
  size_t first_event = 0;  // the run is [first_event, the next sample's first_event)
  uint64_t allocated = 0;
  uint64_t reserved = 0;
};
inline constexpr size_t kUsageSamples = 2000;  // at most this many samples per window

struct Window {
  int device = 0;
  std::vector<WindowBlock> blocks;     // blocks before the window first, then in alloc order
  int64_t ticks = 0;                   // alloc and free events; problems span [0, ticks + 1)
  std::vector<int64_t> tick_of_event;  // per event: the tick at or before it
  uint64_t start_allocated = 0, start_reserved = 0;
  uint64_t end_allocated = 0, end_reserved = 0;
  Peak peak_allocated, peak_reserved;
  std::vector<size_t> live_at_peak;  // blocks live at peak_allocated, largest first
  // Segments held at peak_reserved and the bytes allocated in each, taken
  // after segments_at_peak_event: the event with the most bytes allocated
  // while reserved stays at its peak (from the peak's event to the next
  // segment event), so that a segment made for a request not yet placed is
  // not counted free and the table adds up with the peak allocated when it
  // falls in that span. The allocated column adds up to the bytes allocated
  // after that event (blocks outside every held segment aside).
  std::vector<SegmentUse> segments_at_peak;
  int64_t segments_at_peak_event = -1;
  std::vector<OomEvent> ooms;
  std::vector<UsageSample> usage;  // the recorded curves, at most kUsageSamples runs of equal length
  std::vector<simulate::StartSegment> start_segments;  // reconstructed start state
  std::vector<std::string> warnings;                   // inconsistencies in the data (named, counted)
  // What this window cannot show, each with how to record what would (not
  // inconsistencies): no trace events at all (a dump of segments only); more
  // than half of the peak allocated held by blocks from before the window
  // (who allocated them is unknown); a window shorter than half a step
  // (ProfilerStep annotations give the step). Full sentences.
  std::vector<std::string> cautions;
  size_t alloc_events = 0, free_events = 0, segment_events = 0;
};

// Never fails on consistent or inconsistent data: problems become warnings.
Window reconstruct_window(const Snapshot& snapshot, const Device& device);

// ---- extraction --------------------------------------------------------------------------

inline constexpr int64_t kBlockAlignment = 512;

// The whole window as a problem; buffer ids are "<block index>@0x<address>".
Problem window_problem(const Window& window);

// An iteration: events [first_event, end_event) of the device.
struct Iteration {
  size_t first_event = 0;
  size_t end_event = 0;
};
struct Iterations {
  std::vector<Iteration> spans;
  std::string found_by;      // "snapshot markers", "ProfilerStep annotations", "repetition", or "" (none)
  size_t period_allocs = 0;  // repetition: allocs per iteration
};
Iterations find_iterations(const Snapshot& snapshot, const Device& device, const Window& window);
// The blocks live in [first_event, end_event), clipped to it; ticks from 0.
Problem iteration_problem(const Window& window, const Iteration& iteration);

// The device's start state and requests for the allocator models: the
// reconstructed start segments, then alloc / free (at free_completed) in
// order, ids = recorded addresses; a run of recorded segment_free or
// segment_unmap events becomes one kEmptyCache before it. With
// `failed_requests`, each recorded out-of-memory event also becomes the
// request that failed there, allocated and freed at once (ids above every
// address: kFailedRequestIds + k), so that a model given the device's
// capacity can say whether it too would fail it.
inline constexpr uint64_t kFailedRequestIds = 0xFFFF000000000000ull;
simulate::DeviceTrace device_trace(const Window& window, const Device& device, bool failed_requests = false);

}  // namespace memplan::snapshot
