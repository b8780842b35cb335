// learner_saved.cc — what a learning unit learnt, out to a plan file and
// back (learner.h: saved_variants, saved_unit, seed; memplan/plan_file.h).
//
// Note [Plans from a file]. A learner pays for its first iterations: they
// run on the backing allocator while it profiles, and on a device they
// reserve what the caching allocator would. A unit seeded from a plan file
// starts as if the variant it ran first in the saving process had agreed:
// that variant's saved agreed profile becomes its agreed profile, its plan
// is made at once — the saved offsets, served only when the validator
// accepts them for the problem this process builds from the profile (its
// own layout, colouring and thresholds), else planned again — and published
// for the iteration that starts. Every other saved variant waits for its
// first iteration in this process, which is profiled as usual, and is
// planned from its saved profile at that iteration's end (adopt_seed):
// served from its second run, not its third. A variant's first run is
// where a program makes the state it keeps (per-shape caches, an
// optimizer's buffers); served from a plan of later runs, such a block lands
// in the slab and holds it for good (six rotating resnet18 shapes with every
// variant seeded at once: nothing served after the second pass). The
// exception is a variant whose saved plan covers its first run: in the
// saving process its first run agreed with its later ones (the agreed
// profile began there, so lifetimes include it) and followed variant P
// (SavedVariant::after = P). When P has just run here, that variant is the
// prediction and is planned from the file at once, serving its first run:
// a training loop's steady step after its first step (served from step 2,
// not 3). A rotating shape's first run makes the shape's state: a variant
// of its own, whose key never comes back, so no agreed profile covers it.
// With save_plans_file the learner keeps such a first run's profile with
// the variant it followed and saves it (without offsets) as a variant of
// its own: its plan leaves out the blocks the run kept (escaped, in the
// backing allocator), and it serves that first run here when it follows
// the same variant; the shape's steady variant first ran after it, and is
// served from the shape's second run. Six rotating resnet18 shapes: no
// iteration profiled in a process that loads the file. Nothing
// else changes: replay checks every request's size and the liveness of the
// blocks sharing its bytes, so an iteration that differs from the saved one
// (another program, another shape) falls back where it stops fitting,
// counts as a deviation and, after ReplayConfig::deviations_to_reprofile of
// them, is profiled and learnt as today.
//
// Four more rules:
//   * The first iteration: a program's first iteration after its first mark
//     often differs from the rest (a training loop's first step makes the
//     optimizer's state), agrees with no other and is never planned; served
//     from the steady variant's plan it fits for a while, and a block it
//     keeps (a gradient made in a temporary's place) then holds the slab
//     for good. With save_plans_file the learner keeps that iteration's
//     profile and saves it first, without offsets (planned when loaded).
//   * The second iteration: a seeded unit that predicts its variants
//     predicts, after its first iteration, the variant saved second (the
//     steady one) when no saved variant follows the first, where the
//     prediction would repeat the first and serve the second iteration from
//     the first one's plan until it stops fitting.
//   * The course: the variants of the saving unit's first iterations (at
//     most kMaxSavedCourse), in order, are saved with its plans; while this
//     process's iterations have run the same variants, the prediction is the
//     course's next one, ahead of every other rule. One `after` per variant
//     cannot carry a rotation of shapes: two shapes' first runs share a
//     structure, three share a steady variant whose successor depends on the
//     two before it, and a variant not yet followed by anything in this
//     process would be predicted to repeat (six rotating resnet18 shapes:
//     passes 6, 7, 10, 12 and 13 mispredicted). The first iteration off the
//     course ends its use: from there the live history decides. Seeding the
//     live history with the course instead taught it a false period: the
//     course followed by the real first iteration (resnet18: step 5
//     mispredicted).
//   * A file that does not fit: when the unit's first iteration deviates
//     while no block of the seeded plans is live (its first requests do not
//     fit), the adapter drops them and gives their slab back at once
//     (drop_seed; the device allocator): on the real cs336 snapshots a file
//     of another context length otherwise held its unused slab beside the
//     fallback for the whole window. The same holds for a later iteration
//     while no seeded plan has served a request: a start-up whose kept
//     blocks are all resident (Note [Resident blocks], device_replay.cc)
//     serves none, and the parameters of another context length match.
// Only what upper-bound plans keep can be saved: a variant whose agreed
// profile was released after planning (upper_bound_plans off) is not; nor
// is one of more than kMaxSavedRequests requests.
#include <algorithm>
#include <utility>

#include "runtime/learner.h"

