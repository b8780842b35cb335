// trace_file.cc — reading and writing trace files (the layout is in
// trace_format.h). The reader trusts nothing: every length is checked against
// the bytes that are there before it is used, every block's checksum is
// verified before its payload is decoded, and allocations are bounded by the
// input's size.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <string>

#include "memplan/trace.h"
#include "trace/trace_format.h"

namespace memplan {
namespace {

namespace tf = trace_format;

static_assert(static_cast<int>(TraceCall::kMalloc) == tf::kMalloc);
static_assert(static_cast<int>(TraceCall::kCalloc) == tf::kCalloc);
static_assert(static_cast<int>(TraceCall::kRealloc) == tf::kRealloc);
static_assert(static_cast<int>(TraceCall::kReallocArray) == tf::kReallocArray);
static_assert(static_cast<int>(TraceCall::kPosixMemalign) == tf::kPosixMemalign);
static_assert(static_cast<int>(TraceCall::kAlignedAlloc) == tf::kAlignedAlloc);
static_assert(static_cast<int>(TraceCall::kMemalign) == tf::kMemalign);
static_assert(static_cast<int>(TraceCall::kValloc) == tf::kValloc);
static_assert(static_cast<int>(TraceCall::kPvalloc) == tf::kPvalloc);
static_assert(static_cast<int>(TraceCall::kFree) == tf::kFree);
static_assert(static_cast<int>(TraceCall::kMark) == tf::kMark);

// More thread indices than this is a damaged file, not a program: it bounds
// the thread table a crafted file can make the reader allocate.
constexpr uint32_t kMaxThreads = 1u << 20;
// Events per block the writer emits (the tracer's chunks hold about as many).
constexpr size_t kEventsPerBlock = 4096;
// The smallest encoding of an event (a free: call byte and three one-byte varints).
constexpr size_t kMinEncodedEventBytes = 4;

std::string at(std::string_view source, size_t offset) {
  return std::string(source) + ": offset " + std::to_string(offset) + ": ";
}

// Raw clock readings in a file are mapped to nanoseconds by the line through
// the start pair and the latest pair (the clock is the TSC, whose rate is
// constant on every machine where the tracer uses it).
struct ClockMap {
  uint32_t source = tf::kTimeNanoseconds;
  uint64_t start_raw = 0;
  uint64_t start_ns = 0;
  uint64_t last_raw = 0;
  uint64_t last_ns = 0;

  void add_pair(uint64_t raw, uint64_t ns) {
    if (raw > last_raw) {
      last_raw = raw;
      last_ns = ns;
    }
  }
  int64_t to_ns(uint64_t raw) const {
    const auto delta = static_cast<int64_t>(raw - start_raw);
    if (source == tf::kTimeNanoseconds) return delta;
    if (source == tf::kTimeNone) return 0;
    if (last_raw <= start_raw || last_ns <= start_ns) return 0;
    const double rate = static_cast<double>(last_ns - start_ns) / static_cast<double>(last_raw - start_raw);
    return static_cast<int64_t>(std::llround(static_cast<double>(delta) * rate));
  }
};

// The tracer reads the clock on every N-th event of a thread; the events in
// between repeat the last reading. Each such run gets times spaced evenly
// between the readings around it (a run after a thread's last reading keeps
// that reading). `events` are in the order their threads recorded them.
void interpolate_untimed_events(const std::vector<TraceEvent>& events, std::vector<uint64_t>& raw) {
  std::map<uint32_t, std::vector<size_t>> by_thread;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind() != TraceEventKind::kMark) by_thread[events[i].thread].push_back(i);
  }
  for (const auto& [thread, order] : by_thread) {
    size_t timed = 0;  // position in `order` of the last event with a reading of its own
    for (size_t k = 1; k <= order.size(); ++k) {
      if (k < order.size() && raw[order[k]] == raw[order[k - 1]]) continue;
      if (k == order.size()) break;
      // order[k] has a reading; spread the run (timed, k) between the two.
      const uint64_t from = raw[order[timed]], to = raw[order[k]];
      if (k - timed > 1 && to > from) {
        for (size_t j = timed + 1; j < k; ++j) {
          raw[order[j]] =
              from + static_cast<uint64_t>(static_cast<unsigned __int128>(to - from) * (j - timed) / (k - timed));
        }
      }
      timed = k;
    }
  }
}

}  // namespace

