// torch_profile.cc — reads PyTorch profiler chrome traces (format and
// semantics in memplan/torch_profile.h) and turns a step into a problem.
//
// Reading:
//   1. Parse the JSON (nlohmann; its exceptions stay in this file).
//   2. One pass over traceEvents: "[memory]" events are checked and kept,
//      "ProfilerStep#N" spans become steps, other operator spans are kept per
//      (pid, tid) for attribution.
//   3. Attribution, per thread: spans sorted by start (longer first), memory
//      events by time; a sweep keeps the stack of spans open at the current
//      time, whose top is the innermost.
// Cost: O(n log n) time for the sorts, O(n) memory beyond the parsed document.
#include "memplan/torch_profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "memplan/csv.h"

namespace memplan {
namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxBufferBytes = int64_t{1} << 62;
constexpr std::string_view kStepPrefix = "ProfilerStep#";

struct OperatorSpan {
  double begin = 0;
  double end = 0;
  uint32_t op = 0;
};

struct ThreadEvents {
  std::vector<OperatorSpan> spans;
  std::vector<size_t> memory;  // indices into TorchProfile::events
};

class EventError {
 public:
  EventError(std::string_view source, size_t index)
      : prefix_(std::string(source) + ": traceEvents[" + std::to_string(index) + "]: ") {}
  Status event(std::string_view what) const { return InvalidArgument(prefix_ + std::string(what)); }
  Status field(std::string_view name, std::string_view what) const {
    return InvalidArgument(prefix_ + "field '" + std::string(name) + "': " + std::string(what));
  }

