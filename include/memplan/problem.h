// problem.h — the vocabulary of planning: a Buffer and a Problem.
//
// A buffer is one allocation to place. It is live during the half-open
// lifetime [lower, upper) in integer ticks, occupies `size` bytes, and must
// start at an offset that is a multiple of its alignment (a power of two).
// A buffer may carry a fixed offset that every plan must keep.
//
// Two buffers conflict iff their lifetimes overlap: a.lower < b.upper and
// b.lower < a.upper. A buffer that ends at tick t can share bytes with one
// that starts at t. Example (ticks on x, four buffers):
//
//     tick   0   1   2   3   4
//     a      [=======)              a = [0,2)
//     b              [=======)      b = [2,4): may reuse a's bytes
//     c      [===============)      c = [0,4): conflicts with a and b
//     d          [===)              d = [1,2): conflicts with a and c
//
// A Problem is a set of buffers plus an optional capacity (the arena must not
// exceed it) and a default alignment that applies to every buffer whose own
// alignment is smaller. Buffers are identified by their index in `buffers`;
// `id` is the user's name, kept for I/O and messages.
//
// Invariants (checked by check_problem, which every reader and planner entry
// point relies on): size >= 0; lower < upper; alignments are powers of two;
// a fixed offset is >= 0, aligned, and offset + size does not overflow; two
// buffers with fixed offsets that are live at the same tick do not share a
// byte (no plan could separate them: bad input, not a planning failure) —
// in one arena; with memory banks (banks.h), only buffers that name the same
// bank (Buffer::bank; unpinned ones with each other) must not clash.
// All quantities are 64-bit signed; inputs that could overflow are rejected.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memplan/status.h"

namespace memplan {

struct Buffer {
  std::string id;                 // the user's name (CSV `id` column); unique in a problem
  int64_t lower = 0;              // first tick at which the buffer is live
  int64_t upper = 0;              // first tick at which it is no longer live (exclusive)
  int64_t size = 0;               // bytes
  int64_t alignment = 1;          // offset must be a multiple of this (power of two)
  std::optional<int64_t> offset;  // fixed offset that every plan must keep, if set
  // Memory banks (banks.h) only; single-arena planners ignore both.
  std::string bank;                 // the bank this buffer is pinned to, by name; empty: any bank
  std::optional<int64_t> priority;  // worth of a fast bank (>= 0); unset: size x lifetime

  bool overlaps_in_time(const Buffer& other) const { return lower < other.upper && other.lower < upper; }
};

struct Problem {
  std::vector<Buffer> buffers;
  std::optional<int64_t> capacity;  // arena must be <= capacity, if set (bytes)
  int64_t alignment = 1;            // default alignment for every buffer (power of two)

  size_t size() const { return buffers.size(); }
  // The alignment a plan must respect for buffer i: the larger of the buffer's
  // own and the problem's default.
  int64_t alignment_of(size_t i) const { return buffers[i].alignment > alignment ? buffers[i].alignment : alignment; }
};

// Checks the invariants above; the message names the buffer (by id and index)
// and the field that is wrong.
// Which fixed offsets must not clash: every pair (one arena), or only pairs
// that name the same bank in Buffer::bank (planning into banks, banks.h).
enum class FixedOffsetScope { kOneArena, kPerBank };
Status check_problem(const Problem& problem, FixedOffsetScope scope = FixedOffsetScope::kOneArena);

// Two buffers with fixed offsets that share bytes [from, to) while both are
// live at `tick` (`first` is placed before `second` in the sweep by start).
struct FixedOffsetClash {
  size_t first = 0;
  size_t second = 0;
  int64_t tick = 0;
  int64_t from = 0;
  int64_t to = 0;
};
// The first such pair found, if any: O(f log f) for f fixed buffers. Readers
// use it to name the line of the offending row; check_problem to refuse it.
std::optional<FixedOffsetClash> find_fixed_offset_clash(const Problem& problem,
                                                        FixedOffsetScope scope = FixedOffsetScope::kOneArena);

inline bool is_power_of_two(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

// Rounds x up to a multiple of `alignment` (a power of two). x >= 0.
inline int64_t align_up(int64_t x, int64_t alignment) { return (x + alignment - 1) & ~(alignment - 1); }

// TensorFlow Lite describes a tensor's lifetime by the first and last task
// (operator) that use it, both inclusive. This is the one place where such
// records enter memplan: [first_task, last_task] becomes [first_task, last_task + 1).
struct TaskRecord {
  int64_t size = 0;
  int64_t first_task = 0;  // inclusive
  int64_t last_task = 0;   // inclusive
};
// Buffers get ids "0", "1", ... in record order. Fails on last_task < first_task,
// negative sizes or tasks, or overflow.
StatusOr<Problem> problem_from_task_records(std::span<const TaskRecord> records);

}  // namespace memplan