StatusOr<Trace> parse_trace(std::span<const uint8_t> bytes, std::string_view source) {
  const uint8_t* const data = bytes.data();
  const size_t n = bytes.size();
  if (n < tf::kFileHeaderBytes || std::memcmp(data, tf::kFileMagic, 8) != 0) {
    return InvalidArgument(std::string(source) + ": not a memplan trace (no 'MEMPLANT' header)");
  }
  const uint32_t version = tf::get_u32(data + 8);
  if (version < tf::kOldestVersion || version > tf::kVersion) {
    return InvalidArgument(std::string(source) + ": trace format version " + std::to_string(version) +
                           " is not supported (this memplan reads versions " + std::to_string(tf::kOldestVersion) +
                           " to " + std::to_string(tf::kVersion) + ")");
  }
  if (tf::get_u32(data + 12) != tf::kFileHeaderBytes ||
      tf::get_u64(data + 56) != tf::checksum_finish(tf::checksum_update(tf::kChecksumSeed, data, 56))) {
    return InvalidArgument(at(source, 0) + "file header is damaged (checksum mismatch)");
  }
  ClockMap clock;
  clock.source = tf::get_u32(data + 24);
  if (clock.source != tf::kTimeNanoseconds && clock.source != tf::kTimeX86Tsc && clock.source != tf::kTimeNone) {
    return InvalidArgument(at(source, 24) + "unknown time source " + std::to_string(clock.source));
  }
  const bool sampled_clock = (tf::get_u32(data + 28) & tf::kSampledClock) != 0;
  clock.start_raw = clock.last_raw = tf::get_u64(data + 32);
  clock.start_ns = clock.last_ns = tf::get_u64(data + 40);

  Trace trace;
  trace.pid = static_cast<int64_t>(tf::get_u64(data + 16));
  trace.file_bytes = n;
  std::map<uint32_t, int64_t> os_tids;  // thread index -> os tid, from event blocks
  uint32_t max_thread_plus_one = 0;
  std::vector<uint64_t> raw_times;  // parallel to trace.events until the clock is known
  bool seen_end = false;
  // Operator attribution: each thread's stack of entered operators (its
  // records are read in the order the thread wrote them: a thread's blocks
  // appear in the file in order), and the names given so far.
  std::map<uint32_t, std::vector<uint32_t>> operator_stacks;
  std::map<uint64_t, std::string> operator_names;
  uint64_t operator_count = 0;  // 1 + the largest id seen

  size_t offset = tf::kFileHeaderBytes;
  while (offset < n) {
    if (seen_end) return InvalidArgument(at(source, offset) + "data after the end block");
    if (n - offset < tf::kBlockHeaderBytes) {
      return InvalidArgument(at(source, offset) + "truncated block header (" + std::to_string(n - offset) +
                             " bytes left, a header is " + std::to_string(tf::kBlockHeaderBytes) + ")");
    }
    const uint8_t* h = data + offset;
    if (std::memcmp(h, tf::kBlockMagic, 4) != 0) return InvalidArgument(at(source, offset) + "bad block magic");
    const tf::BlockHeader header = tf::read_block_header(h);
    if (header.payload_bytes > n - offset - tf::kBlockHeaderBytes) {
      return InvalidArgument(at(source, offset) + "truncated block (payload of " +
                             std::to_string(header.payload_bytes) + " bytes, " +
                             std::to_string(n - offset - tf::kBlockHeaderBytes) + " left)");
    }
    const uint8_t* payload = h + tf::kBlockHeaderBytes;
    if (tf::get_u64(h + tf::kBlockHeaderBytes - 8) != tf::block_checksum(h, payload, header.payload_bytes)) {
      return InvalidArgument(at(source, offset) + "block is damaged (checksum mismatch)");
    }
    const uint8_t* p = payload;
    const uint8_t* const end = payload + header.payload_bytes;

    if (header.type == tf::kEndBlock) {
      uint64_t totals[4];
      for (uint64_t& t : totals) {
        if (!tf::get_varint(&p, end, &t)) return InvalidArgument(at(source, offset) + "malformed end block");
      }
      if (p != end || header.event_count != 0) return InvalidArgument(at(source, offset) + "malformed end block");
      trace.missed_events = totals[1];
      trace.dropped_marks = totals[2];
      seen_end = true;
    } else if (header.type == tf::kEventBlock || header.type == tf::kMarkBlock) {
      const bool marks = header.type == tf::kMarkBlock;
      if (header.event_count > header.payload_bytes / kMinEncodedEventBytes) {
        return InvalidArgument(at(source, offset) + "block claims " + std::to_string(header.event_count) +
                               " events in " + std::to_string(header.payload_bytes) + " bytes");
      }
      if (!marks) {
        if (header.thread >= kMaxThreads) {
          return InvalidArgument(at(source, offset) + "thread index " + std::to_string(header.thread) +
                                 " is out of range");
        }
        auto [it, inserted] = os_tids.emplace(header.thread, header.os_tid);
        if (!inserted && it->second != header.os_tid) {
          return InvalidArgument(at(source, offset) + "thread " + std::to_string(header.thread) +
                                 " has two kernel thread ids");
        }
        max_thread_plus_one = std::max(max_thread_plus_one, header.thread + 1);
      }
      clock.add_pair(header.clock_raw, header.clock_ns);
      tf::DeltaState state{.seq = header.base_seq, .raw = header.base_raw, .ptr = header.base_ptr};
      for (uint32_t i = 0; i < header.event_count; ++i) {
        const size_t event_offset = offset + tf::kBlockHeaderBytes + static_cast<size_t>(p - payload);
        tf::EventFields e;
        if (!tf::decode_event(&p, end, state, &e)) {
          return InvalidArgument(at(source, event_offset) + "malformed event #" + std::to_string(i) + " of its block");
        }
        if (tf::call_is_operator_record(e.call)) {
          if (version < 2) return InvalidArgument(at(source, event_offset) + "operator record in a version-1 trace");
          if (marks) return InvalidArgument(at(source, event_offset) + "a mark block holds an operator record");
          std::vector<uint32_t>& stack = operator_stacks[header.thread];
          if (e.call == tf::kOperatorExit) {
            if (stack.empty()) return InvalidArgument(at(source, event_offset) + "operator exit without an enter");
            stack.pop_back();
            continue;
          }
          operator_count = std::max(operator_count, e.operator_id + 1);
          if (e.call == tf::kOperatorEnter) {
            stack.push_back(static_cast<uint32_t>(e.operator_id));
            continue;
          }
          std::string name(reinterpret_cast<const char*>(e.name), e.name_length);
          auto [it, inserted] = operator_names.emplace(e.operator_id, name);
          if (!inserted && it->second != name) {
            return InvalidArgument(at(source, event_offset) + "operator " + std::to_string(e.operator_id) +
                                   " is named twice, differently");
          }
          continue;
        }
        if ((e.call == tf::kMark) != marks) {
          return InvalidArgument(at(source, event_offset) +
                                 (marks ? "a mark block holds a non-mark event" : "an event block holds a mark"));
        }
        if (e.seq == 0) return InvalidArgument(at(source, event_offset) + "sequence number 0");
        uint32_t thread = header.thread;
        uint32_t op = kNoOperator;
        if (!marks) {
          auto stack = operator_stacks.find(thread);
          if (stack != operator_stacks.end() && !stack->second.empty()) op = stack->second.back();
        }
        if (marks) {
          thread = e.thread;
          if (thread != kUnknownThread) {
            if (thread >= kMaxThreads) {
              return InvalidArgument(at(source, event_offset) + "mark names thread " + std::to_string(thread) +
                                     ", out of range");
            }
            max_thread_plus_one = std::max(max_thread_plus_one, thread + 1);
          }
        }
        trace.events.push_back(TraceEvent{.call = static_cast<TraceCall>(e.call),
                                          .thread = thread,
                                          .sequence = e.seq,
                                          .release_sequence = tf::call_is_realloc(e.call) ? e.release_seq : 0,
                                          .pointer = e.ptr,
                                          .old_pointer = e.old_ptr,
                                          .size = e.size,
                                          .alignment = e.alignment,
                                          .op = op});
        raw_times.push_back(e.raw);
      }
      if (p != end) {
        return InvalidArgument(at(source, offset) + std::to_string(end - p) +
                               " bytes left over after the block's events");
      }
    } else {
      return InvalidArgument(at(source, offset) + "unknown block type " + std::to_string(header.type));
    }
    offset += tf::kBlockHeaderBytes + header.payload_bytes;
  }
  trace.complete = seen_end;
  trace.operators.resize(operator_count);
  for (auto& [id, name] : operator_names) trace.operators[id] = std::move(name);

  if (sampled_clock) interpolate_untimed_events(trace.events, raw_times);
  for (size_t i = 0; i < trace.events.size(); ++i) trace.events[i].time_ns = clock.to_ns(raw_times[i]);
  std::sort(trace.events.begin(), trace.events.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.sequence < b.sequence; });
  trace.threads.resize(max_thread_plus_one);
  for (const auto& [index, tid] : os_tids) trace.threads[index].os_tid = tid;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (i > 0 && trace.events[i - 1].sequence == e.sequence) {
      return InvalidArgument(std::string(source) + ": two events have sequence number " + std::to_string(e.sequence));
    }
    if (e.kind() != TraceEventKind::kMark) ++trace.threads[e.thread].events;
  }
  return trace;
}

