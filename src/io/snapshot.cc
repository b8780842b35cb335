// snapshot.cc — PyTorch memory snapshots (see snapshot.h): the pickle tree
// to the snapshot model, the window's reconstruction, and the problems and
// model traces extracted from it.
#include "memplan/snapshot.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace memplan::snapshot {

using pickle::Kind;
using pickle::Value;

std::string_view action_name(Action action) {
  switch (action) {
    case Action::kAlloc: return "alloc";
    case Action::kFreeRequested: return "free_requested";
    case Action::kFreeCompleted: return "free_completed";
    case Action::kSegmentAlloc: return "segment_alloc";
    case Action::kSegmentFree: return "segment_free";
    case Action::kSegmentMap: return "segment_map";
    case Action::kSegmentUnmap: return "segment_unmap";
    case Action::kSnapshot: return "snapshot";
    case Action::kOom: return "oom";
  }
  return "?";
}

const Device* Snapshot::find_device(int device) const {
  for (const Device& d : devices) {
    if (d.device == device) return &d;
  }
  return nullptr;
}

namespace {

constexpr uint64_t kSmallSegmentBytes = uint64_t{2} << 20;  // PyTorch's kSmallBuffer

std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

std::string_view last_components(std::string_view path, int n) {
  size_t cut = path.size();
  for (int i = 0; i < n; ++i) {
    const size_t slash = path.rfind('/', cut == 0 ? 0 : cut - 1);
    if (slash == std::string_view::npos || cut == 0) return path;
    cut = slash;
  }
  return path.substr(cut + 1);
}

// Converts the pickle tree, naming the field path in every error.
class Converter {
 public:
  Converter(const pickle::Document& doc, std::string_view source) : doc_(doc), source_(source) {
    out_.strings.push_back("");
    out_.stacks.emplace_back();
  }

  StatusOr<Snapshot> run() {
    const Value root = doc_.root();
    if (doc_.kind(root) != Kind::kDict) {
      return error("", "the top level is a " + std::string(pickle::kind_name(doc_.kind(root))) +
                           ", not a dict with 'segments' and 'device_traces' (is this a memory snapshot?)");
    }
    const auto segments = doc_.get(root, "segments");
    const auto traces = doc_.get(root, "device_traces");
    if (!segments && !traces) return error("", "neither 'segments' nor 'device_traces': not a memory snapshot");
    if (segments) MEMPLAN_RETURN_IF_ERROR(read_segments(*segments));
    if (traces) MEMPLAN_RETURN_IF_ERROR(read_traces(*traces));
    if (auto settings = doc_.get(root, "allocator_settings")) {
      out_.newer_format = true;
      MEMPLAN_RETURN_IF_ERROR(read_settings(*settings));
    }
    if (auto annotations = doc_.get(root, "external_annotations")) MEMPLAN_RETURN_IF_ERROR(read_annotations(*annotations));
    for (const auto& [action, count] : unknown_actions_) {
      out_.warnings.push_back("ignored " + std::to_string(count) + " event" + (count == 1 ? "" : "s") +
                              " with the unknown action '" + action + "'");
    }
    std::vector<Device> devices;
    for (auto& [number, device] : devices_) devices.push_back(std::move(device));
    out_.devices = std::move(devices);
    return std::move(out_);
  }

 private:
  Status error(const std::string& path, const std::string& what) const {
    return InvalidArgument(std::string(source_) + ": " + (path.empty() ? "" : path + ": ") + what);
  }

  Status expect(Value v, Kind kind, const std::string& path) const {
    if (doc_.kind(v) == kind) return Status::Ok();
    return error(path, "a " + std::string(pickle::kind_name(doc_.kind(v))) + ", expected a " +
                           std::string(pickle::kind_name(kind)));
  }

  StatusOr<int64_t> integer(Value v, const std::string& path) const {
    if (auto i = doc_.integer(v)) return *i;
    return error(path, "not an integer (a " + std::string(pickle::kind_name(doc_.kind(v))) + ")");
  }
  StatusOr<uint64_t> unsigned_integer(Value v, const std::string& path) const {
    MEMPLAN_ASSIGN_OR_RETURN(const int64_t i, integer(v, path));
    if (i < 0) return error(path, std::to_string(i) + " is negative");
    return static_cast<uint64_t>(i);
  }
  StatusOr<std::string_view> text(Value v, const std::string& path) const {
    if (auto t = doc_.text(v)) return *t;
    return error(path, "not a string (a " + std::string(pickle::kind_name(doc_.kind(v))) + ")");
  }

  uint32_t intern(std::string_view text) {
    auto found = string_ids_.find(std::string(text));
    if (found != string_ids_.end()) return found->second;
    const auto id = static_cast<uint32_t>(out_.strings.size());
    out_.strings.emplace_back(text);
    string_ids_.emplace(out_.strings.back(), id);
    return id;
  }

  Device& device(int number) {
    auto [it, inserted] = devices_.try_emplace(number);
    if (inserted) it->second.device = number;
    return it->second;
  }

