// torch_allocator.cc — the operator-scoped replay allocator for libtorch's CPU
// tensors (torch_allocator.h has the contract and Note [Operator-scoped safety]).
//
// The learning cycle (profiles, agreement, planning, validation, the slab,
// re-profiling) is the learner's (runtime/learner.h), shared with the replay
// allocator; this file supplies the keyed request identity and the serving.
//
// Algorithm:
//   1. Request keys come from the operator identity
//      (torch/operator_identity.h, the one RecordFunction callback shared
//      with the trace recorder): mix(invocation key, index of the request in
//      the invocation), or mix(outside, index among the thread's requests
//      outside any operator); the counts restart at each mark. A mark may
//      name the variant of the iteration it starts: a key the program gives,
//      or shape_key() of the next inputs (Note [Keyed plans], runtime/variants.cc).
//   2. Profiling: each request goes to the backing allocator (TorchBacking:
//      c10::alloc_cpu, or mimalloc under MEMPLAN_BACKING=mimalloc) and is
//      recorded by the learner with its key and alignment 64 (c10's); its
//      free closes its lifetime.
//   3. Planning (the learner's; here build_tables() adds the tables): the checked
//      kernel's blocks (runtime/checked_kernel.h), one per planned buffer, and
//      key → block.
//   4. Replay: key → block (hash map), served by the checked kernel (a larger
//      size is told to the learner, which raises the plan's maxima: Note
//      [Upper-bound plans]); a free of a slab pointer goes to the kernel.
//   5. Plan files: load_plans seeds the learner with the file's one unit
//      before the first request (Note [Plans from a file],
//      runtime/learner_saved.cc); saved_plans is the learner's saved variants.
//
// Complexity: a request costs O(1) expected for the key and the lookup plus
// the kernel's serve (the length of the block's overlap list); a free O(1)
// expected. Planning costs the planner's time plus the kernel's
// build_blocks. Memory: O(n + overlaps) for the plan, O(requests of the
// iteration) while profiling.
#include "torch/torch_allocator.h"

#include <ATen/record_function.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <malloc.h>

#include <cstdio>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "memplan/planner.h"
#include "runtime/checked_kernel.h"
#include "runtime/learner.h"
#include "runtime/os/mimalloc_library.h"
#include "runtime/os/os_memory.h"
#include "runtime/plan_files.h"
#include "runtime/slab.h"
#include "torch/operator_identity.h"

namespace memplan::torch_serving {
namespace {

// c10's tensor alignment (c10/core/alignment.h, gAlignment on Linux).
constexpr uint64_t kAlignment = 64;
constexpr size_t kMaxAllocators = 8;
// The plan files' names for this adapter and its one learning unit.
constexpr const char* kAdapter = "libtorch";
constexpr const char* kUnit = "0";

// The checked kernel's plan and the keyed identity's lookup: blocks by key,
// and the keys the plan leaves to c10 (tiny, escaping, ambiguous).
struct TorchPlan final : runtime::CheckedPlan {
  std::unordered_map<uint64_t, int32_t> block_of_key;
  std::unordered_set<uint64_t> unplanned_keys;
};

// The process's mimalloc (MEMPLAN_BACKING=mimalloc), opened by the first
// create() that asks for it and never closed: its blocks outlive every
// allocator.
const runtime::os::MimallocLibrary& mimalloc() {
  static const runtime::os::MimallocLibrary library = runtime::os::open_mimalloc();
  return library;
}

// Note [Trimming mimalloc] (runtime/os/mimalloc_library.cc): mi_collect
// frees the calling thread's heap only, and the trim runs on the planning
// thread (the planner thread under plan_in_background). A trim therefore
// bumps g_collect_epoch, and each thread collects its own heap at its next
// request to mimalloc that sees a newer epoch.
std::atomic<uint32_t> g_collect_epoch{0};
thread_local uint32_t t_collect_epoch = 0;

void collect_this_thread(const runtime::os::MimallocApi& api) {
  t_collect_epoch = g_collect_epoch.load(std::memory_order_relaxed);
  runtime::os::collect_mimalloc(api);
}

// The allocator behind the slab, which serves every request the slab does
// not (ReplayConfig::backing): c10's own CPU allocation (c10::alloc_cpu,
// posix_memalign), or mimalloc's mi_malloc_aligned. Both throw c10::Error
// when out of memory, as c10's default allocator does. The learner uses
// only its trim (Note [Trim before the slab]).
class TorchBacking final : public BackingAllocator {
 public:
  // mimalloc: null for c10's allocation.
  explicit TorchBacking(const runtime::os::MimallocApi* mimalloc) : mimalloc_(mimalloc) {}

