// torch_allocator.cc — the operator-scoped replay allocator for libtorch's CPU
// tensors (torch_allocator.h has the contract and Note [Operator-scoped safety]).
//
// Algorithm:
//   1. A RecordFunction start callback pushes a frame for the operator on the
//      calling thread's stack: frame key = mix(hash(name), n), n = how many
//      times the thread entered that name in this iteration; the end callback
//      pops it. A request's key is mix(frame key, index of the request in the
//      frame), or mix(outside, index among the thread's requests outside any
//      operator). Per-thread counters restart when the iteration epoch moves.
//   2. Profiling: each request gets the next tick of the iteration and goes
//      to c10::alloc_cpu; its free closes its lifetime [tick, ticks so far).
//      At the boundary the iteration's plannable records (unique key, freed in
//      the iteration, size >= min_planned_size) sorted by key are its
//      signature; when the last K signatures are equal, step 3.
//   3. Planning: one buffer per plannable key, lifetime the union over the K
//      profiles, alignment 64 (c10's); planned by config.planner, checked by
//      memplan::validate, slab committed to the arena. Each entry's list of
//      entries overlapping it in bytes comes from a sweep over the entries
//      sorted by offset.
//   4. Replay: key → entry (hash map); served when size fits, the entry is not
//      live and no entry of its overlap list is live; a free of a slab pointer
//      maps offset → live entry (hash map) and clears it.
//
// Complexity: a request costs O(1) expected for the key and the lookup plus
// the length of its overlap list (the buffers sharing its bytes; tens in the
// torchvision plans); a free O(1) expected. Planning costs the planner's time
// plus O(n log n + overlaps) for n planned buffers. Memory: O(n + overlaps)
// for the plan, O(requests of the iteration) while profiling.
#include "runtime/torch/torch_allocator.h"

#include <ATen/record_function.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "memplan/planner.h"
#include "memplan/problem.h"
#include "memplan/validate.h"
#include "runtime/os/os_memory.h"
#include "runtime/slab.h"

