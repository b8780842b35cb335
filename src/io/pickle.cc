// pickle.cc — the plain-data pickle reader (see pickle.h): a byte source
// (memory or a file read through a fixed buffer), the document's tables, and
// the opcode loop. Nothing here recurses, so nesting depth costs no stack.
#include "memplan/pickle.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace memplan::pickle {

// ---- value handles ---------------------------------------------------------------------
//
// Low 3 bits tag the handle; the rest is a payload:
//   0 special   payload 0 None, 1 False, 2 True
//   1 int       payload is the value (61-bit signed, arithmetic shift)
//   2 str       payload indexes Storage::strings
//   3 bytes     payload indexes Storage::strings
//   4 container payload indexes Storage::containers
//   5 wide int  payload indexes Storage::wide_ints
//   6 float     payload indexes Storage::floats
//   7 big int   payload indexes Storage::strings (little-endian two's complement bytes)
namespace {

enum Tag : uint64_t { kSpecial = 0, kSmallInt = 1, kStr = 2, kByt = 3, kCont = 4, kWide = 5, kFlt = 6, kBig = 7 };
constexpr uint64_t kNoneBits = 0;
constexpr uint64_t kFalseBits = (1u << 3);
constexpr uint64_t kTrueBits = (2u << 3);
constexpr uint64_t kUnset = ~uint64_t{0};  // a memo slot never set
constexpr uint32_t kNoChunk = UINT32_MAX;
constexpr int64_t kSmallMin = -(int64_t{1} << 60);
constexpr int64_t kSmallMax = (int64_t{1} << 60) - 1;

uint64_t tag_of(uint64_t bits) { return bits & 7; }
uint64_t payload(uint64_t bits) { return bits >> 3; }
uint64_t make(Tag tag, uint64_t index) { return (index << 3) | tag; }

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

}  // namespace

struct Chunk {
  uint64_t location = 0;  // block << 32 | offset into the block
  uint32_t count = 0;
  uint32_t next = kNoChunk;
};

struct Container {
  Kind kind = Kind::kList;
  uint32_t first = kNoChunk;
  uint32_t last = kNoChunk;
  uint64_t items = 0;  // item slots (a dict's pairs count two)
};

struct Document::Storage {
  // Strings: bytes in fixed blocks (addresses never move), one entry per
  // distinct text, and the map that interns them.
  std::vector<std::unique_ptr<char[]>> text_blocks;
  size_t text_used = 0, text_capacity = 0;
  std::vector<std::string_view> strings;
  std::unordered_map<std::string_view, uint32_t> string_index;
  // Items: blocks that never reallocate once items are in them.
  std::vector<std::vector<uint64_t>> item_blocks;
  std::vector<Chunk> chunks;
  std::vector<Container> containers;
  // Equal item runs stored once: hash of the run -> the chunk holding it.
  std::unordered_map<uint64_t, uint32_t> runs_by_hash;
  std::vector<int64_t> wide_ints;
  std::vector<double> floats;
  uint64_t root = kNoneBits;
  Counts counts;

  uint32_t intern(std::string_view text) {
    auto found = string_index.find(text);
    if (found != string_index.end()) return found->second;
    if (text_blocks.empty() || text.size() > text_capacity - text_used) {
      const size_t size = std::max<size_t>(text.size(), size_t{1} << 20);
      text_blocks.push_back(std::make_unique<char[]>(size));
      text_used = 0;
      text_capacity = size;
    }
    char* at = text_blocks.back().get() + text_used;
    if (!text.empty()) std::memcpy(at, text.data(), text.size());
    text_used += text.size();
    const std::string_view stored(at, text.size());
    const auto index = static_cast<uint32_t>(strings.size());
    strings.push_back(stored);
    string_index.emplace(stored, index);
    ++counts.strings;
    return index;
  }

  const uint64_t* at(uint64_t location) const { return item_blocks[location >> 32].data() + (location & 0xffffffffu); }

