// device_replay.cc — the device replay allocator (see device_replay.h).
//
//   allocate(bytes, device, stream):
//     1. The unit of (device, stream), made on first use: a Learner with the
//        sequence identity and a window of the device's address space.
//     2. Profiling or backing-only: the fallback serves; while profiling the
//        learner records (request index, bytes, 512-byte alignment, pointer).
//     3. Replay: request i of the iteration is served at its planned offset
//        when the plan covers it, the bytes fit and neither its block nor one
//        sharing its bytes is live (Note [No headers on the device]); a
//        larger request tells the learner (upper-bound growth); anything else
//        is a fallback, and a request the plan did not expect a deviation.
//   deallocate(p): a pointer inside a unit's window is a slab block (its
//     offset finds it); any other goes back to the fallback, and ends its
//     profiled lifetime in the unit that is profiling it.
//   mark(key): every unit's learner ends its iteration.
#include "runtime/device/device_replay.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memplan/planner.h"
#include "runtime/checked_kernel.h"
#include "runtime/learner.h"

namespace memplan::runtime {
namespace {

// PyTorch's CUDA caching allocator rounds every block to 512 bytes; a plan
// keeps that alignment so that kernels see the same address alignment.
constexpr uint64_t kDeviceAlignment = 512;

// The checked kernel's plan and the request identity's lookup: per request
// of the profile, its block (or -1).
struct DevicePlan final : CheckedPlan {
  std::vector<int32_t> block_of;  // per request index: its block, -1 when unplanned
};

// The learner's backing allocator: only its trim is used (before a slab is
// mapped); the device's fallback serves requests directly.
class DeviceBacking final : public BackingAllocator {
 public:
  explicit DeviceBacking(DeviceMemory& memory) : memory_(memory) {}
  void* allocate(size_t, size_t) override { return nullptr; }
  void* allocate_zeroed(size_t) override { return nullptr; }
  void* reallocate(void*, size_t) override { return nullptr; }
  void deallocate(void*) override {}
  size_t usable_size(void*) override { return 0; }
  void release_free_memory() override { memory_.trim(); }

 private:
  DeviceMemory& memory_;
};

}  // namespace

// One (device, stream): its learner, window and the checked kernel that
// serves its slab. As the learner's PlanTables it builds a DevicePlan's
// lookup from the plan the learner made, as its Adapter it withdraws and
// publishes one.
struct DeviceUnit final : PlanTables, Learner::Adapter {
  DeviceUnit(const ReplayConfig& config, DeviceMemory& memory, void* stream)
      : memory(memory),
        backing(memory),
        stream(stream),
        learner(config, RequestIdentity::kSequence),
        kernel(learner.slab()) {}

  DeviceMemory& memory;
  DeviceBacking backing;
  void* stream;
  Learner learner;
  CheckedKernel kernel;
  unsigned char* window = nullptr;
  size_t window_bytes = 0;
  std::string name;       // in plan files: "cuda:<device>/<k>", its device's k-th unit by first request
  uint32_t requests = 0;  // this iteration's requests
  bool deviated = false;

  bool owns(const void* p) const {
    return window != nullptr && static_cast<size_t>(static_cast<const unsigned char*>(p) - window) < window_bytes;
  }
  DevicePlan* plan() const { return static_cast<DevicePlan*>(kernel.plan()); }

  BlockLayout layout() const override { return {.max_arena = window_bytes}; }
  std::unique_ptr<PreparedPlan> new_plan() const override { return std::make_unique<DevicePlan>(); }
  Status build_tables(const Profile& agreed, PreparedPlan& planned) const override {
    auto& next = static_cast<DevicePlan&>(planned);
    CheckedKernel::build_blocks(agreed, next);
    next.block_of.assign(agreed.size(), -1);
    for (size_t k = 0; k < next.request_of.size(); ++k) next.block_of[next.request_of[k]] = static_cast<int32_t>(k);
    return Status::Ok();
  }
  bool slab_in_use() const override { return kernel.in_use(); }
  // The learner withdraws a plan before the slab is given back or another
  // plan takes over (Note [Streams]): kernels queued on this stream may still
  // use the old blocks, so they finish first.
  void withdraw() override {
    memory.synchronize(stream);
    kernel.withdraw();
  }
  void publish(PreparedPlan& p) override { kernel.publish(static_cast<DevicePlan&>(p)); }