  // A frames list to a stack index; equal lists (the reader stores them
  // once) are converted once.
  // `path()` names the list in errors (built only for one).
  template <typename PathFn>
  StatusOr<uint32_t> stack_of(Value frames, const PathFn& path_of) {
    if (doc_.kind(frames) == Kind::kNone) return 0u;
    if (doc_.kind(frames) != Kind::kList) return expect(frames, Kind::kList, path_of());
    if (doc_.length(frames) == 0) return 0u;
    const uint64_t content = doc_.content_id(frames);
    if (auto found = stack_ids_.find(content); found != stack_ids_.end()) return found->second;
    const std::string path = path_of();
    std::vector<uint32_t> stack;
    stack.reserve(doc_.length(frames));
    Status status;
    size_t index = 0;
    doc_.for_each_item(frames, [&](Value frame) {
      if (!status.ok()) return;
      StatusOr<uint32_t> id = frame_of(frame, path + "[" + std::to_string(index++) + "]");
      if (!id.ok()) {
        status = id.status();
        return;
      }
      stack.push_back(*id);
    });
    MEMPLAN_RETURN_IF_ERROR(status);
    // Equal stacks in lists the reader did not share still get one index.
    auto [it, inserted] = stacks_by_frames_.try_emplace(stack, static_cast<uint32_t>(out_.stacks.size()));
    if (inserted) out_.stacks.push_back(std::move(stack));
    stack_ids_.emplace(content, it->second);
    return it->second;
  }

  StatusOr<uint32_t> frame_of(Value frame, const std::string& path) {
    if (auto found = frame_ids_.find(frame.bits); found != frame_ids_.end()) return found->second;
    MEMPLAN_RETURN_IF_ERROR(expect(frame, Kind::kDict, path));
    Frame f;
    if (auto v = doc_.get(frame, "filename")) {
      MEMPLAN_ASSIGN_OR_RETURN(const std::string_view t, text(*v, path + ".filename"));
      f.filename = intern(t);
    }
    if (auto v = doc_.get(frame, "name")) {
      MEMPLAN_ASSIGN_OR_RETURN(const std::string_view t, text(*v, path + ".name"));
      f.name = intern(t);
    }
    if (auto v = doc_.get(frame, "line")) {
      // PyTorch writes an unknown line as SIZE_MAX (a big int here): line 0.
      if (doc_.kind(*v) != Kind::kBigInt) {
        MEMPLAN_ASSIGN_OR_RETURN(f.line, integer(*v, path + ".line"));
        if (f.line < 0) f.line = 0;
      }
    }
    const auto id = static_cast<uint32_t>(out_.frames.size());
    out_.frames.push_back(f);
    frame_ids_.emplace(frame.bits, id);
    return id;
  }

  Status read_segments(Value segments) {
    MEMPLAN_RETURN_IF_ERROR(expect(segments, Kind::kList, "segments"));
    Status status;
    size_t index = 0;
    doc_.for_each_item(segments, [&](Value s) {
      if (status.ok()) status = read_segment(s, "segments[" + std::to_string(index) + "]");
      ++index;
    });
    for (auto& [number, d] : devices_) {
      std::sort(d.segments.begin(), d.segments.end(),
                [](const Segment& a, const Segment& b) { return a.address < b.address; });
    }
    return status;
  }

  Status read_segment(Value s, const std::string& path) {
    MEMPLAN_RETURN_IF_ERROR(expect(s, Kind::kDict, path));
    Segment segment;
    int64_t number = 0;
    Status status;
    std::optional<Value> blocks;
    doc_.for_each_pair(s, [&](Value k, Value v) {
      if (!status.ok()) return;
      const auto key = doc_.text(k);
      if (!key) return;
      const std::string field = path + "." + std::string(*key);
      if (*key == "device") {
        StatusOr<int64_t> i = integer(v, field);
        if (i.ok() && (*i < 0 || *i > 1 << 20)) i = error(field, std::to_string(*i) + " is not a device number");
        if (i.ok()) number = *i; else status = i.status();
      } else if (*key == "address") {
        StatusOr<uint64_t> i = unsigned_integer(v, field);
        if (i.ok()) segment.address = *i; else status = i.status();
      } else if (*key == "total_size") {
        StatusOr<uint64_t> i = unsigned_integer(v, field);
        if (i.ok()) segment.total_size = *i; else status = i.status();
      } else if (*key == "stream") {
        StatusOr<int64_t> i = integer(v, field);
        if (i.ok()) segment.stream = *i; else status = i.status();
      } else if (*key == "segment_type") {
        StatusOr<std::string_view> t = text(v, field);
        if (t.ok()) segment.small_pool = *t == "small"; else status = t.status();
      } else if (*key == "is_expandable") {
        segment.expandable = doc_.boolean(v).value_or(false);
      } else if (*key == "blocks") {
        blocks = v;
      }
    });
    MEMPLAN_RETURN_IF_ERROR(status);
    if (blocks) {
      MEMPLAN_RETURN_IF_ERROR(expect(*blocks, Kind::kList, path + ".blocks"));
      size_t index = 0;
      doc_.for_each_item(*blocks, [&](Value b) {
        if (!status.ok()) return;
        StatusOr<Block> block = read_block(b, path + ".blocks[" + std::to_string(index++) + "]");
        if (block.ok()) segment.blocks.push_back(*block); else status = block.status();
      });
      MEMPLAN_RETURN_IF_ERROR(status);
      std::sort(segment.blocks.begin(), segment.blocks.end(),
                [](const Block& a, const Block& b) { return a.address < b.address; });
    }
    device(static_cast<int>(number)).segments.push_back(std::move(segment));
    return Status::Ok();
  }