  // Appends n items; returns their location (contiguous in one block).
  uint64_t append_items(const uint64_t* items, size_t n) {
    if (item_blocks.empty() || item_blocks.back().capacity() - item_blocks.back().size() < n) {
      const size_t previous = item_blocks.empty() ? 2048 : item_blocks.back().capacity();
      std::vector<uint64_t> block;
      block.reserve(std::max(n, std::min<size_t>(previous * 2, size_t{1} << 20)));
      item_blocks.push_back(std::move(block));
    }
    std::vector<uint64_t>& block = item_blocks.back();
    const uint64_t location = (uint64_t{item_blocks.size() - 1} << 32) | block.size();
    block.insert(block.end(), items, items + n);
    counts.items += n;
    return location;
  }

  uint32_t new_container(Kind kind) {
    containers.push_back({.kind = kind});
    ++counts.containers;
    return static_cast<uint32_t>(containers.size() - 1);
  }

  void add_items(uint32_t container, const uint64_t* items, size_t n) {
    if (n == 0) return;
    Container& c = containers[container];
    chunks.push_back({.location = append_items(items, n), .count = static_cast<uint32_t>(n)});
    const auto chunk = static_cast<uint32_t>(chunks.size() - 1);
    if (c.last == kNoChunk) {
      c.first = chunk;
    } else {
      chunks[c.last].next = chunk;
    }
    c.last = chunk;
    c.items += n;
  }

  // A container placed into another is complete in every pickle Python
  // writes. If its one run of items is the last thing stored and equal to a
  // run stored before, point it at that run and give the space back.
  void share_if_seen(uint64_t bits) {
    if (tag_of(bits) != kCont) return;
    Container& c = containers[payload(bits)];
    if (c.first == kNoChunk || c.first != c.last) return;
    Chunk& chunk = chunks[c.first];
    std::vector<uint64_t>& tail = item_blocks.back();
    const uint64_t tail_block = item_blocks.size() - 1;
    if ((chunk.location >> 32) != tail_block || (chunk.location & 0xffffffffu) + chunk.count != tail.size()) return;
    const uint64_t* items = at(chunk.location);
    uint64_t h = mix(chunk.count, 0);
    for (uint32_t i = 0; i < chunk.count; ++i) h = mix(h, items[i]);
    auto [found, inserted] = runs_by_hash.emplace(h, c.first);
    if (inserted) return;
    const Chunk& seen = chunks[found->second];
    if (seen.location == chunk.location || seen.count != chunk.count) return;
    if (std::memcmp(at(seen.location), items, chunk.count * sizeof(uint64_t)) != 0) return;
    tail.resize(tail.size() - chunk.count);
    counts.items -= chunk.count;
    counts.shared_items += chunk.count;
    chunk.location = seen.location;
  }
};

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kBigInt:
      return "big int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kBytes:
      return "bytes";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
    case Kind::kSet:
      return "set";
    case Kind::kFrozenSet:
      return "frozenset";
  }
  return "?";
}

Document::Document() : storage_(std::make_unique<Storage>()) {}
Document::~Document() = default;
Document::Document(Document&&) noexcept = default;
Document& Document::operator=(Document&&) noexcept = default;

Value Document::root() const { return Value{storage_->root}; }

Kind Document::kind(Value v) const {
  switch (tag_of(v.bits)) {
    case kSpecial:
      return v.bits == kNoneBits ? Kind::kNone : Kind::kBool;
    case kSmallInt:
    case kWide:
      return Kind::kInt;
    case kStr:
      return Kind::kString;
    case kByt:
      return Kind::kBytes;
    case kCont:
      return storage_->containers[payload(v.bits)].kind;
    case kFlt:
      return Kind::kFloat;
    default:
      return Kind::kBigInt;
  }
}

bool Document::is_container(Value v) const { return tag_of(v.bits) == kCont; }