  // A tensor's block, aligned as c10's (kAlignment).
  void* allocate_tensor(size_t size) {
    if (mimalloc_ == nullptr) return c10::alloc_cpu(size);
    if (size == 0) return nullptr;  // as c10::alloc_cpu
    if (g_collect_epoch.load(std::memory_order_relaxed) != t_collect_epoch) collect_this_thread(*mimalloc_);
    void* p = mimalloc_->malloc_aligned(size, kAlignment);
    TORCH_CHECK(p != nullptr, "memplan (MEMPLAN_BACKING=mimalloc): not enough memory: you tried to allocate ", size,
                " bytes.");
    return p;
  }
  void* allocate(size_t size, size_t) override { return allocate_tensor(size); }
  void* allocate_zeroed(size_t size) override {
    void* p = allocate_tensor(size);
    std::memset(p, 0, size);
    return p;
  }
  void* reallocate(void*, size_t) override { return nullptr; }  // c10 never reallocates
  void deallocate(void* p) override { mimalloc_ != nullptr ? mimalloc_->free(p) : c10::free_cpu(p); }
  size_t usable_size(void*) override { return 0; }
  void release_free_memory() override {
    malloc_trim(0);
    if (mimalloc_ == nullptr) return;
    g_collect_epoch.fetch_add(1, std::memory_order_relaxed);
    collect_this_thread(*mimalloc_);
  }

 private:
  const runtime::os::MimallocApi* mimalloc_;
};

}  // namespace

// The allocator's state; as the learner's PlanTables it builds a TorchPlan's
// lookups from the plan the learner made, as its Adapter it withdraws and
// publishes one.
struct TorchReplayAllocator::Impl final : runtime::PlanTables, runtime::Learner::Adapter {
  Impl(const ReplayConfig& c, const runtime::os::MimallocApi* mimalloc, c10::DeleterFnPtr d)
      : config(c),
        backing(mimalloc),
        deleter(d),
        learner(config, runtime::RequestIdentity::kKeyed),
        kernel(learner.slab()) {}

  ReplayConfig config;
  void* window = nullptr;
  size_t window_bytes = 0;

  mutable std::mutex mutex;
  TorchBacking backing;
  // Every block's deleter (Note [Block ownership]).
  const c10::DeleterFnPtr deleter;
  runtime::Learner learner;                                 // under mutex
  runtime::CheckedKernel kernel;                            // under mutex: serves the learner's plan
  std::unique_ptr<runtime::BackgroundPlanner> planner;      // plan_in_background only
  std::atomic<ReplayPhase> phase{ReplayPhase::kProfiling};  // the learner's, for frees that take no lock
  c10::Allocator* previous = nullptr;
  std::unique_ptr<torch_identity::Client> identity;  // while installed: operator keys
  bool installed = false;
  bool requested = false;  // under mutex: a request was seen (load_plans comes before)
  std::string program;     // the command line, for plan files (config.plans_file, save_plans_file)

  // Replay (under mutex).
  bool iteration_deviated = false;
  uint32_t iteration_requests = 0;  // requests of the iteration under replay (upper-bound growth)

