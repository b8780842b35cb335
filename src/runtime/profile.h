// profile.h — what a learning unit records of one iteration, and how two
// iterations are compared (agreement, the structure hash, the load), and
// the plan made from an agreed profile (profile.cc, profile_plan.cc).
// Private to memplan's runtime; the learning cycle is learner.h.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "memplan/plan.h"
#include "memplan/planning.h"
#include "memplan/problem.h"
#include "memplan/replay_config.h"
#include "memplan/status.h"
#include "runtime/mapped.h"

namespace memplan::runtime {

// Profile upper of a block that escaped the iteration (or whose key was
// ambiguous): never planned.
constexpr int64_t kEscaped = -1;

// How an adapter names a request, so that requests of two iterations can be
// matched.
enum class RequestIdentity {
  // The request's index in its unit's sequence (the drop-in: per thread).
  // Keys are implicit (key = lower = index); two iterations agree when they
  // make the same sequence.
  kSequence,
  // A key the adapter computes (the libtorch allocator: operator, invocation,
  // index in the invocation). At the boundary the profile is sorted by key
  // (canonicalise); a key made more than once in one iteration is ambiguous
  // and kept as one escaped record of size 0, so that two iterations agree
  // when they make the same keys with the same sizes, in any order.
  kKeyed,
};

struct Request {
  uint64_t size = 0;
  uint64_t alignment = 16;
  bool operator==(const Request&) const = default;
};

// Keyed identity only: a request's key and its first tick.
struct RequestKey {
  uint64_t key = 0;
  int64_t lower = 0;
};

// One iteration of one unit, as the backing allocator served it. Its arrays
// are mappings of their own, never blocks of the backing allocator's heap
// (Note [Profiles off the backing heap], runtime/mapped.h).
struct Profile {
  MappedVector<Request> requests;  // by tick (sequence) or by key (keyed, after the boundary)
  MappedVector<int64_t> uppers;    // per request: tick count when freed, or kEscaped
  MappedVector<RequestKey> keys;   // keyed identity only: per request
  bool overflowed = false;         // more than max_requests, or out of memory: not plannable

