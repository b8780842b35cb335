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
//        A fallback is first offered to the unit's resident slots (Note
//        [Resident blocks]).
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

uint64_t device_rounded(uint64_t bytes) {
  return (std::max<uint64_t>(bytes, 1) + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
}

// Note [Resident blocks]. The blocks a program makes once and keeps
// (parameters, gradients, an optimizer's state, a library's workspace) are
// in no plan: a plan's slab is withdrawn and made again, and a block that
// outlived its iteration there would hold it. They went to the fallback,
// whose segments round and split them: on the fourier CNN snapshot, 8.4 MiB
// of blocks live at the window's start held 22 MiB of caching segments
// beside the slab. A unit seeded from a plan file knows them: the requests
// that escaped the first variant saved, which is the saving run's first
// iteration (everything up to its first mark: start-up and the first step)
// or, in a file made from a snapshot, the blocks live at the window's start.
// The unit lays out slots for them when it is seeded, their sizes rounded
// to 512 B and packed in the saved order at the start of its window, with
// its slab right above them, and gives every request that no plan serves,
// at any time, a free slot of exactly its rounded size when it has one;
// anything else goes to the fallback as before. A gradient freed and made
// again in a later step takes its slot again. A slot holds one block at a
// time, and its bytes are its own (every plan lies above the slab's base),
// so a file that guessed wrong costs idle slots, at most their bytes, never
// a shared byte. Slots and slab are one mapping from the window's start, in
// whole granules, sharing the granule where the slots end: mapped apart,
// each rounded to the 2 MiB granule, the fourier CNN's warm window reserved
// 1.027x its load; together 1.007x. The slots are given back (after the
// stream synchronises, Note [Streams]) at the first boundary at which none
// is live, and when the unit drops its seeded plans (a file that does not
// fit): all their granules without a slab mapped, else those below the
// slab's first; a slab given back keeps the granules of live slots.
class ResidentSlots {
 public:
  // Lays out slots for `first`'s escaped requests; their bytes (a multiple
  // of 512), or 0 (no slots) when it has none or they exceed `max_bytes`.
  size_t lay_out(const SavedVariant& first, size_t max_bytes) {
    uint64_t at = 0;
    for (const SavedRequest& r : first.requests) {
      if (r.upper >= 0) continue;
      const uint64_t size = device_rounded(r.size);
      if (size > max_bytes - std::min<uint64_t>(at, max_bytes)) {
        slots_.clear();
        return 0;
      }
      slots_.push_back({.offset = at, .size = size, .live = false});
      at += size;
    }
    return static_cast<size_t>(at);
  }

  // Serves the laid-out slots from [base, base + bytes), mapped by the caller.
  void place(unsigned char* base, size_t bytes) {
    base_ = base;
    bytes_ = bytes;
    // Free slots per size, the earliest on top.
    for (size_t k = slots_.size(); k-- > 0;) free_[slots_[k].size].push_back(static_cast<uint32_t>(k));
  }

  // A free slot of exactly `bytes` rounded, taken; nullptr when none.
  void* take(size_t bytes) {
    if (base_ == nullptr) return nullptr;
    const auto found = free_.find(device_rounded(bytes));
    if (found == free_.end() || found->second.empty()) return nullptr;
    Slot& slot = slots_[found->second.back()];
    found->second.pop_back();
    slot.live = true;
    ++live_;
    return base_ + slot.offset;
  }

  bool owns(const void* p) const {
    return base_ != nullptr && static_cast<size_t>(static_cast<const unsigned char*>(p) - base_) < bytes_;
  }

  // Frees the live slot that starts at `p`; false (nothing changed) when
  // no live slot starts there.
  bool give_back(const void* p) {
    const uint64_t offset = static_cast<uint64_t>(static_cast<const unsigned char*>(p) - base_);
    const auto after = std::upper_bound(slots_.begin(), slots_.end(), offset,
                                        [](uint64_t at, const Slot& s) { return at < s.offset; });
    if (after == slots_.begin()) return false;
    Slot& slot = *(after - 1);
    if (slot.offset != offset || !slot.live) return false;
    slot.live = false;
    --live_;
    free_[slot.size].push_back(static_cast<uint32_t>(&slot - slots_.data()));
    return true;
  }

  // No slot serves any more (the caller unmaps what only they used).
  void retire() {
    base_ = nullptr;
    bytes_ = 0;
    live_ = 0;
    slots_.clear();
    free_.clear();
  }

  bool serving() const { return base_ != nullptr; }
  size_t live() const { return live_; }

  Status check_invariants() const {
    size_t live = 0;
    size_t free = 0;
    uint64_t end = 0;
    for (const Slot& s : slots_) {
      if (s.offset < end || s.offset + s.size > bytes_) return Internal("resident slots overlap or leave their region");
      end = s.offset + s.size;
      live += s.live ? 1 : 0;
    }
    for (const auto& [size, list] : free_) {
      for (const uint32_t k : list) {
        if (k >= slots_.size() || slots_[k].live || slots_[k].size != size) {
          return Internal("a resident slot listed free is live or of another size");
        }
      }
      free += list.size();
    }
    if (live != live_ || live + free != slots_.size()) return Internal("resident slots miscounted");
    return Status::Ok();
  }

 private:
  struct Slot {
    uint64_t offset = 0;
    uint64_t size = 0;
    bool live = false;
  };
  unsigned char* base_ = nullptr;
  size_t bytes_ = 0;
  std::vector<Slot> slots_;  // in offset order
  std::map<uint64_t, std::vector<uint32_t>> free_;
  size_t live_ = 0;
};

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
struct DeviceUnit final : PlanTables, Learner::Adapter, SlabMemory {
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
  ResidentSlots resident;  // Note [Resident blocks]
  unsigned char* window = nullptr;
  size_t window_bytes = 0;
  // Note [Resident blocks]: the resident slots' bytes at the window's start
  // (a multiple of 512; 0 without slots); the learner's slab starts there.
  size_t resident_span = 0;
  size_t slab_window_bytes = 0;  // the slab's part: max_slab_bytes in whole granules
  // The window's mapped range [mapped_from, mapped_to) (offsets, whole
  // granules): the resident slots' and the slab's, sharing the granule
  // where one ends and the other starts.
  size_t mapped_from = 0;
  size_t mapped_to = 0;
  std::string name;       // in plan files: "cuda:<device>/<k>", its device's k-th unit by first request
  uint32_t requests = 0;  // this iteration's requests
  bool deviated = false;

  bool owns(const void* p) const {
    return window != nullptr && static_cast<size_t>(static_cast<const unsigned char*>(p) - window) < window_bytes;
  }
  DevicePlan* plan() const { return static_cast<DevicePlan*>(kernel.plan()); }

  BlockLayout layout() const override { return {.max_arena = slab_window_bytes}; }

  // Note [Resident blocks]: lays out and maps the slots of `first`'s escaped
  // requests at the window's start; call before the learner's window is set.
  // Mapped as two commits, the granules below the slab's first one and that
  // shared granule, so that the first can go while the slab stays.
  void make_resident(const SavedVariant& first, size_t max_bytes) {
    const size_t bytes = resident.lay_out(first, max_bytes);
    if (bytes == 0 || bytes >= window_bytes) return;
    if (down(bytes) != 0 && !memory.commit(window, down(bytes))) return;
    if (up(bytes) != down(bytes) && !memory.commit(window + down(bytes), up(bytes) - down(bytes))) {
      if (down(bytes) != 0) memory.decommit(window, down(bytes));
      return;
    }
    mapped_from = 0;
    mapped_to = up(bytes);
    resident.place(window, bytes);
    resident_span = bytes;
  }
  // Gives the slots' region back when none is live (after the stream's
  // queued work, Note [Streams]): all of it without a slab mapped, else the
  // granules below the slab's first.
  void retire_resident_if_idle() {
    if (!resident.serving() || resident.live() != 0) return;
    resident.retire();
    memory.synchronize(stream);
    if (learner.slab().mapped_bytes() == 0) {
      unmap_from(mapped_from);
    } else if (mapped_from < down(resident_span)) {
      memory.decommit(window + mapped_from, down(resident_span) - mapped_from);
      mapped_from = down(resident_span);
    }
  }

  // SlabMemory of the learner's slab, which lies resident_span bytes into
  // the window: its unit is 512 bytes when it shares the window's mapping
  // with resident slots, else the device's granule. It commits growths and
  // decommits its whole mapping (Slab::release).
  size_t granularity() const override { return resident_span != 0 ? kDeviceAlignment : memory.granularity(); }
  bool commit(void* address, size_t bytes) override {
    const auto begin = static_cast<size_t>(static_cast<unsigned char*>(address) - window);
    const size_t from = mapped_from == mapped_to ? down(begin) : mapped_to;
    const size_t to = up(begin + bytes);
    if (to <= mapped_to) return true;
    if (to > window_bytes || !memory.commit(window + from, to - from)) return false;
    if (mapped_from == mapped_to) mapped_from = from;
    mapped_to = to;
    return true;
  }
  void decommit(void* address, size_t) override {
    // What the slab keeps lies below `address`; the slots keep their span.
    const auto kept = static_cast<size_t>(static_cast<unsigned char*>(address) - window);
    const size_t end = kept > resident_span ? kept : (resident.serving() ? resident_span : 0);
    unmap_from(end == 0 ? mapped_from : std::max(up(end), mapped_from));
  }
  void unmap_from(size_t at) {
    if (at >= mapped_to) return;
    memory.decommit(window + at, mapped_to - at);
    mapped_to = at;
    if (mapped_to == mapped_from) mapped_from = mapped_to = 0;
  }
  size_t mapped() const { return mapped_to - mapped_from; }
  size_t down(size_t x) const { return x / memory.granularity() * memory.granularity(); }
  size_t up(size_t x) const { return down(x + memory.granularity() - 1); }
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
        return fallback(bytes);
      case ReplayPhase::kProfiling: {
        void* p = fallback(bytes);
        if (p != nullptr) learner.record(index, bytes, kDeviceAlignment, p);
        return p;
      }
      case ReplayPhase::kReplaying:
        if (plan() == nullptr) return fallback(bytes);  // the plan waits for the old one's blocks
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
      return fallback(bytes);
    }
    const CheckedKernel::Served got = kernel.serve(b, bytes);
    if (got.p != nullptr) {
      counters.served.bump();
      return got.p;
    }
    // Note [Refused requests] (checked_kernel.h): larger deviates, busy does not.
    if (CheckedKernel::count_refused(got, index, bytes, learner)) deviated = true;
    if (deviated) drop_seed_if_unused();
    return fallback(bytes);
  }

  // A request no plan serves: a free resident slot of its size, else the
  // device's fallback (Note [Resident blocks]).
  void* fallback(size_t bytes) {
    void* p = resident.take(bytes);
    return p != nullptr ? p : memory.allocate(bytes, stream);
  }

  // Note [Plans from a file]: loaded plans whose first iteration deviates
  // before any of their blocks is live give their slab back at once, and
  // the resident region too when none of its slots is live.
  void drop_seed_if_unused() {
    if (!learner.drop_seed(*this)) return;
    kernel.after_boundary(learner.serving());
    retire_resident_if_idle();
  }

  void end_iteration(uint64_t next_key) {
    learner.end_iteration(deviated, {.tables = *this, .backing = backing, .planner = nullptr}, *this, requests,
                          next_key);
    kernel.after_boundary(learner.serving());
    retire_resident_if_idle();
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
  std::map<std::string, SavedUnit> saved;
  std::map<int, size_t> units_on_device;  // units made so far, per device

  // After anything that can change the slabs' mapping or the fallback's bytes.
  void note_reserved() {
    uint64_t mapped = 0;
    for (const auto& [id, u] : units) mapped += u->mapped();
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
    made->name = "cuda:" + std::to_string(device) + "/" + std::to_string(units_on_device[device]++);
    const auto seeded = saved.find(made->name);
    // Note [Resident blocks]: the window holds up to max_slab_bytes of
    // resident slots before the slab's max_slab_bytes (address space only;
    // what is mapped is counted).
    const auto max_slab = static_cast<size_t>(config.max_slab_bytes);
    const size_t slab_bytes = made->up(max_slab);
    const bool slots = seeded != saved.end() && !seeded->second.variants.empty();
    const size_t bytes = slots ? 2 * slab_bytes : slab_bytes;
    made->window = static_cast<unsigned char*>(memory->reserve(bytes));
    if (made->window != nullptr) {
      made->window_bytes = bytes;
      made->slab_window_bytes = slab_bytes;
      if (slots) made->make_resident(seeded->second.variants.front(), max_slab);
      made->learner.set_window(made->window + made->resident_span, slab_bytes, made.get());
    }
    // A stream that starts mid-run joins the variant under way; without
    // address space the fallback serves it.
    const std::unique_ptr<PlanJob> none = made->learner.restart(made->window != nullptr, key);
    DeviceUnit* u = made.get();
    units.emplace(id, std::move(made));
    if (seeded != saved.end()) {
      u->learner.seed(seeded->second, {.tables = *u, .backing = u->backing, .planner = nullptr}, *u);
      u->kernel.after_boundary(u->learner.serving());
      saved.erase(seeded);
    }
    note_reserved();
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
  for (const SavedUnit& u : file.units) impl_->saved[u.name] = u;
  return Status::Ok();
}

PlanFile DeviceReplayAllocator::saved_plans(const std::string& program) const {
  std::lock_guard lock(impl_->mutex);
  PlanFile file;
  file.adapter = "device";
  file.program = program;
  for (const auto& [id, unit] : impl_->units) {
    SavedUnit saved = unit->learner.saved_unit(unit->name);
    if (!saved.variants.empty()) file.units.push_back(std::move(saved));
  }
  return file;
}

DeviceReplayAllocator::~DeviceReplayAllocator() {
  std::lock_guard lock(impl_->mutex);
  for (auto& [key, unit] : impl_->units) {
    unit->withdraw();
    unit->learner.slab().release();
    unit->resident.retire();
    unit->unmap_from(unit->mapped_from);  // the stream synchronised in withdraw()
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
  impl_->note_allocated(p, bytes, p != nullptr && (u->owns(p) || u->resident.owns(p)));
  return p;
}

void DeviceReplayAllocator::deallocate(void* p, size_t bytes, int device, void* stream) {
  if (p == nullptr) return;
  std::lock_guard lock(impl_->mutex);
  for (auto& [key, unit] : impl_->units) {
    if (unit->resident.owns(p)) {
      if (unit->resident.give_back(p)) {
        if (unit->learner.phase() == ReplayPhase::kProfiling) unit->learner.record_end(p, false);
        impl_->note_freed(bytes, true);
      } else {
        ++impl_->invalid_frees;
      }
      return;
    }
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

uint64_t DeviceReplayAllocator::resident_bytes() const {
  std::lock_guard lock(impl_->mutex);
  uint64_t bytes = 0;
  for (const auto& [key, unit] : impl_->units) bytes += unit->resident.serving() ? unit->resident_span : 0;
  return bytes;
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
    MEMPLAN_RETURN_IF_ERROR(unit->resident.check_invariants());
    MEMPLAN_RETURN_IF_ERROR(unit->learner.slab().check_invariants());
    // The mapping covers the live slots and the slab, in whole granules.
    const size_t slab = unit->learner.slab().mapped_bytes();
    const bool slots = unit->resident.serving();
    const bool covered =
        (!slots || (unit->mapped_from == 0 && unit->mapped_to >= unit->resident_span)) &&
        (slab == 0 ||
         (unit->mapped_from <= unit->down(unit->resident_span) && unit->mapped_to >= unit->resident_span + slab)) &&
        unit->mapped_from % unit->memory.granularity() == 0 && unit->mapped_to % unit->memory.granularity() == 0 &&
        unit->mapped_from <= unit->mapped_to && unit->mapped_to <= unit->window_bytes;
    if (!covered) return Internal("a unit's mapping does not cover its slots and slab in whole granules");
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