  bool in_slab(const void* p) const {
    return static_cast<size_t>(static_cast<const unsigned char*>(p) - static_cast<const unsigned char*>(window)) <
           window_bytes;
  }

  void* allocate(size_t bytes);
  void free_slab(void* p);
  void note_free(void* p);
  void mark(uint64_t next_key);

  TorchPlan* plan() const { return static_cast<TorchPlan*>(kernel.plan()); }
  Status load_plans(const PlanFile& file);
  PlanFile saved_plans(const std::string& for_program) const;
  void save_plans() const;

  runtime::BlockLayout layout() const override { return {.max_arena = window_bytes}; }
  std::unique_ptr<runtime::PreparedPlan> new_plan() const override { return std::make_unique<TorchPlan>(); }
  Status build_tables(const runtime::Profile& agreed, runtime::PreparedPlan& planned) const override;
  bool slab_in_use() const override { return kernel.in_use(); }
  void withdraw() override { kernel.withdraw(); }
  void publish(runtime::PreparedPlan& p) override {
    kernel.publish(static_cast<TorchPlan&>(p));
    iteration_deviated = false;
  }
};

namespace {

// Allocators whose slabs may still hold live blocks (the deleter looks here).
std::array<std::atomic<TorchReplayAllocator::Impl*>, kMaxAllocators> g_allocators{};
std::atomic<TorchReplayAllocator::Impl*> g_installed{nullptr};

// Note [Block ownership]: a block belongs to the slab of the allocator whose
// window holds it, or else to the backing allocator of the allocator that
// made it; that one's deleter (its backing's free) is in the block's DataPtr.
// An allocator gives all its blocks one deleter, as c10's raw_deleter()
// promises: delete_block<c10::free_cpu> or delete_block<free_mimalloc>, which
// differ only in the backing's free. mimalloc is never closed, so its blocks
// may be freed after their allocator is gone.
void free_mimalloc(void* p) { mimalloc().api.free(p); }

template <void (*free_backing)(void*)>
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
  if (installed != nullptr && installed->phase.load(std::memory_order_relaxed) == ReplayPhase::kProfiling) {
    installed->note_free(p);
  }
  free_backing(p);
}

}  // namespace

void* TorchReplayAllocator::Impl::allocate(size_t bytes) {
  if (bytes == 0) return backing.allocate_tensor(0);
  const uint64_t key = torch_identity::next_request_key();
  std::unique_lock lock(mutex);
  requested = true;
  runtime::LearnerCounters& counters = learner.counters();
  switch (learner.phase()) {
    case ReplayPhase::kBackingOnly:
      lock.unlock();
      return backing.allocate_tensor(bytes);
    case ReplayPhase::kProfiling: {
      lock.unlock();
      void* p = backing.allocate_tensor(bytes);  // throws c10::Error when out of memory, as the default does
      lock.lock();
      if (learner.phase() == ReplayPhase::kProfiling) learner.record(key, bytes, kAlignment, p);
      return p;
    }
    case ReplayPhase::kReplaying:
      break;
  }
  ++iteration_requests;
  const TorchPlan& serving = *plan();
  const auto found = serving.block_of_key.find(key);
  if (found == serving.block_of_key.end()) {
    if (serving.unplanned_keys.count(key) != 0) {
      counters.unplanned.bump();
    } else {
      counters.fallback.bump();
      iteration_deviated = true;
    }
    lock.unlock();
    return backing.allocate_tensor(bytes);
  }
  const runtime::CheckedKernel::Served got = kernel.serve(found->second, bytes);
  if (got.p != nullptr) {
    counters.served.bump();
    return got.p;
  }
  // Note [Refused requests] (checked_kernel.h): larger deviates, busy does not.
  const uint32_t request = serving.request_of[static_cast<size_t>(found->second)];
  if (runtime::CheckedKernel::count_refused(got, request, bytes, learner)) iteration_deviated = true;
  lock.unlock();
  return backing.allocate_tensor(bytes);
}