  StatusOr<Block> read_block(Value b, const std::string& path) {
    MEMPLAN_RETURN_IF_ERROR(expect(b, Kind::kDict, path));
    Block block;
    for (const char* required : {"address", "size", "state"}) {
      if (!doc_.get(b, required)) return error(path, std::string("no '") + required + "'");
    }
    MEMPLAN_ASSIGN_OR_RETURN(block.address, unsigned_integer(*doc_.get(b, "address"), path + ".address"));
    MEMPLAN_ASSIGN_OR_RETURN(block.size, unsigned_integer(*doc_.get(b, "size"), path + ".size"));
    if (auto v = doc_.get(b, "requested_size")) {
      MEMPLAN_ASSIGN_OR_RETURN(block.requested_size, unsigned_integer(*v, path + ".requested_size"));
    }
    MEMPLAN_ASSIGN_OR_RETURN(const std::string_view state, text(*doc_.get(b, "state"), path + ".state"));
    if (state == "active_allocated") {
      block.state = BlockState::kActiveAllocated;
    } else if (state == "active_pending_free") {
      block.state = BlockState::kActivePendingFree;
    } else if (state == "inactive") {
      block.state = BlockState::kInactive;
    } else {
      return error(path + ".state", "unknown block state '" + std::string(state) + "'");
    }
    if (auto v = doc_.get(b, "frames")) {
      MEMPLAN_ASSIGN_OR_RETURN(block.stack, stack_of(*v, [&] { return path + ".frames"; }));
    }
    return block;
  }

  Status read_traces(Value traces) {
    MEMPLAN_RETURN_IF_ERROR(expect(traces, Kind::kList, "device_traces"));
    Status status;
    int number = 0;
    doc_.for_each_item(traces, [&](Value trace) {
      if (status.ok()) status = read_trace(trace, number);
      ++number;
    });
    return status;
  }

  Status read_trace(Value trace, int number) {
    const std::string path = "device_traces[" + std::to_string(number) + "]";
    MEMPLAN_RETURN_IF_ERROR(expect(trace, Kind::kList, path));
    if (doc_.length(trace) == 0) return Status::Ok();
    Device& d = device(number);
    d.events.reserve(doc_.length(trace));
    Status status;
    size_t index = 0;
    doc_.for_each_item(trace, [&](Value e) {
      if (status.ok()) status = read_event(e, path, index, d);
      ++index;
    });
    return status;
  }

  // The field path of an event is built only for an error: a snapshot has
  // millions of events.
  Status read_event(Value e, const std::string& trace_path, size_t index, Device& d) {
    auto path = [&](const char* field) { return trace_path + "[" + std::to_string(index) + "]" + field; };
    if (doc_.kind(e) != Kind::kDict) return expect(e, Kind::kDict, path(""));
    Event event;
    std::optional<Value> action, addr, size, frames, stream;
    doc_.for_each_pair(e, [&](Value k, Value v) {
      const auto key = doc_.text(k);
      if (!key) return;
      if (*key == "action") action = v;
      else if (*key == "addr") addr = v;
      else if (*key == "size") size = v;
      else if (*key == "frames") frames = v;
      else if (*key == "stream") stream = v;
      else if (*key == "time_us") {
        if (auto i = doc_.integer(v)) event.time_us = *i;
        else if (auto n = doc_.number(v)) event.time_us = static_cast<int64_t>(*n);
      }
    });
    if (!action) return error(path(""), "no 'action'");
    const auto name = doc_.text(*action);
    if (!name) return text(*action, path(".action")).status();
    if (*name == "alloc") event.action = Action::kAlloc;
    else if (*name == "free_requested") event.action = Action::kFreeRequested;
    else if (*name == "free_completed" || *name == "free") event.action = Action::kFreeCompleted;
    else if (*name == "segment_alloc") event.action = Action::kSegmentAlloc;
    else if (*name == "segment_free") event.action = Action::kSegmentFree;
    else if (*name == "segment_map") event.action = Action::kSegmentMap;
    else if (*name == "segment_unmap") event.action = Action::kSegmentUnmap;
    else if (*name == "snapshot") event.action = Action::kSnapshot;
    else if (*name == "oom") event.action = Action::kOom;
    else {
      ++unknown_actions_[std::string(*name)];
      return Status::Ok();
    }
    if (!addr) return error(path(""), "no 'addr'");
    if (!size) return error(path(""), "no 'size'");
    const auto address = doc_.integer(*addr);
    if (!address || *address < 0) return unsigned_integer(*addr, path(".addr")).status();
    event.address = static_cast<uint64_t>(*address);
    const auto bytes = doc_.integer(*size);
    if (!bytes || *bytes < 0) return unsigned_integer(*size, path(".size")).status();
    event.size = static_cast<uint64_t>(*bytes);
    if (stream) {
      const auto number = doc_.integer(*stream);
      if (!number) return integer(*stream, path(".stream")).status();
      event.stream = *number;
    }
    if (frames) {
      StatusOr<uint32_t> stack = stack_of(*frames, [&] { return path(".frames"); });
      if (!stack.ok()) return stack.status();
      event.stack = *stack;
    }
    d.events.push_back(event);
    return Status::Ok();
  }