namespace memplan::runtime {
namespace {

SavedVariant to_saved(uint64_t key, uint64_t after, const Profile& agreed, const PreparedPlan* plan, bool keyed) {
  SavedVariant v;
  v.key = key;
  v.keyed = keyed;
  v.after = after;
  v.requests.reserve(agreed.size());
  for (size_t i = 0; i < agreed.size(); ++i) {
    SavedRequest r;
    r.size = agreed.requests[i].size;
    r.alignment = agreed.requests[i].alignment;
    r.lower = agreed.lower(i);
    r.upper = agreed.uppers[i] == kEscaped ? -1 : std::max(agreed.uppers[i], r.lower + 1);
    r.key = keyed ? agreed.key(i) : 0;
    v.requests.push_back(r);
  }
  if (plan) {
    for (size_t b = 0; b < plan->request_of.size() && b < plan->plan.offsets.size(); ++b) {
      if (plan->request_of[b] < v.requests.size()) v.requests[plan->request_of[b]].offset = plan->plan.offsets[b];
    }
  }
  return v;
}

// The agreed profile of a saved variant, and its offsets per request; false
// when it cannot be this unit's (another identity; keyed requests out of
// the canonical order, which the keyed adapters' tables need).
bool to_profile(const SavedVariant& v, bool keyed, Profile& p, std::vector<int64_t>& offsets) {
  if (v.keyed != keyed || v.requests.empty()) return false;
  for (size_t i = 0; i < v.requests.size(); ++i) {
    const SavedRequest& r = v.requests[i];
    if (keyed && i > 0) {
      const SavedRequest& before = v.requests[i - 1];
      if (r.key < before.key || (r.key == before.key && r.lower <= before.lower)) return false;
    }
    if (!keyed && r.lower != static_cast<int64_t>(i)) return false;
    p.requests.push_back({r.size, r.alignment});
    p.uppers.push_back(r.upper < 0 ? kEscaped : r.upper);
    if (keyed) p.keys.push_back({r.key, r.lower});
    offsets.push_back(r.offset);
  }
  return true;
}

}  // namespace

std::vector<SavedVariant> Learner::saved_variants() const {
  const bool keyed = identity_ == RequestIdentity::kKeyed;
  std::vector<SavedVariant> out;
  auto savable = [](const Profile& p) { return p.size() > 0 && p.size() <= kMaxSavedRequests && !p.overflowed; };
  if (active_ && savable(agreed_)) out.push_back(to_saved(key_, agreed_after_, agreed_, active_, keyed));
  for (const Parked& v : parked_) {
    if (v.plan && savable(v.agreed)) out.push_back(to_saved(v.key, v.after, v.agreed, v.plan, keyed));
  }
  // The first iteration, when no plan was made of it (it agreed with no
  // other): saved without offsets, planned when it is loaded.
  const bool first_saved =
      std::any_of(out.begin(), out.end(), [this](const SavedVariant& v) { return v.key == first_key_; });
  if (!first_saved && first_key_ != 0 && savable(first_profile_) && !out.empty()) {
    out.push_back(to_saved(first_key_, 0, first_profile_, nullptr, keyed));
  }
  // First runs that no agreed profile covers (a shape's state-making run),
  // without offsets: a loading process serves such a run when it follows
  // the same variant.
  for (const FirstRun& f : first_runs_) {
    if (savable(f.profile) &&
        std::none_of(out.begin(), out.end(), [&f](const SavedVariant& o) { return o.key == f.key; })) {
      out.push_back(to_saved(f.key, f.after, f.profile, nullptr, keyed));
    }
  }
  // Seeds loaded and not run yet in this process stay in the file.
  for (const SavedVariant& v : seeds_waiting_) {
    if (std::none_of(out.begin(), out.end(), [&v](const SavedVariant& o) { return o.key == v.key; })) out.push_back(v);
  }
  // The variant the unit ran first leads: a seeded unit starts with it.
  std::stable_partition(out.begin(), out.end(), [this](const SavedVariant& v) { return v.key == first_key_; });
  if (out.size() > kMaxSavedVariants) out.resize(kMaxSavedVariants);  // what a plan file holds per unit
  return out;
}

PreparedPlan* Learner::plan_seed(const SavedVariant& v, const Planning& planning, Profile& agreed) {
  std::vector<int64_t> offsets;
  if (!to_profile(v, identity_ == RequestIdentity::kKeyed, agreed, offsets)) return nullptr;
  StatusOr<std::unique_ptr<PreparedPlan>> prepared = plan_with_tables(agreed, config_, planning.tables, &offsets);
  if (!prepared.ok()) {
    counters_.plan_failures.bump();
    return nullptr;
  }
  plans_.push_back(std::move(prepared).value());
  counters_.plans_made.bump();
  counters_.plans_loaded.bump();
  return plans_.back().get();
}

SavedUnit Learner::saved_unit(std::string name) const {
  SavedUnit unit{.name = std::move(name), .variants = saved_variants(), .course = {}};
  if (!unit.variants.empty() && predicting()) unit.course.assign(course_, course_ + course_size_);
  return unit;
}

size_t Learner::seed(const SavedUnit& unit, const Planning& planning, Adapter& adapter) {
  const std::vector<SavedVariant>& variants = unit.variants;
  const std::vector<uint64_t>& course = unit.course;
  if (phase_ == ReplayPhase::kBackingOnly || !slab_.base()) return 0;
  const bool keyed = identity_ == RequestIdentity::kKeyed;
  size_t taken = 0;
  try {
    // The first variant that can be planned runs now; the rest wait for
    // their first iteration in this process.
    for (const SavedVariant& v : variants) {
      if (taken > 0) {
        if (v.keyed == keyed && !v.requests.empty()) {
          seeds_waiting_.push_back(v);
          ++taken;
        }
        continue;
      }
      Profile agreed;
      PreparedPlan* plan = plan_seed(v, planning, agreed);
      if (!plan) continue;
      enter(v.key);
      std::swap(agreed_, agreed);
      agreed_after_ = v.after;
      agreements_ = agreements_needed();
      ++generation_;
      phase_ = ReplayPhase::kReplaying;
      active_ = plan;
      ++taken;
    }
  } catch (...) {
    // Out of memory while seeding: what was taken stays, the rest is learnt.
  }
  if (taken == 0) return 0;
  if (first_key_ == 0) first_key_ = key_;
  // A course that starts with the variant seeded first guides the predictions.
  if (predicting() && !course.empty() && course.front() == key_) {
    loaded_course_size_ = std::min(course.size(), kMaxSavedCourse);
    std::copy_n(course.begin(), loaded_course_size_, loaded_course_);
    on_course_ = 0;
  }
  // Note [Predicted variants]: after the first iteration the prediction is
  // the variant the saving run went on with (saved second), not the first
  // again.
  if (predicting() && variants.size() > 1) seeded_next_ = variants[1].key;
  evict_to_bounds(adapter);
  // Note [Trim before the slab], as for a plan made at a boundary.
  if (worth_trimming()) planning.backing.release_free_memory();
  activate(adapter);
  return taken;
}

void Learner::adopt_seed(uint64_t key, const Planning& planning, Adapter& adapter) {
  auto found =
      std::find_if(seeds_waiting_.begin(), seeds_waiting_.end(), [key](const SavedVariant& v) { return v.key == key; });
  if (found == seeds_waiting_.end()) return;
  const SavedVariant seed = std::move(*found);
  seeds_waiting_.erase(found);
  if (key == key_ && active_) return;  // the running variant planned itself meanwhile
  Profile agreed;
  PreparedPlan* plan = plan_seed(seed, planning, agreed);
  if (!plan) return;
  if (key == key_) {
    // The running variant: its profile and any job for it give way to the seed.
    if (job_) orphans_.push_back(std::move(job_));
    std::swap(agreed_, agreed);
    agreed_after_ = seed.after;
    agreements_ = agreements_needed();
    ++generation_;
    active_ = plan;
    evict_to_bounds(adapter);
    activate(adapter);
    return;
  }
  // Another variant (a mispredicted iteration's): parked with its plan.
  auto parked = std::find_if(parked_.begin(), parked_.end(), [key](const Parked& v) { return v.key == key; });
  if (parked != parked_.end()) {
    if (parked->job) orphans_.push_back(std::move(parked->job));
    parked_.erase(parked);
  }
  Parked v;
  v.key = key;
  v.last_use = uses_;
  v.phase = ReplayPhase::kReplaying;
  v.agreements = agreements_needed();
  std::swap(v.agreed, agreed);
  v.generation = ++generation_;
  v.plan = plan;
  v.after = seed.after;
  parked_.push_back(std::move(v));
  evict_to_bounds(adapter);
}

bool Learner::drop_seed(Adapter& adapter) {
  // The first iteration, or a later one when no seeded plan has served a
  // request yet (a start-up whose blocks are all resident, Note [Resident
  // blocks] in device_replay.cc, is an iteration that serves none).
  if (counters_.plans_loaded.get() == 0) return false;
  if (counters_.iterations.get() != 0 && counters_.served.get() != 0) return false;
  if (phase_ != ReplayPhase::kReplaying || !serving_ || adapter.slab_in_use()) return false;
  std::unique_lock<std::mutex> mapping(slab_mutex_, std::try_to_lock);
  if (!mapping.owns_lock()) return false;
  withdraw(adapter);
  slab_.release();
  parked_.clear();
  seeds_waiting_.clear();
  active_ = nullptr;
  agreed_.clear();
  agreements_ = 0;
  ++generation_;
  phase_ = ReplayPhase::kProfiling;
  current_.clear();
  current_.overflowed = true;  // the rest of this iteration is not a profile of it
  prune_plans();
  counters_.slab_bytes.set(0);
  counters_.planned_buffers.set(0);
  counters_.arena_bytes.set(0);
  return true;
}

}  // namespace memplan::runtime
