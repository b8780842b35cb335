// trace_file_test.cc — the trace file format: what is written reads back
// exactly, and damaged files are errors, never crashes or plausible garbage.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <string>

#include "memplan/trace.h"
#include "trace/trace_format.h"
#include "trace_builder.h"

namespace memplan {
namespace {

using testing::TraceBuilder;
namespace tf = trace_format;

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

Trace every_kind_of_event() {
  TraceBuilder b;
  b.mark()
      .malloc(0x1000, 100)
      .calloc(0x2000, 200, 1)
      .aligned(0x4000, 1000, 64)
      .realloc(0x1000, 0x5000, 1000)
      .realloc(0, 0x6000, 50, 1)
      .realloc(0x6000, 0, 0, 1)  // a size-0 realloc frees
      .free(0x2000, 1)
      .free(0x5000)
      .mark(1)
      .malloc(0, uint64_t{1} << 63)  // failed
      .free(0x4000)
      .mark(2)
      .complete();
  Trace t = b.build();
  t.missed_events = 3;
  t.dropped_marks = 1;
  return t;
}

void expect_same_trace(const Trace& a, const Trace& b) {
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.complete, b.complete);
  EXPECT_EQ(a.missed_events, b.missed_events);
  EXPECT_EQ(a.dropped_marks, b.dropped_marks);
  EXPECT_EQ(a.threads, b.threads);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) EXPECT_EQ(a.events[i], b.events[i]) << "event #" << i;
}

TEST(TraceFile, RoundTripsEveryKindOfEvent) {
  const Trace original = every_kind_of_event();
  auto bytes = format_trace(original);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto parsed = parse_trace(as_bytes(*bytes));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  expect_same_trace(*parsed, original);
  EXPECT_EQ(parsed->file_bytes, bytes->size());
  EXPECT_EQ(parsed->mark_indices(), (std::vector<size_t>{0, 9, 12}));
}

TEST(TraceFile, RoundTripsManyThreadsAcrossManyBlocks) {
  // 4 threads x 5000 events: several blocks per thread, interleaved sequences.
  TraceBuilder b;
  std::mt19937_64 rng(7);
  std::vector<std::vector<uint64_t>> live(4);
  for (int i = 0; i < 20000; ++i) {
    const auto thread = static_cast<uint32_t>(rng() % 4);
    auto& mine = live[thread];
    if (!mine.empty() && rng() % 2) {
      b.free(mine.back(), thread);
      mine.pop_back();
    } else {
      const uint64_t p = 0x7f0000000000ull + (rng() % (1u << 24)) * 16;
      b.malloc(p, 1 + rng() % 100000, thread);
      mine.push_back(p);
    }
    if (i % 1000 == 0) b.mark(thread);
  }
  const Trace original = b.build();
  auto bytes = format_trace(original);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto parsed = parse_trace(as_bytes(*bytes));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  expect_same_trace(*parsed, original);
}

TEST(TraceFile, EncodesAHeapLikeTraceInUnder32BytesPerEvent) {
  // Pointers a few KB to MB apart, sizes up to 1 MB, times 10 ns apart: what a
  // real program's trace looks like to the delta encoding.
  TraceBuilder b;
  std::mt19937_64 rng(11);
  std::vector<uint64_t> live;
  for (int i = 0; i < 100000; ++i) {
    if (!live.empty() && rng() % 2) {
      const size_t k = rng() % live.size();
      b.free(live[k]);
      live[k] = live.back();
      live.pop_back();
    } else {
      const uint64_t p = 0x55d0c0000000ull + (rng() % (1u << 20)) * 64;
      b.malloc(p, 1 + rng() % (1u << 20));
      live.push_back(p);
    }
  }
  const Trace trace = b.build();
  auto bytes = format_trace(trace);
  ASSERT_TRUE(bytes.ok());
  const double per_event = static_cast<double>(bytes->size()) / static_cast<double>(trace.events.size());
  EXPECT_LT(per_event, 32.0);
}

// Offsets at which a prefix of the file ends exactly between blocks.
std::set<size_t> block_boundaries(const std::string& bytes) {
  std::set<size_t> boundaries;
  size_t offset = tf::kFileHeaderBytes;
  boundaries.insert(offset);
  while (offset + tf::kBlockHeaderBytes <= bytes.size()) {
    offset += tf::kBlockHeaderBytes + tf::get_u32(reinterpret_cast<const uint8_t*>(bytes.data()) + offset + 8);
    boundaries.insert(offset);
  }
  return boundaries;
}

