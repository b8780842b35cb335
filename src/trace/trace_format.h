// trace_format.h — the on-disk layout of a memplan trace file (version 2),
// shared by the two programs that touch it: the LD_PRELOAD interposer that
// writes it and the reader in memplan_trace. Header-only and allocation-free
// on purpose: the interposer may not call malloc, so everything here works on
// caller-provided byte arrays.
//
// A file is a 64-byte file header followed by blocks. Every integer in a
// header is little-endian. Each block is a 64-byte block header and a payload:
//
//   file header   magic "MEMPLANT" · version · header bytes · pid · time source
//                 · flags · start clock pair (raw, ns) · checksum
//   event block   one thread's events, in the order that thread recorded them
//   mark block    iteration marks from any thread (each carries its thread)
//   end block     written once at exit: totals; its absence means the process
//                 died before the tracer's exit handler ran
//
// Blocks of different threads interleave in the file (each is written with one
// O_APPEND write). A block header is 72 bytes: magic "MPBK" · type · payload
// bytes · event count · thread · kernel thread id · base sequence, raw time and
// pointer · a (raw, ns) clock pair · checksum. The global order of events is their sequence number, taken
// from one process-wide counter, so a reader collects all blocks and sorts.
//
// Events are delta-encoded against the previous event of the same thread
// (sequence, raw time, pointer; the block header carries the values the
// block's first event is encoded against), which makes a typical event 7–10
// bytes:
//
//   byte 0      call (low 4 bits) | low 4 bits of zigzag(pointer delta)
//   varint      zigzag(sequence delta)
//   varint      zigzag(raw time delta)
//   varint      zigzag(pointer delta) >> 4
//   varint      size                         allocation and realloc calls
//   varint      alignment                    aligned calls (posix_memalign ... pvalloc)
//   varint      zigzag(old pointer - pointer) realloc calls
//   varint      sequence - release sequence   realloc calls
//   varint      thread                        marks (mark blocks only)
//
// Operator records (version 2; a version-1 file holds none) sit in a thread's
// event block between its events. They attribute the allocations that follow
// them on that thread to an operator (libtorch's RecordFunction callbacks, see
// src/torch/), take no sequence number and leave the delta state as it
// is (their three deltas are written as zero), so a trace with them yields the
// same events, ticks and problems as one without:
//
//   operator enter   call 11 · 3 zero deltas · varint operator id
//   operator exit    call 12 · 3 zero deltas           (pops the innermost)
//   operator name    call 13 · 3 zero deltas · varint id · varint length · bytes
//
// A name record gives an id its name once, in whichever thread's stream
// named it first; the reader resolves ids across threads after reading all.
//
// Time is recorded raw (the x86 time-stamp counter where there is one: ~10 ns
// to read instead of ~35 ns for clock_gettime). Every block header carries a
// (raw, ns) pair sampled when the block was written, and the file header one
// sampled at start, so a reader maps raw time to nanoseconds linearly.
//
// Checksums are a 64-bit multiply-rotate hash, not a CRC: they exist to turn a
// damaged file into a clear error instead of plausible garbage, and must cost
// the interposer well under a nanosecond per event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace memplan::trace_format {

inline constexpr char kFileMagic[8] = {'M', 'E', 'M', 'P', 'L', 'A', 'N', 'T'};
inline constexpr uint32_t kVersion = 2;
inline constexpr uint32_t kOldestVersion = 1;  // the oldest the reader still reads
inline constexpr size_t kFileHeaderBytes = 64;
inline constexpr char kBlockMagic[4] = {'M', 'P', 'B', 'K'};
inline constexpr size_t kBlockHeaderBytes = 72;
// The most bytes encode_event can write for one event.
inline constexpr size_t kMaxEncodedEventBytes = 1 + 8 * 10;
// Operator names longer than this are cut (in the tracer; the reader rejects longer).
inline constexpr size_t kMaxOperatorNameBytes = 255;
// Operator ids are small integers handed out by the recorder; a larger one is damage.
inline constexpr uint64_t kMaxOperatorId = 1u << 16;
// The most bytes encode_event can write for one operator record.
inline constexpr size_t kMaxEncodedOperatorBytes = 4 + 2 * 10 + kMaxOperatorNameBytes;

