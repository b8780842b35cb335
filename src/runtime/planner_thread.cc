// planner_thread.cc — the planner thread (planner_thread.h) and the
// learner's side of background planning (Learner::plan_in_background).
//
// Note [Planning at exit]. No planner thread runs once exit() reaches the
// handlers registered before it: when a planner thread takes its first job
// it registers BackgroundPlanner::stop_all_at_exit, which sets a flag that
// every plan polls (PlanOptions::cancel; a plan in progress stops within
// milliseconds and is not adopted) and joins every planner thread of the
// process; the planner registry is never destroyed. Plans made after it,
// at exit-time boundaries, are cancelled too. Without it a plan read
// destroyed statics in 1 of ~50 runs of the transformer benchmark. Record:
// docs/history/runtime.md, "The learner's rules: the record".
//
// Note [Trim after adoption]. Adopting a background plan queues a job that
// trims the backing allocator once more on the planner thread, off the
// boundary: the trim after planning came while the unit still held a
// profiled iteration's blocks, which the backing allocator then kept cached
// under the slab (resnet18 training 15 MB, 4%, higher than planning at the
// boundary). Record: docs/history/runtime.md, "The learner's rules: the
// record".
//
// Note [Pre-fault after adoption]. The planner thread maps a background
// plan's slab without faulting its pages in, and the job queued at adoption
// faults them in after its trim (MADV_POPULATE_WRITE keeps their contents,
// so the owner may serve meanwhile): pre-faulted at planning time, the slab
// was resident beside the profiled iteration's blocks (a mobilenet_v2
// training step peaked at 389 MiB against 341 MiB). Record:
// docs/history/runtime.md, "Smaller measurements behind the design".
#include "runtime/planner_thread.h"

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/learner.h"
#include "runtime/os/os_memory.h"

namespace memplan::runtime {
namespace {
std::atomic<bool> g_exiting{false};
// The planner threads' states in this process (BackgroundPlanner::State*),
// for the exit handler; a slot is taken when a thread starts.
constexpr size_t kMaxPlannerThreads = 64;
std::atomic<void*> g_planner_states[kMaxPlannerThreads];
}  // namespace

const std::atomic<bool>& planning_cancelled_at_exit() { return g_exiting; }

// Background planning, step by step, at each boundary where the unit's
// last K iterations agree (a job may have been queued one boundary earlier,
// Note [Plans ahead of agreement]):
//   1. no job: copy the agreed profile into a job and queue it for the
//      planner thread; the unit keeps profiling (the plan is not awaited).
//      Where this process has no planner thread (before the first mark, in a
//      fork child, or when none could be started), plan at the boundary;
//   2. a job not done: keep profiling;
//   3. a job done: if it planned the current agreed profile (same generation:
//      the same requests and lifetimes since it was queued), adopt the plan
//      the planner thread prepared with try_plan, which commits the slab and
//      publishes — the only stall; else drop it and go to 1;
//   4. a job queued by another process (this is a fork child; the planner
//      thread stayed in the parent, and may be using it there): leave it,
//      never destroyed, and go to 1.
// Costs per plan: one copy of the profile, one lock and one wake-up.
void Learner::plan_in_background(const Planning& planning, Adapter& adapter) {
  const int64_t process = os::process_id();
  if (job_) {
    PlanJob& job = *job_;
    if (job.process != process) {
      (void)job_.release();
    } else if (!job.done.load(std::memory_order_acquire)) {
      return;
    } else if (job.generation == generation_ ||
               (keeps_agreed() && job.structure == structure_key_of(agreed_, !config_.upper_bound_plans))) {
      // A plan of the agreed profile before its lifetimes widened or its
      // maxima grew (the first runs of a shape often free a little later) is
      // still safe to serve — replay checks sizes and liveness — so it is
      // adopted rather than dropped, and the widened profile is planned
      // again at once, as a growth (Note [Upper-bound plans]).
      const bool stale = job.generation != generation_;
      if (serving_ && adapter.slab_in_use()) {
        counters_.plan_failures.bump();  // the old slab still holds live blocks: adopt at a later boundary
        return;
      }
      // try_plan consumes the prepared plan unless the slab is being grown for
      // another job (then the job waits for a later boundary).
      plan_now(planning, adapter, job_.get());
      if (job_ && !job_->prepared) job_.reset();
      if (stale && phase_ == ReplayPhase::kReplaying) growing_ = true;
      return;
    } else {
      job_.reset();
    }
  }
  if (!planning.planner->running_here()) {
    plan_now(planning, adapter, nullptr);
    return;
  }
  queue_job(planning);
}

// Note [Plans ahead of agreement] (learner.cc): queues the agreed profile
// one agreement early, so that the agreeing boundary finds its plan done
// (step 3 above). Adopts nothing; where no planner thread runs, the
// agreeing boundary plans.
void Learner::plan_ahead(const Planning& planning) {
  if (!planning.planner->running_here()) return;
  if (job_) {
    if (job_->process != os::process_id()) {
      (void)job_.release();
    } else if (job_->generation == generation_) {
      return;  // this very profile is being planned
    } else if (!job_->done.load(std::memory_order_acquire)) {
      orphans_.push_back(std::move(job_));  // a plan of another profile: dropped once done
    } else {
      job_.reset();
    }
  }
  queue_job(planning);
}

// Copies the agreed profile into a job and queues it for the planner thread.
void Learner::queue_job(const Planning& planning) {
  const int64_t process = os::process_id();
  auto job = std::make_unique<PlanJob>();
  job->profile = agreed_;
  job->config = &config_;
  job->structure = structure_key_of(agreed_, !config_.upper_bound_plans);
  job->slab = &slab_;
  job->slab_mutex = &slab_mutex_;
  job->huge_pages = config_.huge_pages;
  job->trim = worth_trimming();
  job->generation = generation_;
  job->process = process;
  planning.planner->submit(job.get());
  job_ = std::move(job);
}

void Learner::forget_foreign_job(int64_t process) {
  if (job_ && job_->process != process) (void)job_.release();
  for (Parked& v : parked_) {
    if (v.job && v.job->process != process) (void)v.job.release();
  }
  for (std::unique_ptr<PlanJob>& j : orphans_) {
    if (j && j->process != process) (void)j.release();
  }
}

// ---------------------------------------------------------------------------
// The planner thread.

struct BackgroundPlanner::State {
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<PlanJob*> queue;  // under mutex
  bool stop = false;            // under mutex
  int64_t process = 0;          // the process the thread runs in
  std::thread thread;
};

BackgroundPlanner::BackgroundPlanner(const PlanTables& tables, BackingAllocator& backing, void (*on_thread_start)())
    : tables_(tables), backing_(backing), on_thread_start_(on_thread_start), creator_process_(os::process_id()) {}

BackgroundPlanner::~BackgroundPlanner() {
  State* s = state_.load(std::memory_order_acquire);
  if (!s || s->process != os::process_id()) return;  // a fork child's copy: never destroyed
  for (std::atomic<void*>& slot : g_planner_states) {
    void* expected = s;
    if (slot.compare_exchange_strong(expected, nullptr)) break;
  }
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->stop = true;
  }
  s->wake.notify_one();
  if (s->thread.joinable()) s->thread.join();  // stop_all_at_exit may have joined it
  delete s;
}