  Status read_settings(Value settings) {
    MEMPLAN_RETURN_IF_ERROR(expect(settings, Kind::kDict, "allocator_settings"));
    simulate::AllocatorSettings& s = out_.settings;
    if (auto v = doc_.get(settings, "PYTORCH_CUDA_ALLOC_CONF")) {
      if (auto t = doc_.text(*v)) out_.alloc_conf = std::string(*t);
    }
    if (auto v = doc_.get(settings, "max_split_size")) {
      MEMPLAN_ASSIGN_OR_RETURN(const int64_t bytes, integer(*v, "allocator_settings.max_split_size"));
      // -1 (SIZE_MAX as recorded): unlimited.
      s.max_split_size_mb = bytes > 0 ? static_cast<double>(bytes) / (1 << 20) : 0;
    }
    if (auto v = doc_.get(settings, "garbage_collection_threshold")) {
      if (auto n = doc_.number(*v)) s.garbage_collection_threshold = *n;
    }
    if (auto v = doc_.get(settings, "expandable_segments")) s.expandable_segments = doc_.boolean(*v).value_or(false);
    if (auto v = doc_.get(settings, "roundup_power2_divisions")) {
      // {"1": d, "2": d, ..., "32768": d}: divisions per interval starting at
      // that many MiB, in order.
      std::vector<std::pair<int64_t, uint64_t>> intervals;
      Status status;
      doc_.for_each_pair(*v, [&](Value k, Value d) {
        const auto key = doc_.text(k);
        const auto divisions = doc_.integer(d);
        if (!key || !divisions || *divisions < 0) {
          if (status.ok()) status = error("allocator_settings.roundup_power2_divisions", "not a map of MiB to divisions");
          return;
        }
        intervals.emplace_back(std::atoll(std::string(*key).c_str()), static_cast<uint64_t>(*divisions));
      });
      MEMPLAN_RETURN_IF_ERROR(status);
      std::sort(intervals.begin(), intervals.end());
      bool any = false;
      for (const auto& [mib, divisions] : intervals) any = any || divisions > 1;
      if (any) {
        for (const auto& [mib, divisions] : intervals) s.roundup_power2_divisions.push_back(divisions);
      }
    }
    return Status::Ok();
  }

  Status read_annotations(Value annotations) {
    if (doc_.kind(annotations) != Kind::kList) {
      out_.warnings.push_back("external_annotations is not a list; ignored");
      return Status::Ok();
    }
    doc_.for_each_item(annotations, [&](Value a) {
      if (doc_.kind(a) != Kind::kDict) return;
      Annotation annotation;
      if (auto v = doc_.get(a, "stage")) annotation.start = doc_.text(*v).value_or("START") != "END";
      if (auto v = doc_.get(a, "name")) annotation.name = std::string(doc_.text(*v).value_or(""));
      if (auto v = doc_.get(a, "device")) annotation.device = static_cast<int>(doc_.integer(*v).value_or(0));
      if (auto v = doc_.get(a, "time_us")) annotation.time_us = doc_.integer(*v).value_or(0);
      out_.annotations.push_back(std::move(annotation));
    });
    return Status::Ok();
  }

  struct StackHash {
    size_t operator()(const std::vector<uint32_t>& s) const {
      uint64_t h = s.size();
      for (uint32_t f : s) h = (h ^ f) * 0x100000001b3ull;
      return h;
    }
  };

  const pickle::Document& doc_;
  std::string_view source_;
  Snapshot out_;
  std::map<int, Device> devices_;
  std::unordered_map<std::string, uint32_t> string_ids_;
  std::unordered_map<uint64_t, uint32_t> frame_ids_;
  std::unordered_map<uint64_t, uint32_t> stack_ids_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, StackHash> stacks_by_frames_;
  std::map<std::string, size_t> unknown_actions_;
};

}  // namespace

std::string Snapshot::describe_stack(uint32_t stack) const {
  if (stack >= stacks.size()) return "";
  const std::vector<uint32_t>& s = stacks[stack];
  auto is_python = [&](const Frame& f) {
    const std::string& file = strings[f.filename];
    return file.size() > 3 && file.compare(file.size() - 3, 3, ".py") == 0;
  };
  auto is_torch = [&](const Frame& f) {
    const std::string& file = strings[f.filename];
    return file.find("/torch/") != std::string::npos || file.find("/site-packages/") != std::string::npos;
  };
  const Frame* chosen = nullptr;
  for (uint32_t id : s) {
    if (is_python(frames[id]) && !is_torch(frames[id])) { chosen = &frames[id]; break; }
  }
  for (uint32_t id = 0; chosen == nullptr && id < s.size(); ++id) {
    if (is_python(frames[s[id]])) chosen = &frames[s[id]];
  }
  for (uint32_t id = 0; chosen == nullptr && id < s.size(); ++id) {
    if (frames[s[id]].line > 0) chosen = &frames[s[id]];
  }
  if (chosen == nullptr) return "";
  return std::string(last_components(strings[chosen->filename], 2)) + ":" + std::to_string(chosen->line) + " " +
         strings[chosen->name];
}

StatusOr<Snapshot> snapshot_from_pickle(const pickle::Document& document, std::string_view source) {
  return Converter(document, source).run();
}

StatusOr<Snapshot> read_snapshot(const std::string& path) {
  // _dump_snapshot writes protocol 2 or later, which opens with PROTO: say
  // "not a snapshot" of anything else (a CSV would otherwise be read as
  // protocol 0 opcodes and refused for the first letter that is one).
  if (std::FILE* file = std::fopen(path.c_str(), "rb")) {
    const int first = std::fgetc(file);
    std::fclose(file);
    if (first != 0x80) {
      return InvalidArgument(path + ": offset 0: not a pickle of protocol 2 or later (snapshots begin with the PROTO opcode 0x80; this file " +
                             (first == EOF ? std::string("is empty)") : "begins with byte " + hex(static_cast<uint64_t>(first)) + ")"));
    }
  }
  MEMPLAN_ASSIGN_OR_RETURN(pickle::Document document, pickle::read_pickle_file(path));
  MEMPLAN_ASSIGN_OR_RETURN(Snapshot snapshot, snapshot_from_pickle(document, path));
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file != nullptr) {
    if (std::fseek(file, 0, SEEK_END) == 0) snapshot.file_bytes = static_cast<uint64_t>(std::max(0L, std::ftell(file)));
    std::fclose(file);
  }
  return snapshot;
}