namespace memplan::torch_serving {
namespace {

// c10's tensor alignment (c10/core/alignment.h, gAlignment on Linux).
constexpr int64_t kAlignment = 64;
constexpr uint64_t kOutsideOperators = 0x6f75747369646521ULL;
constexpr size_t kMaxAllocators = 8;

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 29;
  return x;
}

uint64_t hash_name(const char* name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (const char* c = name; c != nullptr && *c != '\0'; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ULL;
  return h;
}

// The iteration every thread's counters belong to; mark() moves it.
std::atomic<uint64_t> g_epoch{1};

struct Frame {
  uint64_t key;
  uint64_t requests;
};

struct ThreadContext {
  uint64_t epoch = 0;
  std::vector<Frame> frames;
  std::unordered_map<uint64_t, uint64_t> invocations;  // name hash -> entries this iteration
  uint64_t outside_requests = 0;

  void catch_up() {
    const uint64_t now = g_epoch.load(std::memory_order_acquire);
    if (epoch != now) {
      // Frames open across the boundary keep their keys; only the counts restart.
      invocations.clear();
      outside_requests = 0;
      epoch = now;
    }
  }
};

ThreadContext& thread_context() {
  thread_local ThreadContext context;
  return context;
}

std::atomic<uint64_t> g_operator_count{0};

std::unique_ptr<at::ObserverContext> on_operator_start(const at::RecordFunction& fn) {
  ThreadContext& context = thread_context();
  context.catch_up();
  const uint64_t name = hash_name(fn.name());
  const uint64_t n = ++context.invocations[name];
  context.frames.push_back({mix(name, n), 0});
  g_operator_count.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void on_operator_end(const at::RecordFunction&, at::ObserverContext*) {
  ThreadContext& context = thread_context();
  // A callback registered while an operator ran sees its end without its start.
  if (!context.frames.empty()) context.frames.pop_back();
}

uint64_t next_request_key() {
  ThreadContext& context = thread_context();
  context.catch_up();
  if (context.frames.empty()) return mix(kOutsideOperators, ++context.outside_requests);
  Frame& frame = context.frames.back();
  return mix(frame.key, ++frame.requests);
}

struct Record {
  uint64_t key;
  int64_t size;
  int64_t lower;
  int64_t upper;  // -1 while live
};

struct Signature {
  std::vector<std::pair<uint64_t, int64_t>> plannable;  // (key, size), sorted
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> lifetimes;  // key -> [lower, upper)
  std::unordered_set<uint64_t> unplannable;
};

struct Entry {
  uint64_t key;
  int64_t size;
  int64_t offset;
  std::vector<int32_t> overlaps;  // entries sharing bytes with this one
  bool live = false;
};

}  // namespace

struct TorchReplayAllocator::Impl {
  ReplayConfig config;
  void* window = nullptr;
  size_t window_bytes = 0;
  runtime::Slab slab;

  mutable std::mutex mutex;
  std::atomic<TorchReplayPhase> phase{TorchReplayPhase::kProfiling};
  TorchReplayStats stats;
  c10::Allocator* previous = nullptr;
  at::CallbackHandle callback = at::INVALID_CALLBACK_HANDLE;
  bool installed = false;

  // Profiling.
  int64_t tick = 0;
  std::vector<Record> records;
  std::unordered_map<void*, size_t> profiling_live;  // pointer -> index in records
  std::deque<Signature> history;

  // Replay.
  Problem problem;
  Plan plan;
  std::vector<Entry> entries;
  std::unordered_map<uint64_t, int32_t> entry_of_key;
  std::unordered_set<uint64_t> unplanned_keys;
  std::unordered_map<int64_t, int32_t> live_at_offset;
  int64_t live_slab_blocks = 0;
  bool iteration_deviated = false;
  int64_t deviating_streak = 0;

  bool in_slab(const void* p) const {
    return static_cast<size_t>(static_cast<const unsigned char*>(p) - static_cast<const unsigned char*>(window)) <
           window_bytes;
  }

  void* allocate(size_t bytes);
  void free_slab(void* p);
  void note_free(void* p);
  void mark();
  Signature finish_profile();
  void try_plan();
};

namespace {

// Allocators whose slabs may still hold live blocks (the deleter looks here).
std::array<std::atomic<TorchReplayAllocator::Impl*>, kMaxAllocators> g_allocators{};
std::atomic<TorchReplayAllocator::Impl*> g_installed{nullptr};

void delete_block(void* p) {
  if (p == nullptr) return;
  for (auto& slot : g_allocators) {
    TorchReplayAllocator::Impl* impl = slot.load(std::memory_order_acquire);
    if (impl != nullptr && impl->in_slab(p)) {
      impl->free_slab(p);
      return;
    }
  }
  TorchReplayAllocator::Impl* installed = g_installed.load(std::memory_order_acquire);
  if (installed != nullptr && installed->phase.load(std::memory_order_relaxed) == TorchReplayPhase::kProfiling) {
    installed->note_free(p);
  }
  c10::free_cpu(p);
}

}  // namespace

void* TorchReplayAllocator::Impl::allocate(size_t bytes) {
  if (bytes == 0) return c10::alloc_cpu(0);
  const uint64_t key = next_request_key();
  const auto size = static_cast<int64_t>(bytes);
  std::unique_lock lock(mutex);
  switch (phase.load(std::memory_order_relaxed)) {
    case TorchReplayPhase::kBackingOnly:
      lock.unlock();
      return c10::alloc_cpu(bytes);
    case TorchReplayPhase::kProfiling: {
      lock.unlock();
      void* p = c10::alloc_cpu(bytes);  // throws c10::Error when out of memory, as the default does
      lock.lock();
      ++stats.profiled;
      profiling_live[p] = records.size();
      records.push_back({key, size, tick, -1});
      ++tick;
      return p;
    }
    case TorchReplayPhase::kReplaying:
      break;
  }
  const auto found = entry_of_key.find(key);
  if (found == entry_of_key.end()) {
    if (unplanned_keys.count(key) != 0) {
      ++stats.unplanned;
    } else {
      ++stats.fallback;
      iteration_deviated = true;
    }
    lock.unlock();
    return c10::alloc_cpu(bytes);
  }
  Entry& entry = entries[static_cast<size_t>(found->second)];
  bool busy = entry.live;
  for (size_t k = 0; !busy && k < entry.overlaps.size(); ++k) busy = entries[static_cast<size_t>(entry.overlaps[k])].live;
  if (size > entry.size || busy) {
    ++stats.fallback;
    if (busy) {
      ++stats.busy;
    } else {
      iteration_deviated = true;
    }
    lock.unlock();
    return c10::alloc_cpu(bytes);
  }
  entry.live = true;
  live_at_offset[entry.offset] = found->second;
  ++live_slab_blocks;
  ++stats.served;
  return slab.base() + entry.offset;
}

void TorchReplayAllocator::Impl::free_slab(void* p) {
  const int64_t offset = static_cast<unsigned char*>(p) - static_cast<unsigned char*>(window);
  std::lock_guard lock(mutex);
  const auto found = live_at_offset.find(offset);
  // The deleter is only ever given pointers this allocator handed out, each
  // once; a miss would be a bug in c10 or here, and is ignored rather than
  // passed to free().
  if (found == live_at_offset.end()) return;
  entries[static_cast<size_t>(found->second)].live = false;
  live_at_offset.erase(found);
  --live_slab_blocks;
}

void TorchReplayAllocator::Impl::note_free(void* p) {
  std::lock_guard lock(mutex);
  const auto found = profiling_live.find(p);
  if (found == profiling_live.end()) return;
  records[found->second].upper = tick;
  profiling_live.erase(found);
}

Signature TorchReplayAllocator::Impl::finish_profile() {
  Signature signature;
  std::unordered_map<uint64_t, int> seen;
  for (const Record& r : records) ++seen[r.key];
  for (const Record& r : records) {
    const bool plannable = seen[r.key] == 1 && r.upper >= 0 && r.size >= config.min_planned_size;
    if (plannable) {
      signature.plannable.emplace_back(r.key, r.size);
      signature.lifetimes[r.key] = {r.lower, std::max(r.upper, r.lower + 1)};
    } else {
      signature.unplannable.insert(r.key);
    }
  }
  std::sort(signature.plannable.begin(), signature.plannable.end());
  // Blocks still live belong to no profile any more; their frees pass through.
  records.clear();
  profiling_live.clear();
  tick = 0;
  return signature;
}

void TorchReplayAllocator::Impl::try_plan() {
  const auto k = static_cast<size_t>(std::max<int64_t>(config.profile_iterations, 1));
  if (history.size() < k) return;
  const Signature& first = history.front();
  if (first.plannable.empty()) return;
  for (const Signature& s : history) {
    if (s.plannable != first.plannable) return;
  }
  if (live_slab_blocks != 0) {  // the new plan would reuse bytes that are still in use
    ++stats.plan_failures;
    return;
  }
  Problem next;
  next.alignment = kAlignment;
  next.buffers.reserve(first.plannable.size());
  for (size_t i = 0; i < first.plannable.size(); ++i) {
    const uint64_t key = first.plannable[i].first;
    Buffer b;
    b.id = std::to_string(i);
    b.size = first.plannable[i].second;
    b.alignment = kAlignment;
    b.lower = INT64_MAX;
    b.upper = INT64_MIN;
    for (const Signature& s : history) {
      const auto& [lower, upper] = s.lifetimes.at(key);
      b.lower = std::min(b.lower, lower);
      b.upper = std::max(b.upper, upper);
    }
    next.buffers.push_back(std::move(b));
  }
  PlanOptions options;
  options.time_limit_seconds = config.plan_time_limit_seconds;
  StatusOr<Plan> planned = plan_with(config.planner, next, options);
  if (!planned.ok() || !validate(next, *planned).ok() || planned->arena > static_cast<int64_t>(window_bytes) ||
      !slab.commit(static_cast<size_t>(planned->arena), config.huge_pages).ok()) {
    // A planner that errs or a plan that does not fit will do so again.
    ++stats.plan_failures;
    phase.store(TorchReplayPhase::kBackingOnly, std::memory_order_relaxed);
    return;
  }
  problem = std::move(next);
  plan = std::move(*planned);
  entries.clear();
  entry_of_key.clear();
  live_at_offset.clear();
  for (size_t i = 0; i < problem.buffers.size(); ++i) {
    entries.push_back({first.plannable[i].first, problem.buffers[i].size, plan.offsets[i], {}, false});
    entry_of_key[first.plannable[i].first] = static_cast<int32_t>(i);
  }
  std::vector<int32_t> by_offset(entries.size());
  for (size_t i = 0; i < by_offset.size(); ++i) by_offset[i] = static_cast<int32_t>(i);
  std::sort(by_offset.begin(), by_offset.end(),
            [&](int32_t a, int32_t b) { return entries[static_cast<size_t>(a)].offset < entries[static_cast<size_t>(b)].offset; });
  for (size_t a = 0; a < by_offset.size(); ++a) {
    Entry& ea = entries[static_cast<size_t>(by_offset[a])];
    for (size_t b = a + 1; b < by_offset.size(); ++b) {
      Entry& eb = entries[static_cast<size_t>(by_offset[b])];
      if (eb.offset >= ea.offset + ea.size) break;
      ea.overlaps.push_back(by_offset[b]);
      eb.overlaps.push_back(by_offset[a]);
    }
  }
  unplanned_keys.clear();
  for (const Signature& s : history) unplanned_keys.insert(s.unplannable.begin(), s.unplannable.end());
  history.clear();
  ++stats.plans;
  stats.slab_bytes = slab.mapped_bytes();
  stats.planned_buffers = entries.size();
  iteration_deviated = false;
  deviating_streak = 0;
  phase.store(TorchReplayPhase::kReplaying, std::memory_order_relaxed);
}

void TorchReplayAllocator::Impl::mark() {
  std::lock_guard lock(mutex);
  g_epoch.fetch_add(1, std::memory_order_acq_rel);
  ++stats.iterations;
  switch (phase.load(std::memory_order_relaxed)) {
    case TorchReplayPhase::kBackingOnly:
      return;
    case TorchReplayPhase::kProfiling: {
      history.push_back(finish_profile());
      while (history.size() > static_cast<size_t>(std::max<int64_t>(config.profile_iterations, 1))) history.pop_front();
      try_plan();
      return;
    }
    case TorchReplayPhase::kReplaying:
      if (!iteration_deviated) {
        deviating_streak = 0;
        return;
      }
      iteration_deviated = false;
      ++stats.deviations;
      if (++deviating_streak >= config.deviations_to_reprofile) {
        ++stats.reprofiles;
        deviating_streak = 0;
        history.clear();
        records.clear();
        profiling_live.clear();
        tick = 0;
        phase.store(TorchReplayPhase::kProfiling, std::memory_order_relaxed);
      }
      return;
  }
}

StatusOr<std::unique_ptr<TorchReplayAllocator>> TorchReplayAllocator::create(const ReplayConfig& config) {
  if (config.max_slab_bytes <= 0) return InvalidArgument("max_slab_bytes must be positive");
  if (find_planner(config.planner) == nullptr) return NotFound("no planner named '" + config.planner + "'");
  const size_t page = runtime::os::page_size();
  const size_t bytes = (static_cast<size_t>(config.max_slab_bytes) + page - 1) / page * page;
  void* window = runtime::os::reserve(bytes);
  if (window == nullptr) return CapacityExceeded("cannot reserve " + std::to_string(bytes) + " bytes of address space");
  auto* impl = new Impl;
  impl->config = config;
  impl->window = window;
  impl->window_bytes = bytes;
  impl->slab = runtime::Slab(window, bytes);
  for (auto& slot : g_allocators) {
    Impl* expected = nullptr;
    if (slot.compare_exchange_strong(expected, impl)) return std::unique_ptr<TorchReplayAllocator>(new TorchReplayAllocator(impl));
  }
  runtime::os::release(window, bytes);
  delete impl;
  return CapacityExceeded("more than " + std::to_string(kMaxAllocators) + " TorchReplayAllocators at once");
}

TorchReplayAllocator::~TorchReplayAllocator() {
  uninstall();
  std::unique_lock lock(impl_->mutex);
  // Tensors still holding slab blocks will call the deleter later: keep the
  // slab and the state registered for them.
  if (impl_->live_slab_blocks != 0) return;
  lock.unlock();
  for (auto& slot : g_allocators) {
    Impl* expected = impl_;
    slot.compare_exchange_strong(expected, nullptr);
  }
  impl_->slab.release();
  runtime::os::release(impl_->window, impl_->window_bytes);
  delete impl_;
}

Status TorchReplayAllocator::install() {
  Impl* expected = nullptr;
  if (!g_installed.compare_exchange_strong(expected, impl_)) {
    return expected == impl_ ? Status::Ok() : InvalidArgument("another TorchReplayAllocator is installed");
  }
  impl_->previous = c10::GetCPUAllocator();
  // Priority 255: c10 only lets an equal or higher priority replace an allocator.
  c10::SetCPUAllocator(this, /*priority=*/255);
  impl_->callback = at::addGlobalCallback(at::RecordFunctionCallback(&on_operator_start, &on_operator_end));
  impl_->installed = true;
  return Status::Ok();
}

void TorchReplayAllocator::uninstall() {
  if (!impl_->installed) return;
  at::removeCallback(impl_->callback);
  impl_->callback = at::INVALID_CALLBACK_HANDLE;
  c10::SetCPUAllocator(impl_->previous, /*priority=*/255);
  impl_->installed = false;
  g_installed.store(nullptr, std::memory_order_release);
}

c10::DataPtr TorchReplayAllocator::allocate(size_t bytes) const {
  void* p = impl_->allocate(bytes);
  return {p, p, &delete_block, c10::Device(c10::DeviceType::CPU)};
}

c10::DeleterFnPtr TorchReplayAllocator::raw_deleter() const { return &delete_block; }

void TorchReplayAllocator::mark() { impl_->mark(); }

TorchReplayStats TorchReplayAllocator::stats() const {
  std::lock_guard lock(impl_->mutex);
  TorchReplayStats s = impl_->stats;
  s.operators = g_operator_count.load(std::memory_order_relaxed);
  return s;
}

TorchReplayPhase TorchReplayAllocator::phase() const { return impl_->phase.load(std::memory_order_relaxed); }

Status TorchReplayAllocator::check_invariants() const {
  std::lock_guard lock(impl_->mutex);
  MEMPLAN_RETURN_IF_ERROR(impl_->slab.check_invariants());
  if (impl_->entries.empty()) return Status::Ok();
  const ValidationResult valid = validate(impl_->problem, impl_->plan);
  if (!valid.ok()) return Internal("the served plan is invalid: " + valid.message);
  std::vector<const Entry*> live;
  for (const Entry& e : impl_->entries) {
    if (!e.live) continue;
    const auto found = impl_->live_at_offset.find(e.offset);
    if (found == impl_->live_at_offset.end() || &impl_->entries[static_cast<size_t>(found->second)] != &e) {
      return Internal("live block at offset " + std::to_string(e.offset) + " is not indexed");
    }
    live.push_back(&e);
  }
  if (static_cast<int64_t>(live.size()) != impl_->live_slab_blocks || live.size() != impl_->live_at_offset.size()) {
    return Internal("live block count " + std::to_string(impl_->live_slab_blocks) + " disagrees with " +
                    std::to_string(live.size()) + " live entries");
  }
  std::sort(live.begin(), live.end(), [](const Entry* a, const Entry* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < live.size(); ++i) {
    if (live[i - 1]->offset + live[i - 1]->size > live[i]->offset) {
      return Internal("live slab blocks at offsets " + std::to_string(live[i - 1]->offset) + " and " +
                      std::to_string(live[i]->offset) + " overlap");
    }
  }
  if (!live.empty() && live.back()->offset + live.back()->size > static_cast<int64_t>(impl_->slab.mapped_bytes())) {
    return Internal("a live block ends past the slab");
  }
  return Status::Ok();
}

}  // namespace memplan::torch_serving