  size_t size() const { return requests.size(); }
  uint64_t key(size_t i) const { return keys.empty() ? i : keys[i].key; }
  int64_t lower(size_t i) const { return keys.empty() ? static_cast<int64_t>(i) : keys[i].lower; }
  void clear();
  // clear, and give the arrays' memory back to the kernel.
  void release();
};

// Keyed identity: sorts the profile by (key, first tick) and keeps each key
// made more than once as one escaped record of size 0.
void canonicalise(Profile& p);
// True when two (canonical) profiles make the same requests.
bool same_requests(const Profile& a, const Profile& b);
// True when two (canonical) profiles make the same requests but for their
// sizes (Note [Upper-bound plans], learner.cc).
bool same_structure(const Profile& a, const Profile& b);
// The load of a profile's planned requests (min_planned_size, not escaped):
// the most bytes live at once, by the requests' own sizes (memplan::load of
// their lifetimes, bounds.h).
uint64_t profile_load(const Profile& p, const ReplayConfig& config);

// Note [Structure hash] (profile.cc): the structure hash, one request at a
// time from kStructureSeed, and the key of an iteration of `requests`
// requests whose hash is `h` (never 0: the top bit is set).
constexpr uint64_t kStructureSeed = 1469598103934665603ull;
inline uint64_t structure_step(uint64_t h, uint64_t size, uint64_t alignment, bool with_sizes) {
  h = (h ^ alignment) * 1099511628211ull;
  if (with_sizes) h = (h ^ size) * 1099511628211ull;
  return h;
}
inline uint64_t structure_key(uint64_t h, uint64_t requests) {
  h = (h ^ requests) * 1099511628211ull;
  h ^= h >> 29;
  return h | (uint64_t{1} << 63);
}
// The key of a profile. A keyed profile's request keys are hashed too, so
// that two keyed profiles share a key only when they make the same keys
// (a background plan of a narrower profile is adopted only then).
uint64_t structure_key_of(const Profile& p, bool with_sizes);

// A plan made from an agreed profile: what every adapter needs. Adapters
// derive from it to add the tables their fast paths read.
struct PreparedPlan {
  virtual ~PreparedPlan() = default;
  Problem problem;  // the buffers planned (sizes include the header and colour), kept for check_invariants
  Plan plan;
  uint64_t arena = 0;                // bytes of slab the plan uses
  std::vector<uint32_t> request_of;  // per buffer: its request's index in the profile
  std::vector<uint32_t> shift_of;    // per buffer: bytes from its planned offset to the block (header + colour)
  // Note [Predicted variants]: per tick t (0..requests), the structure hash
  // of the profile's first t requests.
  std::vector<uint64_t> prefix_hash;
  // The offsets came from a plan file (Note [Plans from a file], learner_saved.cc), validated.
  bool from_saved = false;
};

// How an adapter lays a block out inside its planned buffer.
struct BlockLayout {
  // Bytes the adapter keeps just below a block of this alignment (the
  // replay allocator's tick header; 0 for none). A multiple of the alignment.
  uint64_t (*header_bytes)(uint64_t alignment) = nullptr;
  // The largest arena the adapter can serve.
  uint64_t max_arena = 0;
};

// Note [Aligned large blocks] (profile_plan.cc): a planned block of at least
// kLargeBlockBytes starts at a multiple of kLargeBlockAlignment (given a
// slab that starts at one), whatever its request's alignment.
constexpr uint64_t kLargeBlockBytes = 4096;
constexpr uint64_t kLargeBlockAlignment = 64;

// Fills `out`'s problem, plan, arena, request_of and shift_of from an agreed
// profile (profile_plan.cc): one run_planner call with plan_options(config).
// Reads only its arguments: planner threads call it. `saved`: per request,
// an offset from a plan file (-1: none), served instead of planning when
// every planned request has one and the validator accepts them for this
// problem (Note [Plans from a file], learner_saved.cc).
Status plan_profile(const Profile& agreed, const ReplayConfig& config, const BlockLayout& layout, PreparedPlan& out,
                    const std::vector<int64_t>* saved = nullptr);

// An adapter's side of planning: the learner plans (plan_profile, with the
// adapter's layout) and the adapter only builds the tables its fast path
// reads. Called on planner threads: implementations read only immutable
// state. A plain adapter gives its layout and nothing else:
//   struct Plain final : PlanTables {
//     BlockLayout layout() const override { return {.max_arena = 1 << 20}; }
//   };
class PlanTables {
 public:
  virtual ~PlanTables() = default;
  // How the adapter lays a block out inside its buffer.
  virtual BlockLayout layout() const = 0;
  // An empty plan of the adapter's type (PreparedPlan or a type derived from it).
  virtual std::unique_ptr<PreparedPlan> new_plan() const { return std::make_unique<PreparedPlan>(); }
  // Adds the fast path's tables to `plan`, which the learner planned from `agreed`.
  virtual Status build_tables(const Profile& agreed, PreparedPlan& plan) const { return Status::Ok(); }
};

// The plan of an agreed profile, ready to publish: planned with the
// adapter's layout, then its tables built (profile_plan.cc). Reads only its
// arguments: planner threads call it.
StatusOr<std::unique_ptr<PreparedPlan>> plan_with_tables(const Profile& agreed, const ReplayConfig& config,
                                                         const PlanTables& tables,
                                                         const std::vector<int64_t>* saved = nullptr);

// The planning options of every plan the runtime makes (Notes [Page-optimal
// plans] and [Planning budget], profile_plan.cc): config's planner and time
// limit, stopping at a greedy plan within config.plan_tolerance of the load
// in pages (GoodEnough), the time drawn from `budget` (nullptr: the
// process's, which every unit of every allocator shares), cancelled at exit
// (Note [Planning at exit], planner_thread.cc). run_planner validates the
// plan, once.
PlanOptions plan_options(const ReplayConfig& config, PlanningBudget* budget = nullptr);

}  // namespace memplan::runtime