// ---- reconstruction ----------------------------------------------------------------------

namespace {

uint64_t round_block(uint64_t bytes) {
  return bytes == 0 ? 0 : (bytes + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment;
}

// Keeps the first few warnings of one kind and counts the rest.
class WarningList {
 public:
  void add(const std::string& kind, const std::string& example) {
    auto& [count, first] = kinds_[kind];
    if (count++ == 0) first = example;
  }
  void emit(std::vector<std::string>& out) const {
    for (const auto& [kind, entry] : kinds_) {
      out.push_back(kind + " (" + std::to_string(entry.first) + "x; first: " + entry.second + ")");
    }
  }

 private:
  std::map<std::string, std::pair<size_t, std::string>> kinds_;
};

bool is_segment_event(Action a) {
  return a == Action::kSegmentAlloc || a == Action::kSegmentFree || a == Action::kSegmentMap ||
         a == Action::kSegmentUnmap;
}

}  // namespace

Window reconstruct_window(const Snapshot& snapshot, const Device& device) {
  (void)snapshot;
  Window w;
  w.device = device.device;
  const std::vector<Event>& events = device.events;
  WarningList warnings;

  // 1. Pair allocs and frees by address, in order. Blocks are found in
  //    discovery order here and put in their final order at step 2.
  std::vector<WindowBlock> found;
  std::vector<uint64_t> block_bytes;  // the block's size in its segment (dump size, else rounded)
  std::vector<int64_t> block_of_event(events.size(), -1);
  std::unordered_map<uint64_t, size_t> live;
  int64_t tick = 0;
  w.tick_of_event.resize(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    switch (e.action) {
      case Action::kAlloc: {
        ++tick;
        ++w.alloc_events;
        if (auto it = live.find(e.address); it != live.end()) {
          warnings.add("alloc of an address already allocated (the earlier block is taken as freed there)",
                       "event " + std::to_string(i) + " at " + hex(e.address));
          found[it->second].free_tick = tick;
          found[it->second].free_event = static_cast<int64_t>(i);
          live.erase(it);
        }
        found.push_back({.address = e.address, .size = e.size, .stream = e.stream, .stack = e.stack,
                         .alloc_event = static_cast<int64_t>(i), .alloc_tick = tick});
        block_bytes.push_back(round_block(e.size));
        live[e.address] = found.size() - 1;
        block_of_event[i] = static_cast<int64_t>(found.size() - 1);
        break;
      }
      case Action::kFreeRequested:
      case Action::kFreeCompleted: {
        const bool completed = e.action == Action::kFreeCompleted;
        if (completed) {
          ++tick;
          ++w.free_events;
        }
        auto it = live.find(e.address);
        size_t index;
        if (it == live.end()) {
          // Allocated before the window.
          found.push_back({.address = e.address, .size = e.size, .stream = e.stream, .alloc_tick = 0});
          block_bytes.push_back(round_block(e.size));
          index = found.size() - 1;
          if (!completed) live[e.address] = index;
        } else {
          index = it->second;
          if (completed) live.erase(it);
        }
        if (completed) {
          found[index].free_tick = tick;
          found[index].free_event = static_cast<int64_t>(i);
          block_of_event[i] = static_cast<int64_t>(index);
        }
        break;
      }
      default:
        if (is_segment_event(e.action)) ++w.segment_events;
        break;
    }
    w.tick_of_event[i] = tick;
  }
  w.ticks = tick;
  const int64_t end_tick = tick + 1;

  // The dump-time state: allocated blocks the window did not leave allocated
  // were allocated before it and never touched; blocks it left allocated that
  // the dump does not hold contradict it.
  std::unordered_map<uint64_t, const Block*> dump_allocated;
  for (const Segment& s : device.segments) {
    for (const Block& b : s.blocks) {
      if (b.state != BlockState::kInactive) dump_allocated.emplace(b.address, &b);
    }
  }
  for (const auto& [address, block] : dump_allocated) {
    if (auto it = live.find(address); it != live.end()) {
      block_bytes[it->second] = block->size;
      continue;
    }
    found.push_back({.address = address, .size = block->requested_size != 0 ? block->requested_size : block->size,
                     .stack = block->stack, .alloc_tick = 0});
    block_bytes.push_back(block->size);
    live[address] = found.size() - 1;
  }
  if (!device.segments.empty() || !device.events.empty()) {
    for (const auto& [address, index] : live) {
      if (dump_allocated.count(address) == 0) {
        warnings.add("end state contradicts the events: a block the window left allocated is not allocated at dump time",
                     hex(address) + (found[index].alloc_event >= 0
                                         ? " (alloc event " + std::to_string(found[index].alloc_event) + ")"
                                         : ""));
      }
    }
  }
  for (const auto& [address, index] : live) {
    found[index].free_tick = end_tick;
    found[index].free_event = -1;
  }
  // 2. Order: blocks from before the window first (by address), then the
  //    window's in alloc order.
  std::vector<size_t> order(found.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool before_a = found[a].alloc_event < 0, before_b = found[b].alloc_event < 0;
    if (before_a != before_b) return before_a;
    if (before_a) return found[a].address < found[b].address;
    return found[a].alloc_event < found[b].alloc_event;
  });
  std::vector<size_t> position(found.size());
  w.blocks.reserve(found.size());
  std::vector<uint64_t> sizes_in_segment(found.size());
  for (size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = i;
    w.blocks.push_back(found[order[i]]);
    sizes_in_segment[i] = block_bytes[order[i]];
  }
  for (int64_t& b : block_of_event) {
    if (b >= 0) b = static_cast<int64_t>(position[static_cast<size_t>(b)]);
  }

