// snapshot_test.cc — PyTorch memory snapshots on hand-made windows (written
// by snapshot_writer.h): reading both formats, the start state undone from
// the dump, peaks and what was live then, iterations, the problems and the
// allocator models' trace, and errors that name the field.
#include "memplan/snapshot.h"

#include <gtest/gtest.h>

#include "memplan/bounds.h"
#include "memplan/validate.h"
#include "unit/snapshot_writer.h"

namespace memplan::snapshot {
namespace {

using memplan::testing::frame;
using memplan::testing::PyDict;
using memplan::testing::PyList;
using memplan::testing::PyTuple;
using memplan::testing::SnapshotBuilder;

constexpr uint64_t MiB = 1 << 20;
constexpr uint64_t kA = 0x7f0000000000;  // a large segment
constexpr uint64_t kB = 0x7f1000000000;  // a small segment

StatusOr<Snapshot> parse_snapshot(const std::string& bytes) {
  StatusOr<pickle::Document> doc =
      pickle::parse_pickle({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "s.pickle");
  if (!doc.ok()) return doc.status();
  return snapshot_from_pickle(*doc, "s.pickle");
}

Snapshot parse_ok(const SnapshotBuilder& b) {
  StatusOr<Snapshot> s = parse_snapshot(b.bytes());
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(s).value() : Snapshot();
}

PyList user_stack(int line) {
  return {frame("??", 0, "c10::cuda::CUDACachingAllocator::malloc"),
          frame("/env/lib/python3.11/site-packages/torch/nn/modules/module.py", 1750, "_call_impl"),
          frame("/home/me/train.py", line, "forward")};
}

// A 20 MiB segment at kA holding, at dump time: [4 MiB allocated before the
// window][2 MiB allocated in it][14 MiB free]. The window frees a 1 MiB block
// at kA + 8 MiB allocated before it, allocates kA + 4 MiB, and makes a small
// segment at kB in which it allocates and frees 512 B.
SnapshotBuilder hand_made_window() {
  SnapshotBuilder b;
  b.segment(
      0, kA, 20 * MiB, false,
      {{.address = kA, .size = 4 * MiB, .requested = 4 * MiB, .state = "active_allocated", .frames = user_stack(3)},
       {.address = kA + 4 * MiB, .size = 2 * MiB, .requested = 2 * MiB, .state = "active_allocated"},
       {.address = kA + 6 * MiB, .size = 14 * MiB, .requested = 0, .state = "inactive"}});
  b.segment(0, kB, 2 * MiB, true, {{.address = kB, .size = 2 * MiB, .state = "inactive"}});
  b.event(0, "free_requested", kA + 8 * MiB, 1 * MiB);
  b.event(0, "free_completed", kA + 8 * MiB, 1 * MiB);
  b.event(0, "alloc", kA + 4 * MiB, 2 * MiB, user_stack(10));
  b.event(0, "segment_alloc", kB, 2 * MiB);
  b.event(0, "alloc", kB, 300, user_stack(11));
  b.event(0, "free_requested", kB, 300);
  b.event(0, "free_completed", kB, 300);
  return b;
}

TEST(Snapshot, ReadsTheOlderFormat) {
  const Snapshot s = parse_ok(hand_made_window());
  EXPECT_FALSE(s.newer_format);
  ASSERT_EQ(s.devices.size(), 1u);
  const Device& d = s.devices[0];
  ASSERT_EQ(d.segments.size(), 2u);
  EXPECT_EQ(d.segments[0].address, kA);
  EXPECT_FALSE(d.segments[0].small_pool);
  EXPECT_TRUE(d.segments[1].small_pool);
  ASSERT_EQ(d.segments[0].blocks.size(), 3u);
  EXPECT_EQ(d.segments[0].blocks[0].state, BlockState::kActiveAllocated);
  ASSERT_EQ(d.events.size(), 7u);
  EXPECT_EQ(d.events[2].action, Action::kAlloc);
  EXPECT_EQ(d.events[3].action, Action::kSegmentAlloc);
  // Equal stacks are one entry; the user's frame names the allocation.
  EXPECT_EQ(s.describe_stack(d.events[2].stack), "me/train.py:10 forward");
  EXPECT_EQ(s.describe_stack(d.segments[0].blocks[0].stack), "me/train.py:3 forward");
}

TEST(Snapshot, ReconstructsTheStartState) {
  const Snapshot s = parse_ok(hand_made_window());
  const Window w = reconstruct_window(s, s.devices[0]);
  EXPECT_TRUE(w.warnings.empty()) << w.warnings.front();
  // Before the window: the untouched 4 MiB block and the 1 MiB block it frees.
  EXPECT_EQ(w.start_allocated, 5 * MiB);
  EXPECT_EQ(w.start_reserved, 20 * MiB);  // the small segment was made in the window
  EXPECT_EQ(w.end_reserved, 22 * MiB);
  EXPECT_EQ(w.end_allocated, 6 * MiB);
  ASSERT_EQ(w.start_segments.size(), 1u);
  const simulate::StartSegment& a = w.start_segments[0];
  EXPECT_EQ(a.address, kA);
  EXPECT_EQ(a.size, 20 * MiB);
  ASSERT_EQ(a.blocks.size(), 4u);
  EXPECT_TRUE(a.blocks[0].allocated);
  EXPECT_EQ(a.blocks[0].size, 4 * MiB);
  EXPECT_FALSE(a.blocks[1].allocated);
  EXPECT_EQ(a.blocks[1].offset, 4 * MiB);
  EXPECT_EQ(a.blocks[1].size, 4 * MiB);
  EXPECT_TRUE(a.blocks[2].allocated);
  EXPECT_EQ(a.blocks[2].offset, 8 * MiB);
  EXPECT_EQ(a.blocks[2].size, 1 * MiB);
  EXPECT_FALSE(a.blocks[3].allocated);
  EXPECT_EQ(a.blocks[3].size, 11 * MiB);
  // Blocks from before the window come first, by address.
  ASSERT_EQ(w.blocks.size(), 4u);
  EXPECT_EQ(w.blocks[0].address, kA);
  EXPECT_EQ(w.blocks[0].free_event, -1);
  EXPECT_EQ(w.blocks[1].address, kA + 8 * MiB);
  EXPECT_EQ(w.blocks[1].free_event, 1);
  EXPECT_EQ(w.blocks[2].alloc_event, 2);
}

TEST(Snapshot, FindsPeaksAndWhatWasLiveThen) {
  const Snapshot s = parse_ok(hand_made_window());
  const Window w = reconstruct_window(s, s.devices[0]);
  // 5 MiB at the start, 4 after the free, 6 after the alloc, 6 MiB + 300 B after the small alloc.
  EXPECT_EQ(w.peak_allocated.bytes, 6 * MiB + 300);
  EXPECT_EQ(w.peak_allocated.event, 4);
  EXPECT_EQ(w.peak_reserved.bytes, 22 * MiB);
  EXPECT_EQ(w.peak_reserved.event, 3);
  ASSERT_EQ(w.live_at_peak.size(), 3u);
  EXPECT_EQ(w.blocks[w.live_at_peak[0]].size, 4 * MiB);  // largest first
  EXPECT_EQ(w.blocks[w.live_at_peak[1]].size, 2 * MiB);
  EXPECT_EQ(w.blocks[w.live_at_peak[2]].size, 300u);
  EXPECT_EQ(s.describe_stack(w.blocks[w.live_at_peak[2]].stack), "me/train.py:11 forward");
  // Fragmentation at the peak reserved (the small segment's segment_alloc),
  // taken once the 300 B block that needed the segment is placed in it.
  ASSERT_EQ(w.segments_at_peak.size(), 2u);
  EXPECT_EQ(w.segments_at_peak_event, 4);
  EXPECT_EQ(w.segments_at_peak[0].allocated, 6 * MiB);
  EXPECT_EQ(w.segments_at_peak[1].allocated, 300u);
  EXPECT_TRUE(w.segments_at_peak[1].small_pool);
}

TEST(Snapshot, UsageCurvesSampleEveryEventOfASmallWindow) {
  const Snapshot s = parse_ok(hand_made_window());
  const Window w = reconstruct_window(s, s.devices[0]);
  ASSERT_EQ(w.usage.size(), 7u);  // fewer events than kUsageSamples: one sample each
  EXPECT_EQ(w.usage[1].allocated, 4 * MiB);
  EXPECT_EQ(w.usage[3].reserved, 22 * MiB);
  EXPECT_EQ(w.usage[4].first_event, 4u);
  EXPECT_EQ(w.usage[4].allocated, 6 * MiB + 300);
}

TEST(Snapshot, UsageCurvesKeepTheMostOfEachRun) {
  // 4,001 allocs of 1 byte more each, then their frees: runs of 5 events.
  SnapshotBuilder b;
  for (uint64_t i = 0; i < 4001; ++i) b.event(0, "alloc", kA + i * 512, 1);
  for (uint64_t i = 0; i < 4001; ++i) b.event(0, "free_completed", kA + i * 512, 1);
  const Snapshot s = parse_ok(b);
  const Window w = reconstruct_window(s, s.devices[0]);
  ASSERT_LE(w.usage.size(), kUsageSamples);
  uint64_t most = 0;
  for (const UsageSample& u : w.usage) most = std::max(most, u.allocated);
  EXPECT_EQ(most, w.peak_allocated.bytes);
  EXPECT_EQ(w.peak_allocated.bytes, 4001u);
  EXPECT_EQ(w.usage[1].first_event, 5u);
}

TEST(Snapshot, WindowProblemKeepsBlocksFromBeforeAndAfter) {
  const Snapshot s = parse_ok(hand_made_window());
  const Window w = reconstruct_window(s, s.devices[0]);
  const Problem p = window_problem(w);
  ASSERT_TRUE(check_problem(p).ok());
  ASSERT_EQ(p.size(), 4u);
  // Ticks: 1 free_completed, 2 alloc, 3 alloc, 4 free_completed; the end is 5.
  EXPECT_EQ(p.buffers[0].lower, 0);  // before the window ...
  EXPECT_EQ(p.buffers[0].upper, 5);  // ... and still allocated at its end
  EXPECT_EQ(p.buffers[1].upper, 1);
  EXPECT_EQ(p.buffers[2].lower, 2);
  EXPECT_EQ(p.buffers[3].lower, 3);
  EXPECT_EQ(p.buffers[3].upper, 4);
  EXPECT_EQ(p.buffers[3].size, 512);  // 300 B rounded up to a block
  EXPECT_EQ(p.buffers[3].alignment, kBlockAlignment);
  EXPECT_EQ(load(p), static_cast<int64_t>(6 * MiB + 512));
}

TEST(Snapshot, DeviceTraceForTheModels) {
  const Snapshot s = parse_ok(hand_made_window());
  const Window w = reconstruct_window(s, s.devices[0]);
  const simulate::DeviceTrace t = device_trace(w, s.devices[0]);
  ASSERT_EQ(t.start.size(), 1u);
  using Kind = simulate::Request::Kind;
  ASSERT_EQ(t.requests.size(), 4u);
  EXPECT_EQ(t.requests[0].kind, Kind::kFree);
  EXPECT_EQ(t.requests[0].id, kA + 8 * MiB);  // a start block: id = its address
  EXPECT_EQ(t.requests[1].kind, Kind::kAlloc);
  EXPECT_EQ(t.requests[1].size, 2 * MiB);
  EXPECT_EQ(t.requests[2].id, kB);
  EXPECT_EQ(t.requests[3].kind, Kind::kFree);
}

TEST(Snapshot, SegmentFreesBecomeOneEmptyCache) {
  SnapshotBuilder b;
  b.event(0, "alloc", kA, 100);
  b.event(0, "free_completed", kA, 100);
  b.event(0, "segment_free", kA, 20 * MiB);
  b.event(0, "segment_free", kB, 2 * MiB);
  const Snapshot s = parse_ok(b);
  const Window w = reconstruct_window(s, s.devices[0]);
  EXPECT_EQ(w.start_reserved, 22 * MiB);
  EXPECT_EQ(w.end_reserved, 0u);
  const simulate::DeviceTrace t = device_trace(w, s.devices[0]);
  ASSERT_EQ(t.requests.size(), 3u);
  EXPECT_EQ(t.requests[2].kind, simulate::Request::Kind::kEmptyCache);
  ASSERT_EQ(t.start.size(), 2u);
  EXPECT_TRUE(t.start[1].small_pool);  // a 2 MiB segment is the small pool's
}

TEST(Snapshot, ReadsTheNewerFormat) {
  SnapshotBuilder b;
  b.newer = true;
  b.settings = PyDict{{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True,max_split_size_mb:64"},
                      {"max_split_size", static_cast<int64_t>(64 * MiB)},
                      {"garbage_collection_threshold", 0.5},
                      {"expandable_segments", true},
                      {"roundup_power2_divisions", PyDict{{"1", 4}, {"2", 4}, {"4", 0}}}};
  b.annotations = PyList{PyDict{{"stage", "START"}, {"name", "ProfilerStep#1"}, {"device", 0}, {"time_us", 100}}};
  // An expandable segment mapped in pieces: 4 MiB at dump time, of which the
  // window mapped 2 MiB and unmapped 2 MiB.
  b.segment(0, kA, 4 * MiB, false, {{.address = kA, .size = 4 * MiB, .state = "inactive"}}, 0, true);
  b.event(0, "segment_map", kA + 2 * MiB, 2 * MiB, {}, 0, 100);
  b.event(0, "alloc", kA, 3 * MiB, {}, 0, 101);
  b.event(0, "oom", 1 * MiB, 8 * MiB, {}, 0, 102);
  b.event(0, "free_completed", kA, 3 * MiB, {}, 0, 103);
  b.event(0, "segment_unmap", kA + 4 * MiB, 2 * MiB, {}, 0, 104);
  const Snapshot s = parse_ok(b);
  EXPECT_TRUE(s.newer_format);
  EXPECT_EQ(s.alloc_conf, "expandable_segments:True,max_split_size_mb:64");
  EXPECT_DOUBLE_EQ(s.settings.max_split_size_mb, 64);
  EXPECT_DOUBLE_EQ(s.settings.garbage_collection_threshold, 0.5);
  EXPECT_TRUE(s.settings.expandable_segments);
  EXPECT_EQ(s.settings.roundup_power2_divisions, (std::vector<uint64_t>{4, 4, 0}));
  ASSERT_EQ(s.annotations.size(), 1u);
  EXPECT_EQ(s.annotations[0].name, "ProfilerStep#1");
  EXPECT_TRUE(s.devices[0].segments[0].expandable);
  const Window w = reconstruct_window(s, s.devices[0]);
  EXPECT_TRUE(w.warnings.empty()) << w.warnings.front();
  EXPECT_EQ(w.start_reserved, 4 * MiB);
  EXPECT_EQ(w.peak_reserved.bytes, 6 * MiB);
  ASSERT_EQ(w.ooms.size(), 1u);
  EXPECT_EQ(w.ooms[0].requested, 8 * MiB);
  EXPECT_EQ(w.ooms[0].device_free, 1 * MiB);
  EXPECT_EQ(w.ooms[0].allocated, 3 * MiB);
  EXPECT_EQ(w.ooms[0].reserved, 6 * MiB);
  ASSERT_EQ(w.ooms[0].largest_live.size(), 1u);
}

TEST(Snapshot, DefaultSettingsAreUnlimited) {
  SnapshotBuilder b;
  b.newer = true;
  b.settings = PyDict{
      {"max_split_size", -1}, {"expandable_segments", false}, {"roundup_power2_divisions", PyDict{{"1", 0}, {"2", 0}}}};
  const Snapshot s = parse_ok(b);
  EXPECT_DOUBLE_EQ(s.settings.max_split_size_mb, 0);
  EXPECT_TRUE(s.settings.roundup_power2_divisions.empty());
}

TEST(Snapshot, EveryDeviceAndStream) {
  SnapshotBuilder b;
  b.event(0, "alloc", kA, 100, {}, 7);
  b.event(2, "alloc", kB, 200, {}, 9);
  const Snapshot s = parse_ok(b);
  ASSERT_EQ(s.devices.size(), 2u);  // device 1 has no events and no segments
  EXPECT_EQ(s.devices[0].device, 0);
  EXPECT_EQ(s.devices[1].device, 2);
  EXPECT_EQ(s.devices[1].events[0].stream, 9);
  ASSERT_NE(s.find_device(2), nullptr);
  EXPECT_EQ(s.find_device(1), nullptr);
}

// Allocs of sizes 1, 2, 3 MiB with frees between them, `repeats` times,
// after a warm-up of two other allocs; markers between repeats if asked.
SnapshotBuilder repeating_window(int repeats, bool markers) {
  SnapshotBuilder b;
  b.event(0, "alloc", 0x100000, 5 * MiB);
  b.event(0, "alloc", 0x900000, 7 * MiB);
  for (int r = 0; r < repeats; ++r) {
    if (markers) b.event(0, "snapshot", 0, 0);
    b.event(0, "alloc", kA, 1 * MiB);
    b.event(0, "alloc", kA + 2 * MiB, 2 * MiB);
    b.event(0, "free_completed", kA, 1 * MiB);
    b.event(0, "alloc", kA + 4 * MiB, 3 * MiB);
    b.event(0, "free_completed", kA + 2 * MiB, 2 * MiB);
    b.event(0, "free_completed", kA + 4 * MiB, 3 * MiB);
  }
  if (markers) b.event(0, "snapshot", 0, 0);
  return b;
}

TEST(Snapshot, DetectsRepeatingIterations) {
  const Snapshot s = parse_ok(repeating_window(4, false));
  const Window w = reconstruct_window(s, s.devices[0]);
  const Iterations its = find_iterations(s, s.devices[0], w);
  EXPECT_EQ(its.found_by, "repetition");
  EXPECT_EQ(its.period_allocs, 3u);
  ASSERT_EQ(its.spans.size(), 4u);
  // Cut before the 1 MiB alloc (fewest bytes live): events 2, 8, 14, 20.
  EXPECT_EQ(its.spans[0].first_event, 2u);
  EXPECT_EQ(its.spans[0].end_event, 8u);
  EXPECT_EQ(its.spans[3].first_event, 20u);
  EXPECT_EQ(its.spans[3].end_event, 26u);
  const Problem p = iteration_problem(w, its.spans[1]);
  ASSERT_TRUE(check_problem(p).ok());
  // The two warm-up blocks live through it, then 2 + 3 MiB at most.
  EXPECT_EQ(p.size(), 5u);
  EXPECT_EQ(load(p), static_cast<int64_t>(17 * MiB));
}

TEST(Snapshot, NoIterationsWithoutRepetition) {
  const Snapshot s = parse_ok(repeating_window(1, false));
  const Window w = reconstruct_window(s, s.devices[0]);
  EXPECT_TRUE(find_iterations(s, s.devices[0], w).spans.empty());
}

TEST(Snapshot, SnapshotMarkersSplitIterations) {
  const Snapshot s = parse_ok(repeating_window(3, true));
  const Window w = reconstruct_window(s, s.devices[0]);
  const Iterations its = find_iterations(s, s.devices[0], w);
  EXPECT_EQ(its.found_by, "snapshot markers");
  ASSERT_EQ(its.spans.size(), 3u);
  EXPECT_EQ(its.spans[0].first_event, 3u);  // after the marker at event 2
  EXPECT_EQ(its.spans[0].end_event, 9u);
}

TEST(Snapshot, ProfilerStepAnnotationsSplitIterations) {
  SnapshotBuilder b;
  b.newer = true;
  for (int step = 0; step < 3; ++step) {
    b.annotations.push_back(PyDict{{"stage", "START"},
                                   {"name", "ProfilerStep#" + std::to_string(step)},
                                   {"device", 0},
                                   {"time_us", 1000 * (step + 1)}});
    b.event(0, "alloc", kA, (step + 1) * MiB, {}, 0, 1000 * (step + 1) + 1);
    b.event(0, "free_completed", kA, (step + 1) * MiB, {}, 0, 1000 * (step + 1) + 2);
  }
  const Snapshot s = parse_ok(b);
  const Window w = reconstruct_window(s, s.devices[0]);
  const Iterations its = find_iterations(s, s.devices[0], w);
  EXPECT_EQ(its.found_by, "ProfilerStep annotations");
  ASSERT_EQ(its.spans.size(), 2u);
  EXPECT_EQ(its.spans[1].first_event, 2u);
  EXPECT_EQ(its.spans[1].end_event, 4u);
}

TEST(Snapshot, InconsistentWindowsAreNamedWarnings) {
  SnapshotBuilder b;
  // The dump holds nothing allocated, yet the window leaves kA allocated,
  // and allocates kB twice without freeing it.
  b.segment(0, kA, 20 * MiB, false, {{.address = kA, .size = 20 * MiB, .state = "inactive"}});
  b.event(0, "alloc", kA, 1 * MiB);
  b.event(0, "alloc", kB, 512);
  b.event(0, "alloc", kB, 512);
  b.event(0, "free_completed", kB, 512);
  const Snapshot s = parse_ok(b);
  const Window w = reconstruct_window(s, s.devices[0]);
  std::string all;
  for (const std::string& warning : w.warnings) all += warning + "\n";
  EXPECT_NE(all.find("end state contradicts the events"), std::string::npos) << all;
  EXPECT_NE(all.find("alloc of an address already allocated"), std::string::npos) << all;
  EXPECT_TRUE(check_problem(window_problem(w)).ok());
  // The models still get a consistent stream: the doubled alloc is freed first.
  const simulate::DeviceTrace t = device_trace(w, s.devices[0]);
  ASSERT_EQ(t.requests.size(), 5u);
  EXPECT_EQ(t.requests[2].kind, simulate::Request::Kind::kFree);
}

TEST(Snapshot, FreeOfABlockNeverAllocatedIsABlockFromBeforeTheWindow) {
  SnapshotBuilder b;
  b.event(0, "free_completed", kA, 3 * MiB);  // older files call it "free" too
  const Snapshot s = parse_ok(b);
  const Window w = reconstruct_window(s, s.devices[0]);
  EXPECT_EQ(w.start_allocated, 3 * MiB);
  EXPECT_EQ(w.end_allocated, 0u);
  ASSERT_EQ(w.blocks.size(), 1u);
  EXPECT_EQ(w.blocks[0].alloc_event, -1);
  // It lies in no segment the dump or the window knows: named.
  ASSERT_FALSE(w.warnings.empty());
  EXPECT_NE(w.warnings[0].find("lie in no segment"), std::string::npos);
}

// A list that holds one list is written PyList{memplan::testing::PyValue(PyList{...})}: with
// PyList{PyList{...}} clang copies the inner list (one element of the same
// type) where GCC nests it.
TEST(Snapshot, ErrorsNameTheField) {
  auto error_of = [](const memplan::testing::PyValue& root) {
    StatusOr<Snapshot> s = parse_snapshot(memplan::testing::PickleWriter().write(root));
    EXPECT_FALSE(s.ok());
    return s.ok() ? std::string() : s.status().message();
  };
  EXPECT_NE(error_of(PyList{}).find("s.pickle: the top level is a list"), std::string::npos);
  EXPECT_NE(error_of(PyDict{{"other", 1}}).find("not a memory snapshot"), std::string::npos);
  EXPECT_NE(
      error_of(PyDict{{"device_traces", PyList{memplan::testing::PyValue(PyList{PyDict{{"addr", 1}, {"size", 2}}})}}})
          .find("device_traces[0][0]: no 'action'"),
      std::string::npos);
  EXPECT_NE(error_of(PyDict{{"device_traces", PyList{memplan::testing::PyValue(
                                                  PyList{PyDict{{"action", "alloc"}, {"addr", 1}, {"size", "x"}}})}}})
                .find("device_traces[0][0].size: not an integer (a str)"),
            std::string::npos);
  EXPECT_NE(error_of(PyDict{{"device_traces", PyList{memplan::testing::PyValue(
                                                  PyList{PyDict{{"action", "alloc"}, {"addr", -5}, {"size", 1}}})}}})
                .find("device_traces[0][0].addr: -5 is negative"),
            std::string::npos);
  EXPECT_NE(error_of(PyDict{{"segments", PyList{PyDict{{"device", 0}, {"blocks", PyList{PyDict{{"address", 1}}}}}}}})
                .find("segments[0].blocks[0]: no 'size'"),
            std::string::npos);
  EXPECT_NE(
      error_of(PyDict{{"segments",
                       PyList{PyDict{{"blocks", PyList{PyDict{{"address", 1}, {"size", 1}, {"state", "weird"}}}}}}}})
          .find("unknown block state 'weird'"),
      std::string::npos);
  EXPECT_NE(error_of(PyDict{{"segments", PyTuple{}}}).find("segments: a tuple, expected a list"), std::string::npos);
}

TEST(Snapshot, UnknownActionsAreCountedNotFatal) {
  SnapshotBuilder b;
  b.event(0, "alloc", kA, 100);
  b.event(0, "something_new", kA, 100);
  const Snapshot s = parse_ok(b);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("1 event with the unknown action 'something_new'"), std::string::npos);
  EXPECT_EQ(s.devices[0].events.size(), 1u);
}

TEST(Snapshot, UnknownLineNumbersAreZero) {
  // PyTorch writes SIZE_MAX for a frame's unknown line (a 9-byte LONG1).
  SnapshotBuilder b;
  b.event(0, "alloc", kA, 100, {frame("x.py", 5, "f")});
  std::string bytes = b.bytes();
  // Replace the line 5 (BININT1 5 after the 'line' key) with SIZE_MAX.
  const std::string key = std::string("\x8c\x04line\x94K\x05", 9);
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at + 7, 2, std::string("\x8a\x09", 2) + std::string(8, '\xff') + std::string(1, '\0'));
  StatusOr<Snapshot> s = parse_snapshot(bytes);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->frames[s->stacks[s->devices[0].events[0].stack][0]].line, 0);
}

// A 20 MiB segment at kA holds 8 MiB from before the window; the window
// places 10 MiB in it, makes a second 20 MiB segment at kC (the peak
// reserved), places 1 MiB in kA and then the 15 MiB block that needed kC.
SnapshotBuilder segment_for_a_request() {
  constexpr uint64_t kC = kA + 0x100000000;
  SnapshotBuilder b;
  b.segment(0, kA, 20 * MiB, false,
            {{.address = kA, .size = 8 * MiB, .requested = 8 * MiB, .state = "active_allocated"},
             {.address = kA + 8 * MiB, .size = 10 * MiB, .requested = 10 * MiB, .state = "active_allocated"},
             {.address = kA + 18 * MiB, .size = 1 * MiB, .requested = 1 * MiB, .state = "active_allocated"},
             {.address = kA + 19 * MiB, .size = 1 * MiB, .state = "inactive"}});
  b.segment(0, kC, 20 * MiB, false,
            {{.address = kC, .size = 15 * MiB, .requested = 15 * MiB, .state = "active_allocated"},
             {.address = kC + 15 * MiB, .size = 5 * MiB, .state = "inactive"}});
  b.event(0, "alloc", kA + 8 * MiB, 10 * MiB, user_stack(20));
  b.event(0, "segment_alloc", kC, 20 * MiB);
  b.event(0, "alloc", kA + 18 * MiB, 1 * MiB, user_stack(21));
  b.event(0, "alloc", kC, 15 * MiB, user_stack(22));
  return b;
}

TEST(Snapshot, FragmentationIsTakenAfterTheAllocationThatNeededTheSegment) {
  const Snapshot s = parse_ok(segment_for_a_request());
  const Window w = reconstruct_window(s, s.devices[0]);
  ASSERT_TRUE(w.warnings.empty()) << w.warnings.front();
  EXPECT_EQ(w.peak_reserved.bytes, 40 * MiB);
  EXPECT_EQ(w.peak_reserved.event, 1);
  // Not at the segment_alloc (which showed the new segment entirely free),
  // nor at the 1 MiB alloc that lands in the old segment.
  EXPECT_EQ(w.segments_at_peak_event, 3);
  ASSERT_EQ(w.segments_at_peak.size(), 2u);
  EXPECT_EQ(w.segments_at_peak[0].allocated, 19 * MiB);
  EXPECT_EQ(w.segments_at_peak[1].allocated, 15 * MiB);
  // The table adds up with what was allocated then: 8 + 10 + 1 + 15 MiB.
  uint64_t allocated = 0;
  for (const SegmentUse& u : w.segments_at_peak) allocated += u.allocated;
  EXPECT_EQ(allocated, 34 * MiB);
  EXPECT_EQ(w.peak_allocated.bytes, 34 * MiB);
}

TEST(Snapshot, OomNamesTheFailingRequestAndTheLargestFreeBlock) {
  SnapshotBuilder b;
  b.segment(0, kA, 20 * MiB, false,
            {{.address = kA, .size = 4 * MiB, .requested = 4 * MiB, .state = "active_allocated"},
             {.address = kA + 4 * MiB, .size = 2 * MiB, .requested = 2 * MiB, .state = "active_allocated"},
             {.address = kA + 6 * MiB, .size = 4 * MiB, .state = "inactive"},
             {.address = kA + 10 * MiB, .size = 3 * MiB, .requested = 3 * MiB, .state = "active_allocated"},
             {.address = kA + 13 * MiB, .size = 7 * MiB, .state = "inactive"}});
  b.event(0, "alloc", kA + 4 * MiB, 2 * MiB, user_stack(30));
  b.event(0, "alloc", kA + 10 * MiB, 3 * MiB, user_stack(31));
  b.event(0, "oom", 1 * MiB, 16 * MiB, user_stack(33));
  const Snapshot s = parse_ok(b);
  const Window w = reconstruct_window(s, s.devices[0]);
  ASSERT_EQ(w.ooms.size(), 1u);
  EXPECT_EQ(s.describe_stack(w.ooms[0].stack), "me/train.py:33 forward");
  // Free then: [6, 10) and [13, 20) MiB of the segment.
  EXPECT_EQ(w.ooms[0].largest_free_block, 7 * MiB);
}

bool has_caution(const Window& w, const std::string& part) {
  for (const std::string& c : w.cautions) {
    if (c.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(Snapshot, CautionsWhenTheDumpHasNoTraceEvents) {
  SnapshotBuilder b;
  b.segment(0, kA, 20 * MiB, false,
            {{.address = kA, .size = 4 * MiB, .requested = 4 * MiB, .state = "active_allocated"},
             {.address = kA + 4 * MiB, .size = 16 * MiB, .state = "inactive"}});
  const Snapshot s = parse_ok(b);
  ASSERT_EQ(s.devices.size(), 1u);
  const Window w = reconstruct_window(s, s.devices[0]);
  ASSERT_EQ(w.cautions.size(), 1u);
  EXPECT_TRUE(has_caution(w, "no trace events")) << w.cautions[0];
  EXPECT_TRUE(has_caution(w, "torch.cuda.memory._record_memory_history(")) << w.cautions[0];
}

TEST(Snapshot, CautionsWhenMostOfThePeakPredatesTheWindow) {
  // hand_made_window: 4 MiB of the 6 MiB + 300 B peak was allocated before it.
  const Snapshot before = parse_ok(hand_made_window());
  const Window w = reconstruct_window(before, before.devices[0]);
  ASSERT_TRUE(has_caution(w, "before building the model"));
  EXPECT_TRUE(has_caution(w, "66% of the peak allocated (4.00 MiB)")) << w.cautions[0];
  // segment_for_a_request: 8 MiB of 34 MiB: no caution.
  const Snapshot within = parse_ok(segment_for_a_request());
  EXPECT_TRUE(reconstruct_window(within, within.devices[0]).cautions.empty());
}

TEST(Snapshot, CautionsWhenTheWindowIsShorterThanAStep) {
  auto stepped = [](int64_t first_us, int64_t last_us) {
    SnapshotBuilder b;
    b.newer = true;
    for (int step = 1; step <= 3; ++step) {
      b.annotations.push_back(PyDict{{"stage", "START"},
                                     {"name", "ProfilerStep#" + std::to_string(step)},
                                     {"device", 0},
                                     {"time_us", int64_t{1000000} * step}});
    }
    b.segment(0, kA, 20 * MiB, false, {{.address = kA, .size = 20 * MiB, .state = "inactive"}});
    b.event(0, "alloc", kA, 1 * MiB, user_stack(40), 0, first_us);
    b.event(0, "free_completed", kA, 1 * MiB, {}, 0, last_us);
    return parse_ok(b);
  };
  // Steps of 1 s; a window of 100 us.
  const Snapshot part = stepped(1500000, 1500100);
  const Window short_window = reconstruct_window(part, part.devices[0]);
  EXPECT_TRUE(has_caution(short_window, "less than half of a step"));
  const Snapshot whole = stepped(1000000, 3000000);
  EXPECT_FALSE(has_caution(reconstruct_window(whole, whole.devices[0]), "less than half of a step"));
}

}  // namespace
}  // namespace memplan::snapshot