TEST(TraceFile, EveryTruncationIsAnErrorUnlessItEndsBetweenBlocks) {
  auto bytes = format_trace(every_kind_of_event());
  ASSERT_TRUE(bytes.ok());
  const std::set<size_t> boundaries = block_boundaries(*bytes);
  for (size_t n = 0; n < bytes->size(); ++n) {
    auto parsed = parse_trace(as_bytes(bytes->substr(0, n)));
    if (boundaries.count(n)) {
      // A process killed between two block writes leaves exactly this: readable, incomplete.
      ASSERT_TRUE(parsed.ok()) << "prefix of " << n << " bytes: " << parsed.status().to_string();
      EXPECT_FALSE(parsed->complete);
    } else {
      ASSERT_FALSE(parsed.ok()) << "prefix of " << n << " bytes parsed";
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(TraceFile, EveryFlippedBitIsAnError) {
  auto bytes = format_trace(every_kind_of_event());
  ASSERT_TRUE(bytes.ok());
  for (size_t i = 0; i < bytes->size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string damaged = *bytes;
      damaged[i] = static_cast<char>(damaged[i] ^ (1 << bit));
      auto parsed = parse_trace(as_bytes(damaged));
      ASSERT_FALSE(parsed.ok()) << "byte " << i << " bit " << bit;
    }
  }
}

TEST(TraceFile, RandomDamageNeverCrashesTheReader) {
  auto bytes = format_trace(every_kind_of_event());
  ASSERT_TRUE(bytes.ok());
  std::mt19937_64 rng(3);
  for (int round = 0; round < 2000; ++round) {
    std::string damaged = *bytes;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) damaged[rng() % damaged.size()] = static_cast<char>(rng());
    if (rng() % 4 == 0) damaged.resize(rng() % damaged.size());
    auto parsed = parse_trace(as_bytes(damaged));
    if (parsed.ok()) EXPECT_LE(parsed->events.size(), every_kind_of_event().events.size());
  }
}

TEST(TraceFile, RejectsFilesThatAreNotTraces) {
  EXPECT_FALSE(parse_trace({}).ok());
  const std::string csv = "id,lower,upper,size\n0,0,1,8\n";
  auto parsed = parse_trace(as_bytes(csv), "model.csv");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("model.csv"), std::string::npos);
  EXPECT_NE(parsed.status().message().find("not a memplan trace"), std::string::npos);
}

TEST(TraceFile, RejectsAnUnknownVersionByName) {
  auto bytes = format_trace(every_kind_of_event());
  ASSERT_TRUE(bytes.ok());
  auto* data = reinterpret_cast<uint8_t*>(bytes->data());
  tf::put_u32(data + 8, tf::kVersion + 1);
  tf::put_u64(data + 56, tf::checksum_finish(tf::checksum_update(tf::kChecksumSeed, data, 56)));
  auto parsed = parse_trace(as_bytes(*bytes));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("version " + std::to_string(tf::kVersion + 1)), std::string::npos);
}

// Appends one hand-made block (a valid checksum over whatever it holds).
void append_block(std::string& out, tf::BlockHeader h, const std::vector<tf::EventFields>& events) {
  std::vector<uint8_t> payload(events.size() * tf::kMaxEncodedEventBytes + 1);
  tf::DeltaState s{.seq = h.base_seq, .raw = h.base_raw};
  uint8_t* p = payload.data();
  for (const auto& e : events) p = tf::encode_event(e, s, p);
  h.event_count = static_cast<uint32_t>(events.size());
  h.payload_bytes = static_cast<uint32_t>(p - payload.data());
  uint8_t header[tf::kBlockHeaderBytes];
  tf::write_block_header(h, payload.data(), header);
  out.append(reinterpret_cast<const char*>(header), sizeof header);
  out.append(reinterpret_cast<const char*>(payload.data()), h.payload_bytes);
}