enum BlockType : uint8_t { kEventBlock = 1, kMarkBlock = 2, kEndBlock = 3 };
// kTimeNone: the tracer was told not to read the clock per event (MEMPLAN_TRACE_TIME=off).
enum TimeSource : uint32_t { kTimeNanoseconds = 0, kTimeX86Tsc = 1, kTimeNone = 2 };

// The function that made an event; 4 bits on disk. Must match
// memplan::TraceCall (static_asserts in the reader).
enum Call : uint8_t {
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
  kOperatorEnter = 11,  // version 2
  kOperatorExit = 12,
  kOperatorName = 13,
  kCallCount = 14,
};
inline constexpr uint8_t kVersion1CallCount = kOperatorEnter;

inline bool call_is_operator_record(uint8_t call) { return call >= kOperatorEnter && call <= kOperatorName; }

inline bool call_has_size(uint8_t call) { return call <= kPvalloc; }
inline bool call_has_alignment(uint8_t call) { return call >= kPosixMemalign && call <= kPvalloc; }
inline bool call_is_realloc(uint8_t call) { return call == kRealloc || call == kReallocArray; }

// ---- little-endian fields --------------------------------------------------------

// On little-endian hosts (all the tracer runs on) these are single moves; the
// checksum reads every payload word through get_u64, so that matters.
inline constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

inline void put_u32(uint8_t* p, uint32_t v) {
  if constexpr (kLittleEndian) {
    std::memcpy(p, &v, 4);
  } else {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
  }
}
inline void put_u64(uint8_t* p, uint64_t v) {
  if constexpr (kLittleEndian) {
    std::memcpy(p, &v, 8);
  } else {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
  }
}
inline uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  if constexpr (kLittleEndian) {
    std::memcpy(&v, p, 4);
  } else {
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  }
  return v;
}
inline uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  if constexpr (kLittleEndian) {
    std::memcpy(&v, p, 8);
  } else {
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  }
  return v;
}

// ---- checksum ---------------------------------------------------------------------

inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t checksum_update(uint64_t h, const uint8_t* p, size_t n) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  while (n >= 8) {
    h = rotl64(h ^ get_u64(p), 31) * kMul;
    p += 8;
    n -= 8;
  }
  uint64_t tail = static_cast<uint64_t>(n) << 56;
  for (size_t i = 0; i < n; ++i) tail |= static_cast<uint64_t>(p[i]) << (8 * i);
  return rotl64(h ^ tail, 31) * kMul;
}

inline uint64_t checksum_finish(uint64_t h) {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  return h;
}

inline constexpr uint64_t kChecksumSeed = 0x6D656D706C616E31ull;  // "memplan1"

// ---- varints ----------------------------------------------------------------------

inline uint64_t zigzag(uint64_t delta_twos_complement) {
  const int64_t d = static_cast<int64_t>(delta_twos_complement);
  return (static_cast<uint64_t>(d) << 1) ^ static_cast<uint64_t>(d >> 63);
}
inline uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (~(z & 1) + 1); }

// Inlined into the interposer's recording path: most values there take one or
// two bytes, so those are straight-line code.
__attribute__((always_inline)) inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
  if (v < 0x80) {
    *p = static_cast<uint8_t>(v);
    return p + 1;
  }
  if (v < 0x4000) {
    p[0] = static_cast<uint8_t>(v | 0x80);
    p[1] = static_cast<uint8_t>(v >> 7);
    return p + 2;
  }
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Reads a varint from [*p, end); false on truncation or a value wider than 64 bits.
inline bool get_varint(const uint8_t** p, const uint8_t* end, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*p == end) return false;
    const uint8_t byte = *(*p)++;
    if (shift == 63 && byte > 1) return false;
    result |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

// ---- headers ----------------------------------------------------------------------

// File header flags.
// kSampledClock: the writer read the clock only on some events of a thread;
// an event that repeats the previous event's time (of the same thread) was
// not timed, and the reader interpolates its time between the readings
// around it.
inline constexpr uint32_t kSampledClock = 1u << 0;

