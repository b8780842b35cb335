// knob_table.h — one row per knob (variable, type, field, help), from which
// the runtime reads its MEMPLAN_* environment variables and lists its knobs
// (ReplayKnob: `memplan run --help`, docs/runtime.md). A knob's default is
// the field's value in a default-constructed options struct, so the listed
// default cannot drift from the code. Private to src/runtime: the replay
// knobs live in replay_config.cc, the pools' in pool.cc.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "memplan/planner.h"
#include "memplan/replay_config.h"
#include "memplan/status.h"

namespace memplan::runtime {

enum class KnobType {
  kInteger,   // a whole number from min to max, a multiple of `multiple`
  kSwitch,    // 1/0, on/off, true/false, yes/no
  kFraction,  // a number from 0 to 1
  kSeconds,   // a number >= 0
  kPlanner,   // a planner's name in the registry
  kChoice,    // one of the names in `choices`
  kPath,      // a file's path (not empty)
};

template <class Options>
struct Knob {
  std::string_view variable;  // MEMPLAN_...
  KnobType type = KnobType::kInteger;
  std::variant<int64_t Options::*, bool Options::*, double Options::*, std::string Options::*> field;
  std::string_view help;
  int64_t min = 0;  // kInteger only
  int64_t max = std::numeric_limits<int64_t>::max();
  int64_t multiple = 1;
  std::string_view choices = {};  // kChoice only: the accepted names, separated by '|'
};

namespace knob_detail {

inline Status parse_integer(std::string_view name, const char* text, int64_t min, int64_t max, int64_t multiple,
                            int64_t* out) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  const bool bounded = max != std::numeric_limits<int64_t>::max();
  if (errno != 0 || end == text || *end != '\0' || value < min || (multiple == 1 && value > max)) {
    std::string expected = "expected an integer >= " + std::to_string(min);
    if (bounded && multiple == 1) expected += " and <= " + std::to_string(max);
    return InvalidArgument(std::string(name) + "='" + text + "': " + expected);
  }
  if (value % multiple != 0 || value > max) {
    const std::string limit = max % (int64_t{1} << 20) == 0 ? std::to_string(max >> 20) + " MiB" : std::to_string(max);
    return InvalidArgument(std::string(name) + "='" + text + "': expected a multiple of " + std::to_string(multiple) +
                           " up to " + limit);
  }
  *out = value;
  return Status::Ok();
}

inline Status parse_number(std::string_view name, const char* text, KnobType type, double* out) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  const bool fraction = type == KnobType::kFraction;
  if (errno != 0 || end == text || *end != '\0' || !(value >= 0) || (fraction && !(value <= 1))) {
    return InvalidArgument(std::string(name) + "='" + text +
                           "': " + (fraction ? "expected a fraction from 0 to 1" : "expected seconds >= 0"));
  }
  *out = value;
  return Status::Ok();
}

inline std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// "a|b|c" as "a, b, c" (a '|' would split a row of the docs' table).
inline std::string choice_list(std::string_view choices) {
  std::string out;
  for (char c : choices) out += c == '|' ? std::string(", ") : std::string(1, c);
  return out;
}

}  // namespace knob_detail