  // 3. Reserved bytes: the dump's segments with the window's segment events undone.
  std::map<uint64_t, simulate::StartSegment> segments;  // by address
  for (const Segment& s : device.segments) {
    w.end_reserved += s.total_size;
    segments[s.address] = {.address = s.address, .size = s.total_size, .stream = s.stream,
                           .small_pool = s.small_pool, .expandable = s.expandable};
  }
  auto containing = [&](uint64_t address) -> simulate::StartSegment* {
    auto it = segments.upper_bound(address);
    if (it == segments.begin()) return nullptr;
    --it;
    return &it->second;
  };
  int64_t reserved = static_cast<int64_t>(w.end_reserved);
  for (size_t i = events.size(); i-- > 0;) {
    const Event& e = events[i];
    switch (e.action) {
      case Action::kSegmentAlloc:
        reserved -= static_cast<int64_t>(e.size);
        if (segments.erase(e.address) == 0) {
          warnings.add("segment_alloc of a segment not held at dump time nor freed later",
                       "event " + std::to_string(i) + " at " + hex(e.address));
        }
        break;
      case Action::kSegmentFree:
        reserved += static_cast<int64_t>(e.size);
        segments[e.address] = {.address = e.address, .size = e.size, .stream = e.stream,
                               .small_pool = e.size == kSmallSegmentBytes};
        break;
      case Action::kSegmentMap:
      case Action::kSegmentUnmap: {
        const bool map = e.action == Action::kSegmentMap;
        reserved += map ? -static_cast<int64_t>(e.size) : static_cast<int64_t>(e.size);
        simulate::StartSegment* s = containing(e.address);
        if (s == nullptr) {
          if (!map) segments[e.address] = {.address = e.address, .size = e.size, .stream = e.stream, .expandable = true};
          else warnings.add("segment_map outside every segment", "event " + std::to_string(i));
        } else if (map) {
          s->size = s->size >= e.size ? s->size - e.size : 0;
        } else {
          s->size += e.size;
        }
        break;
      }
      default: break;
    }
  }
  if (reserved < 0) {
    warnings.add("the segment events undo more than the dump-time segments hold (start reserved taken as 0)",
                 std::to_string(reserved) + " bytes");
    reserved = 0;
  }
  w.start_reserved = static_cast<uint64_t>(reserved);

  // The start segments, each tiled by the blocks allocated before the window
  // and the free gaps between them.
  for (auto it = segments.begin(); it != segments.end();) {
    if (it->second.size == 0) it = segments.erase(it); else ++it;
  }
  std::vector<size_t> outside;
  std::map<uint64_t, std::vector<size_t>> blocks_of_segment;
  for (size_t i = 0; i < w.blocks.size(); ++i) {
    if (w.blocks[i].alloc_tick != 0) continue;
    w.start_allocated += w.blocks[i].size;
    simulate::StartSegment* s = containing(w.blocks[i].address);
    if (s == nullptr || w.blocks[i].address >= s->address + s->size) {
      outside.push_back(i);
      continue;
    }
    blocks_of_segment[s->address].push_back(i);
  }
  if (!outside.empty()) {
    warnings.add("blocks allocated before the window lie in no segment held then",
                 hex(w.blocks[outside.front()].address));
  }
  for (auto& [address, s] : segments) {
    uint64_t cursor = 0;
    for (size_t i : blocks_of_segment[address]) {
      const uint64_t offset = w.blocks[i].address - s.address;
      if (offset < cursor) {
        warnings.add("blocks allocated before the window overlap", hex(w.blocks[i].address));
        continue;
      }
      if (offset > cursor) s.blocks.push_back({.offset = cursor, .size = offset - cursor});
      const uint64_t size = std::min(std::max(sizes_in_segment[i], w.blocks[i].size), s.size - offset);
      s.blocks.push_back({.offset = offset, .size = size, .allocated = true, .requested_size = w.blocks[i].size});
      cursor = offset + size;
    }
    if (!s.blocks.empty() && cursor < s.size) s.blocks.push_back({.offset = cursor, .size = s.size - cursor});
    w.start_segments.push_back(s);
  }

