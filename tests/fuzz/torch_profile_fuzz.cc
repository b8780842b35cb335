// torch_profile_fuzz.cc — libFuzzer target for the PyTorch profiler reader.
//
// For any bytes:
//   1. parse_torch_profile must return (a profile or an error), never crash,
//      hang or trip a sanitizer; an error names the source;
//   2. a profile has at least one memory event, events in time order, steps
//      in increasing number, and operator indices in range;
//   3. every step extracts to a valid problem (check_problem) whose buffers
//      and left-out blocks account for the step's allocations, with one
//      operator per buffer when any is known, and the problem CSV with the
//      operator column reads back with the same number of buffers.
// Any violation aborts, which libFuzzer reports as a crash with the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "memplan/csv.h"
#include "memplan/problem.h"
#include "memplan/torch_profile.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "torch_profile_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto profile = memplan::parse_torch_profile(text, "fuzz.json");
  if (!profile.ok()) {
    if (profile.status().message().rfind("fuzz.json: ", 0) != 0)
      fail("error does not name the source", profile.status().message());
    return 0;
  }
  if (profile->events.empty()) fail("a profile without memory events", std::string(text));
  for (size_t i = 0; i < profile->events.size(); ++i) {
    const memplan::ProfileMemoryEvent& e = profile->events[i];
    if (i > 0 && e.time_us < profile->events[i - 1].time_us) fail("events out of time order", std::string(text));
    if (e.bytes == 0) fail("a memory event of 0 bytes", std::string(text));
    if (e.op != memplan::kNoProfileOperator && e.op >= profile->operators.size())
      fail("operator out of range", std::string(text));
  }
  for (size_t i = 1; i < profile->steps.size(); ++i) {
    if (profile->steps[i].number <= profile->steps[i - 1].number)
      fail("steps not in increasing number", std::string(text));
  }
  for (const int64_t step : memplan::profile_step_numbers(*profile)) {
    auto x = memplan::extract_profile_step(*profile, step, /*min_size=*/0, /*alignment=*/16);
    if (!x.ok()) fail("a listed step does not extract", x.status().message());
    if (!memplan::check_problem(x->problem).ok()) fail("extracted an invalid problem", std::string(text));
    if (!x->operators.empty() && x->operators.size() != x->problem.size())
      fail("operators do not match buffers", std::string(text));
    if (x->problem.size() + x->escaped + x->inherited + x->reused_live > x->events)
      fail("more blocks than events", std::string(text));
    const std::string csv = memplan::format_problem_csv(x->problem, x->operators);
    auto back = memplan::parse_problem_csv(csv, "written.csv");
    if (!back.ok() || back->size() != x->problem.size()) fail("written problem does not read back", csv);
  }
  return 0;
}