struct FileHeader {
  uint32_t version = kVersion;
  uint64_t pid = 0;
  uint32_t time_source = kTimeNanoseconds;
  uint32_t flags = 0;
  uint64_t start_raw = 0;  // clock pair sampled when tracing started
  uint64_t start_ns = 0;
};

inline void write_file_header(const FileHeader& h, uint8_t out[kFileHeaderBytes]) {
  std::memset(out, 0, kFileHeaderBytes);
  std::memcpy(out, kFileMagic, 8);
  put_u32(out + 8, h.version);
  put_u32(out + 12, static_cast<uint32_t>(kFileHeaderBytes));
  put_u64(out + 16, h.pid);
  put_u32(out + 24, h.time_source);
  put_u32(out + 28, h.flags);
  put_u64(out + 32, h.start_raw);
  put_u64(out + 40, h.start_ns);
  put_u64(out + 56, checksum_finish(checksum_update(kChecksumSeed, out, 56)));
}

struct BlockHeader {
  uint8_t type = kEventBlock;
  uint32_t payload_bytes = 0;
  uint32_t event_count = 0;
  uint32_t thread = 0;    // event blocks: the thread's index in this trace
  uint32_t os_tid = 0;    // event blocks: the kernel's thread id
  uint64_t base_seq = 0;  // deltas of the first event are taken from these
  uint64_t base_raw = 0;
  uint64_t base_ptr = 0;
  uint64_t clock_raw = 0;  // clock pair sampled when the block was written
  uint64_t clock_ns = 0;
};

// The checksum of a block: its header up to the checksum field, and its payload.
inline uint64_t block_checksum(const uint8_t* header, const uint8_t* payload, size_t payload_bytes) {
  uint64_t sum = checksum_update(kChecksumSeed, header, kBlockHeaderBytes - 8);
  return checksum_finish(checksum_update(sum, payload, payload_bytes));
}

// Writes the header; `payload` (payload_bytes long) is covered by its checksum.
// `out` may be the kBlockHeaderBytes right before `payload`.
inline void write_block_header(const BlockHeader& h, const uint8_t* payload, uint8_t out[kBlockHeaderBytes]) {
  std::memset(out, 0, kBlockHeaderBytes);
  std::memcpy(out, kBlockMagic, 4);
  out[4] = h.type;
  put_u32(out + 8, h.payload_bytes);
  put_u32(out + 12, h.event_count);
  put_u32(out + 16, h.thread);
  put_u32(out + 20, h.os_tid);
  put_u64(out + 24, h.base_seq);
  put_u64(out + 32, h.base_raw);
  put_u64(out + 40, h.base_ptr);
  put_u64(out + 48, h.clock_raw);
  put_u64(out + 56, h.clock_ns);
  put_u64(out + 64, block_checksum(out, payload, h.payload_bytes));
}

// Reads the fields of a block header (not its checksum).
inline BlockHeader read_block_header(const uint8_t* in) {
  BlockHeader h;
  h.type = in[4];
  h.payload_bytes = get_u32(in + 8);
  h.event_count = get_u32(in + 12);
  h.thread = get_u32(in + 16);
  h.os_tid = get_u32(in + 20);
  h.base_seq = get_u64(in + 24);
  h.base_raw = get_u64(in + 32);
  h.base_ptr = get_u64(in + 40);
  h.clock_raw = get_u64(in + 48);
  h.clock_ns = get_u64(in + 56);
  return h;
}

// ---- events -----------------------------------------------------------------------

struct EventFields {
  uint8_t call = kMalloc;
  uint64_t seq = 0;
  uint64_t raw = 0;
  uint64_t ptr = 0;
  uint64_t size = 0;              // call_has_size
  uint64_t alignment = 0;         // call_has_alignment
  uint64_t old_ptr = 0;           // call_is_realloc
  uint64_t release_seq = 0;       // call_is_realloc; <= seq
  uint32_t thread = 0;            // kMark
  uint64_t operator_id = 0;       // kOperatorEnter, kOperatorName
  const uint8_t* name = nullptr;  // kOperatorName: name_length bytes, not NUL-terminated
  uint64_t name_length = 0;
};

// The previous event's values, which the next event is encoded against.
struct DeltaState {
  uint64_t seq = 0;
  uint64_t raw = 0;
  uint64_t ptr = 0;
};

