// csv_reader_fuzz.cc — libFuzzer target for the problem, plan and bank-file CSV readers.
//
// For any bytes:
//   0. parse_banks_csv returns banks check_banks accepts, or an error naming
//      the source;
//   1. parse_problem_csv must return (a problem or an error), never crash,
//      hang or trip a sanitizer;
//   2. if it parses, writing the problem and reading it back must give the
//      same problem, and writing that again the same text;
//   3. the same bytes read as a plan for that problem must not crash, and if
//      they read, the plan has one offset per buffer and the arena it claims;
//   4. a plan written for the problem (buffers stacked, as the naive planner
//      does; skipped if that passes 2^62 bytes) must read back to the same offsets, and the JSON report of it
//      must be written without throwing.
// Any violation aborts, which libFuzzer reports as a crash with the input.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/banks.h"
#include "memplan/csv.h"
#include "memplan/json.h"
#include "memplan/plan.h"
#include "memplan/problem.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "csv_reader_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

bool same_buffers(const memplan::Problem& a, const memplan::Problem& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const memplan::Buffer& x = a.buffers[i];
    const memplan::Buffer& y = b.buffers[i];
    if (x.id != y.id || x.lower != y.lower || x.upper != y.upper || x.size != y.size ||
        a.alignment_of(i) != b.alignment_of(i) || x.offset != y.offset || x.bank != y.bank ||
        x.priority != y.priority) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The same bytes as a bank file: banks that pass check_banks, or an error
  // that names the file.
  auto banks = memplan::parse_banks_csv(text, "fuzz.csv");
  if (banks.ok()) {
    if (!memplan::check_banks(*banks).ok()) fail("bank reader returned banks check_banks refuses", std::string(text));
  } else if (banks.status().message().rfind("fuzz.csv", 0) != 0) {
    fail("bank file error does not name the source", banks.status().message());
  }
  auto problem = memplan::parse_problem_csv(text, "fuzz.csv");
  if (!problem.ok()) {
    // Every problem error is "<source>:<line>: ..."; one without a line means
    // the row checks missed something that check_problem caught afterwards.
    const std::string message = problem.status().message();
    if (message.rfind("fuzz.csv:", 0) != 0 || message.size() < 10 || message[9] < '1' || message[9] > '9') {
      fail("error does not name the source and line", message);
    }
    return 0;
  }
  if (!memplan::check_problem(*problem, memplan::FixedOffsetScope::kPerBank).ok())
    fail("reader returned an invalid problem", std::string(text));

  const std::string written = memplan::format_problem_csv(*problem);
  auto back = memplan::parse_problem_csv(written, "written.csv");
  if (!back.ok()) fail("written problem does not read back", back.status().message() + "\n" + written);
  if (!same_buffers(*problem, *back)) fail("problem changed in a write/read round trip", written);
  if (memplan::format_problem_csv(*back) != written) fail("second write differs from the first", written);

  // The same bytes as a banked plan of the problem in two banks: a plan the
  // validator judges without crashing, or an error that names the source;
  // and a banked plan written reads back unchanged.
  {
    const std::vector<memplan::Bank> two = {{.name = "sram", .capacity = 64}, {.name = "dram"}};
    auto banked = memplan::parse_banked_plan_csv(*problem, two, text, "fuzz.csv");
    if (banked.ok()) {
      (void)memplan::validate_banked(*problem, two, *banked);
    } else if (banked.status().message().rfind("fuzz.csv", 0) != 0) {
      fail("banked plan error does not name the source", banked.status().message());
    }
    std::vector<int32_t> bank_of(problem->size());
    std::vector<int64_t> offsets(problem->size());
    for (size_t i = 0; i < problem->size(); ++i) {
      bank_of[i] = static_cast<int32_t>(i % 2);
      offsets[i] = problem->buffers[i].offset.value_or(static_cast<int64_t>(i));
    }
    const memplan::BankedPlan written_plan = memplan::make_banked_plan(*problem, 2, bank_of, offsets);
    const std::string banked_text = memplan::format_banked_plan_csv(*problem, two, written_plan);
    auto banked_back = memplan::parse_banked_plan_csv(*problem, two, banked_text, "banked.csv");
    if (!banked_back.ok())
      fail("written banked plan does not read back", banked_back.status().message() + "\n" + banked_text);
    if (banked_back->bank_of != written_plan.bank_of || banked_back->offsets != written_plan.offsets) {
      fail("banked plan changed in a write/read round trip", banked_text);
    }
  }

  // Fixed offsets pinned to different banks may share bytes (checked per
  // bank); such a problem has no one-arena plan.
  if (!memplan::check_problem(*problem).ok()) return 0;
  auto plan = memplan::parse_plan_csv(*problem, text, "fuzz.csv");
  if (plan.ok()) {
    if (plan->offsets.size() != problem->size()) fail("plan has the wrong number of offsets", std::string(text));
    if (plan->arena != memplan::arena_of(*problem, plan->offsets)) fail("plan arena is wrong", std::string(text));
  }

  // Stack every buffer (fixed ones at their offsets), then write and read the
  // plan. Stacking can pass 2^62 bytes even for a valid problem (alignment
  // padding above a high fixed buffer), which no plan file may hold; such
  // problems skip this step.
  constexpr int64_t kMaxBytes = int64_t{1} << 62;
  int64_t top = 0;
  for (const memplan::Buffer& b : problem->buffers) {
    if (b.offset) top = std::max(top, *b.offset + b.size);
  }
  std::vector<int64_t> offsets(problem->size());
  for (size_t i = 0; i < problem->size(); ++i) {
    const memplan::Buffer& b = problem->buffers[i];
    if (b.offset) {
      offsets[i] = *b.offset;
      continue;
    }
    const int64_t a = problem->alignment_of(i);
    if (top > kMaxBytes - a || memplan::align_up(top, a) > kMaxBytes - b.size) return 0;
    offsets[i] = memplan::align_up(top, a);
    top = offsets[i] + b.size;
  }
  const memplan::Plan stacked = memplan::make_plan(*problem, std::move(offsets));
  const std::string plan_text = memplan::format_plan_csv(*problem, stacked);
  auto plan_back = memplan::parse_plan_csv(*problem, plan_text, "plan.csv");
  if (!plan_back.ok()) fail("written plan does not read back", plan_back.status().message() + "\n" + plan_text);
  if (plan_back->offsets != stacked.offsets || plan_back->arena != stacked.arena) {
    fail("plan changed in a write/read round trip", plan_text);
  }
  const std::string json = memplan::format_plan_json(*problem, stacked, {.planner = "stacked", .load = 0});
  if (json.empty() || json.front() != '{') fail("JSON report is not an object", json);
  return 0;
}