std::string file_header() {
  std::string out(tf::kFileHeaderBytes, '\0');
  tf::write_file_header(tf::FileHeader{.pid = 1}, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

TEST(TraceFile, EventsWithoutAClockReadingGetInterpolatedTimes) {
  // The tracer reads the clock on some events only; the others repeat the
  // last reading. Times 100, -, -, 400 become 100, 200, 300, 400.
  std::string bytes(tf::kFileHeaderBytes, '\0');
  tf::write_file_header(tf::FileHeader{.pid = 1, .flags = tf::kSampledClock}, reinterpret_cast<uint8_t*>(bytes.data()));
  const uint64_t raw[] = {100, 100, 100, 400, 400};
  std::vector<tf::EventFields> events;
  for (uint64_t i = 0; i < 5; ++i)
    events.push_back({.call = tf::kMalloc, .seq = i + 1, .raw = raw[i], .ptr = 16 * (i + 1), .size = 8});
  append_block(bytes, {.type = tf::kEventBlock, .base_seq = 1}, events);
  auto parsed = parse_trace(as_bytes(bytes));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  std::vector<int64_t> times;
  for (const TraceEvent& e : parsed->events) times.push_back(e.time_ns);
  EXPECT_EQ(times, (std::vector<int64_t>{100, 200, 300, 400, 400}));  // the last keeps the last reading
}

TEST(TraceFile, RejectsTwoEventsWithOneSequenceNumber) {
  std::string bytes = file_header();
  append_block(bytes, {.type = tf::kEventBlock, .thread = 0, .base_seq = 5},
               {{.call = tf::kMalloc, .seq = 5, .ptr = 16, .size = 1}});
  append_block(bytes, {.type = tf::kEventBlock, .thread = 1, .base_seq = 5},
               {{.call = tf::kMalloc, .seq = 5, .ptr = 32, .size = 1}});
  auto parsed = parse_trace(as_bytes(bytes));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("sequence number 5"), std::string::npos);
}

TEST(TraceFile, RejectsAMarkInAnEventBlockAndDataAfterTheEnd) {
  std::string bytes = file_header();
  append_block(bytes, {.type = tf::kEventBlock, .base_seq = 1}, {{.call = tf::kMark, .seq = 1}});
  EXPECT_FALSE(parse_trace(as_bytes(bytes)).ok());

  bytes = file_header();
  const uint8_t totals[4] = {0, 0, 0, 0};
  tf::BlockHeader end{.type = tf::kEndBlock, .payload_bytes = 4};
  uint8_t header[tf::kBlockHeaderBytes];
  tf::write_block_header(end, totals, header);
  bytes.append(reinterpret_cast<const char*>(header), sizeof header).append(reinterpret_cast<const char*>(totals), 4);
  ASSERT_TRUE(parse_trace(as_bytes(bytes)).ok());
  append_block(bytes, {.type = tf::kEventBlock, .base_seq = 1},
               {{.call = tf::kMalloc, .seq = 1, .ptr = 16, .size = 1}});
  auto parsed = parse_trace(as_bytes(bytes));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("after the end block"), std::string::npos);
}

TEST(TraceFile, RejectsABlockThatClaimsMoreEventsThanItsBytesHold) {
  std::string bytes = file_header();
  tf::BlockHeader h{.type = tf::kEventBlock, .payload_bytes = 4, .event_count = 1000000};
  const uint8_t payload[4] = {tf::kFree, 0, 0, 0};
  uint8_t header[tf::kBlockHeaderBytes];
  tf::write_block_header(h, payload, header);
  bytes.append(reinterpret_cast<const char*>(header), sizeof header).append(reinterpret_cast<const char*>(payload), 4);
  EXPECT_FALSE(parse_trace(as_bytes(bytes)).ok());
}

TEST(TraceFile, WriterRejectsUnsortedEvents) {
  Trace t = TraceBuilder().malloc(16, 1).free(16).build();
  std::swap(t.events[0], t.events[1]);
  EXPECT_EQ(format_trace(t).status().code(), StatusCode::kInvalidArgument);
}

TEST(TraceFile, ReadingAMissingFileIsAnIoError) {
  auto t = read_trace("/nonexistent/memplan.trace");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kIoError);
}

TEST(TraceFile, WritesAndReadsFiles) {
  const std::string path = ::testing::TempDir() + "/memplan_trace_file_test.trace";
  const Trace original = every_kind_of_event();
  ASSERT_TRUE(write_trace(path, original).ok());
  auto read = read_trace(path);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  expect_same_trace(*read, original);
  std::remove(path.c_str());
}

TEST(Varint, RejectsValuesWiderThan64Bits) {
  const uint8_t eleven[] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02};
  const uint8_t* p = eleven;
  uint64_t v = 0;
  EXPECT_FALSE(tf::get_varint(&p, eleven + sizeof eleven, &v));
  uint8_t buffer[10];
  const uint8_t* end = tf::put_varint(buffer, ~uint64_t{0});
  p = buffer;
  ASSERT_TRUE(tf::get_varint(&p, end, &v));
  EXPECT_EQ(v, ~uint64_t{0});
}

}  // namespace
}  // namespace memplan