void TorchReplayAllocator::Impl::free_slab(void* p) {
  std::lock_guard lock(mutex);
  // The deleter is only ever given pointers this allocator handed out, each
  // once; a miss would be a bug in c10 or here, and is ignored rather than
  // passed to free().
  kernel.free(p);
}

void TorchReplayAllocator::Impl::note_free(void* p) {
  std::lock_guard lock(mutex);
  if (learner.phase() == ReplayPhase::kProfiling) learner.record_end(p, false);
}

Status TorchReplayAllocator::Impl::build_tables(const runtime::Profile& agreed, runtime::PreparedPlan& plan) const {
  auto* next = static_cast<TorchPlan*>(&plan);
  runtime::CheckedKernel::build_blocks(agreed, *next);
  std::vector<bool> planned(agreed.size(), false);
  for (size_t k = 0; k < next->request_of.size(); ++k) {
    const uint32_t request = next->request_of[k];
    planned[request] = true;
    next->block_of_key[agreed.key(request)] = static_cast<int32_t>(k);
  }
  for (size_t i = 0; i < agreed.size(); ++i) {
    if (!planned[i]) next->unplanned_keys.insert(agreed.key(i));
  }
  return Status::Ok();
}

void TorchReplayAllocator::Impl::mark(uint64_t next_key) {
  // Only from the program's own call: starting a thread here is safe.
  if (planner) planner->ensure_started();
  std::lock_guard lock(mutex);
  torch_identity::advance_epoch();
  learner.end_iteration(iteration_deviated, {.tables = *this, .backing = backing, .planner = planner.get()}, *this,
                        iteration_requests, next_key);
  kernel.after_boundary(learner.serving());
  iteration_deviated = false;
  iteration_requests = 0;
  phase.store(learner.phase(), std::memory_order_relaxed);
}

Status TorchReplayAllocator::Impl::load_plans(const PlanFile& file) {
  if (file.adapter != kAdapter) return InvalidArgument("plans of adapter '" + file.adapter + "', not libtorch's");
  const SavedUnit* unit = nullptr;
  for (const SavedUnit& u : file.units) {
    if (u.name != kUnit) return InvalidArgument("unit " + u.name + ": the libtorch allocator's one unit is " + kUnit);
    unit = &u;
  }
  std::lock_guard lock(mutex);
  if (requested) return InvalidArgument("plans must be loaded before the first request");
  if (unit == nullptr || unit->variants.empty()) return Status::Ok();
  const size_t taken = learner.seed(*unit, {.tables = *this, .backing = backing, .planner = planner.get()}, *this);
  if (taken == 0) {
    return InvalidArgument("none of its " + std::to_string(unit->variants.size()) +
                           " variants can be served here (keyed requests in key order are)");
  }
  kernel.after_boundary(learner.serving());
  phase.store(learner.phase(), std::memory_order_relaxed);
  return Status::Ok();
}

PlanFile TorchReplayAllocator::Impl::saved_plans(const std::string& for_program) const {
  std::lock_guard lock(mutex);
  PlanFile file;
  file.adapter = kAdapter;
  file.program = for_program;
  SavedUnit unit = learner.saved_unit(kUnit);
  if (!unit.variants.empty()) file.units.push_back(std::move(unit));
  return file;
}

// ReplayConfig::save_plans_file: one line (save_plans_line leaves the file as
// it was when nothing was learnt).
void TorchReplayAllocator::Impl::save_plans() const {
  const std::string line = runtime::save_plans_line(saved_plans(program), config.save_plans_file);
  std::fprintf(stderr, "memplan libtorch: %s\n", line.c_str());
}