StatusOr<Trace> read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot open trace '" + path + "': " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return IoError("cannot read trace '" + path + "'");
  return parse_trace(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), path);
}

StatusOr<std::string> format_trace(const Trace& trace) {
  // Check what the reader will insist on, so that a written trace always reads back.
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    const std::string where = "event #" + std::to_string(i) + ": ";
    if (e.sequence == 0) return InvalidArgument(where + "sequence number 0");
    if (i > 0 && trace.events[i - 1].sequence >= e.sequence) {
      return InvalidArgument(where + "sequence numbers are not strictly increasing");
    }
    if (static_cast<int>(e.call) >= tf::kVersion1CallCount) return InvalidArgument(where + "unknown call");
    if (e.op != kNoOperator && (e.op >= trace.operators.size() || e.kind() == TraceEventKind::kMark)) {
      return InvalidArgument(where + "operator " + std::to_string(e.op) + " is not in the operator table");
    }
    if (tf::call_is_realloc(static_cast<uint8_t>(e.call)) && e.release_sequence > e.sequence) {
      return InvalidArgument(where + "release_sequence is after sequence");
    }
    if (e.kind() != TraceEventKind::kMark && e.thread >= trace.threads.size()) {
      return InvalidArgument(where + "thread " + std::to_string(e.thread) + " is not in the thread table");
    }
    if (e.kind() == TraceEventKind::kMark && e.thread != kUnknownThread && e.thread >= kMaxThreads) {
      return InvalidArgument(where + "thread index out of range");
    }
  }
  if (trace.threads.size() > kMaxThreads) return InvalidArgument("too many threads");
  if (trace.operators.size() > tf::kMaxOperatorId + 1) return InvalidArgument("too many operators");
  for (size_t i = 0; i < trace.operators.size(); ++i) {
    if (trace.operators[i].size() > tf::kMaxOperatorNameBytes) {
      return InvalidArgument("operator " + std::to_string(i) + ": name longer than " +
                             std::to_string(tf::kMaxOperatorNameBytes) + " bytes");
    }
  }

  std::string out(tf::kFileHeaderBytes, '\0');
  tf::FileHeader file_header{.pid = static_cast<uint64_t>(trace.pid), .time_source = tf::kTimeNanoseconds};
  tf::write_file_header(file_header, reinterpret_cast<uint8_t*>(out.data()));

  // Records of a block: events, and (event blocks) operator records, whose
  // deltas the encoder makes zero by giving them the state's own values.
  std::vector<uint8_t> payload;
  auto emit_block = [&](tf::BlockHeader header, const std::vector<tf::EventFields>& records) {
    size_t bound = 1;
    for (const tf::EventFields& r : records) {
      bound += tf::call_is_operator_record(r.call) ? tf::kMaxEncodedOperatorBytes : tf::kMaxEncodedEventBytes;
    }
    payload.assign(bound, 0);
    tf::DeltaState state;
    for (const tf::EventFields& r : records) {
      if (tf::call_is_operator_record(r.call)) continue;
      state.seq = header.base_seq = r.seq;
      state.raw = header.base_raw = r.raw;
      break;
    }
    uint8_t* p = payload.data();
    for (tf::EventFields r : records) {
      if (tf::call_is_operator_record(r.call)) {
        r.seq = state.seq;
        r.raw = state.raw;
        r.ptr = state.ptr;
      }
      p = tf::encode_event(r, state, p);
    }
    header.event_count = static_cast<uint32_t>(records.size());
    header.payload_bytes = static_cast<uint32_t>(p - payload.data());
    uint8_t block_header[tf::kBlockHeaderBytes];
    tf::write_block_header(header, payload.data(), block_header);
    out.append(reinterpret_cast<const char*>(block_header), tf::kBlockHeaderBytes);
    out.append(reinterpret_cast<const char*>(payload.data()), header.payload_bytes);
  };
  auto fields_of = [](const TraceEvent& e) {
    return tf::EventFields{.call = static_cast<uint8_t>(e.call),
                           .seq = e.sequence,
                           .raw = static_cast<uint64_t>(e.time_ns),
                           .ptr = e.pointer,
                           .size = e.size,
                           .alignment = e.alignment,
                           .old_ptr = e.old_pointer,
                           .release_seq = e.release_sequence,
                           .thread = e.thread};
  };

  std::vector<std::vector<tf::EventFields>> by_thread(trace.threads.size());
  std::vector<tf::EventFields> marks;
  // The names go first, into the first thread's stream (a trace with
  // operators has events, so it has a thread).
  if (!by_thread.empty()) {
    for (size_t id = 0; id < trace.operators.size(); ++id) {
      const std::string& name = trace.operators[id];
      if (name.empty()) continue;
      by_thread[0].push_back(tf::EventFields{.call = tf::kOperatorName,
                                             .operator_id = id,
                                             .name = reinterpret_cast<const uint8_t*>(name.data()),
                                             .name_length = name.size()});
    }
  }
  std::vector<uint32_t> current_op(trace.threads.size(), kNoOperator);
  for (const TraceEvent& e : trace.events) {
    if (e.kind() == TraceEventKind::kMark) {
      marks.push_back(fields_of(e));
      continue;
    }
    std::vector<tf::EventFields>& records = by_thread[e.thread];
    uint32_t& op = current_op[e.thread];
    if (e.op != op) {
      if (op != kNoOperator) records.push_back(tf::EventFields{.call = tf::kOperatorExit});
      if (e.op != kNoOperator) records.push_back(tf::EventFields{.call = tf::kOperatorEnter, .operator_id = e.op});
      op = e.op;
    }
    records.push_back(fields_of(e));
  }
  for (size_t t = 0; t < by_thread.size(); ++t) {
    const tf::BlockHeader header{.type = tf::kEventBlock,
                                 .thread = static_cast<uint32_t>(t),
                                 .os_tid = static_cast<uint32_t>(trace.threads[t].os_tid)};
    // A thread without events still gets an (empty) block so its kernel id survives.
    size_t i = 0;
    do {
      const size_t stop = std::min(by_thread[t].size(), i + kEventsPerBlock);
      emit_block(header, std::vector<tf::EventFields>(by_thread[t].begin() + i, by_thread[t].begin() + stop));
      i = stop;
    } while (i < by_thread[t].size());
  }
  for (size_t i = 0; i < marks.size(); i += kEventsPerBlock) {
    const size_t stop = std::min(marks.size(), i + kEventsPerBlock);
    emit_block(tf::BlockHeader{.type = tf::kMarkBlock},
               std::vector<tf::EventFields>(marks.begin() + i, marks.begin() + stop));
  }
  if (trace.complete) {
    uint8_t end_payload[4 * 10];
    uint8_t* p = end_payload;
    p = tf::put_varint(p, trace.events.size());
    p = tf::put_varint(p, trace.missed_events);
    p = tf::put_varint(p, trace.dropped_marks);
    p = tf::put_varint(p, trace.threads.size());
    const tf::BlockHeader header{.type = tf::kEndBlock, .payload_bytes = static_cast<uint32_t>(p - end_payload)};
    uint8_t block_header[tf::kBlockHeaderBytes];
    tf::write_block_header(header, end_payload, block_header);
    out.append(reinterpret_cast<const char*>(block_header), tf::kBlockHeaderBytes);
    out.append(reinterpret_cast<const char*>(end_payload), header.payload_bytes);
  }
  return out;
}

Status write_trace(const std::string& path, const Trace& trace) {
  MEMPLAN_ASSIGN_OR_RETURN(std::string bytes, format_trace(trace));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError("cannot create trace '" + path + "': " + std::strerror(errno));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return IoError("cannot write trace '" + path + "'");
  return Status::Ok();
}

}  // namespace memplan
