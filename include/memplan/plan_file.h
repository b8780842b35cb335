// plan_file.h — what an online allocator learnt, kept in a file so that a
// later process serves plans from its first iteration (docs/runtime.md,
// "Plans that outlive the process").
//
// A plan file holds, per learning unit (a thread of the drop-in, a stream of
// a device), the variants that unit planned: each variant's agreed profile
// (its requests' sizes, alignments and lifetimes in ticks of the unit's
// request count, and with keyed identity their keys) and the offset its plan
// gave each planned request. It names the adapter that wrote it and the
// program it came from, so that a process loads only what was learnt by the
// same kind of allocator in the same program.
//
// Trust: a plan file is outside input. The reader checks every field and
// bound and never crashes on any bytes (fuzzed: tests/fuzz); the runtime
// never serves a loaded offset as is — it builds the problem of the loaded
// profile under its own layout and serves the loaded offsets only when the
// validator accepts them for that problem, and otherwise plans the profile
// again. Serving itself checks every request's size and the liveness of the
// blocks it shares bytes with, as for any plan, so a file of another program
// or shape costs fallbacks, never a shared byte.
//
// The text format, one record per line (version 3; version 2 files, which
// have no course lines, and version 1 files, whose variant lines have no
// <after> field either, still read):
//   memplan-plans 3
//   adapter <drop-in|device|libtorch>
//   program <the program's command line, or - for any program>
//   unit <name> <variants>
//   variant <key, hex> <requests> <sequence|keyed> <after: key, hex, or ->
//   <size> <alignment> <upper> <offset>                  (sequence: lower = index)
//   <size> <alignment> <lower> <upper> <offset> <key>    (keyed; key in hex)
//   course <count> <key, hex>...                         (after the unit's variants)
//   end
// upper is the tick the block was freed at, or - when it escaped; offset is -
// for a request the plan does not place.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/status.h"

namespace memplan {

inline constexpr int kPlanFileVersion = 3;

struct SavedRequest {
  uint64_t size = 0;
  uint64_t alignment = 16;
  int64_t lower = 0;    // first tick (sequence identity: the request's index)
  int64_t upper = -1;   // tick at its free; -1: escaped the iteration
  int64_t offset = -1;  // the plan's offset of its buffer; -1: not placed
  uint64_t key = 0;     // keyed identity only
  bool operator==(const SavedRequest&) const = default;
};

struct SavedVariant {
  uint64_t key = 0;    // the variant's key (a mark's key or a structure key)
  bool keyed = false;  // keyed request identity (else the request's index)
  // The variant that ran just before this one's first run in the saving
  // process, when this variant's plan covers that first run (its first run
  // agreed with the later ones); 0 otherwise. A loading process serves the
  // variant's first run from the plan when it follows the same variant
  // (Note [Plans from a file]).
  uint64_t after = 0;
  std::vector<SavedRequest> requests;
  bool operator==(const SavedVariant&) const = default;
};

struct SavedUnit {
  std::string name;  // how the adapter finds the unit again: "0", "cuda:0/1", ...
  std::vector<SavedVariant> variants;
  // The variants of the unit's first iterations in the saving process, in
  // order (at most kMaxSavedCourse; nonzero keys): a loading process that
  // runs the same course predicts each next variant from it (Note [Plans
  // from a file]). Empty where the unit's variants were not predicted (keyed
  // marks) and in files of versions 1 and 2.
  std::vector<uint64_t> course;
  bool operator==(const SavedUnit&) const = default;
};

struct PlanFile {
  std::string adapter;  // "drop-in", "device" or "libtorch"
  std::string program;  // the command line that learnt the plans; "" for any program
  std::vector<SavedUnit> units;
  bool operator==(const PlanFile&) const = default;
};

// Bounds the reader enforces (and the writer's caller must keep).
inline constexpr size_t kMaxSavedUnits = 4096;
inline constexpr size_t kMaxSavedVariants = 64;
inline constexpr size_t kMaxSavedCourse = 64;
inline constexpr size_t kMaxSavedRequests = size_t{1} << 24;
inline constexpr uint64_t kMaxSavedSize = uint64_t{1} << 48;
inline constexpr uint64_t kMaxSavedAlignment = uint64_t{1} << 21;

// The file's text. Unit names and the program must not hold a line break
// (the writer replaces control characters with spaces).
std::string write_plan_file(const PlanFile& file);
// Parses `text`; errors name `source`, the line and the field.
StatusOr<PlanFile> read_plan_file(std::string_view text, std::string_view source = "plan file");

// The same on a path (errors name it).
Status save_plan_file(const PlanFile& file, const std::string& path);
StatusOr<PlanFile> load_plan_file(const std::string& path);

// "1 unit, 3 variants": the units that hold variants, and their variants.
std::string plan_file_summary(const PlanFile& file);

// Why `file` is not for this process, or "" when it is: another adapter, or
// another program (a file whose program is "" is for any).
std::string plan_file_mismatch(const PlanFile& file, std::string_view adapter, std::string_view program);

}  // namespace memplan
