// snapshot_reader.cc — PyTorch memory snapshots (see snapshot.h): the pickle
// tree to the snapshot model (read_snapshot, snapshot_from_pickle), and
// Snapshot::find_device. Attribution (describe_stack) is in
// snapshot_attribution.cc.
#include "memplan/snapshot.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "io/snapshot_numbers.h"

namespace memplan::snapshot {

using pickle::Kind;
using pickle::Value;

std::string_view action_name(Action action) {
  switch (action) {
    case Action::kAlloc:
      return "alloc";
    case Action::kFreeRequested:
      return "free_requested";
    case Action::kFreeCompleted:
      return "free_completed";
    case Action::kSegmentAlloc:
      return "segment_alloc";
    case Action::kSegmentFree:
      return "segment_free";
    case Action::kSegmentMap:
      return "segment_map";
    case Action::kSegmentUnmap:
      return "segment_unmap";
    case Action::kSnapshot:
      return "snapshot";
    case Action::kOom:
      return "oom";
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
    if (auto annotations = doc_.get(root, "external_annotations"))
      MEMPLAN_RETURN_IF_ERROR(read_annotations(*annotations));
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
        if (i.ok())
          number = *i;
        else
          status = i.status();
      } else if (*key == "address") {
        StatusOr<uint64_t> i = unsigned_integer(v, field);
        if (i.ok())
          segment.address = *i;
        else
          status = i.status();
      } else if (*key == "total_size") {
        StatusOr<uint64_t> i = unsigned_integer(v, field);
        if (i.ok())
          segment.total_size = *i;
        else
          status = i.status();
      } else if (*key == "stream") {
        StatusOr<int64_t> i = integer(v, field);
        if (i.ok())
          segment.stream = *i;
        else
          status = i.status();
      } else if (*key == "segment_type") {
        StatusOr<std::string_view> t = text(v, field);
        if (t.ok())
          segment.small_pool = *t == "small";
        else
          status = t.status();
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
        if (block.ok())
          segment.blocks.push_back(*block);
        else
          status = block.status();
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
      if (*key == "action")
        action = v;
      else if (*key == "addr")
        addr = v;
      else if (*key == "size")
        size = v;
      else if (*key == "frames")
        frames = v;
      else if (*key == "stream")
        stream = v;
      else if (*key == "time_us") {
        if (auto i = doc_.integer(v))
          event.time_us = *i;
        else if (auto n = doc_.number(v))
          event.time_us = static_cast<int64_t>(*n);
      }
    });
    if (!action) return error(path(""), "no 'action'");
    const auto name = doc_.text(*action);
    if (!name) return text(*action, path(".action")).status();
    if (*name == "alloc")
      event.action = Action::kAlloc;
    else if (*name == "free_requested")
      event.action = Action::kFreeRequested;
    else if (*name == "free_completed" || *name == "free")
      event.action = Action::kFreeCompleted;
    else if (*name == "segment_alloc")
      event.action = Action::kSegmentAlloc;
    else if (*name == "segment_free")
      event.action = Action::kSegmentFree;
    else if (*name == "segment_map")
      event.action = Action::kSegmentMap;
    else if (*name == "segment_unmap")
      event.action = Action::kSegmentUnmap;
    else if (*name == "snapshot")
      event.action = Action::kSnapshot;
    else if (*name == "oom")
      event.action = Action::kOom;
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
          if (status.ok())
            status = error("allocator_settings.roundup_power2_divisions", "not a map of MiB to divisions");
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
      return InvalidArgument(
          path +
          ": offset 0: not a pickle of protocol 2 or later (snapshots begin with the PROTO opcode 0x80; this file " +
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

}  // namespace memplan::snapshot