namespace {

void hash_ivalue(const c10::IValue& v, uint64_t& h) {
  using torch_identity::mix;
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (!t.defined()) {
      h = mix(h, 0x756e646566ULL);
      return;
    }
    h = mix(h, 0x74656e736f72ULL);
    h = mix(h, static_cast<uint64_t>(t.scalar_type()));
    h = mix(h, static_cast<uint64_t>(t.layout()));
    h = mix(h, static_cast<uint64_t>(t.dim()));
    for (const int64_t d : t.sizes()) h = mix(h, static_cast<uint64_t>(d));
  } else if (v.isTuple()) {
    const auto& elements = v.toTupleRef().elements();
    h = mix(h, 0x7475706c65ULL + elements.size());
    for (const c10::IValue& e : elements) hash_ivalue(e, h);
  } else if (v.isList()) {
    const c10::List<c10::IValue> list = v.toList();
    h = mix(h, 0x6c697374ULL + list.size());
    for (size_t i = 0; i < list.size(); ++i) hash_ivalue(list.get(i), h);
  } else if (v.isInt()) {
    h = mix(h, 0x696e74ULL);
    h = mix(h, static_cast<uint64_t>(v.toInt()));
  } else if (v.isBool()) {
    h = mix(h, v.toBool() ? 0x74727565ULL : 0x66616c7365ULL);
  } else if (v.isDouble()) {
    const double d = v.toDouble();
    uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    h = mix(h, 0x646f75626c65ULL);
    h = mix(h, bits);
  } else if (v.isNone()) {
    h = mix(h, 0x6e6f6e65ULL);
  } else {
    h = mix(h, 0x6f74686572ULL + static_cast<uint64_t>(v.tagKind().size()));
  }
}

}  // namespace

uint64_t shape_key(c10::ArrayRef<c10::IValue> inputs) {
  uint64_t h = 0x7368617065ULL + inputs.size();
  for (const c10::IValue& v : inputs) hash_ivalue(v, h);
  return h == 0 ? 1 : h;  // 0 is a plain mark
}

StatusOr<std::unique_ptr<TorchReplayAllocator>> TorchReplayAllocator::create(const ReplayConfig& config) {
  if (config.max_slab_bytes <= 0) return InvalidArgument("max_slab_bytes must be positive");
  if (find_planner(config.planner) == nullptr) return NotFound("no planner named '" + config.planner + "'");
  const runtime::os::MimallocApi* backing_mimalloc = nullptr;
  if (config.backing == "mimalloc") {
    const runtime::os::MimallocLibrary& library = mimalloc();
    if (library.handle != nullptr) {
      backing_mimalloc = &library.api;
    } else {
      std::fprintf(stderr, "memplan: MEMPLAN_BACKING=mimalloc: %s; the libtorch allocator uses c10::alloc_cpu\n",
                   library.why);
    }
  } else if (config.backing != "next") {
    return InvalidArgument("backing must be mimalloc or next, not '" + config.backing + "'");
  }
  const c10::DeleterFnPtr deleter =
      backing_mimalloc != nullptr ? &delete_block<free_mimalloc> : &delete_block<c10::free_cpu>;
  const size_t page = runtime::os::page_size();
  const size_t bytes = (static_cast<size_t>(config.max_slab_bytes) + page - 1) / page * page;
  void* window = runtime::os::reserve(bytes);
  if (window == nullptr) return CapacityExceeded("cannot reserve " + std::to_string(bytes) + " bytes of address space");
  auto* impl = new Impl(config, backing_mimalloc, deleter);
  impl->window = window;
  impl->window_bytes = bytes;
  impl->learner.set_window(window, bytes);
  if (config.plan_in_background) {
    impl->planner = std::make_unique<runtime::BackgroundPlanner>(*impl, impl->backing);
  }
  for (auto& slot : g_allocators) {
    Impl* expected = nullptr;
    if (slot.compare_exchange_strong(expected, impl)) {
      std::unique_ptr<TorchReplayAllocator> allocator(new TorchReplayAllocator(impl));
      if (!config.plans_file.empty() || !config.save_plans_file.empty()) impl->program = runtime::os::command_line();
      if (!config.plans_file.empty()) {
        const std::string line =
            runtime::load_plans_line(config.plans_file, kAdapter, impl->program,
                                     [impl](const PlanFile& file) { return impl->load_plans(file); });
        std::fprintf(stderr, "memplan libtorch: %s\n", line.c_str());
      }
      return allocator;
    }
  }
  runtime::os::release(window, bytes);
  delete impl;
  return CapacityExceeded("more than " + std::to_string(kMaxAllocators) + " TorchReplayAllocators at once");
}