// Sets the knob's field of `options` from `text`; on a malformed value the
// field is unchanged and the status names the variable, the value and what
// was expected.
template <class Options>
Status parse_knob(const Knob<Options>& knob, const char* text, Options& options) {
  using namespace knob_detail;
  switch (knob.type) {
    case KnobType::kInteger: {
      int64_t value = 0;
      MEMPLAN_RETURN_IF_ERROR(parse_integer(knob.variable, text, knob.min, knob.max, knob.multiple, &value));
      options.*std::get<int64_t Options::*>(knob.field) = value;
      return Status::Ok();
    }
    case KnobType::kSwitch: {
      const std::optional<bool> value = parse_switch(text);
      if (!value) {
        return InvalidArgument(std::string(knob.variable) + "='" + text +
                               "': expected 1/0, on/off, true/false or yes/no");
      }
      options.*std::get<bool Options::*>(knob.field) = *value;
      return Status::Ok();
    }
    case KnobType::kFraction:
    case KnobType::kSeconds: {
      double value = 0;
      MEMPLAN_RETURN_IF_ERROR(parse_number(knob.variable, text, knob.type, &value));
      options.*std::get<double Options::*>(knob.field) = value;
      return Status::Ok();
    }
    case KnobType::kPlanner:
      if (find_planner(text) == nullptr) {
        return InvalidArgument(std::string(knob.variable) + "='" + text +
                               "': no such planner (registered: " + planner_names() + ")");
      }
      options.*std::get<std::string Options::*>(knob.field) = text;
      return Status::Ok();
    case KnobType::kChoice:
      for (std::string_view rest = knob.choices; !rest.empty();) {
        const size_t bar = rest.find('|');
        if (rest.substr(0, bar) == text) {
          options.*std::get<std::string Options::*>(knob.field) = text;
          return Status::Ok();
        }
        rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
      }
      return InvalidArgument(std::string(knob.variable) + "='" + text + "': expected one of " +
                             choice_list(knob.choices));
    case KnobType::kPath:
      if (*text == '\0') return InvalidArgument(std::string(knob.variable) + "='': expected a file's path");
      options.*std::get<std::string Options::*>(knob.field) = text;
      return Status::Ok();
  }
  return Internal("unknown knob type");
}

// Reads every knob of `table` through `lookup` (getenv when null) into a copy
// of `base`: an unset variable keeps base's value; a malformed one keeps it
// too and adds a line to `rejected` (if given), the others still apply.
template <class Options>
Options read_knobs(std::span<const Knob<Options>> table, EnvironmentLookup lookup, std::vector<std::string>* rejected,
                   Options base) {
  if (!lookup) lookup = [](const char* name) -> const char* { return std::getenv(name); };
  for (const Knob<Options>& knob : table) {
    const char* text = lookup(std::string(knob.variable).c_str());
    if (text == nullptr) continue;
    const Status status = parse_knob(knob, text, base);
    if (!status.ok() && rejected != nullptr) rejected->push_back(status.message());
  }
  return base;
}

// The knob as --help and the docs list it: its type in words and the
// default-constructed field's value.
template <class Options>
ReplayKnob describe_knob(const Knob<Options>& knob) {
  static const Options defaults{};
  ReplayKnob out{.variable = knob.variable, .description = knob.help};
  switch (knob.type) {
    case KnobType::kInteger:
      out.type = knob.max == std::numeric_limits<int64_t>::max()
                     ? "integer >= " + std::to_string(knob.min)
                     : "integer " + std::to_string(knob.min) + " to " + std::to_string(knob.max);
      if (knob.multiple != 1) out.type += ", a multiple of " + std::to_string(knob.multiple);
      out.default_value = std::to_string(defaults.*std::get<int64_t Options::*>(knob.field));
      break;
    case KnobType::kSwitch:
      out.type = "switch (1/0)";
      // One character, not `? "1" : "0"` (GCC 12 warns -Wrestrict on that assignment, a false positive).
      out.default_value.assign(1, defaults.*std::get<bool Options::*>(knob.field) ? '1' : '0');
      break;
    case KnobType::kFraction:
      out.type = "fraction 0 to 1";
      out.default_value = knob_detail::number_text(defaults.*std::get<double Options::*>(knob.field));
      break;
    case KnobType::kSeconds:
      out.type = "seconds >= 0";
      out.default_value = knob_detail::number_text(defaults.*std::get<double Options::*>(knob.field));
      break;
    case KnobType::kPlanner:
      out.type = "planner name";
      out.default_value = defaults.*std::get<std::string Options::*>(knob.field);
      break;
    case KnobType::kChoice:
      out.type = "one of " + knob_detail::choice_list(knob.choices);
      out.default_value = defaults.*std::get<std::string Options::*>(knob.field);
      break;
    case KnobType::kPath:
      out.type = "path";
      out.default_value = defaults.*std::get<std::string Options::*>(knob.field);
      if (out.default_value.empty()) out.default_value = "(none)";
      break;
  }
  return out;
}

template <class Options>
std::vector<ReplayKnob> describe_knobs(std::span<const Knob<Options>> table) {
  std::vector<ReplayKnob> out;
  for (const Knob<Options>& knob : table) out.push_back(describe_knob(knob));
  return out;
}

}  // namespace memplan::runtime