 private:
  std::string prefix_;
};

// A finite number (integer or floating point) at `key` of `object`.
std::optional<double> number_at(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  const double value = it->get<double>();
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

// An integer that fits int64 at `key`.
std::optional<int64_t> integer_at(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  if (it->is_number_unsigned()) {
    const auto value = it->get<uint64_t>();
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(value);
  }
  if (it->is_number_integer()) return it->get<int64_t>();
  return std::nullopt;
}

// The thread an event ran on: pid and tid as they are written (numbers or strings).
std::string thread_key(const Json& event) {
  std::string key;
  for (const char* field : {"pid", "tid"}) {
    const auto it = event.find(field);
    key += it == event.end() ? std::string("-") : it->dump();
    key += '/';
  }
  return key;
}

bool is_operator_category(const Json& event) {
  const auto it = event.find("cat");
  if (it == event.end()) return true;
  if (!it->is_string()) return false;
  const auto& cat = it->get_ref<const std::string&>();
  return cat == "cpu_op" || cat == "user_annotation" || cat == "Operator";
}

Status read_memory_event(const Json& event, const EventError& error, ProfileMemoryEvent* out) {
  const std::optional<double> ts = number_at(event, "ts");
  if (!ts) return error.field("ts", "missing or not a finite number");
  const auto args = event.find("args");
  if (args == event.end() || !args->is_object()) return error.field("args", "missing or not an object");
  const std::optional<int64_t> bytes = integer_at(*args, "Bytes");
  if (!bytes) return error.field("args.Bytes", "missing or not an integer in int64");
  if (*bytes == 0) return error.field("args.Bytes", "0 (neither an allocation nor a free)");
  if (*bytes > kMaxBufferBytes || *bytes < -kMaxBufferBytes) return error.field("args.Bytes", "beyond 2^62 bytes");
  const auto addr = args->find("Addr");
  if (addr == args->end() ||
      !(addr->is_number_unsigned() || (addr->is_number_integer() && addr->get<int64_t>() >= 0))) {
    return error.field("args.Addr", "missing or not a non-negative integer");
  }
  out->time_us = *ts;
  out->bytes = *bytes;
  out->address = addr->get<uint64_t>();
  if (args->contains("Device Type")) {
    const std::optional<int64_t> type = integer_at(*args, "Device Type");
    if (!type) return error.field("args.Device Type", "not an integer");
    out->device_type = *type;
  }
  if (args->contains("Device Id")) {
    const std::optional<int64_t> id = integer_at(*args, "Device Id");
    if (!id) return error.field("args.Device Id", "not an integer");
    out->device_id = *id;
  }
  return Status::Ok();
}

// The step number of a "ProfilerStep#N" name: N, decimal, fits int64.
std::optional<int64_t> step_number(std::string_view name) {
  name.remove_prefix(kStepPrefix.size());
  if (name.empty() || name.size() > 18) return std::nullopt;
  int64_t n = 0;
  for (const char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

void attribute(ThreadEvents& thread, TorchProfile& profile) {
  std::sort(thread.spans.begin(), thread.spans.end(), [](const OperatorSpan& a, const OperatorSpan& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    return a.end > b.end;
  });
  std::stable_sort(thread.memory.begin(), thread.memory.end(),
                   [&](size_t a, size_t b) { return profile.events[a].time_us < profile.events[b].time_us; });
  std::vector<const OperatorSpan*> open;
  size_t next = 0;
  for (const size_t m : thread.memory) {
    ProfileMemoryEvent& e = profile.events[m];
    for (; next < thread.spans.size() && thread.spans[next].begin <= e.time_us; ++next) {
      const OperatorSpan& span = thread.spans[next];
      while (!open.empty() && open.back()->end < span.begin) open.pop_back();
      open.push_back(&span);
    }
    while (!open.empty() && open.back()->end < e.time_us) open.pop_back();
    if (!open.empty()) e.op = open.back()->op;
  }
}

}  // namespace

StatusOr<TorchProfile> parse_torch_profile(std::string_view text, std::string_view source) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return InvalidArgument(std::string(source) + ": not valid JSON at byte " + std::to_string(e.byte) + "");
  } catch (const std::exception& e) {
    return InvalidArgument(std::string(source) + ": not valid JSON (" + e.what() + ")");
  }
  const Json* events = &doc;
  if (doc.is_object()) {
    const auto it = doc.find("traceEvents");
    if (it == doc.end())
      return InvalidArgument(std::string(source) + ": a JSON object without \"traceEvents\": not a chrome trace");
    events = &*it;
  }
  if (!events->is_array()) return InvalidArgument(std::string(source) + ": \"traceEvents\" is not an array");

  TorchProfile profile;
  profile.trace_events = events->size();
  std::unordered_map<std::string, uint32_t> operator_ids;
  std::unordered_map<std::string, ThreadEvents> threads;
  std::map<int64_t, size_t> step_index;  // step number -> traceEvents index
  for (size_t i = 0; i < events->size(); ++i) {
    const Json& event = (*events)[i];
    const EventError error(source, i);
    if (!event.is_object()) return error.event("not an object");
    const auto name_it = event.find("name");
    if (name_it == event.end() || !name_it->is_string()) continue;  // not an event this reader uses
    const auto& name = name_it->get_ref<const std::string&>();
    if (name == "[memory]") {
      ProfileMemoryEvent memory;
      MEMPLAN_RETURN_IF_ERROR(read_memory_event(event, error, &memory));
      threads[thread_key(event)].memory.push_back(profile.events.size());
      profile.events.push_back(memory);
      continue;
    }
    const auto ph = event.find("ph");
    if (ph == event.end() || *ph != "X") continue;
    const std::optional<double> ts = number_at(event, "ts");
    const std::optional<double> dur = number_at(event, "dur");
    // Kineto repeats each ProfilerStep on the GPU's timeline (category
    // gpu_user_annotation): only the CPU's spans count.
    if (!is_operator_category(event)) continue;
    const bool is_step = name.starts_with(kStepPrefix);
    if (!ts) return error.field("ts", "missing or not a finite number");
    if (!dur || *dur < 0) return error.field("dur", "missing, negative or not a finite number");
    if (is_step) {
      const std::optional<int64_t> number = step_number(name);
      if (!number) return error.field("name", "\"" + name + "\" is not ProfilerStep# and a step number");
      const auto [it, inserted] = step_index.emplace(*number, i);
      if (!inserted) {
        return error.field("name", "step " + std::to_string(*number) + " again (first at traceEvents[" +
                                       std::to_string(it->second) + "])");
      }
      profile.steps.push_back({.number = *number, .begin_us = *ts, .end_us = *ts + *dur});
      continue;
    }
    const auto [id, inserted] = operator_ids.try_emplace(name, static_cast<uint32_t>(profile.operators.size()));
    if (inserted) profile.operators.push_back(name);
    threads[thread_key(event)].spans.push_back({.begin = *ts, .end = *ts + *dur, .op = id->second});
  }
  if (profile.events.empty()) {
    return InvalidArgument(
        std::string(source) + ": no \"[memory]\" events in " + std::to_string(profile.trace_events) +
        " trace events (record with torch.profiler.profile(profile_memory=True); a PyTorch built without "
        "Kineto exports none: docs/formats.md)");
  }
  for (auto& [key, thread] : threads) attribute(thread, profile);

  // Time order, file order for equal times; the threads' indices move with it.
  std::vector<size_t> order(profile.events.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return profile.events[a].time_us < profile.events[b].time_us; });
  std::vector<ProfileMemoryEvent> sorted;
  sorted.reserve(order.size());
  for (const size_t i : order) sorted.push_back(profile.events[i]);
  profile.events = std::move(sorted);
  std::sort(profile.steps.begin(), profile.steps.end(),
            [](const ProfileStep& a, const ProfileStep& b) { return a.number < b.number; });
  return profile;
}