TorchReplayAllocator::~TorchReplayAllocator() {
  uninstall();
  // The planner thread reads the configuration and the learner's job: it ends first.
  impl_->planner.reset();
  std::unique_lock lock(impl_->mutex);
  // Tensors still holding slab blocks will call the deleter later: keep the
  // slab and the state registered for them.
  if (impl_->kernel.in_use()) return;
  lock.unlock();
  for (auto& slot : g_allocators) {
    Impl* expected = impl_;
    slot.compare_exchange_strong(expected, nullptr);
  }
  impl_->learner.slab().release();
  runtime::os::release(impl_->window, impl_->window_bytes);
  delete impl_;
}
Status TorchReplayAllocator::install() {
  Impl* expected = nullptr;
  if (!g_installed.compare_exchange_strong(expected, impl_)) {
    return expected == impl_ ? Status::Ok() : InvalidArgument("another TorchReplayAllocator is installed");
  }
  // The iteration under way starts here: operator counts restart, so that
  // its keys are those of an iteration that starts at a mark (plans loaded
  // from a file serve it).
  torch_identity::advance_epoch();
  impl_->previous = c10::GetCPUAllocator();
  // Priority 255: c10 only lets an equal or higher priority replace an allocator.
  c10::SetCPUAllocator(this, /*priority=*/255);
  impl_->identity = std::make_unique<torch_identity::Client>();
  impl_->installed = true;
  return Status::Ok();
}

void TorchReplayAllocator::uninstall() {
  if (!impl_->installed) return;
  impl_->identity.reset();
  c10::SetCPUAllocator(impl_->previous, /*priority=*/255);
  impl_->installed = false;
  g_installed.store(nullptr, std::memory_order_release);
  if (!impl_->config.save_plans_file.empty()) impl_->save_plans();
}

c10::DataPtr TorchReplayAllocator::allocate(size_t bytes) const {
  void* p = impl_->allocate(bytes);
  return {p, p, impl_->deleter, c10::Device(c10::DeviceType::CPU)};
}

c10::DeleterFnPtr TorchReplayAllocator::raw_deleter() const { return impl_->deleter; }

void TorchReplayAllocator::mark() { impl_->mark(0); }

void TorchReplayAllocator::mark(uint64_t next_key) { impl_->mark(next_key); }

void TorchReplayAllocator::mark(c10::ArrayRef<c10::IValue> next_inputs) { impl_->mark(shape_key(next_inputs)); }

Status TorchReplayAllocator::load_plans(const PlanFile& file) { return impl_->load_plans(file); }

PlanFile TorchReplayAllocator::saved_plans(const std::string& program) const { return impl_->saved_plans(program); }

ReplayStats TorchReplayAllocator::stats() const {
  std::lock_guard lock(impl_->mutex);
  ReplayStats s;
  impl_->learner.counters().add_to(s);
  s.operators = torch_identity::operator_invocations();
  return s;
}

ReplayPhase TorchReplayAllocator::phase() const { return impl_->phase.load(std::memory_order_relaxed); }

Status TorchReplayAllocator::check_invariants() const {
  const Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  if (m.phase.load() != m.learner.phase()) return Internal("the phase seen by frees is not the learner's");
  if (m.learner.phase() == ReplayPhase::kReplaying && m.plan() == nullptr) return Internal("replaying without a plan");
  return m.kernel.check_invariants(m.learner.serving());
}

}  // namespace memplan::torch_serving
