// plan.h — the result of planning: an offset for every buffer.
//
// A Plan holds offsets[i] for buffer i of the Problem it was made for, and the
// arena: max over buffers of offset + size (0 for an empty problem). A plan is
// valid iff no two buffers live at the same tick overlap in bytes, every offset
// is aligned, fixed offsets are kept, and arena <= capacity when one is given
// (see validate.h).
//
// The shared-objects form (ObjectAssignment) groups buffers into objects; an
// object is as big as its largest member and buffers in one object must not
// overlap in time. It converts to a Plan by stacking the objects.
#pragma once

#include <cstdint>
#include <vector>

#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

struct Plan {
  std::vector<int64_t> offsets;  // offsets[i] is buffer i's offset in bytes
  int64_t arena = 0;             // max(offset + size) in bytes
};

// max over i of offsets[i] + size_i (0 when empty). offsets.size() must equal
// problem.size().
int64_t arena_of(const Problem& problem, const std::vector<int64_t>& offsets);

// Builds a Plan from offsets, computing the arena.
Plan make_plan(const Problem& problem, std::vector<int64_t> offsets);

struct ObjectAssignment {
  std::vector<int32_t> object_of;     // object id of buffer i, in [0, object_sizes.size())
  std::vector<int64_t> object_sizes;  // bytes; >= every member's size
};

// Stacks objects in id order: object k starts at the first offset after object
// k-1 that is aligned for all of k's members. Buffers with a fixed offset keep
// it (they must not be members of any object: object_of[i] == -1), and the
// objects are stacked above the highest fixed buffer. Fails if the assignment
// is malformed (wrong length, bad id, object smaller than a member, members
// overlapping in time).
StatusOr<Plan> plan_from_objects(const Problem& problem, const ObjectAssignment& objects);

}  // namespace memplan
