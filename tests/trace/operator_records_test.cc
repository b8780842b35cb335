// operator_records_test.cc — operator attribution in traces (format version
// 2): allocations carry their thread's innermost operator, the records take
// no ticks, version-1 files still read, and damaged records are errors.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "memplan/trace.h"
#include "memplan/validate.h"
#include "trace/trace_format.h"
#include "trace_builder.h"

namespace memplan {
namespace {

using testing::TraceBuilder;
namespace tf = trace_format;

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string file_header(uint32_t version = tf::kVersion) {
  std::string out(tf::kFileHeaderBytes, '\0');
  tf::write_file_header(tf::FileHeader{.version = version, .pid = 1}, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

// Appends one event block, encoding operator records as the tracer does (zero deltas).
void append_block(std::string& out, tf::BlockHeader h, std::vector<tf::EventFields> records) {
  std::vector<uint8_t> payload(records.size() * tf::kMaxEncodedOperatorBytes + 1);
  tf::DeltaState s{.seq = h.base_seq, .raw = h.base_raw};
  uint8_t* p = payload.data();
  for (tf::EventFields& r : records) {
    if (tf::call_is_operator_record(r.call)) {
      r.seq = s.seq;
      r.raw = s.raw;
      r.ptr = s.ptr;
    }
    p = tf::encode_event(r, s, p);
  }
  h.event_count = static_cast<uint32_t>(records.size());
  h.payload_bytes = static_cast<uint32_t>(p - payload.data());
  uint8_t header[tf::kBlockHeaderBytes];
  tf::write_block_header(h, payload.data(), header);
  out.append(reinterpret_cast<const char*>(header), sizeof header);
  out.append(reinterpret_cast<const char*>(payload.data()), h.payload_bytes);
}

tf::EventFields name_record(uint64_t id, const std::string& name) {
  return {.call = tf::kOperatorName,
          .operator_id = id,
          .name = reinterpret_cast<const uint8_t*>(name.data()),
          .name_length = name.size()};
}
tf::EventFields enter(uint64_t id) { return {.call = tf::kOperatorEnter, .operator_id = id}; }
tf::EventFields exit_record() { return {.call = tf::kOperatorExit}; }
tf::EventFields malloc_at(uint64_t seq, uint64_t ptr, uint64_t size) {
  return {.call = tf::kMalloc, .seq = seq, .ptr = ptr, .size = size};
}
tf::EventFields free_at(uint64_t seq, uint64_t ptr) { return {.call = tf::kFree, .seq = seq, .ptr = ptr}; }

const std::string kConv = "aten::conv2d";
const std::string kEmpty = "aten::empty";

// Thread 0 runs conv2d, which calls empty, with allocations at each depth;
// thread 1 names the operators (in a later block) and allocates outside any.
std::string nested_operators_file() {
  std::string bytes = file_header();
  append_block(bytes, {.type = tf::kEventBlock, .thread = 0, .os_tid = 10},
               {enter(0), malloc_at(1, 0x100, 64), enter(1), malloc_at(2, 0x200, 128), exit_record(),
                malloc_at(3, 0x300, 32), free_at(4, 0x200), exit_record(), malloc_at(5, 0x400, 8)});
  append_block(bytes, {.type = tf::kEventBlock, .thread = 1, .os_tid = 11},
               {malloc_at(6, 0x500, 1000), name_record(1, kEmpty), name_record(0, kConv)});
  return bytes;
}

TEST(OperatorRecords, AttributeEachAllocationToItsThreadsInnermostOperator) {
  const std::string bytes = nested_operators_file();
  auto trace = parse_trace(as_bytes(bytes));
  ASSERT_TRUE(trace.ok()) << trace.status().to_string();
  ASSERT_EQ(trace->operators, (std::vector<std::string>{kConv, kEmpty}));
  std::vector<uint32_t> ops;
  for (const TraceEvent& e : trace->events) ops.push_back(e.op);
  EXPECT_EQ(ops, (std::vector<uint32_t>{0, 1, 0, 0, kNoOperator, kNoOperator}));
  EXPECT_EQ(trace->threads[0].events, 5u);  // operator records are not events
}

TEST(OperatorRecords, TakeNoTicksSoExtractionIsUnchanged) {
  Trace with = *parse_trace(as_bytes(nested_operators_file()));
  Trace without = with;
  without.operators.clear();
  for (TraceEvent& e : without.events) e.op = kNoOperator;
  auto written = format_trace(without);
  ASSERT_TRUE(written.ok());
  Trace reread = *parse_trace(as_bytes(*written));
  auto a = extract_iteration(with, 0);
  auto b = extract_iteration(reread, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->problem.buffers.size(), b->problem.buffers.size());
  for (size_t i = 0; i < a->problem.buffers.size(); ++i) {
    const Buffer& x = a->problem.buffers[i];
    const Buffer& y = b->problem.buffers[i];
    EXPECT_EQ(std::tie(x.id, x.lower, x.upper, x.size, x.alignment),
              std::tie(y.id, y.lower, y.upper, y.size, y.alignment));
  }
  EXPECT_EQ(a->events, 6u);
  EXPECT_TRUE(check_problem(a->problem).ok());
}

TEST(OperatorRecords, RoundTripThroughTheWriter) {
  TraceBuilder b;
  b.mark().malloc(0x10, 100).malloc(0x20, 200, 1).malloc(0x30, 300).free(0x10).free(0x20, 1).mark().complete();
  Trace original = b.build();
  original.operators = {"aten::add", "", "aten::relu"};  // id 1 never named
  original.events[1].op = 2;
  original.events[2].op = 0;
  original.events[3].op = 0;
  original.events[4].op = 1;
  auto bytes = format_trace(original);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto parsed = parse_trace(as_bytes(*bytes));
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->operators, original.operators);
  ASSERT_EQ(parsed->events.size(), original.events.size());
  for (size_t i = 0; i < original.events.size(); ++i) EXPECT_EQ(parsed->events[i], original.events[i]) << i;
}

TEST(OperatorRecords, WriterRejectsAnOperatorOutsideTheTable) {
  Trace t = TraceBuilder().malloc(0x10, 1).build();
  t.events[0].op = 0;
  EXPECT_FALSE(format_trace(t).ok());
  t.operators = {std::string(tf::kMaxOperatorNameBytes + 1, 'x')};
  EXPECT_FALSE(format_trace(t).ok());
}

TEST(OperatorRecords, Version1FilesStillReadAndCannotHoldThem) {
  std::string v1 = file_header(1);
  append_block(v1, {.type = tf::kEventBlock}, {malloc_at(1, 0x100, 64), free_at(2, 0x100)});
  auto trace = parse_trace(as_bytes(v1));
  ASSERT_TRUE(trace.ok()) << trace.status().to_string();
  EXPECT_EQ(trace->events.size(), 2u);
  EXPECT_TRUE(trace->operators.empty());

  std::string v1_with_operator = file_header(1);
  append_block(v1_with_operator, {.type = tf::kEventBlock}, {enter(0), malloc_at(1, 0x100, 64)});
  auto rejected = parse_trace(as_bytes(v1_with_operator));
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.status().message().find("version-1"), std::string::npos);
}

TEST(OperatorRecords, DamagedRecordsAreErrors) {
  auto expect_error = [](std::vector<tf::EventFields> records, const std::string& message) {
    std::string bytes = file_header();
    append_block(bytes, {.type = tf::kEventBlock}, std::move(records));
    auto parsed = parse_trace(as_bytes(bytes));
    ASSERT_FALSE(parsed.ok()) << message;
    EXPECT_NE(parsed.status().message().find(message), std::string::npos) << parsed.status().message();
  };
  expect_error({malloc_at(1, 0x100, 64), exit_record()}, "operator exit without an enter");
  expect_error({name_record(3, "a"), name_record(3, "b")}, "named twice");
  expect_error({enter(tf::kMaxOperatorId + 1)}, "malformed event");

  std::string marks = file_header();
  append_block(marks, {.type = tf::kMarkBlock}, {enter(0)});
  EXPECT_FALSE(parse_trace(as_bytes(marks)).ok());
}

TEST(OperatorRecords, SummaryRanksOperatorsByBytes) {
  const Trace trace = *parse_trace(as_bytes(nested_operators_file()));
  const std::vector<OperatorSummary> rows = summarize_operators(trace, 0, trace.events.size());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].op, kNoOperator);  // 1000 + 8 bytes outside any operator
  EXPECT_EQ(rows[0].bytes, 1008u);
  EXPECT_EQ(rows[0].allocations, 2u);
  EXPECT_EQ(rows[1].op, 1u);  // empty: 128
  EXPECT_EQ(rows[2].op, 0u);  // conv2d: 64 + 32 = 96
  EXPECT_EQ(rows[2].bytes, 96u);
  EXPECT_TRUE(summarize_operators(TraceBuilder().malloc(0x10, 1).build(), 0, 1).empty());
}

}  // namespace
}  // namespace memplan