// Encodes one event at `out` (room for kMaxEncodedEventBytes); returns the end.
__attribute__((always_inline)) inline uint8_t* encode_event(const EventFields& e, DeltaState& s, uint8_t* out) {
  const uint64_t pd = zigzag(e.ptr - s.ptr);
  *out++ = static_cast<uint8_t>((e.call & 0x0F) | ((pd & 0x0F) << 4));
  out = put_varint(out, zigzag(e.seq - s.seq));
  out = put_varint(out, zigzag(e.raw - s.raw));
  out = put_varint(out, pd >> 4);
  if (call_has_size(e.call)) out = put_varint(out, e.size);
  if (call_has_alignment(e.call)) out = put_varint(out, e.alignment);
  if (call_is_realloc(e.call)) {
    out = put_varint(out, zigzag(e.old_ptr - e.ptr));
    out = put_varint(out, e.seq - e.release_seq);
  }
  if (e.call == kMark) out = put_varint(out, e.thread);
  if (e.call == kOperatorEnter || e.call == kOperatorName) out = put_varint(out, e.operator_id);
  if (e.call == kOperatorName) {
    out = put_varint(out, e.name_length);
    std::memcpy(out, e.name, e.name_length);
    out += e.name_length;
  }
  s.seq = e.seq;
  s.raw = e.raw;
  s.ptr = e.ptr;
  return out;
}

// Decodes one event from [*p, end). False on truncation, an unknown call, a
// realloc whose release sequence would lie after its sequence, or an operator
// record with an id above kMaxOperatorId or a name longer than kMaxOperatorNameBytes.
// A name record's `name` points into [*p, end).
inline bool decode_event(const uint8_t** p, const uint8_t* end, DeltaState& s, EventFields* e) {
  if (*p == end) return false;
  const uint8_t first = *(*p)++;
  e->call = first & 0x0F;
  if (e->call >= kCallCount) return false;
  uint64_t v = 0;
  if (!get_varint(p, end, &v)) return false;
  e->seq = s.seq + unzigzag(v);
  if (!get_varint(p, end, &v)) return false;
  e->raw = s.raw + unzigzag(v);
  if (!get_varint(p, end, &v)) return false;
  if (v > (~uint64_t{0} >> 4)) return false;
  e->ptr = s.ptr + unzigzag((v << 4) | (first >> 4));
  e->size = 0;
  e->alignment = 0;
  e->old_ptr = 0;
  e->release_seq = e->seq;
  e->thread = 0;
  if (call_has_size(e->call) && !get_varint(p, end, &e->size)) return false;
  if (call_has_alignment(e->call) && !get_varint(p, end, &e->alignment)) return false;
  if (call_is_realloc(e->call)) {
    if (!get_varint(p, end, &v)) return false;
    e->old_ptr = e->ptr + unzigzag(v);
    if (!get_varint(p, end, &v)) return false;
    if (v > e->seq) return false;
    e->release_seq = e->seq - v;
  }
  if (e->call == kMark) {
    if (!get_varint(p, end, &v) || v > 0xFFFFFFFFu) return false;
    e->thread = static_cast<uint32_t>(v);
  }
  e->operator_id = 0;
  e->name = nullptr;
  e->name_length = 0;
  if (e->call == kOperatorEnter || e->call == kOperatorName) {
    if (!get_varint(p, end, &e->operator_id) || e->operator_id > kMaxOperatorId) return false;
  }
  if (e->call == kOperatorName) {
    if (!get_varint(p, end, &v) || v > kMaxOperatorNameBytes || v > static_cast<uint64_t>(end - *p)) return false;
    e->name = *p;
    e->name_length = v;
    *p += v;
  }
  s.seq = e->seq;
  s.raw = e->raw;
  s.ptr = e->ptr;
  return true;
}

// End-block payload: four varints.
struct EndTotals {
  uint64_t recorded_events = 0;  // events and marks the tracer recorded
  uint64_t missed_events = 0;    // calls it could not record (re-entered, out of memory)
  uint64_t dropped_marks = 0;    // marks beyond the mark store's capacity
  uint64_t threads = 0;          // threads that recorded at least one event
};

}  // namespace memplan::trace_format
