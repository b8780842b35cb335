// Tests of the allocator models (memplan/allocator_model.h): each rule of
// PyTorch's caching allocator on a hand-made trace with the segments it
// must make, expandable segments, the start state, memplan's steady state
// against its cold start, and properties on random traces.
#include "memplan/allocator_model.h"

#include <gtest/gtest.h>

#include "simulate/caching_model.h"

#include <cstdint>
#include <random>
#include <vector>

namespace memplan::simulate {
namespace {

constexpr uint64_t KiB = uint64_t{1} << 10;
constexpr uint64_t MiB = uint64_t{1} << 20;

Request alloc(uint64_t id, uint64_t size, int64_t stream = 0) {
  return {.kind = Request::Kind::kAlloc, .id = id, .size = size, .stream = stream};
}
Request free_of(uint64_t id, int64_t stream = 0) { return {.kind = Request::Kind::kFree, .id = id, .stream = stream}; }
Request empty_cache() { return {.kind = Request::Kind::kEmptyCache}; }

DeviceTrace trace_of(std::vector<Request> requests, std::vector<StartSegment> start = {}) {
  return {.device = 0, .start = std::move(start), .requests = std::move(requests)};
}

ModelResult caching(const DeviceTrace& trace, const AllocatorSettings& settings = {}) {
  const StatusOr<ModelResult> r = simulate_caching(trace, settings);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ModelResult{};
}

ModelResult expandable(const DeviceTrace& trace, const AllocatorSettings& settings = {}) {
  const StatusOr<ModelResult> r = simulate_expandable_segments(trace, settings);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ModelResult{};
}

TEST(CachingModel, RoundsRequestsToBlocksOf512Bytes) {
  const AllocatorSettings none;
  EXPECT_EQ(caching_round_size(1, none), 512u);
  EXPECT_EQ(caching_round_size(512, none), 512u);
  EXPECT_EQ(caching_round_size(513, none), 1024u);
  EXPECT_EQ(caching_round_size(5 * MiB + 1, none), 5 * MiB + 512);
}

TEST(CachingModel, RoundsUpToPowerOfTwoDivisions) {
  // Four divisions of [4 MiB, 8 MiB) are 4, 5, 6 and 7 MiB.
  const AllocatorSettings every{.roundup_power2_divisions = {4}};
  EXPECT_EQ(caching_round_size(5 * MiB + 1, every), 6 * MiB);
  EXPECT_EQ(caching_round_size(4 * MiB, every), 4 * MiB);  // a power of two stays
  // Small sizes (at most 512 B per division) round to 512 B only.
  EXPECT_EQ(caching_round_size(1500, every), 1536u);
  // Per interval: index 2 is [4 MiB, 8 MiB); index 0 (below 2 MiB) has none.
  AllocatorSettings per_interval{.roundup_power2_divisions = std::vector<uint64_t>(16, 0)};
  per_interval.roundup_power2_divisions[2] = 4;
  EXPECT_EQ(caching_round_size(5 * MiB + 1, per_interval), 6 * MiB);
  EXPECT_EQ(caching_round_size(MiB + MiB / 2 + 1, per_interval), MiB + MiB / 2 + 512);
}

TEST(CachingModel, SmallRequestsShareOneTwoMiBSegment) {
  const ModelResult r = caching(trace_of({alloc(1, 1000), alloc(2, 1000), alloc(3, MiB)}));
  EXPECT_EQ(r.peak_reserved_bytes, 2 * MiB);
  EXPECT_EQ(r.device_allocations, 1u);
  EXPECT_EQ(r.peak_allocated_bytes, 1024 + 1024 + MiB);
  EXPECT_EQ(r.peak_requested_bytes, 2000 + MiB);
}

TEST(CachingModel, SmallAndLargePoolsAreSeparate) {
  // 1 MiB + 1 is large: a 20 MiB segment, although the small segment has room.
  const ModelResult r = caching(trace_of({alloc(1, 1000), alloc(2, MiB + 1)}));
  EXPECT_EQ(r.peak_reserved_bytes, 2 * MiB + 20 * MiB);
  EXPECT_EQ(r.device_allocations, 2u);
}

TEST(CachingModel, SegmentSizesFollowTheRequest) {
  // Below 10 MiB: a 20 MiB segment, shared by the next request; from 10 MiB:
  // the request rounded to 2 MiB.
  EXPECT_EQ(caching(trace_of({alloc(1, 3 * MiB), alloc(2, 3 * MiB)})).peak_reserved_bytes, 20 * MiB);
  const ModelResult big = caching(trace_of({alloc(1, 11 * MiB + 1)}));
  EXPECT_EQ(big.peak_reserved_bytes, 12 * MiB);
  EXPECT_EQ(big.device_allocations, 1u);
}

TEST(CachingModel, LargeRemaindersOfAtMostOneMiBAreNotSplit) {
  // The 20 MiB segment is freed whole; 19.5 MiB leaves 0.5 MiB: no split, the
  // block stays 20 MiB.
  const ModelResult r = caching(trace_of({alloc(1, 3 * MiB), free_of(1), alloc(2, 19 * MiB + 512 * KiB)}));
  EXPECT_EQ(r.peak_reserved_bytes, 20 * MiB);
  EXPECT_EQ(r.peak_allocated_bytes, 20 * MiB);
  // 18 MiB leaves 2 MiB: split, and the rest serves a 1.5 MiB request.
  const ModelResult split =
      caching(trace_of({alloc(1, 3 * MiB), free_of(1), alloc(2, 18 * MiB), alloc(3, MiB + 512 * KiB)}));
  EXPECT_EQ(split.peak_reserved_bytes, 20 * MiB);
  EXPECT_EQ(split.device_allocations, 1u);
}

TEST(CachingModel, SmallRemaindersOf512BytesAreSplit) {
  // 1 MiB and 1 MiB - 512 leave 512 B of the 2 MiB segment, which serves a
  // 100-byte request.
  const ModelResult r = caching(trace_of({alloc(1, MiB), alloc(2, MiB - 512), alloc(3, 100)}));
  EXPECT_EQ(r.peak_reserved_bytes, 2 * MiB);
  EXPECT_EQ(r.peak_allocated_bytes, 2 * MiB);
  EXPECT_EQ(r.device_allocations, 1u);
}

TEST(CachingModel, MaxSplitSizeKeepsOversizeBlocksForCloseRequests) {
  const AllocatorSettings settings{.max_split_size_mb = 40};
  // A cached 64 MiB block: a 30 MiB request (below the limit) may not use it.
  EXPECT_EQ(caching(trace_of({alloc(1, 64 * MiB), free_of(1), alloc(2, 30 * MiB)}), settings).peak_reserved_bytes,
            94 * MiB);
  // 50 MiB is within 20 MiB of it: served whole, unsplit.
  const ModelResult close = caching(trace_of({alloc(1, 64 * MiB), free_of(1), alloc(2, 50 * MiB)}), settings);
  EXPECT_EQ(close.peak_reserved_bytes, 64 * MiB);
  EXPECT_EQ(close.peak_allocated_bytes, 64 * MiB);
  // 40 MiB is not (64 >= 40 + 20).
  EXPECT_EQ(caching(trace_of({alloc(1, 64 * MiB), free_of(1), alloc(2, 40 * MiB)}), settings).peak_reserved_bytes,
            104 * MiB);
  // Without the setting, the 30 MiB request splits the cached block.
  EXPECT_EQ(caching(trace_of({alloc(1, 64 * MiB), free_of(1), alloc(2, 30 * MiB)})).peak_reserved_bytes, 64 * MiB);
}

TEST(CachingModel, FreedNeighboursCoalesce) {
  // Two 3 MiB blocks of one 20 MiB segment, freed: one 20 MiB block again,
  // which serves 19 MiB without a new segment.
  const ModelResult r =
      caching(trace_of({alloc(1, 3 * MiB), alloc(2, 3 * MiB), free_of(1), free_of(2), alloc(3, 19 * MiB)}));
  EXPECT_EQ(r.peak_reserved_bytes, 20 * MiB);
  EXPECT_EQ(r.device_allocations, 1u);
  // With the second block live the free space is split around it: a new segment.
  const ModelResult held = caching(trace_of({alloc(1, 3 * MiB), alloc(2, 3 * MiB), free_of(1), alloc(3, 15 * MiB)}));
  EXPECT_EQ(held.peak_reserved_bytes, 20 * MiB + 16 * MiB);
}

TEST(CachingModel, StreamsDoNotShareCachedBlocks) {
  const ModelResult r = caching(trace_of({alloc(1, 3 * MiB, 1), free_of(1, 1), alloc(2, 3 * MiB, 2)}));
  EXPECT_EQ(r.peak_reserved_bytes, 40 * MiB);
  const ModelResult same = caching(trace_of({alloc(1, 3 * MiB, 1), free_of(1, 1), alloc(2, 3 * MiB, 1)}));
  EXPECT_EQ(same.peak_reserved_bytes, 20 * MiB);
}

TEST(CachingModel, ReusesTheBestFittingCachedBlock) {
  // Cached 12 MiB and 16 MiB segments: a 12 MiB request takes the 12 MiB one,
  // so that 16 MiB is still there for the next request.
  const ModelResult r = caching(trace_of(
      {alloc(1, 16 * MiB), alloc(2, 12 * MiB), free_of(1), free_of(2), alloc(3, 12 * MiB), alloc(4, 15 * MiB)}));
  EXPECT_EQ(r.peak_reserved_bytes, 28 * MiB);
  EXPECT_EQ(r.device_allocations, 2u);
}

TEST(CachingModel, EmptyCacheReleasesUnsplitCachedSegments) {
  const ModelResult r = caching(
      trace_of({alloc(1, 12 * MiB), alloc(2, 3 * MiB), alloc(3, 3 * MiB), free_of(1), free_of(2), empty_cache()}));
  // The 12 MiB segment goes; the 20 MiB one holds block 3.
  EXPECT_EQ(r.peak_reserved_bytes, 32 * MiB);
  EXPECT_EQ(r.final_reserved_bytes, 20 * MiB);
  EXPECT_EQ(r.device_frees, 1u);
  // The segment events, as a snapshot would record them.
  ASSERT_EQ(r.segment_events.size(), 3u);
  EXPECT_EQ(r.segment_events[0].kind, SegmentEvent::Kind::kAlloc);
  EXPECT_EQ(r.segment_events[0].bytes, 12 * MiB);
  EXPECT_EQ(r.segment_events[0].request_index, 0);
  EXPECT_EQ(r.segment_events[1].bytes, 20 * MiB);
  EXPECT_EQ(r.segment_events[1].request_index, 1);
  EXPECT_EQ(r.segment_events[2].kind, SegmentEvent::Kind::kFree);
  EXPECT_EQ(r.segment_events[2].bytes, 12 * MiB);
  EXPECT_EQ(r.segment_events[2].request_index, 5);
  EXPECT_EQ(r.segment_events[2].address, r.segment_events[0].address);
}

TEST(CachingModel, CapacityFreesCachedSegmentsBeforeFailing) {
  // 40 MiB of device: the cached 20 MiB segment of stream 1 is freed for stream 2.
  const AllocatorSettings settings{.capacity_bytes = 40 * MiB};
  const DeviceTrace trace = trace_of(
      {alloc(1, 12 * MiB, 1), alloc(2, 3 * MiB, 1), free_of(2, 1), alloc(3, 3 * MiB, 2), alloc(4, 3 * MiB, 3)});
  const ModelResult r = caching(trace, settings);
  EXPECT_EQ(r.device_frees, 1u);
  // The third stream's segment does not fit beside the other two, and no
  // cached segment is left to free: an out-of-memory, served past the capacity.
  EXPECT_EQ(r.out_of_memory, 1u);
  EXPECT_EQ(r.peak_reserved_bytes, 12 * MiB + 20 * MiB + 20 * MiB);
  EXPECT_EQ(r.peak_request_index, 4);
}

TEST(ExpandableSegmentsModel, RequestLargerThanTheCapacityIsAnOutOfMemoryNotACrash) {
  // 21 MiB of device and one 64 MiB request: the segment's address space,
  // sized from the capacity, must still hold the request that is served past it.
  const AllocatorSettings settings{.expandable_segments = true, .capacity_bytes = 21 * MiB};
  const DeviceTrace trace = trace_of({alloc(1, 4 * MiB), alloc(2, 64 * MiB), free_of(2), alloc(3, 4 * MiB)});
  StatusOr<ModelResult> r = simulate_expandable_segments(trace, settings);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->out_of_memory, 1u);
  EXPECT_GE(r->peak_reserved_bytes, 64 * MiB + 4 * MiB);
}

TEST(CachingModel, StartStateIsHonoured) {
  const uint64_t base = uint64_t{1} << 45;
  const std::vector<StartSegment> start = {
      {.address = base,
       .size = 20 * MiB,
       .blocks = {{.offset = 0, .size = 8 * MiB, .allocated = true, .requested_size = 8 * MiB - 100},
                  {.offset = 8 * MiB, .size = 12 * MiB}}}};
  // 10 MiB fits the free 12 MiB block; the start block is freed by its address.
  const ModelResult r = caching(trace_of({alloc(1, 10 * MiB), free_of(base), alloc(2, 8 * MiB)}, start));
  EXPECT_EQ(r.start_reserved_bytes, 20 * MiB);
  EXPECT_EQ(r.peak_reserved_bytes, 20 * MiB);
  EXPECT_EQ(r.device_allocations, 0u);
  EXPECT_EQ(r.peak_requested_bytes, 18 * MiB);
  EXPECT_EQ(r.peak_request_index, -1);
}

TEST(CachingModel, RefusesTracesThatContradictThemselves) {
  EXPECT_EQ(simulate_caching(trace_of({free_of(7)}), {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(simulate_caching(trace_of({alloc(7, 10), alloc(7, 10)}), {}).status().code(), StatusCode::kInvalidArgument);
  const std::vector<StartSegment> gap = {
      {.address = 1 << 30, .size = 2 * MiB, .small_pool = true, .blocks = {{.offset = 512, .size = 2 * MiB - 512}}}};
  const StatusOr<ModelResult> r = simulate_caching(trace_of({}, gap), {});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("start segment 0"), std::string::npos) << r.status().message();
  const std::vector<StartSegment> overlapping = {{.address = 1 << 30, .size = 2 * MiB, .small_pool = true},
                                                 {.address = (1 << 30) + MiB, .size = 2 * MiB, .small_pool = true}};
  EXPECT_EQ(simulate_caching(trace_of({}, overlapping), {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(simulate_memplan(trace_of({}, overlapping)).status().code(), StatusCode::kInvalidArgument);
  MemplanModelOptions exact;
  exact.fallback = FallbackModel::kExact;
  EXPECT_EQ(simulate_memplan_cold(trace_of({}, overlapping), exact).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(simulate_caching(trace_of({}), {.max_split_size_mb = 8}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(simulate_caching(trace_of({}), {.roundup_power2_divisions = {3}}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(CachingModel, MaxNonSplitRoundingWidensWhatOversizeBlocksServe) {
  // 64 MiB is not within 20 MiB of 40 MiB, but is within 32 MiB.
  const DeviceTrace trace = trace_of({alloc(1, 64 * MiB), free_of(1), alloc(2, 40 * MiB)});
  EXPECT_EQ(caching(trace, {.max_split_size_mb = 40, .max_non_split_rounding_mb = 32}).peak_reserved_bytes, 64 * MiB);
}

TEST(AllocatorConf, ReadsPytorchCudaAllocConf) {
  const StatusOr<AllocatorSettings> s = parse_allocator_conf(
      "max_split_size_mb:128, garbage_collection_threshold:0.6,expandable_segments:True,"
      "roundup_power2_divisions:[2:4,8:8,>:2],release_lock_on_cudamalloc:True,backend:native");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->max_split_size_mb, 128);
  EXPECT_EQ(s->garbage_collection_threshold, 0.6);
  EXPECT_TRUE(s->expandable_segments);
  // Intervals from 1 MiB: the first entry covers those below it, '>' those after the last.
  const std::vector<uint64_t> divisions = {4, 4, 0, 8, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
  EXPECT_EQ(s->roundup_power2_divisions, divisions);
  const StatusOr<AllocatorSettings> every = parse_allocator_conf("roundup_power2_divisions:4");
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(every->roundup_power2_divisions, std::vector<uint64_t>(16, 4));
  const StatusOr<AllocatorSettings> none = parse_allocator_conf("");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->max_split_size_mb, 0);
  EXPECT_TRUE(none->roundup_power2_divisions.empty());
}

TEST(AllocatorConf, RefusesWhatItCannotModel) {
  EXPECT_EQ(parse_allocator_conf("backend:cudaMallocAsync").status().code(), StatusCode::kUnimplemented);
  const StatusOr<AllocatorSettings> unknown = parse_allocator_conf("max_split_size_mb:64,max_spilt:3");
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("max_spilt"), std::string::npos);
  EXPECT_EQ(parse_allocator_conf("max_split_size_mb:big").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_allocator_conf("roundup_power2_divisions:[2:3]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_allocator_conf("roundup_power2_divisions:[2:4").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_allocator_conf("expandable_segments:maybe").status().code(), StatusCode::kInvalidArgument);
}

TEST(ExpandableSegmentsModel, GrowsOneSegmentByPages) {
  // Large pool pages are 20 MiB: 3 MiB maps one; 25 MiB more uses the free
  // 17 MiB and maps one more page. Without expandable segments: 20 + 26 MiB.
  const DeviceTrace trace = trace_of({alloc(1, 3 * MiB), alloc(2, 25 * MiB)});
  const ModelResult r = expandable(trace);
  EXPECT_EQ(r.peak_reserved_bytes, 40 * MiB);
  EXPECT_EQ(r.device_allocations, 2u);
  EXPECT_EQ(caching(trace).peak_reserved_bytes, 46 * MiB);
  // simulate_caching with the setting is the same model.
  EXPECT_EQ(caching(trace, {.expandable_segments = true}).peak_reserved_bytes, 40 * MiB);
}

TEST(ExpandableSegmentsModel, SmallPoolMapsTwoMiBPages) {
  const ModelResult r = expandable(trace_of({alloc(1, MiB), alloc(2, MiB), alloc(3, 1000)}));
  EXPECT_EQ(r.peak_reserved_bytes, 4 * MiB);
}

TEST(ExpandableSegmentsModel, SplitsAnyRemainderOf512Bytes) {
  // 19.5 MiB leaves 0.5 MiB of the page: split (the caching model would not).
  const ModelResult r = expandable(trace_of({alloc(1, 19 * MiB + 512 * KiB)}));
  EXPECT_EQ(r.peak_reserved_bytes, 20 * MiB);
  EXPECT_EQ(r.peak_allocated_bytes, 19 * MiB + 512 * KiB);
  // The remainder serves a 1.5 MiB request (large) without a new page.
  const ModelResult rest = expandable(trace_of({alloc(1, 18 * MiB + 512 * KiB), alloc(2, MiB + 512 * KiB)}));
  EXPECT_EQ(rest.peak_reserved_bytes, 20 * MiB);
  EXPECT_EQ(rest.device_allocations, 1u);
}

TEST(ExpandableSegmentsModel, EmptyCacheUnmapsFreePages) {
  const ModelResult r = expandable(trace_of({alloc(1, 30 * MiB), alloc(2, 15 * MiB), free_of(1), empty_cache()}));
  // 45 MiB mapped as three pages; freeing the first 30 MiB leaves one whole
  // free page (0-20 MiB) to unmap; 20-30 MiB stays mapped beside block 2.
  EXPECT_EQ(r.peak_reserved_bytes, 60 * MiB);
  EXPECT_EQ(r.final_reserved_bytes, 40 * MiB);
  EXPECT_EQ(r.device_frees, 1u);
  ASSERT_EQ(r.segment_events.size(), 3u);
  EXPECT_EQ(r.segment_events[0].kind, SegmentEvent::Kind::kMap);
  EXPECT_EQ(r.segment_events[0].bytes, 40 * MiB);
  EXPECT_EQ(r.segment_events[1].kind, SegmentEvent::Kind::kMap);
  EXPECT_EQ(r.segment_events[1].address, r.segment_events[0].address + 40 * MiB);
  EXPECT_EQ(r.segment_events[2].kind, SegmentEvent::Kind::kUnmap);
  EXPECT_EQ(r.segment_events[2].address, r.segment_events[0].address);
  EXPECT_EQ(r.segment_events[2].bytes, 20 * MiB);
}

TEST(ExpandableSegmentsModel, RecordedExpandableStartSegmentsGrow) {
  const uint64_t base = uint64_t{1} << 45;
  const std::vector<StartSegment> start = {
      {.address = base,
       .size = 20 * MiB,
       .expandable = true,
       .blocks = {{.offset = 0, .size = 5 * MiB, .allocated = true}, {.offset = 5 * MiB, .size = 15 * MiB}}}};
  const DeviceTrace trace = trace_of({alloc(1, 10 * MiB), alloc(2, 10 * MiB)}, start);
  // The free 15 MiB serves the first request, the segment grows by a page for the second.
  const ModelResult grown = expandable(trace);
  EXPECT_EQ(grown.peak_reserved_bytes, 40 * MiB);
  ASSERT_EQ(grown.segment_events.size(), 1u);
  EXPECT_EQ(grown.segment_events[0].kind, SegmentEvent::Kind::kMap);
  EXPECT_EQ(grown.segment_events[0].address, base + 20 * MiB);
  // With expandable segments off, its blocks serve nothing new: two 10 MiB segments.
  EXPECT_EQ(caching(trace).peak_reserved_bytes, 20 * MiB + 10 * MiB + 10 * MiB);
}

TEST(ExpandableSegmentsModel, StreamsGetTheirOwnSegments) {
  const ModelResult r = expandable(trace_of({alloc(1, 3 * MiB, 1), alloc(2, 3 * MiB, 2)}));
  EXPECT_EQ(r.peak_reserved_bytes, 40 * MiB);
}

// A window whose requests grow: each size is freed before a larger one is
// made, so the caching allocator can reuse nothing and reserves every
// segment, while a plan needs only two neighbours at a time.
DeviceTrace growing_window() {
  std::vector<Request> requests;
  uint64_t previous = 0;
  for (uint64_t i = 1; i <= 8; ++i) {
    requests.push_back(alloc(i, (10 + 2 * i) * MiB));
    if (previous != 0) requests.push_back(free_of(previous));
    previous = i;
  }
  requests.push_back(free_of(previous));
  return trace_of(requests);
}

MemplanModelOptions greedy() {
  MemplanModelOptions options;
  options.config.planner = "greedy_by_size";
  return options;
}

TEST(MemplanModel, SteadyStateServesTheWindowFromItsPlan) {
  const DeviceTrace trace = growing_window();
  const StatusOr<ModelResult> steady = simulate_memplan(trace, greedy());
  ASSERT_TRUE(steady.ok()) << steady.status().message();
  EXPECT_EQ(steady->served, 8u);
  EXPECT_EQ(steady->fallback, 0u);
  EXPECT_EQ(steady->plans, 1u);
  // The largest neighbours are 24 and 26 MiB; the slab is whole 2 MiB granules.
  EXPECT_GE(steady->arena_bytes, 50 * MiB);
  EXPECT_EQ(steady->peak_reserved_bytes, steady->slab_bytes);
  EXPECT_LT(steady->peak_reserved_bytes, 60 * MiB);
  EXPECT_EQ(steady->peak_requested_bytes, 50 * MiB);
}

TEST(MemplanModel, SteadyStateReservesNoMoreThanColdStart) {
  const DeviceTrace trace = growing_window();
  const StatusOr<ModelResult> steady = simulate_memplan(trace, greedy());
  const StatusOr<ModelResult> cold = simulate_memplan_cold(trace, greedy());
  ASSERT_TRUE(steady.ok()) << steady.status().message();
  ASSERT_TRUE(cold.ok()) << cold.status().message();
  EXPECT_LE(steady->peak_reserved_bytes, cold->peak_reserved_bytes);
  // Cold, the fallback serves everything with the caching allocator's rules.
  EXPECT_EQ(cold->served, 0u);
  EXPECT_EQ(cold->fallback, 8u);
  EXPECT_EQ(cold->peak_reserved_bytes, caching(trace).peak_reserved_bytes);
  // An exact fallback holds only what is live (until memplan trims it).
  MemplanModelOptions exact = greedy();
  exact.fallback = FallbackModel::kExact;
  const StatusOr<ModelResult> cold_exact = simulate_memplan_cold(trace, exact);
  ASSERT_TRUE(cold_exact.ok());
  EXPECT_EQ(cold_exact->peak_reserved_bytes, 50 * MiB);
}

// Warm: the window alone with the plans the steady model learnt loaded
// first serves every request from the first one, as the steady state does,
// and the plans survive the plan file's text.
TEST(MemplanModel, WarmStartFromLearntPlansServesTheFirstWindow) {
  const DeviceTrace trace = growing_window();
  PlanFile learnt;
  const StatusOr<ModelResult> steady = simulate_memplan(trace, greedy(), &learnt);
  ASSERT_TRUE(steady.ok()) << steady.status().message();
  ASSERT_EQ(learnt.adapter, "device");
  ASSERT_EQ(learnt.units.size(), 1u);
  EXPECT_EQ(learnt.units[0].name, "cuda:0/0");
  StatusOr<PlanFile> read = read_plan_file(write_plan_file(learnt));
  ASSERT_TRUE(read.ok()) << read.status().message();
  const StatusOr<ModelResult> warm = simulate_memplan_warm(trace, *read, greedy());
  ASSERT_TRUE(warm.ok()) << warm.status().message();
  EXPECT_EQ(warm->served, 8u);
  EXPECT_EQ(warm->fallback, 0u);
  EXPECT_EQ(warm->peak_reserved_bytes, steady->peak_reserved_bytes);
  const StatusOr<ModelResult> cold = simulate_memplan_cold(trace, greedy());
  ASSERT_TRUE(cold.ok());
  EXPECT_EQ(cold->served, 0u) << "cold, the first window profiles";
}

// Plans of another window (every request half as large) are loaded and fall
// back where they stop fitting: no error, nothing served that does not fit,
// and no slab held for them (Learner::drop_seed).
TEST(MemplanModel, WarmStartFromAnotherWindowsPlansFallsBack) {
  const DeviceTrace trace = growing_window();
  DeviceTrace smaller = trace;
  for (Request& q : smaller.requests) {
    if (q.kind == Request::Kind::kAlloc) q.size = q.size / 2;
  }
  PlanFile other;
  ASSERT_TRUE(simulate_memplan(smaller, greedy(), &other).ok());
  const StatusOr<ModelResult> warm = simulate_memplan_warm(trace, other, greedy());
  ASSERT_TRUE(warm.ok()) << warm.status().message();
  EXPECT_GT(warm->fallback, 0u);
  EXPECT_EQ(warm->served + warm->fallback, 8u);
  // Its first request does not fit and nothing of the plan is live yet: the
  // seeded plans give their slab back at once, so the window reserves what
  // the cold start does.
  const StatusOr<ModelResult> cold = simulate_memplan_cold(trace, greedy());
  ASSERT_TRUE(cold.ok());
  EXPECT_EQ(warm->served, 0u);
  EXPECT_EQ(warm->slab_bytes, 0u);
  EXPECT_EQ(warm->peak_reserved_bytes, cold->peak_reserved_bytes);
  PlanFile host = other;
  host.adapter = "drop-in";
  EXPECT_EQ(simulate_memplan_warm(trace, host, greedy()).status().code(), StatusCode::kInvalidArgument);
}

TEST(MemplanModel, APlanWhoseSlabDoesNotFitLeavesTheFallbackServing) {
  // 48 MiB of device: the plan needs 50 MiB, so its slab cannot be mapped.
  MemplanModelOptions options = greedy();
  options.settings.capacity_bytes = 48 * MiB;
  const StatusOr<ModelResult> steady = simulate_memplan(growing_window(), options);
  ASSERT_TRUE(steady.ok()) << steady.status().message();
  EXPECT_GE(steady->plan_failures, 1u);
  EXPECT_EQ(steady->served, 0u);
  EXPECT_EQ(steady->fallback, 8u);
  EXPECT_EQ(steady->slab_bytes, 0u);
  // The last two requests (24 and 26 MiB) are live together: past the capacity.
  EXPECT_GE(steady->out_of_memory, 1u);
}

TEST(MemplanModel, StartStateStaysWithTheFallback) {
  const uint64_t base = uint64_t{1} << 45;
  const std::vector<StartSegment> start = {
      {.address = base, .size = 40 * MiB, .blocks = {{.offset = 0, .size = 40 * MiB, .allocated = true}}},
      {.address = base + 40 * MiB,
       .size = 20 * MiB,
       .blocks = {{.offset = 0, .size = 4 * MiB, .allocated = true}, {.offset = 4 * MiB, .size = 16 * MiB}}}};
  // The window frees the second start block and makes a chain of its own.
  DeviceTrace trace = growing_window();
  trace.start = start;
  trace.requests.insert(trace.requests.begin(), free_of(base + 40 * MiB));
  const StatusOr<ModelResult> steady = simulate_memplan(trace, greedy());
  ASSERT_TRUE(steady.ok()) << steady.status().message();
  EXPECT_EQ(steady->served, 8u);
  EXPECT_EQ(steady->fallback, 0u);
  // The 40 MiB start block stays live in the fallback beside the slab.
  EXPECT_GE(steady->peak_reserved_bytes, 40 * MiB + steady->slab_bytes);
  const StatusOr<ModelResult> cold = simulate_memplan_cold(trace, greedy());
  ASSERT_TRUE(cold.ok()) << cold.status().message();
  EXPECT_EQ(cold->start_reserved_bytes, 60 * MiB);
  EXPECT_LE(steady->peak_reserved_bytes, cold->peak_reserved_bytes);
}

// Note [Warm start state]: the warm model makes the start state's live
// blocks (40 and 4 MiB here) through the allocator before the window; the
// 60 MiB and 16 MiB the recording's segments held free beside them are not
// the warm run's. The steady model's plans lead with that start-up, whose
// blocks the loading unit serves from resident slots (Note [Resident
// blocks]): 44 MiB, whatever the fallback's rules. The cold model keeps the
// recorded segments.
TEST(MemplanModel, WarmStartServesTheStartStateFromResidentSlots) {
  const uint64_t base = uint64_t{1} << 45;
  DeviceTrace trace = growing_window();
  trace.start = {
      {.address = base,
       .size = 100 * MiB,
       .blocks = {{.offset = 0, .size = 40 * MiB, .allocated = true}, {.offset = 40 * MiB, .size = 60 * MiB}}},
      {.address = base + 100 * MiB,
       .size = 20 * MiB,
       .blocks = {{.offset = 0, .size = 4 * MiB, .allocated = true}, {.offset = 4 * MiB, .size = 16 * MiB}}}};
  // The window frees the 4 MiB start block first, by its recorded address.
  trace.requests.insert(trace.requests.begin(), free_of(base + 100 * MiB));
  PlanFile learnt;
  ASSERT_TRUE(simulate_memplan(trace, greedy(), &learnt).ok());
  // The start-up leads, every block escaped, in address order; the window's
  // variant follows it.
  ASSERT_EQ(learnt.units.size(), 1u);
  ASSERT_EQ(learnt.units[0].variants.size(), 2u);
  const SavedVariant& start_up = learnt.units[0].variants[0];
  ASSERT_EQ(start_up.requests.size(), 2u);
  EXPECT_EQ(start_up.requests[0].size, 40 * MiB);
  EXPECT_EQ(start_up.requests[1].size, 4 * MiB);
  EXPECT_EQ(start_up.requests[0].upper, -1);
  EXPECT_EQ(learnt.units[0].variants[1].after, start_up.key);
  const StatusOr<ModelResult> cold = simulate_memplan_cold(trace, greedy());
  ASSERT_TRUE(cold.ok()) << cold.status().message();
  EXPECT_EQ(cold->start_reserved_bytes, 120 * MiB);
  for (const FallbackModel fallback : {FallbackModel::kCaching, FallbackModel::kExact}) {
    MemplanModelOptions options = greedy();
    options.fallback = fallback;
    const StatusOr<ModelResult> warm = simulate_memplan_warm(trace, learnt, options);
    ASSERT_TRUE(warm.ok()) << warm.status().message();
    EXPECT_EQ(warm->served, 8u);
    EXPECT_EQ(warm->fallback, 0u);
    EXPECT_EQ(warm->resident_bytes, 44 * MiB) << "the 40 MiB block's slot is live to the end";
    EXPECT_EQ(warm->start_reserved_bytes, 44 * MiB + warm->slab_bytes) << "the window's slab is mapped at the mark";
    EXPECT_LE(warm->peak_reserved_bytes, 44 * MiB + warm->slab_bytes);
    EXPECT_LT(warm->peak_reserved_bytes, cold->peak_reserved_bytes);
  }
  // Without the start-up, the start blocks go where the window's plan and
  // the fallback put them (the plan's first request deviates: the seed is
  // dropped), never an error.
  PlanFile window_only = learnt;
  window_only.units[0].variants.erase(window_only.units[0].variants.begin());
  const StatusOr<ModelResult> unplanned_start = simulate_memplan_warm(trace, window_only, greedy());
  ASSERT_TRUE(unplanned_start.ok()) << unplanned_start.status().message();
  EXPECT_EQ(unplanned_start->served + unplanned_start->fallback, 8u);
  // A start state the caching model refuses is refused by the warm model too.
  DeviceTrace overlapping = trace;
  overlapping.start[1].address = base + 20 * MiB;
  EXPECT_FALSE(simulate_memplan_warm(overlapping, learnt, greedy()).ok());
}

// Random traces on two streams, from a start state with live and free
// blocks: whatever the model, it holds at least the blocks it hands out,
// which hold at least what was asked for.
DeviceTrace random_trace(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint64_t base = uint64_t{1} << 45;
  DeviceTrace trace;
  trace.start = {{.address = base,
                  .size = 20 * MiB,
                  .blocks = {{.offset = 0, .size = 6 * MiB, .allocated = true}, {.offset = 6 * MiB, .size = 14 * MiB}}},
                 {.address = base + 20 * MiB,
                  .size = 2 * MiB,
                  .small_pool = true,
                  .blocks = {{.offset = 0, .size = 4 * KiB},
                             {.offset = 4 * KiB, .size = 4 * KiB, .allocated = true, .requested_size = 3000},
                             {.offset = 8 * KiB, .size = 2 * MiB - 8 * KiB}}}};
  std::vector<std::pair<uint64_t, int64_t>> live = {{base, 0}, {base + 20 * MiB + 4 * KiB, 0}};
  std::uniform_int_distribution<int> coin(0, 99);
  uint64_t next_id = 1;
  for (int i = 0; i < 400; ++i) {
    const int c = coin(rng);
    if (c < 2) {
      trace.requests.push_back(empty_cache());
    } else if (c < 55 || live.empty()) {
      const int64_t stream = coin(rng) < 70 ? 0 : 1;
      const uint64_t size = coin(rng) < 60 ? 1 + rng() % (2 * MiB) : 1 + rng() % (48 * MiB);
      trace.requests.push_back(alloc(next_id, size, stream));
      live.emplace_back(next_id++, stream);
    } else {
      const size_t k = rng() % live.size();
      trace.requests.push_back(free_of(live[k].first, live[k].second));
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  return trace;
}

void expect_ordered(const ModelResult& r, const char* model, uint64_t seed) {
  EXPECT_GE(r.peak_reserved_bytes, r.peak_allocated_bytes) << model << " seed " << seed;
  EXPECT_GE(r.peak_allocated_bytes, r.peak_requested_bytes) << model << " seed " << seed;
  EXPECT_GT(r.peak_requested_bytes, 0u) << model << " seed " << seed;
}

TEST(AllocatorModels, ReservedCoversAllocatedCoversRequestedOnRandomTraces) {
  const std::vector<AllocatorSettings> settings = {{},
                                                   {.max_split_size_mb = 32},
                                                   {.roundup_power2_divisions = {4}},
                                                   {.garbage_collection_threshold = 0.6, .capacity_bytes = 256 * MiB}};
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const DeviceTrace trace = random_trace(seed);
    const AllocatorSettings& s = settings[seed % settings.size()];
    expect_ordered(caching(trace, s), "caching", seed);
    expect_ordered(expandable(trace, s), "expandable_segments", seed);
    if (seed <= 4) {
      MemplanModelOptions options = greedy();
      options.settings = s;
      const StatusOr<ModelResult> steady = simulate_memplan(trace, options);
      ASSERT_TRUE(steady.ok()) << steady.status().message();
      expect_ordered(*steady, "memplan", seed);
      const StatusOr<ModelResult> cold = simulate_memplan_cold(trace, options);
      ASSERT_TRUE(cold.ok()) << cold.status().message();
      expect_ordered(*cold, "memplan_cold", seed);
      options.fallback = FallbackModel::kExact;
      const StatusOr<ModelResult> exact = simulate_memplan(trace, options);
      ASSERT_TRUE(exact.ok()) << exact.status().message();
      expect_ordered(*exact, "memplan, exact fallback", seed);
    }
  }
}

// The caching model's structure (blocks tile segments, free neighbours
// merged, pools hold exactly the free blocks, reserved = mapped bytes) after
// every request of random traces, in both modes and with the settings that
// free cached segments (capacity retries, max_split_size, garbage
// collection, empty cache).
TEST(CachingModel, InvariantsHoldAfterEveryRequest) {
  const std::vector<AllocatorSettings> settings = {
      {},
      {.max_split_size_mb = 32, .capacity_bytes = 160 * MiB},
      {.roundup_power2_divisions = {4}, .garbage_collection_threshold = 0.5, .capacity_bytes = 128 * MiB}};
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    for (const bool expandable : {false, true}) {
      const AllocatorSettings& s = settings[seed % settings.size()];
      AddressSpace space(uint64_t{1} << 46);
      CachingModel model(s, expandable, space);
      std::mt19937_64 rng(seed);
      std::vector<uint64_t> live;
      for (int i = 0; i < 600; ++i) {
        const uint64_t c = rng() % 100;
        if (c < 3) {
          model.release_cached();
        } else if (c < 55 || live.empty()) {
          const uint64_t size = c % 2 == 0 ? 1 + rng() % (2 * MiB) : 1 + rng() % (40 * MiB);
          const uint64_t at = model.allocate(size, static_cast<int64_t>(rng() % 2));
          EXPECT_GE(model.live_size(at), size);
          live.push_back(at);
        } else {
          const size_t k = rng() % live.size();
          EXPECT_TRUE(model.free(live[k]));
          live[k] = live.back();
          live.pop_back();
        }
        const Status ok = model.check_invariants();
        ASSERT_TRUE(ok.ok()) << ok.message() << " (seed " << seed << ", expandable " << expandable << ", step " << i
                             << ")";
        ASSERT_GE(model.reserved(), model.allocated());
      }
    }
  }
}

}  // namespace
}  // namespace memplan::simulate
