// plan_file_fuzz.cc — libFuzzer target for the plan file reader
// (memplan/plan_file.h), the one file the runtime reads at start-up.
//
// For any bytes: read_plan_file returns a file or an error, never crashes,
// hangs or trips a sanitizer; a file it returns keeps every bound the
// header names (units, variants, requests, sizes, alignments, ticks, course
// lengths and keys), and
// writing it and reading that back gives the same file and the same text.
// Any violation aborts, which libFuzzer reports as a crash with the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "memplan/plan_file.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "plan_file_fuzz: %s\n", what);
  std::abort();
}

void check_bounds(const memplan::PlanFile& file) {
  if (file.units.size() > memplan::kMaxSavedUnits) fail("too many units");
  for (const memplan::SavedUnit& u : file.units) {
    if (u.variants.size() > memplan::kMaxSavedVariants) fail("too many variants");
    if (u.course.size() > memplan::kMaxSavedCourse) fail("course too long");
    for (const uint64_t key : u.course) {
      if (key == 0) fail("a zero key in a course");
    }
    for (const memplan::SavedVariant& v : u.variants) {
      if (v.requests.size() > memplan::kMaxSavedRequests) fail("too many requests");
      for (size_t i = 0; i < v.requests.size(); ++i) {
        const memplan::SavedRequest& r = v.requests[i];
        if (r.size > memplan::kMaxSavedSize) fail("size out of bounds");
        if (r.alignment == 0 || (r.alignment & (r.alignment - 1)) != 0 || r.alignment > memplan::kMaxSavedAlignment) {
          fail("alignment not a bounded power of two");
        }
        if (r.lower < 0 || (!v.keyed && r.lower != static_cast<int64_t>(i))) fail("lower out of bounds");
        if (r.upper != -1 && r.upper <= r.lower) fail("upper not after lower");
        if (r.offset < -1) fail("negative offset");
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  memplan::StatusOr<memplan::PlanFile> file = memplan::read_plan_file(text, "fuzz");
  if (!file.ok()) {
    if (file.status().message().rfind("fuzz:", 0) != 0) fail("an error that does not name the source");
    return 0;
  }
  check_bounds(*file);
  const std::string written = memplan::write_plan_file(*file);
  memplan::StatusOr<memplan::PlanFile> again = memplan::read_plan_file(written, "written");
  if (!again.ok()) fail("a written file does not read back");
  if (!(*again == *file)) {
    // Unit names with spaces are written with underscores: compare the text once more.
    if (memplan::write_plan_file(*again) != written) fail("write(read(write(f))) != write(f)");
  }
  return 0;
}