void BackgroundPlanner::stop_all_at_exit() {
  g_exiting.store(true, std::memory_order_release);
  const int64_t process = os::process_id();
  for (std::atomic<void*>& slot : g_planner_states) {
    auto* s = static_cast<State*>(slot.load(std::memory_order_acquire));
    if (!s || s->process != process) continue;
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->stop = true;
    }
    s->wake.notify_one();
    if (s->thread.joinable() && s->thread.get_id() != std::this_thread::get_id()) s->thread.join();
  }
}

void BackgroundPlanner::ensure_started() {
  const int64_t process = os::process_id();
  if (process != creator_process_ || state_.load(std::memory_order_acquire)) return;
  auto fresh = std::make_unique<State>();
  fresh->process = process;
  try {
    fresh->thread = std::thread([this, s = fresh.get()] { run(*s); });
  } catch (...) {
    return;  // no thread: boundaries plan synchronously
  }
  for (std::atomic<void*>& slot : g_planner_states) {
    void* expected = nullptr;
    if (slot.compare_exchange_strong(expected, fresh.get())) break;
  }
  state_.store(fresh.release(), std::memory_order_release);
}

bool BackgroundPlanner::running_here() const {
  const State* s = state_.load(std::memory_order_acquire);
  return s && s->process == os::process_id();
}

void BackgroundPlanner::submit(PlanJob* job) {
  State& s = *state_.load(std::memory_order_acquire);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.queue.push_back(job);
  }
  s.wake.notify_one();
}

void BackgroundPlanner::run(State& s) {
  if (on_thread_start_) on_thread_start_();
  std::unique_lock<std::mutex> lock(s.mutex);
  while (true) {
    s.wake.wait(lock, [&s] { return s.stop || !s.queue.empty(); });
    if (s.stop) return;  // queued jobs stay not done; their learners are going away too
    PlanJob* j = s.queue.front();
    s.queue.erase(s.queue.begin());
    lock.unlock();
    if (j->prefault_only) {  // Notes [Trim after adoption], [Pre-fault after adoption]
      if (j->trim) backing_.release_free_memory();
      {
        std::lock_guard<std::mutex> mapping(*j->slab_mutex);
        j->slab->prefault(j->prefault_bytes);
      }
      j->done.store(true, std::memory_order_release);
      lock.lock();
      continue;
    }
    static std::once_flag exit_handler;  // Note [Planning at exit]
    std::call_once(exit_handler, [] { std::atexit(&BackgroundPlanner::stop_all_at_exit); });
    try {
      j->prepared.emplace(plan_with_tables(j->profile, *j->config, tables_));
      j->profile = Profile{};
      // Note [Trim before the slab], off the owner's boundary: by now the
      // planner's memory and the profiled blocks are free.
      if (j->trim) backing_.release_free_memory();
      // The slab's commit, off the owner's boundary too: only the pages past
      // its mapping, which nothing is served from, and not faulted in until
      // the plan is adopted (Note [Pre-fault after adoption]).
      if (j->slab && j->prepared->ok()) {
        std::lock_guard<std::mutex> mapping(*j->slab_mutex);
        (void)j->slab->commit(static_cast<size_t>((**j->prepared)->arena), j->huge_pages, /*prefault=*/false);
      }
    } catch (...) {
      j->prepared.emplace(Internal("out of memory while planning in the background"));
    }
    j->done.store(true, std::memory_order_release);
    plans_finished_.fetch_add(1, std::memory_order_acq_rel);
    lock.lock();
  }
}

}  // namespace memplan::runtime
