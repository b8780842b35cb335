// planner_thread.h — the planner thread of one allocator
// (ReplayConfig::plan_in_background): plan jobs queued by learners at their
// boundaries, planned, trimmed and mapped off the boundary, adopted at a
// later one (learner.h). Private to memplan's runtime.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "memplan/backing_allocator.h"
#include "memplan/status.h"
#include "runtime/profile.h"
#include "runtime/slab.h"

namespace memplan::runtime {

// A planner run on a BackgroundPlanner: a copy of the agreed profile, and
// the plan prepared from it once `done` is set (release; the owner reads it
// after an acquire load of `done`).
struct PlanJob {
  Profile profile;                       // a copy: the owner keeps profiling meanwhile
  const ReplayConfig* config = nullptr;  // the owner's: how to plan
  // The owner's slab, grown by the planner thread to the plan's arena (the
  // mapping off the owner's boundary; its pages are faulted in after adoption,
  // Note [Pre-fault after adoption]), under slab_mutex; nullptr: not grown.
  Slab* slab = nullptr;
  std::mutex* slab_mutex = nullptr;
  bool huge_pages = false;
  bool trim = false;  // return the backing allocator's free memory after planning (Note [Trim when predictable])
  // Plans nothing: trims (if `trim`) and faults in the slab's first
  // prefault_bytes (Note [Pre-fault after adoption]), queued when a plan is
  // adopted.
  bool prefault_only = false;
  size_t prefault_bytes = 0;  // with prefault_only: the adopted plan's arena, the pages faulted in
  uint64_t generation = 0;    // the owner's Learner generation it plans
  uint64_t structure = 0;     // structure_key_of the profile (sequence identity)
  int64_t process = 0;        // the process that queued it
  std::optional<StatusOr<std::unique_ptr<PreparedPlan>>> prepared;  // set by the planner thread
  std::atomic<bool> done{false};
};

// The planner thread of one allocator in one process. It runs queued jobs
// one at a time; a job stays owned by its learner, which drops it only once
// done. Thread-safe.
class BackgroundPlanner {
 public:
  // `tables`: the adapter's, for every job (plan_with_tables).
  // `on_thread_start` runs first on the planner thread (the replay allocator
  // keeps it from claiming a per-thread record).
  BackgroundPlanner(const PlanTables& tables, BackingAllocator& backing, void (*on_thread_start)() = nullptr);
  // Stops and joins the thread in the process that started it; a fork
  // child's copy of the parent's is left alone (its thread is not there).
  ~BackgroundPlanner();
  BackgroundPlanner(const BackgroundPlanner&) = delete;
  BackgroundPlanner& operator=(const BackgroundPlanner&) = delete;

  // Starts the thread if this process has none. Only from the program's own
  // call (a mark), never from inside malloc or free, where glibc may hold
  // the lock that pthread_create needs; and only in the process that built
  // the planner: a fork child starts no thread (what a child of a
  // multi-threaded process may do is limited; ThreadSanitizer refuses it)
  // and plans at its boundaries.
  void ensure_started();
  // True when the thread runs in the calling process.
  bool running_here() const;
  // Queues a job (running_here() must hold).
  void submit(PlanJob* job);
  // Plans finished by the thread (done set; pre-fault jobs not counted).
  uint64_t plans_finished() const { return plans_finished_.load(std::memory_order_acquire); }

 private:
  struct State;
  void run(State& state);
  // Note [Planning at exit] (planner_thread.cc): an exit handler.
  static void stop_all_at_exit();
  const PlanTables& tables_;
  BackingAllocator& backing_;
  void (*on_thread_start_)();
  int64_t creator_process_;
  std::atomic<State*> state_{nullptr};
  std::atomic<uint64_t> plans_finished_{0};
};

// Note [Planning at exit]: set once the process exits; every plan the
// runtime makes polls it (PlanOptions::cancel).
const std::atomic<bool>& planning_cancelled_at_exit();

}  // namespace memplan::runtime