  void* allocate(size_t bytes) {
    const uint32_t index = requests++;
    LearnerCounters& counters = learner.counters();
    switch (learner.phase()) {
      case ReplayPhase::kBackingOnly:
        return memory.allocate(bytes, stream);
      case ReplayPhase::kProfiling: {
        void* p = memory.allocate(bytes, stream);
        if (p != nullptr) learner.record(index, bytes, kDeviceAlignment, p);
        return p;
      }
      case ReplayPhase::kReplaying:
        if (plan() == nullptr) return memory.allocate(bytes, stream);  // the plan waits for the old one's blocks
        break;
    }
    const std::vector<int32_t>& block_of = plan()->block_of;
    const int32_t b = index < block_of.size() ? block_of[index] : -1;
    if (b < 0) {
      if (index < block_of.size()) {
        counters.unplanned.bump();
      } else {
        counters.fallback.bump();
        deviated = true;
        drop_seed_if_unused();
      }
      return memory.allocate(bytes, stream);
    }
    const CheckedKernel::Served got = kernel.serve(b, bytes);
    if (got.p != nullptr) {
      counters.served.bump();
      return got.p;
    }
    // Note [Refused requests] (checked_kernel.h): larger deviates, busy does not.
    if (CheckedKernel::count_refused(got, index, bytes, learner)) deviated = true;
    if (deviated) drop_seed_if_unused();
    return memory.allocate(bytes, stream);
  }

  // Note [Plans from a file]: loaded plans whose first iteration deviates
  // before any of their blocks is live give their slab back at once.
  void drop_seed_if_unused() {
    if (learner.drop_seed(*this)) kernel.after_boundary(learner.serving());
  }

  void end_iteration(uint64_t next_key) {
    learner.end_iteration(deviated, {.tables = *this, .backing = backing, .planner = nullptr}, *this, requests,
                          next_key);
    kernel.after_boundary(learner.serving());
    deviated = false;
    requests = 0;
  }
};

struct DeviceReplayAllocator::Impl {
  Impl(const ReplayConfig& c, DeviceSet& d) : config(c), devices(d) {}
  ReplayConfig config;
  DeviceSet& devices;
  mutable std::mutex mutex;
  std::map<std::pair<int, void*>, std::unique_ptr<DeviceUnit>> units;
  uint64_t invalid_frees = 0;  // frees into a window that matched no live block
  uint64_t key = 0;            // the variant of the iteration under way (the last mark's)
  DeviceMemoryStats memory;    // reserved_bytes and its peak follow note_reserved()
  uint64_t fallback_live = 0;  // bytes of fallback requests live
  // load_plans: the saved variants of each unit name, seeded into the unit
  // of that name when it is made (Note [Plans from a file]).
  std::map<std::string, std::vector<SavedVariant>> saved;
  std::map<int, size_t> units_on_device;  // units made so far, per device

  // After anything that can change the slabs' mapping or the fallback's bytes.
  void note_reserved() {
    uint64_t mapped = 0;
    for (const auto& [id, u] : units) mapped += u->learner.slab().mapped_bytes();
    memory.reserved_bytes = mapped + fallback_live;
    memory.peak_reserved_bytes = std::max(memory.peak_reserved_bytes, memory.reserved_bytes);
  }
  void note_allocated(void* p, size_t bytes, bool served) {
    if (p == nullptr) return;
    ++memory.requests;
    if (served) {
      ++memory.served;
    } else {
      fallback_live += bytes;
    }
    memory.allocated_bytes += bytes;
    memory.peak_allocated_bytes = std::max(memory.peak_allocated_bytes, memory.allocated_bytes);
    note_reserved();
  }
  void note_freed(size_t bytes, bool slab) {
    memory.allocated_bytes -= std::min<uint64_t>(memory.allocated_bytes, bytes);
    if (!slab) fallback_live -= std::min<uint64_t>(fallback_live, bytes);
    note_reserved();
  }

  DeviceUnit* unit(int device, void* stream) {
    const auto id = std::make_pair(device, stream);
    const auto found = units.find(id);
    if (found != units.end()) return found->second.get();
    if (units.size() >= static_cast<size_t>(config.max_threads)) return nullptr;
    DeviceMemory* memory = devices.device(device);
    if (memory == nullptr) return nullptr;
    auto made = std::make_unique<DeviceUnit>(config, *memory, stream);
    const size_t unit_bytes = memory->granularity();
    const size_t bytes = (static_cast<size_t>(config.max_slab_bytes) + unit_bytes - 1) / unit_bytes * unit_bytes;
    made->window = static_cast<unsigned char*>(memory->reserve(bytes));
    if (made->window != nullptr) {
      made->window_bytes = bytes;
      made->learner.set_window(made->window, bytes, memory);
    }
    // A stream that starts mid-run joins the variant under way; without
    // address space the fallback serves it.
    const std::unique_ptr<PlanJob> none = made->learner.restart(made->window != nullptr, key);
    made->name = "cuda:" + std::to_string(device) + "/" + std::to_string(units_on_device[device]++);
    DeviceUnit* u = made.get();
    units.emplace(id, std::move(made));
    const auto seeded = saved.find(u->name);
    if (seeded != saved.end()) {
      u->learner.seed(seeded->second, {.tables = *u, .backing = u->backing, .planner = nullptr}, *u);
      u->kernel.after_boundary(u->learner.serving());
      saved.erase(seeded);
      note_reserved();
    }
    return u;
  }
};

DeviceReplayAllocator::DeviceReplayAllocator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StatusOr<std::unique_ptr<DeviceReplayAllocator>> DeviceReplayAllocator::create(const ReplayConfig& config,
                                                                               DeviceSet& devices) {
  if (config.max_slab_bytes <= 0) return InvalidArgument("max_slab_bytes must be positive");
  if (config.max_threads <= 0) return InvalidArgument("max_threads must be positive");
  if (find_planner(config.planner) == nullptr) return NotFound("no planner named '" + config.planner + "'");
  auto impl = std::make_unique<Impl>(config, devices);
  impl->config.color_span_bytes = 0;        // device caches are not the host's L1 sets
  impl->config.plan_in_background = false;  // planning runs in mark(), the program's own call
  return std::unique_ptr<DeviceReplayAllocator>(new DeviceReplayAllocator(std::move(impl)));
}

Status DeviceReplayAllocator::load_plans(const PlanFile& file) {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->units.empty()) return InvalidArgument("plans must be loaded before the first request");
  impl_->saved.clear();
  for (const SavedUnit& u : file.units) impl_->saved[u.name] = u.variants;
  return Status::Ok();
}