  // 4. Forward replay: the curves and their peaks.
  uint64_t allocated = w.start_allocated;
  reserved = static_cast<int64_t>(w.start_reserved);
  w.peak_allocated = {.bytes = allocated, .event = -1, .time_us = events.empty() ? 0 : events.front().time_us};
  w.peak_reserved = {.bytes = w.start_reserved, .event = -1, .time_us = w.peak_allocated.time_us};
  const size_t bucket = std::max<size_t>(1, (events.size() + kUsageSamples - 1) / kUsageSamples);
  w.usage.reserve(std::min(events.size(), kUsageSamples));
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    switch (e.action) {
      case Action::kAlloc: allocated += e.size; break;
      case Action::kFreeCompleted:
        if (block_of_event[i] >= 0) allocated -= std::min(allocated, w.blocks[static_cast<size_t>(block_of_event[i])].size);
        break;
      case Action::kSegmentAlloc:
      case Action::kSegmentMap: reserved += static_cast<int64_t>(e.size); break;
      case Action::kSegmentFree:
      case Action::kSegmentUnmap: reserved = std::max<int64_t>(0, reserved - static_cast<int64_t>(e.size)); break;
      case Action::kOom: {
        OomEvent oom{.event = static_cast<int64_t>(i), .time_us = e.time_us, .requested = e.size,
                     .device_free = e.address, .allocated = allocated, .reserved = static_cast<uint64_t>(reserved)};
        w.ooms.push_back(std::move(oom));
        break;
      }
      default: break;
    }
    if (allocated > w.peak_allocated.bytes) w.peak_allocated = {allocated, static_cast<int64_t>(i), e.time_us};
    if (static_cast<uint64_t>(reserved) > w.peak_reserved.bytes) {
      w.peak_reserved = {static_cast<uint64_t>(reserved), static_cast<int64_t>(i), e.time_us};
    }
    // The curves, each sample the most of its run of events.
    const size_t sample = i / bucket;
    if (sample >= w.usage.size()) w.usage.push_back({.first_event = i});
    w.usage.back().allocated = std::max(w.usage.back().allocated, allocated);
    w.usage.back().reserved = std::max(w.usage.back().reserved, static_cast<uint64_t>(reserved));
  }
  w.end_allocated = allocated;
  if (static_cast<uint64_t>(reserved) != w.end_reserved) {
    warnings.add("replayed reserved bytes differ from the dump-time segments", std::to_string(reserved) + " vs " +
                                                                                   std::to_string(w.end_reserved));
  }

  auto live_at = [&](int64_t t, size_t limit) {
    std::vector<size_t> out;
    for (size_t i = 0; i < w.blocks.size(); ++i) {
      if (w.blocks[i].alloc_tick <= t && t < w.blocks[i].free_tick) out.push_back(i);
    }
    std::stable_sort(out.begin(), out.end(), [&](size_t a, size_t b) { return w.blocks[a].size > w.blocks[b].size; });
    if (out.size() > limit) out.resize(limit);
    return out;
  };
  auto tick_after = [&](int64_t event) { return event < 0 ? 0 : w.tick_of_event[static_cast<size_t>(event)]; };
  w.live_at_peak = live_at(tick_after(w.peak_allocated.event), SIZE_MAX);
  for (size_t k = 0; k < w.ooms.size() && k < 100; ++k) w.ooms[k].largest_live = live_at(tick_after(w.ooms[k].event), 10);

  // 5. Segments held at the peak of reserved bytes and what was allocated in each.
  {
    std::map<uint64_t, SegmentUse> held;
    for (const simulate::StartSegment& s : w.start_segments) {
      held[s.address] = {.address = s.address, .size = s.size, .stream = s.stream, .small_pool = s.small_pool};
    }
    for (int64_t i = 0; i <= w.peak_reserved.event; ++i) {
      const Event& e = events[static_cast<size_t>(i)];
      if (e.action == Action::kSegmentAlloc) {
        held[e.address] = {.address = e.address, .size = e.size, .stream = e.stream,
                           .small_pool = e.size == kSmallSegmentBytes};
      } else if (e.action == Action::kSegmentFree) {
        held.erase(e.address);
      } else if (e.action == Action::kSegmentMap || e.action == Action::kSegmentUnmap) {
        auto it = held.upper_bound(e.address);
        if (it == held.begin()) {
          if (e.action == Action::kSegmentMap) held[e.address] = {.address = e.address, .size = e.size, .stream = e.stream};
          continue;
        }
        --it;
        if (e.action == Action::kSegmentMap) it->second.size += e.size;
        else it->second.size -= std::min(it->second.size, e.size);
      }
    }
    const int64_t t = tick_after(w.peak_reserved.event);
    for (const WindowBlock& b : w.blocks) {
      if (!(b.alloc_tick <= t && t < b.free_tick)) continue;
      auto it = held.upper_bound(b.address);
      if (it == held.begin()) continue;
      --it;
      if (b.address < it->second.address + it->second.size) it->second.allocated += b.size;
    }
    for (auto& [address, use] : held) {
      if (use.size > 0) w.segments_at_peak.push_back(use);
    }
  }
  warnings.emit(w.warnings);
  return w;
}

// ---- extraction --------------------------------------------------------------------------

namespace {

Buffer buffer_of(const WindowBlock& b, size_t index, int64_t lower, int64_t upper) {
  return Buffer{.id = std::to_string(index) + "@" + hex(b.address),
                .lower = lower,
                .upper = upper,
                .size = static_cast<int64_t>(round_block(b.size)),
                .alignment = kBlockAlignment};
}

}  // namespace

Problem window_problem(const Window& window) {
  Problem problem;
  problem.alignment = kBlockAlignment;
  problem.buffers.reserve(window.blocks.size());
  for (size_t i = 0; i < window.blocks.size(); ++i) {
    const WindowBlock& b = window.blocks[i];
    problem.buffers.push_back(buffer_of(b, i, b.alloc_tick, b.free_tick));
  }
  return problem;
}

Problem iteration_problem(const Window& window, const Iteration& iteration) {
  Problem problem;
  problem.alignment = kBlockAlignment;
  if (iteration.end_event <= iteration.first_event || iteration.end_event > window.tick_of_event.size()) return problem;
  const int64_t t0 = iteration.first_event == 0 ? 0 : window.tick_of_event[iteration.first_event - 1];
  const int64_t t1 = window.tick_of_event[iteration.end_event - 1];
  for (size_t i = 0; i < window.blocks.size(); ++i) {
    const WindowBlock& b = window.blocks[i];
    if (b.alloc_tick > t1 || b.free_tick <= t0) continue;
    const int64_t lower = std::max(b.alloc_tick, t0) - t0;
    const int64_t upper = std::min(b.free_tick, t1 + 1) - t0;
    if (lower < upper) problem.buffers.push_back(buffer_of(b, i, lower, upper));
  }
  return problem;
}