StatusOr<TorchProfile> read_torch_profile(const std::string& path) {
  MEMPLAN_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));
  return parse_torch_profile(text, path);
}

std::vector<int64_t> profile_step_numbers(const TorchProfile& profile) {
  if (profile.steps.empty()) return {0};
  std::vector<int64_t> numbers;
  for (const ProfileStep& s : profile.steps) numbers.push_back(s.number);
  return numbers;
}

StatusOr<ProfileExtraction> extract_profile_step(const TorchProfile& profile, int64_t step, uint64_t min_size,
                                                 int64_t alignment) {
  if (!is_power_of_two(alignment)) {
    return InvalidArgument("alignment " + std::to_string(alignment) + " is not a power of two");
  }
  ProfileExtraction result;
  result.step = step;
  double begin = -INFINITY;
  double end = INFINITY;
  if (profile.steps.empty()) {
    if (step != 0)
      return InvalidArgument("the profile has no ProfilerStep spans: its only iteration is 0, not " +
                             std::to_string(step));
    result.whole_trace = true;
  } else {
    const auto it = std::find_if(profile.steps.begin(), profile.steps.end(),
                                 [&](const ProfileStep& s) { return s.number == step; });
    if (it == profile.steps.end()) {
      return InvalidArgument("no ProfilerStep#" + std::to_string(step) + " in the profile (steps " +
                             std::to_string(profile.steps.front().number) + " to " +
                             std::to_string(profile.steps.back().number) + ")");
    }
    begin = it->begin_us;
    end = it->end_us;
  }

  struct OpenBuffer {
    int64_t lower = 0;
    int64_t size = 0;
    uint32_t op = kNoProfileOperator;
  };
  std::map<std::tuple<int64_t, int64_t, uint64_t>, OpenBuffer> open;
  struct Closed {
    Buffer buffer;
    uint32_t op;
  };
  std::vector<Closed> closed;
  int64_t tick = 0;
  for (const ProfileMemoryEvent& e : profile.events) {
    if (e.time_us < begin || e.time_us > end) continue;
    const auto key = std::make_tuple(e.device_type, e.device_id, e.address);
    if (e.bytes > 0) {
      auto [it, inserted] = open.try_emplace(key);
      if (!inserted) ++result.reused_live;
      it->second = {.lower = tick, .size = e.bytes, .op = e.op};
    } else if (auto it = open.find(key); it == open.end()) {
      ++result.inherited;
    } else {
      const OpenBuffer b = it->second;
      open.erase(it);
      if (static_cast<uint64_t>(b.size) < min_size) {
        ++result.below_min_size;
        result.below_min_size_bytes += static_cast<uint64_t>(b.size);
      } else {
        closed.push_back(
            {.buffer = {.lower = b.lower, .upper = tick, .size = b.size, .alignment = alignment}, .op = b.op});
      }
    }
    ++tick;
  }
  result.events = static_cast<size_t>(tick);
  for (const auto& [key, b] : open) {
    ++result.escaped;
    result.escaped_bytes += static_cast<uint64_t>(b.size);
  }
  std::sort(closed.begin(), closed.end(),
            [](const Closed& a, const Closed& b) { return a.buffer.lower < b.buffer.lower; });
  bool any_operator = false;
  for (Closed& c : closed) {
    c.buffer.id = std::to_string(c.buffer.lower);
    any_operator |= c.op != kNoProfileOperator;
    result.operators.push_back(c.op == kNoProfileOperator ? std::string() : profile.operators[c.op]);
    result.problem.buffers.push_back(std::move(c.buffer));
  }
  if (!any_operator) result.operators.clear();
  if (Status s = check_problem(result.problem); !s.ok()) {
    return Internal("extracted problem is invalid: " + s.message());
  }
  return result;
}

}  // namespace memplan
