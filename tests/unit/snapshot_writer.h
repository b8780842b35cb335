// snapshot_writer.h — test-only: writes plain values as a protocol 4 pickle
// the way Python's pickler does (strings memoized and fetched again with
// BINGET, lists filled by APPENDS in batches, dicts by SETITEMS), and builds
// PyTorch memory snapshots from hand-made segments and events with it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace memplan::testing {

struct PyValue;
using PyList = std::vector<PyValue>;
using PyDict = std::vector<std::pair<PyValue, PyValue>>;
struct PyTuple {
  std::vector<PyValue> items;
};

struct PyValue {
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, std::shared_ptr<PyList>, std::shared_ptr<PyDict>,
               std::shared_ptr<PyTuple>>
      v;
  PyValue() : v(nullptr) {}
  PyValue(std::nullptr_t) : v(nullptr) {}
  PyValue(bool b) : v(b) {}
  PyValue(int i) : v(int64_t{i}) {}
  PyValue(int64_t i) : v(i) {}
  PyValue(uint64_t i) : v(static_cast<int64_t>(i)) {}
  PyValue(double d) : v(d) {}
  PyValue(const char* s) : v(std::string(s)) {}
  PyValue(std::string s) : v(std::move(s)) {}
  PyValue(PyList l) : v(std::make_shared<PyList>(std::move(l))) {}
  PyValue(PyDict d) : v(std::make_shared<PyDict>(std::move(d))) {}
  PyValue(PyTuple t) : v(std::make_shared<PyTuple>(std::move(t))) {}
};

class PickleWriter {
 public:
  std::string write(const PyValue& root) {
    out_ = std::string("\x80\x04", 2);
    put(root);
    out_ += '.';
    return out_;
  }

 private:
  void memoize() {
    out_ += '\x94';
    ++memo_count_;
  }
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  void put(const PyValue& value) {
    if (std::holds_alternative<std::nullptr_t>(value.v)) {
      out_ += 'N';
    } else if (auto b = std::get_if<bool>(&value.v)) {
      out_ += *b ? '\x88' : '\x89';
    } else if (auto i = std::get_if<int64_t>(&value.v)) {
      if (*i >= 0 && *i < 256) {
        out_ += 'K';
        le(static_cast<uint64_t>(*i), 1);
      } else if (*i >= 0 && *i < 65536) {
        out_ += 'M';
        le(static_cast<uint64_t>(*i), 2);
      } else if (*i >= INT32_MIN && *i <= INT32_MAX) {
        out_ += 'J';
        le(static_cast<uint64_t>(*i), 4);
      } else {
        out_ += "\x8a\x08";
        le(static_cast<uint64_t>(*i), 8);
      }
    } else if (auto d = std::get_if<double>(&value.v)) {
      uint64_t bits;
      static_assert(sizeof bits == sizeof *d);
      __builtin_memcpy(&bits, d, sizeof bits);
      out_ += 'G';
      for (int k = 7; k >= 0; --k) out_ += static_cast<char>((bits >> (8 * k)) & 0xff);
    } else if (auto s = std::get_if<std::string>(&value.v)) {
      if (auto seen = strings_.find(*s); seen != strings_.end()) {
        if (seen->second < 256) {
          out_ += 'h';
          le(seen->second, 1);
        } else {
          out_ += 'j';
          le(seen->second, 4);
        }
        return;
      }
      if (s->size() < 256) {
        out_ += '\x8c';
        le(s->size(), 1);
      } else {
        out_ += 'X';
        le(s->size(), 4);
      }
      out_ += *s;
      strings_[*s] = memo_count_;
      memoize();
    } else if (auto l = std::get_if<std::shared_ptr<PyList>>(&value.v)) {
      out_ += ']';
      memoize();
      for (size_t begin = 0; begin < (*l)->size(); begin += 1000) {
        out_ += '(';
        for (size_t k = begin; k < (*l)->size() && k < begin + 1000; ++k) put((**l)[k]);
        out_ += 'e';
      }
    } else if (auto dict = std::get_if<std::shared_ptr<PyDict>>(&value.v)) {
      out_ += '}';
      memoize();
      if (!(*dict)->empty()) {
        out_ += '(';
        for (const auto& [k, v] : **dict) {
          put(k);
          put(v);
        }
        out_ += 'u';
      }
    } else if (auto t = std::get_if<std::shared_ptr<PyTuple>>(&value.v)) {
      out_ += '(';
      for (const PyValue& item : (*t)->items) put(item);
      out_ += 't';
      memoize();
    }
  }

  std::string out_;
  uint64_t memo_count_ = 0;
  std::map<std::string, uint64_t> strings_;
};

inline PyValue frame(const std::string& filename, int64_t line, const std::string& name) {
  return PyDict{{"name", name}, {"filename", filename}, {"line", line}};
}

// A snapshot as `_dump_snapshot` writes it; `newer` adds allocator_settings
// and external_annotations.
struct SnapshotBuilder {
  struct BlockSpec {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t requested = 0;
    std::string state = "inactive";
    PyList frames;
  };
  PyList segments;
  std::map<int, PyList> traces;
  bool newer = false;
  PyDict settings;
  PyList annotations;

  void segment(int device, uint64_t address, uint64_t total, bool small, std::vector<BlockSpec> blocks,
               int64_t stream = 0, bool expandable = false) {
    PyList block_list;
    for (BlockSpec& b : blocks) {
      block_list.push_back(PyDict{{"address", b.address},
                                  {"size", b.size},
                                  {"requested_size", b.requested},
                                  {"state", b.state},
                                  {"frames", PyValue(std::move(b.frames))}});
    }
    segments.push_back(PyDict{{"device", device},
                              {"address", address},
                              {"total_size", total},
                              {"allocated_size", 0},
                              {"active_size", 0},
                              {"requested_size", 0},
                              {"stream", stream},
                              {"segment_type", small ? "small" : "large"},
                              {"segment_pool_id", PyTuple{{0, 0}}},
                              {"is_expandable", expandable},
                              {"frames", PyList{}},
                              {"blocks", PyValue(std::move(block_list))}});
  }
  void event(int device, const std::string& action, uint64_t address, uint64_t size, PyList frames = {},
             int64_t stream = 0, int64_t time_us = 0) {
    traces[device].push_back(PyDict{{"action", action},
                                    {"addr", address},
                                    {"size", size},
                                    {"stream", stream},
                                    {"time_us", time_us},
                                    {"frames", PyValue(std::move(frames))}});
  }
  std::string bytes() const {
    PyList device_traces;
    const int devices = traces.empty() ? 0 : traces.rbegin()->first + 1;
    for (int d = 0; d < devices; ++d) {
      auto it = traces.find(d);
      device_traces.push_back(it == traces.end() ? PyList{} : it->second);
    }
    PyDict root{{"segments", segments}, {"device_traces", device_traces}};
    if (newer) {
      root.emplace_back("allocator_settings", settings);
      root.emplace_back("external_annotations", annotations);
    }
    return PickleWriter().write(root);
  }
};

}  // namespace memplan::testing