Iterations find_iterations(const Snapshot& snapshot, const Device& device, const Window& window) {
  Iterations result;
  const std::vector<Event>& events = device.events;
  auto has_alloc = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      if (events[i].action == Action::kAlloc) return true;
    }
    return false;
  };
  auto spans_between = [&](const std::vector<size_t>& boundaries, bool skip_marker) {
    std::vector<Iteration> spans;
    for (size_t k = 0; k + 1 < boundaries.size(); ++k) {
      const size_t from = boundaries[k] + (skip_marker ? 1 : 0);
      if (from < boundaries[k + 1] && has_alloc(from, boundaries[k + 1])) spans.push_back({from, boundaries[k + 1]});
    }
    return spans;
  };

  // 1. `snapshot` markers.
  std::vector<size_t> markers;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].action == Action::kSnapshot) markers.push_back(i);
  }
  if (markers.size() >= 2) {
    result.spans = spans_between(markers, true);
    if (!result.spans.empty()) {
      result.found_by = "snapshot markers";
      return result;
    }
  }

  // 2. ProfilerStep annotations, placed by time.
  std::vector<size_t> steps;
  for (const Annotation& a : snapshot.annotations) {
    if (!a.start || a.device != device.device || !a.name.starts_with("ProfilerStep#")) continue;
    const auto at = std::lower_bound(events.begin(), events.end(), a.time_us,
                                     [](const Event& e, int64_t t) { return e.time_us < t; });
    steps.push_back(static_cast<size_t>(at - events.begin()));
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  if (steps.size() >= 2) {
    result.spans = spans_between(steps, false);
    if (!result.spans.empty()) {
      result.found_by = "ProfilerStep annotations";
      return result;
    }
  }

  // 3. Repetition: the longest suffix of the alloc sequence that is periodic
  //    with at least two periods (prefix function of the reversed sequence).
  std::vector<size_t> alloc_at;
  std::vector<uint64_t> signature;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].action != Action::kAlloc) continue;
    alloc_at.push_back(i);
    signature.push_back(events[i].size * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(events[i].stream));
  }
  const size_t n = signature.size();
  if (n < 4) return result;
  std::reverse(signature.begin(), signature.end());
  std::vector<uint32_t> pi(n, 0);
  size_t best_length = 0, best_period = 0;
  for (size_t i = 1; i < n; ++i) {
    uint32_t k = pi[i - 1];
    while (k > 0 && signature[i] != signature[k]) k = pi[k - 1];
    if (signature[i] == signature[k]) ++k;
    pi[i] = k;
    const size_t length = i + 1, period = length - k;
    if (period >= 2 && length >= 2 * period && length > best_length) {
      best_length = length;
      best_period = period;
    }
  }
  if (best_period == 0) return result;
  // Cut where the fewest bytes are allocated: replay to the region's first period.
  const size_t region = n - best_length;
  std::vector<uint64_t> allocated_before(events.size() + 1, 0);
  {
    uint64_t allocated = window.start_allocated;
    std::unordered_map<uint64_t, uint64_t> sizes;
    for (size_t i = 0; i < events.size(); ++i) {
      allocated_before[i] = allocated;
      const Event& e = events[i];
      if (e.action == Action::kAlloc) {
        allocated += e.size;
        sizes[e.address] = e.size;
      } else if (e.action == Action::kFreeCompleted) {
        auto it = sizes.find(e.address);
        const uint64_t size = it != sizes.end() ? it->second : e.size;
        allocated -= std::min(allocated, size);
        if (it != sizes.end()) sizes.erase(it);
      }
    }
  }
  size_t phase = 0;
  for (size_t p = 1; p < best_period; ++p) {
    if (allocated_before[alloc_at[region + p]] < allocated_before[alloc_at[region + phase]]) phase = p;
  }
  for (size_t a = region + phase; a + best_period <= n; a += best_period) {
    const size_t end = a + best_period < n ? alloc_at[a + best_period] : events.size();
    result.spans.push_back({alloc_at[a], end});
  }
  if (result.spans.size() >= 2) {
    result.found_by = "repetition";
    result.period_allocs = best_period;
  } else {
    result.spans.clear();
  }
  return result;
}

simulate::DeviceTrace device_trace(const Window& window, const Device& device) {
  simulate::DeviceTrace trace;
  trace.device = window.device;
  trace.start = window.start_segments;
  std::unordered_set<uint64_t> live;
  for (const simulate::StartSegment& s : trace.start) {
    for (const simulate::StartBlock& b : s.blocks) {
      if (b.allocated) live.insert(s.address + b.offset);
    }
  }
  using Kind = simulate::Request::Kind;
  bool in_release = false;
  trace.requests.reserve(window.alloc_events + window.free_events);
  for (const Event& e : device.events) {
    const bool release = e.action == Action::kSegmentFree || e.action == Action::kSegmentUnmap;
    if (release && !in_release) trace.requests.push_back({.kind = Kind::kEmptyCache, .stream = e.stream});
    in_release = release;
    if (e.action == Action::kAlloc) {
      if (live.count(e.address) != 0) trace.requests.push_back({.kind = Kind::kFree, .id = e.address, .stream = e.stream});
      live.insert(e.address);
      trace.requests.push_back({.kind = Kind::kAlloc, .id = e.address, .size = e.size, .stream = e.stream});
    } else if (e.action == Action::kFreeCompleted) {
      if (live.erase(e.address) != 0) trace.requests.push_back({.kind = Kind::kFree, .id = e.address, .stream = e.stream});
    }
  }
  return trace;
}

}  // namespace memplan::snapshot
