// pickle.h — a reader of Python pickles that accepts plain data only.
//
// PyTorch writes its memory snapshots with Python's pickle (protocol 2–5).
// Loading a pickle with Python runs whatever the file says; this reader runs
// nothing: it understands the opcodes that build plain values and refuses
// every other one, naming it and its byte offset, before doing anything.
//
// Accepted (the value each builds):
//   framing    PROTO (≤ 5), FRAME, STOP
//   stack      MARK, POP, POP_MARK, DUP
//   memo       MEMOIZE, PUT, BINPUT, LONG_BINPUT, GET, BINGET, LONG_BINGET
//   None/bool  NONE, NEWTRUE, NEWFALSE
//   ints       BININT, BININT1, BININT2, LONG1, LONG4, INT, LONG (beyond 64 bits: kBigInt)
//   floats     BINFLOAT, FLOAT
//   strings    SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
//   bytes      SHORT_BINBYTES, BINBYTES, BINBYTES8, BYTEARRAY8, SHORT_BINSTRING, BINSTRING
//   dict       EMPTY_DICT, DICT, SETITEM, SETITEMS
//   list       EMPTY_LIST, LIST, APPEND, APPENDS
//   tuple      EMPTY_TUPLE, TUPLE, TUPLE1, TUPLE2, TUPLE3
//   set        EMPTY_SET, ADDITEMS, FROZENSET
// Refused, with "refused opcode GLOBAL (0x63) at offset 812": GLOBAL,
// STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4,
// PERSID, BINPERSID, NEXT_BUFFER, READONLY_BUFFER, UNICODE, and any byte that
// is no opcode. Errors name the source and the offset of the opcode:
//     x.pickle: offset 4711: BINGET 12: no memo entry 12
// Truncation, stack underflow, a MARK missing, an item added to something
// that is not a container of the right kind, a memo index never set, a
// length beyond the end of the input, data after STOP: each is an error with
// the offset; the reader never throws and never aborts. Strings are kept as
// the bytes the file holds (UTF-8 is not checked).
//
// The document. Values are 64-bit handles into one Document that owns all
// storage: small ints, None and booleans sit in the handle itself; strings
// are interned (one copy of each distinct text, so a frame's file name
// costs its bytes once); containers keep their items in one shared array.
// Objects the pickle shares through the memo stay shared (one container),
// and a list, tuple or dict whose items equal those of one read before is
// stored once (its handle stays distinct), so a snapshot's repeated stack
// traces cost their items once. A document of a pickle of n opcodes takes
// about 8 bytes per item plus the distinct strings.
//
// Dicts keep every key/value pair in the order the pickle set them; a key set
// twice keeps both pairs and `get` answers the last, as Python would.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/status.h"

namespace memplan::pickle {

enum class Kind : uint8_t {
  kNone,
  kBool,
  kInt,
  kBigInt,
  kFloat,
  kString,
  kBytes,
  kList,
  kTuple,
  kDict,
  kSet,
  kFrozenSet
};

// "None", "bool", "int", "big int", "float", "str", "bytes", "list", "tuple", "dict", "set", "frozenset".
std::string_view kind_name(Kind kind);

// A handle to a value of a Document. Two handles are equal iff they denote
// the same object (for containers: the same container; for scalars: the same
// value, strings compared by content).
struct Value {
  uint64_t bits = 0;
  bool operator==(const Value&) const = default;
};

class Document {
 public:
  Document();
  ~Document();
  Document(Document&&) noexcept;
  Document& operator=(Document&&) noexcept;

  Value root() const;

  Kind kind(Value v) const;
  bool is_container(Value v) const;
  // The value if it is of that kind, nullopt otherwise. `integer` accepts
  // ints that fit 64 bits (and booleans, as Python does); `number` accepts
  // ints and floats.
  std::optional<int64_t> integer(Value v) const;
  std::optional<double> number(Value v) const;
  std::optional<bool> boolean(Value v) const;
  std::optional<std::string_view> text(Value v) const;   // str
  std::optional<std::string_view> bytes(Value v) const;  // bytes, or the raw bytes of a big int

  // Containers: items of a list, tuple or set; key/value pairs of a dict.
  size_t length(Value container) const;  // 0 for a scalar
  // Calls f(item) for each item (list, tuple, set) or f(key, value) for each
  // pair (dict), in order. Does nothing for a scalar.
  template <typename F>
  void for_each_item(Value container, F&& f) const;
  template <typename F>
  void for_each_pair(Value dict, F&& f) const;
  // The value of the last pair whose key is the string `key`.
  std::optional<Value> get(Value dict, std::string_view key) const;

  // An identity for a container's items: two containers with the same
  // content_id have equal items (the reader stored them once). Callers use it
  // to convert equal lists once. 0 for scalars.
  uint64_t content_id(Value container) const;

  // Bytes held by the document (strings, items, tables), for measurements.
  size_t memory_bytes() const;

  // Counts of what the reader saw, for measurements.
  struct Counts {
    uint64_t opcodes = 0;
    uint64_t containers = 0;
    uint64_t items = 0;         // item slots stored (after sharing)
    uint64_t shared_items = 0;  // item slots not stored because equal content was stored before
    uint64_t strings = 0;       // distinct strings and bytes
  };
  Counts counts() const;

  struct Storage;  // the implementation's tables (pickle.cc)

 private:
  friend class Parser;
  std::unique_ptr<Storage> storage_;
  // Raw item access for the templates below.
  struct Run {
    const uint64_t* items;
    size_t count;
  };
  // Calls back with each contiguous run of items of a container.
  void runs(Value container, void (*f)(void*, Run), void* context) const;
};

// Parses a whole pickle held in memory. `source` names it in errors.
StatusOr<Document> parse_pickle(std::span<const uint8_t> bytes, std::string_view source);
// Reads a pickle file, streaming it through a fixed buffer (the file is never
// held in memory as a whole).
StatusOr<Document> read_pickle_file(const std::string& path);

// ---- templates -------------------------------------------------------------------------

template <typename F>
void Document::for_each_item(Value container, F&& f) const {
  runs(
      container,
      [](void* context, Run run) {
        F& fn = *static_cast<F*>(context);
        for (size_t i = 0; i < run.count; ++i) fn(Value{run.items[i]});
      },
      &f);
}

template <typename F>
void Document::for_each_pair(Value dict, F&& f) const {
  // Pairs never straddle runs: SETITEM(S) add whole pairs.
  runs(
      dict,
      [](void* context, Run run) {
        F& fn = *static_cast<F*>(context);
        for (size_t i = 0; i + 1 < run.count; i += 2) fn(Value{run.items[i]}, Value{run.items[i + 1]});
      },
      &f);
}

}  // namespace memplan::pickle