PlanFile DeviceReplayAllocator::saved_plans(const std::string& program) const {
  std::lock_guard lock(impl_->mutex);
  PlanFile file;
  file.adapter = "device";
  file.program = program;
  for (const auto& [id, unit] : impl_->units) {
    std::vector<SavedVariant> variants = unit->learner.saved_variants();
    if (variants.empty()) continue;
    file.units.push_back({.name = unit->name, .variants = std::move(variants)});
  }
  return file;
}

DeviceReplayAllocator::~DeviceReplayAllocator() {
  std::lock_guard lock(impl_->mutex);
  for (auto& [key, unit] : impl_->units) {
    unit->withdraw();
    unit->learner.slab().release();
    if (unit->window != nullptr) unit->memory.release(unit->window, unit->window_bytes);
  }
}

void* DeviceReplayAllocator::allocate(size_t bytes, int device, void* stream) {
  std::lock_guard lock(impl_->mutex);
  DeviceUnit* u = impl_->unit(device, stream);
  if (u == nullptr) {
    DeviceMemory* memory = impl_->devices.device(device);
    void* p = memory == nullptr ? nullptr : memory->allocate(bytes, stream);
    impl_->note_allocated(p, bytes, false);
    return p;
  }
  void* p = u->allocate(bytes);
  impl_->note_allocated(p, bytes, p != nullptr && u->owns(p));
  return p;
}

void DeviceReplayAllocator::deallocate(void* p, size_t bytes, int device, void* stream) {
  if (p == nullptr) return;
  std::lock_guard lock(impl_->mutex);
  for (auto& [key, unit] : impl_->units) {
    if (unit->owns(p)) {
      if (unit->kernel.free(p)) {
        impl_->note_freed(bytes, true);
      } else {
        ++impl_->invalid_frees;  // no live block there: ignored, never handed on
      }
      return;
    }
  }
  // PyTorch frees a block with the stream it was allocated on.
  const auto found = impl_->units.find(std::make_pair(device, stream));
  if (found != impl_->units.end() && found->second->learner.phase() == ReplayPhase::kProfiling) {
    found->second->learner.record_end(p, false);
  }
  if (DeviceMemory* memory = impl_->devices.device(device)) memory->deallocate(p, bytes, stream);
  impl_->note_freed(bytes, false);
}

void DeviceReplayAllocator::mark(uint64_t next_key) {
  std::lock_guard lock(impl_->mutex);
  impl_->key = next_key;
  for (auto& [key, unit] : impl_->units) unit->end_iteration(next_key);
  impl_->note_reserved();  // a boundary maps, grows or gives back slabs
}

ReplayStats DeviceReplayAllocator::stats() const {
  std::lock_guard lock(impl_->mutex);
  ReplayStats s;
  for (const auto& [key, unit] : impl_->units) unit->learner.counters().add_to(s);
  s.threads = impl_->units.size();
  s.invalid_frees = impl_->invalid_frees;
  return s;
}

DeviceMemoryStats DeviceReplayAllocator::memory_stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->memory;
}

void DeviceReplayAllocator::reset_peaks() {
  std::lock_guard lock(impl_->mutex);
  impl_->memory.peak_allocated_bytes = impl_->memory.allocated_bytes;
  impl_->memory.peak_reserved_bytes = impl_->memory.reserved_bytes;
}

size_t DeviceReplayAllocator::units() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->units.size();
}

Status DeviceReplayAllocator::check_invariants() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::pair<const unsigned char*, size_t>> windows;
  for (const auto& [key, unit] : impl_->units) {
    MEMPLAN_RETURN_IF_ERROR(unit->kernel.check_invariants(unit->learner.serving()));
    if (unit->window != nullptr) windows.emplace_back(unit->window, unit->window_bytes);
  }
  std::sort(windows.begin(), windows.end());
  for (size_t i = 1; i < windows.size(); ++i) {
    if (windows[i - 1].first + windows[i - 1].second > windows[i].first)
      return Internal("two streams' windows overlap");
  }
  return Status::Ok();
}

}  // namespace memplan::runtime