std::optional<int64_t> Document::integer(Value v) const {
  switch (tag_of(v.bits)) {
    case kSmallInt:
      return static_cast<int64_t>(v.bits) >> 3;
    case kWide:
      return storage_->wide_ints[payload(v.bits)];
    case kSpecial:
      if (v.bits == kTrueBits) return 1;
      if (v.bits == kFalseBits) return 0;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::optional<double> Document::number(Value v) const {
  if (tag_of(v.bits) == kFlt) return storage_->floats[payload(v.bits)];
  if (auto i = integer(v)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> Document::boolean(Value v) const {
  if (v.bits == kTrueBits) return true;
  if (v.bits == kFalseBits) return false;
  return std::nullopt;
}

std::optional<std::string_view> Document::text(Value v) const {
  if (tag_of(v.bits) != kStr) return std::nullopt;
  return storage_->strings[payload(v.bits)];
}

std::optional<std::string_view> Document::bytes(Value v) const {
  if (tag_of(v.bits) != kByt && tag_of(v.bits) != kBig) return std::nullopt;
  return storage_->strings[payload(v.bits)];
}

size_t Document::length(Value container) const {
  if (tag_of(container.bits) != kCont) return 0;
  const Container& c = storage_->containers[payload(container.bits)];
  return c.kind == Kind::kDict ? c.items / 2 : c.items;
}

void Document::runs(Value container, void (*f)(void*, Run), void* context) const {
  if (tag_of(container.bits) != kCont) return;
  for (uint32_t chunk = storage_->containers[payload(container.bits)].first; chunk != kNoChunk;
       chunk = storage_->chunks[chunk].next) {
    const Chunk& c = storage_->chunks[chunk];
    f(context, Run{storage_->at(c.location), c.count});
  }
}

std::optional<Value> Document::get(Value dict, std::string_view key) const {
  if (kind(dict) != Kind::kDict) return std::nullopt;
  std::optional<Value> found;
  for_each_pair(dict, [&](Value k, Value v) {
    if (tag_of(k.bits) == kStr && storage_->strings[payload(k.bits)] == key) found = v;
  });
  return found;
}

uint64_t Document::content_id(Value container) const {
  if (tag_of(container.bits) != kCont) return 0;
  const Container& c = storage_->containers[payload(container.bits)];
  if (c.first == kNoChunk) return 1;  // every empty container has equal (no) items
  if (c.first != c.last) return (uint64_t{1} << 63) | payload(container.bits);  // its own
  return storage_->chunks[c.first].location + 2;
}

size_t Document::memory_bytes() const {
  const Storage& s = *storage_;
  size_t bytes = s.text_blocks.size() * (size_t{1} << 20) + s.strings.capacity() * sizeof(std::string_view) +
                 s.string_index.size() * 48 + s.chunks.capacity() * sizeof(Chunk) +
                 s.containers.capacity() * sizeof(Container) + s.runs_by_hash.size() * 32 + s.wide_ints.capacity() * 8 +
                 s.floats.capacity() * 8;
  for (const auto& block : s.item_blocks) bytes += block.capacity() * sizeof(uint64_t);
  return bytes;
}

Document::Counts Document::counts() const { return storage_->counts; }

// ---- the byte source -------------------------------------------------------------------

namespace {

// Bytes from memory or from a file through a fixed buffer. `offset()` is the
// position in the whole input; `left()` how many bytes remain (the file's
// size is known up front, so a length field beyond the end is caught before
// anything is allocated for it).
class Source {
 public:
  explicit Source(std::span<const uint8_t> bytes)
      : start_(bytes.data()), cur_(bytes.data()), end_(bytes.data() + bytes.size()), size_(bytes.size()) {}
  Source(std::FILE* file, uint64_t size) : file_(file), size_(size), buffer_(size_t{1} << 20) {
    start_ = cur_ = end_ = buffer_.data();
  }

  uint64_t offset() const { return consumed_ + static_cast<uint64_t>(cur_ - start_); }
  uint64_t left() const { return size_ - offset(); }
  bool at_end() { return !fill(1); }
  bool failed() const { return read_error_; }

  // n contiguous bytes (n <= 64), or nullptr if the input ends first.
  const uint8_t* take(size_t n) {
    if (!fill(n)) return nullptr;
    const uint8_t* at = cur_;
    cur_ += n;
    return at;
  }
  // n bytes appended to `out`; false if the input ends first.
  bool take_into(std::string& out, uint64_t n) {
    if (n > left()) return false;
    while (n > 0) {
      if (!fill(1)) return false;
      const size_t step = static_cast<size_t>(std::min<uint64_t>(n, static_cast<uint64_t>(end_ - cur_)));
      out.append(reinterpret_cast<const char*>(cur_), step);
      cur_ += step;
      n -= step;
    }
    return true;
  }
  // Bytes up to a newline (not included), at most `limit` of them.
  bool take_line(std::string& out, size_t limit) {
    out.clear();
    while (out.size() <= limit) {
      const uint8_t* c = take(1);
      if (c == nullptr) return false;
      if (*c == '\n') return true;
      out.push_back(static_cast<char>(*c));
    }
    return false;
  }

 private:
  bool fill(size_t n) {
    if (static_cast<size_t>(end_ - cur_) >= n) return true;
    if (file_ == nullptr) return false;
    // Move what is left to the front and read behind it.
    const size_t keep = static_cast<size_t>(end_ - cur_);
    consumed_ += static_cast<uint64_t>(cur_ - start_);
    std::memmove(buffer_.data(), cur_, keep);
    size_t have = keep;
    while (have < n) {
      const size_t got = std::fread(buffer_.data() + have, 1, buffer_.size() - have, file_);
      if (got == 0) {
        if (std::ferror(file_)) read_error_ = true;
        break;
      }
      have += got;
    }
    cur_ = buffer_.data();
    end_ = buffer_.data() + have;
    return have >= n;
  }

  std::FILE* file_ = nullptr;
  const uint8_t* start_ = nullptr;  // the byte at consumed_
  const uint8_t* cur_ = nullptr;
  const uint8_t* end_ = nullptr;
  uint64_t size_ = 0;
  uint64_t consumed_ = 0;  // bytes before buffer_[0] (file mode)
  std::vector<uint8_t> buffer_;
  bool read_error_ = false;
};

struct OpcodeInfo {
  const char* name = nullptr;
  bool refused = false;      // would import or call code
  bool unsupported = false;  // plain data in a text form snapshots never use
};

constexpr std::array<OpcodeInfo, 256> make_opcodes() {
  std::array<OpcodeInfo, 256> t{};
  auto set = [&](int code, const char* name, bool refused = false, bool unsupported = false) {
    t[code] = {name, refused, unsupported};
  };
  set('(', "MARK");
  set('.', "STOP");
  set('0', "POP");
  set('1', "POP_MARK");
  set('2', "DUP");
  set('F', "FLOAT");
  set('I', "INT");
  set('J', "BININT");
  set('K', "BININT1");
  set('L', "LONG");
  set('M', "BININT2");
  set('N', "NONE");
  set('P', "PERSID", true);
  set('Q', "BINPERSID", true);
  set('R', "REDUCE", true);
  set('S', "STRING", false, true);
  set('T', "BINSTRING");
  set('U', "SHORT_BINSTRING");
  set('V', "UNICODE", false, true);
  set('X', "BINUNICODE");
  set('a', "APPEND");
  set('b', "BUILD", true);
  set('c', "GLOBAL", true);
  set('d', "DICT");
  set('}', "EMPTY_DICT");
  set('e', "APPENDS");
  set('g', "GET");
  set('h', "BINGET");
  set('i', "INST", true);
  set('j', "LONG_BINGET");
  set('l', "LIST");
  set(']', "EMPTY_LIST");
  set('o', "OBJ", true);
  set('p', "PUT");
  set('q', "BINPUT");
  set('r', "LONG_BINPUT");
  set('s', "SETITEM");
  set('t', "TUPLE");
  set(')', "EMPTY_TUPLE");
  set('u', "SETITEMS");
  set('G', "BINFLOAT");
  set(0x80, "PROTO");
  set(0x81, "NEWOBJ", true);
  set(0x82, "EXT1", true);
  set(0x83, "EXT2", true);
  set(0x84, "EXT4", true);
  set(0x85, "TUPLE1");
  set(0x86, "TUPLE2");
  set(0x87, "TUPLE3");
  set(0x88, "NEWTRUE");
  set(0x89, "NEWFALSE");
  set(0x8a, "LONG1");
  set(0x8b, "LONG4");
  set('B', "BINBYTES");
  set('C', "SHORT_BINBYTES");
  set(0x8c, "SHORT_BINUNICODE");
  set(0x8d, "BINUNICODE8");
  set(0x8e, "BINBYTES8");
  set(0x8f, "EMPTY_SET");
  set(0x90, "ADDITEMS");
  set(0x91, "FROZENSET");
  set(0x92, "NEWOBJ_EX", true);
  set(0x93, "STACK_GLOBAL", true);
  set(0x94, "MEMOIZE");
  set(0x95, "FRAME");
  set(0x96, "BYTEARRAY8");
  set(0x97, "NEXT_BUFFER", true);
  set(0x98, "READONLY_BUFFER", true);
  return t;
}
constexpr std::array<OpcodeInfo, 256> kOpcodes = make_opcodes();

uint64_t little_endian(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

// ---- the opcode loop -------------------------------------------------------------------

class Parser {
 public:
  Parser(Source& source, std::string_view name) : in_(source), name_(name) {}

  StatusOr<Document> run() {
    Document::Storage& s = *doc_.storage_;
    for (;;) {
      op_offset_ = in_.offset();
      const uint8_t* op_byte = in_.take(1);
      if (op_byte == nullptr) {
        if (in_.failed()) return IoError(std::string(name_) + ": read failed at offset " + std::to_string(op_offset_));
        return error_at("the pickle ends before its STOP opcode (truncated?)");
      }
      op_ = *op_byte;
      ++s.counts.opcodes;
      const OpcodeInfo& info = kOpcodes[op_];
      if (info.name == nullptr) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op_);
        return error_at(std::string("byte ") + hex + " is not a pickle opcode");
      }
      if (info.refused) {
        return error_at(std::string("refused opcode ") + info.name + " (" + hex_of(op_) +
                        "): it would import or call code; a snapshot holds plain data only");
      }
      if (info.unsupported) {
        return error_at(std::string("opcode ") + info.name + " (" + hex_of(op_) +
                        ") is not supported (a protocol 0 text form that snapshots do not use)");
      }
      if (op_ == '.') return finish();
      if (Status st = step(); !st.ok()) return st;
    }
  }

 private:
  static std::string hex_of(uint8_t op) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    return hex;
  }

  Status error_at(const std::string& message) const {
    std::string prefix = std::string(name_) + ": offset " + std::to_string(op_offset_) + ": ";
    if (kOpcodes[op_].name != nullptr && op_offset_ < in_.offset()) prefix += std::string(kOpcodes[op_].name) + ": ";
    return InvalidArgument(prefix + message);
  }
  Status truncated() const { return error_at("the pickle ends inside the opcode's argument (truncated?)"); }

  StatusOr<Document> finish() {
    if (stack_.size() <= floor()) return error_at("stack is empty at STOP");
    doc_.storage_->root = stack_.back();
    if (!in_.at_end()) {
      op_offset_ = in_.offset();
      op_ = 0;
      return InvalidArgument(std::string(name_) + ": offset " + std::to_string(op_offset_) + ": data after STOP");
    }
    return std::move(doc_);
  }

  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }

  Status need_values(size_t n) const {
    if (stack_.size() - floor() < n)
      return error_at("stack underflow (needs " + std::to_string(n) + " value" + (n == 1 ? "" : "s") + ")");
    return Status::Ok();
  }

  StatusOr<size_t> pop_mark() {
    if (marks_.empty()) return error_at("no MARK before it");
    const size_t mark = marks_.back();
    marks_.pop_back();
    return mark;
  }

  void push_string(Tag tag, std::string_view text) { stack_.push_back(make(tag, doc_.storage_->intern(text))); }

  void push_int(int64_t v) {
    if (v >= kSmallMin && v <= kSmallMax) {
      stack_.push_back((static_cast<uint64_t>(v) << 3) | kSmallInt);
    } else {
      doc_.storage_->wide_ints.push_back(v);
      stack_.push_back(make(kWide, doc_.storage_->wide_ints.size() - 1));
    }
  }

  // Little-endian two's complement of n bytes (LONG1/LONG4).
  void push_long(const std::string& raw) {
    const size_t n = raw.size();
    if (n == 0) return push_int(0);
    if (n <= 8) {
      uint64_t v = little_endian(reinterpret_cast<const uint8_t*>(raw.data()), static_cast<int>(n));
      if (n < 8 && (raw[n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign-extend
      return push_int(static_cast<int64_t>(v));
    }
    stack_.push_back(make(kBig, doc_.storage_->intern(raw)));
  }

  // A length field of `width` bytes, checked against what is left.
  StatusOr<uint64_t> length_field(int width) {
    const uint8_t* p = in_.take(width);
    if (p == nullptr) return truncated();
    const uint64_t n = little_endian(p, width);
    if (n > in_.left()) {
      return error_at("length " + std::to_string(n) + " runs past the end of the input (" + std::to_string(in_.left()) +
                      " bytes left)");
    }
    return n;
  }

  Status push_sized(Tag tag, int width) {
    MEMPLAN_ASSIGN_OR_RETURN(const uint64_t n, length_field(width));
    scratch_.clear();
    if (!in_.take_into(scratch_, n)) return truncated();
    push_string(tag, scratch_);
    return Status::Ok();
  }

  Status memo_put(uint64_t index) {
    MEMPLAN_RETURN_IF_ERROR(need_values(1));
    if (index < memo_.size() + (size_t{1} << 16) && index < (uint64_t{1} << 32)) {
      if (index >= memo_.size()) memo_.resize(index + 1, kUnset);
      if (memo_[index] == kUnset) ++memo_entries_;
      memo_[index] = stack_.back();
    } else {
      if (sparse_memo_.emplace(index, stack_.back()).second)
        ++memo_entries_;
      else
        sparse_memo_[index] = stack_.back();
    }
    return Status::Ok();
  }

  Status memo_get(uint64_t index) {
    uint64_t v = kUnset;
    if (index < memo_.size()) {
      v = memo_[index];
    } else if (auto found = sparse_memo_.find(index); found != sparse_memo_.end()) {
      v = found->second;
    }
    if (v == kUnset) return error_at("no memo entry " + std::to_string(index));
    stack_.push_back(v);
    return Status::Ok();
  }

  // PUT's and GET's argument: a decimal memo index on its own line.
  StatusOr<uint64_t> memo_index_line() {
    if (!in_.take_line(line_, 64)) return error_at("the argument line is missing its newline or is too long");
    if (line_.empty() || line_[0] < '0' || line_[0] > '9') return error_at("'" + line_ + "' is not a memo index");
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(line_.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return error_at("'" + line_ + "' is not a memo index");
    return static_cast<uint64_t>(v);
  }

  uint64_t new_container(Kind kind) { return make(kCont, doc_.storage_->new_container(kind)); }

  // Moves stack_[from, end) into `container` (sealing the values first).
  Status move_items(uint64_t container, Kind want, size_t from, bool pairs) {
    Document::Storage& s = *doc_.storage_;
    if (tag_of(container) != kCont || s.containers[payload(container)].kind != want) {
      return error_at(std::string("the target is not a ") + std::string(kind_name(want)));
    }
    const size_t n = stack_.size() - from;
    if (pairs && n % 2 != 0) return error_at("an odd number of values (" + std::to_string(n) + ") for key/value pairs");
    for (size_t i = stack_.size(); i > from; --i) s.share_if_seen(stack_[i - 1]);
    s.add_items(static_cast<uint32_t>(payload(container)), stack_.data() + from, n);
    stack_.resize(from);
    return Status::Ok();
  }

  // A new container of `kind` with the values above the last MARK.
  Status build_from_mark(Kind kind, bool pairs) {
    MEMPLAN_ASSIGN_OR_RETURN(const size_t mark, pop_mark());
    const uint64_t c = new_container(kind);
    MEMPLAN_RETURN_IF_ERROR(move_items(c, kind, mark, pairs));
    stack_.push_back(c);
    return Status::Ok();
  }

  Status step() {
    switch (op_) {
      case 0x80: {  // PROTO
        const uint8_t* p = in_.take(1);
        if (p == nullptr) return truncated();
        if (*p > 5) return error_at("protocol " + std::to_string(*p) + " is newer than 5");
        return Status::Ok();
      }
      case 0x95: {  // FRAME: a length hint; the opcodes inside are read as any others
        if (in_.take(8) == nullptr) return truncated();
        return Status::Ok();
      }
      case '(':
        marks_.push_back(stack_.size());
        return Status::Ok();
      case '0':  // POP: Python pops the last MARK when nothing is above it
        if (stack_.size() > floor()) {
          stack_.pop_back();
          return Status::Ok();
        }
        [[fallthrough]];
      case '1': {  // POP_MARK
        MEMPLAN_ASSIGN_OR_RETURN(const size_t mark, pop_mark());
        stack_.resize(mark);
        return Status::Ok();
      }
      case '2':
        MEMPLAN_RETURN_IF_ERROR(need_values(1));
        stack_.push_back(stack_.back());
        return Status::Ok();
      case 'N':
        stack_.push_back(kNoneBits);
        return Status::Ok();
      case 0x88:
        stack_.push_back(kTrueBits);
        return Status::Ok();
      case 0x89:
        stack_.push_back(kFalseBits);
        return Status::Ok();
      case 'J': {
        const uint8_t* p = in_.take(4);
        if (p == nullptr) return truncated();
        push_int(static_cast<int32_t>(static_cast<uint32_t>(little_endian(p, 4))));
        return Status::Ok();
      }
      case 'K': {
        const uint8_t* p = in_.take(1);
        if (p == nullptr) return truncated();
        push_int(*p);
        return Status::Ok();
      }
      case 'M': {
        const uint8_t* p = in_.take(2);
        if (p == nullptr) return truncated();
        push_int(static_cast<int64_t>(little_endian(p, 2)));
        return Status::Ok();
      }
      case 0x8a:
      case 0x8b: {  // LONG1, LONG4
        MEMPLAN_ASSIGN_OR_RETURN(const uint64_t n, length_field(op_ == 0x8a ? 1 : 4));
        scratch_.clear();
        if (!in_.take_into(scratch_, n)) return truncated();
        push_long(scratch_);
        return Status::Ok();
      }
      case 'I':
      case 'L': {  // INT, LONG: decimal text ("I00"/"I01" are False/True)
        if (!in_.take_line(line_, 64)) return error_at("the argument line is missing its newline or is too long");
        if (op_ == 'I' && (line_ == "00" || line_ == "01")) {
          stack_.push_back(line_ == "01" ? kTrueBits : kFalseBits);
          return Status::Ok();
        }
        std::string digits = line_;
        if (!digits.empty() && digits.back() == 'L') digits.pop_back();
        errno = 0;
        char* end = nullptr;
        const long long v = digits.empty() ? 0 : std::strtoll(digits.c_str(), &end, 10);
        if (digits.empty() || errno != 0 || *end != '\0') return error_at("'" + line_ + "' is not a 64-bit integer");
        push_int(v);
        return Status::Ok();
      }
      case 'G': {
        const uint8_t* p = in_.take(8);
        if (p == nullptr) return truncated();
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];  // big-endian
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return push_float(d);
      }
      case 'F': {
        if (!in_.take_line(line_, 64)) return error_at("the argument line is missing its newline or is too long");
        errno = 0;
        char* end = nullptr;
        const double d = std::strtod(line_.c_str(), &end);
        if (line_.empty() || *end != '\0') return error_at("'" + line_ + "' is not a float");
        return push_float(d);
      }
      case 0x8c:
        return push_sized(kStr, 1);
      case 'X':
        return push_sized(kStr, 4);
      case 0x8d:
        return push_sized(kStr, 8);
      case 'C':
      case 'U':
        return push_sized(kByt, 1);
      case 'B':
      case 'T':
        return push_sized(kByt, 4);
      case 0x8e:
      case 0x96:
        return push_sized(kByt, 8);
      case 0x94: {  // MEMOIZE: memo[len(memo)] = top
        return memo_put(memo_entries_);
      }
      case 'p': {
        MEMPLAN_ASSIGN_OR_RETURN(const uint64_t index, memo_index_line());
        return memo_put(index);
      }
      case 'q': {
        const uint8_t* p = in_.take(1);
        if (p == nullptr) return truncated();
        return memo_put(*p);
      }
      case 'r': {
        const uint8_t* p = in_.take(4);
        if (p == nullptr) return truncated();
        return memo_put(little_endian(p, 4));
      }
      case 'g': {
        MEMPLAN_ASSIGN_OR_RETURN(const uint64_t index, memo_index_line());
        return memo_get(index);
      }
      case 'h': {
        const uint8_t* p = in_.take(1);
        if (p == nullptr) return truncated();
        return memo_get(*p);
      }
      case 'j': {
        const uint8_t* p = in_.take(4);
        if (p == nullptr) return truncated();
        return memo_get(little_endian(p, 4));
      }
      case '}':
        stack_.push_back(new_container(Kind::kDict));
        return Status::Ok();
      case ']':
        stack_.push_back(new_container(Kind::kList));
        return Status::Ok();
      case ')':
        stack_.push_back(new_container(Kind::kTuple));
        return Status::Ok();
      case 0x8f:
        stack_.push_back(new_container(Kind::kSet));
        return Status::Ok();
      case 'd':
        return build_from_mark(Kind::kDict, true);
      case 'l':
        return build_from_mark(Kind::kList, false);
      case 't':
        return build_from_mark(Kind::kTuple, false);
      case 0x91:
        return build_from_mark(Kind::kFrozenSet, false);
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const size_t n = op_ - 0x84;
        MEMPLAN_RETURN_IF_ERROR(need_values(n));
        const uint64_t c = new_container(Kind::kTuple);
        MEMPLAN_RETURN_IF_ERROR(move_items(c, Kind::kTuple, stack_.size() - n, false));
        stack_.push_back(c);
        return Status::Ok();
      }
      case 'a': {  // APPEND: list below the value
        MEMPLAN_RETURN_IF_ERROR(need_values(2));
        return move_items(stack_[stack_.size() - 2], Kind::kList, stack_.size() - 1, false);
      }
      case 's': {  // SETITEM: dict below key and value
        MEMPLAN_RETURN_IF_ERROR(need_values(3));
        return move_items(stack_[stack_.size() - 3], Kind::kDict, stack_.size() - 2, true);
      }
      case 'e':
      case 'u':
      case 0x90: {  // APPENDS, SETITEMS, ADDITEMS: container below the MARK
        MEMPLAN_ASSIGN_OR_RETURN(const size_t mark, pop_mark());
        if (mark <= floor()) {
          marks_.push_back(mark);  // leave the stack as it was for the message
          return error_at("no container below the MARK");
        }
        const Kind want = op_ == 'e' ? Kind::kList : op_ == 'u' ? Kind::kDict : Kind::kSet;
        return move_items(stack_[mark - 1], want, mark, op_ == 'u');
      }
      default:
        return error_at("unhandled opcode");  // every accepted opcode is handled above
    }
  }

  Status push_float(double d) {
    doc_.storage_->floats.push_back(d);
    stack_.push_back(make(kFlt, doc_.storage_->floats.size() - 1));
    return Status::Ok();
  }

  Source& in_;
  std::string_view name_;
  Document doc_;
  std::vector<uint64_t> stack_;
  std::vector<size_t> marks_;
  std::vector<uint64_t> memo_;
  std::unordered_map<uint64_t, uint64_t> sparse_memo_;
  uint64_t memo_entries_ = 0;
  uint64_t op_offset_ = 0;
  uint8_t op_ = 0;
  std::string scratch_, line_;
};

StatusOr<Document> parse_pickle(std::span<const uint8_t> bytes, std::string_view source) {
  Source in(bytes);
  return Parser(in, source).run();
}

StatusOr<Document> read_pickle_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return IoError(path + ": cannot open: " + std::strerror(errno));
  uint64_t size = 0;
  if (std::fseek(file, 0, SEEK_END) == 0) {
    const long end = std::ftell(file);
    if (end >= 0) size = static_cast<uint64_t>(end);
  }
  std::rewind(file);
  Source in(file, size);
  StatusOr<Document> document = Parser(in, path).run();
  std::fclose(file);
  return document;
}

}  // namespace memplan::pickle
