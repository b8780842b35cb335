// memplan_model.cc — memplan's device replay allocator (runtime/device/) on
// a simulated device: simulate_memplan (steady state) and
// simulate_memplan_cold.
//
// The simulated device hands out address ranges that are never touched:
// windows for the units' slabs (reserve), mappings of them (commit and
// decommit, counted), and the fallback (allocate and deallocate), which is
// either the caching allocator's rules (CachingModel) or exact live bytes
// held until a trim (FallbackModel). Reserved = slab bytes mapped + what the
// fallback holds; every change of it is checked against the peak, with the
// index of the request under way.
//
// Note [Warm start state]. The cold model starts from the start state as
// recorded: a run that learns sends every request of its first iterations
// to the fallback, whose caching rules are the recorded allocator's, so its
// segments at the window's start are those of the recording. A run that
// loads plans at its start never had them: the slab served every planned
// request of the iterations before the window, and what outlives an
// iteration (parameters, gradients, optimizer state) was made through the
// allocator before the window. So the warm model starts with an empty
// fallback, makes the start state's live blocks through the allocator, in
// address order (those of the window's first stream first), as the
// program's start-up before its first mark, then marks and replays the
// window. On the cs336 AdamW steps at context 256 and 512 the recorded
// start state holds 5.9 GiB more than its live blocks (PyTorch's cache and
// splits), and the warm model started from it peaked at that start, before
// any request. The plans the steady model saves (simulate_memplan's
// `learnt`) lead with that start-up: a variant of the start state's blocks
// of the first stream, every one escaped, so that a unit seeded from them
// serves its start-up from resident slots (Note [Resident blocks],
// device_replay.cc) and its window from the window's plan.
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "memplan/allocator_model.h"
#include "runtime/device/device_replay.h"
#include "runtime/profile.h"
#include "simulate/caching_model.h"
#include "simulate/trace_driver.h"

namespace memplan::simulate {
namespace {

// CUDA's virtual memory granularity: slabs are mapped in these.
constexpr uint64_t kGranule = uint64_t{2} << 20;
constexpr uint64_t kBlockAlignment = 512;

void* handle_of(int64_t stream) { return reinterpret_cast<void*>(static_cast<uintptr_t>(stream)); }
int64_t stream_of(void* handle) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(handle)); }

class SimulatedDevice final : public runtime::DeviceMemory, public runtime::DeviceSet {
 public:
  SimulatedDevice(const DeviceTrace& trace, const MemplanModelOptions& options)
      : index_(trace.device),
        options_(options),
        space_(address_base(trace)),
        caching_(options.settings, options.settings.expandable_segments, space_) {}

  // `recorded`: the fallback starts holding the start state's segments as
  // recorded; else it starts empty, and the start state's live blocks are
  // made in it before the window (Replayer::remake_start).
  Status load_start(const DeviceTrace& trace, bool recorded = true) {
    if (!recorded) {
      // The start state is checked all the same, on a model of its own.
      AddressSpace scratch(address_base(trace));
      CachingModel check(options_.settings, options_.settings.expandable_segments, scratch);
      return check.load_start(trace.start);
    }
    // The caching model also checks the start state (for kExact it serves nothing).
    MEMPLAN_RETURN_IF_ERROR(caching_.load_start(trace.start));
    if (options_.fallback == FallbackModel::kCaching) return Status::Ok();
    for (const StartSegment& s : trace.start) {
      for (const StartBlock& b : s.blocks) {
        if (!b.allocated) continue;
        const uint64_t bytes = round_up(b.requested_size != 0 ? b.requested_size : b.size);
        exact_live_.emplace(s.address + b.offset, bytes);
        exact_bytes_ += bytes;
      }
    }
    exact_held_ = exact_bytes_;
    return Status::Ok();
  }

  // runtime::DeviceSet
  runtime::DeviceMemory* device(int index) override { return index == index_ ? this : nullptr; }

  // runtime::DeviceMemory
  size_t granularity() const override { return kGranule; }
  void* reserve(size_t bytes) override { return to_pointer(space_.take(bytes, kGranule)); }
  void release(void*, size_t) override {}
  bool commit(void*, size_t bytes) override {
    if (options_.settings.capacity_bytes != 0 && reserved() + bytes > options_.settings.capacity_bytes) return false;
    mapped_ += bytes;
    note();
    return true;
  }
  void decommit(void*, size_t bytes) override { mapped_ -= std::min<uint64_t>(bytes, mapped_); }
  void* allocate(size_t bytes, void* stream) override {
    uint64_t at = 0;
    if (options_.fallback == FallbackModel::kCaching) {
      at = caching_.allocate(bytes, stream_of(stream));
    } else {
      const uint64_t rounded = round_up(bytes);
      at = space_.take(rounded, kBlockAlignment);
      exact_live_.emplace(at, rounded);
      exact_bytes_ += rounded;
      exact_held_ = std::max(exact_held_, exact_bytes_);
    }
    note();
    return to_pointer(at);
  }
  void deallocate(void* p, size_t, void*) override {
    const auto at = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
    if (options_.fallback == FallbackModel::kCaching) {
      if (!caching_.free(at)) ++unknown_frees_;
      return;
    }
    const auto found = exact_live_.find(at);
    if (found == exact_live_.end()) {
      ++unknown_frees_;
      return;
    }
    exact_bytes_ -= found->second;
    exact_live_.erase(found);
  }
  // cudaStreamSynchronize gives the default pool's unused memory back (its
  // release threshold is 0), as cudaMemPoolTrimTo does.
  void synchronize(void*) override { trim(); }
  void trim() override {
    if (options_.fallback == FallbackModel::kCaching) {
      caching_.release_cached();
    } else {
      exact_held_ = exact_bytes_;
    }
  }

  uint64_t fallback_held() const {
    return options_.fallback == FallbackModel::kCaching ? caching_.reserved() : exact_held_;
  }
  uint64_t reserved() const { return mapped_ + fallback_held(); }
  uint64_t mapped() const { return mapped_; }
  uint64_t unknown_frees() const { return unknown_frees_; }
  uint64_t device_allocations() const { return caching_.device_allocations(); }
  uint64_t device_frees() const { return caching_.device_frees(); }
  uint64_t out_of_memory() const { return caching_.out_of_memory(); }

  // The peak is measured from here on; `index` is the request under way.
  void start_measuring() {
    peak_ = reserved();
    peak_index_ = -1;
    peak_fallback_ = fallback_held();
  }
  void set_index(int64_t index) { index_now_ = index; }
  void note() {
    if (reserved() > peak_) {
      peak_ = reserved();
      peak_index_ = index_now_;
    }
    peak_fallback_ = std::max(peak_fallback_, fallback_held());
  }
  uint64_t peak() const { return peak_; }
  int64_t peak_index() const { return peak_index_; }
  uint64_t peak_fallback() const { return peak_fallback_; }

 private:
  static uint64_t round_up(uint64_t bytes) {
    return (std::max<uint64_t>(bytes, 1) + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment;
  }
  static void* to_pointer(uint64_t at) { return reinterpret_cast<void*>(static_cast<uintptr_t>(at)); }

  int index_;
  const MemplanModelOptions& options_;
  AddressSpace space_;
  CachingModel caching_;
  std::unordered_map<uint64_t, uint64_t> exact_live_;
  uint64_t exact_bytes_ = 0;
  uint64_t exact_held_ = 0;
  uint64_t mapped_ = 0;
  uint64_t unknown_frees_ = 0;
  uint64_t peak_ = 0;
  int64_t peak_index_ = -1;
  int64_t index_now_ = -1;
  uint64_t peak_fallback_ = 0;
};

struct LiveBlock {
  void* pointer = nullptr;
  uint64_t size = 0;
  int64_t stream = 0;
  bool start = false;  // a block of the start state (made before the window)
};

// Replays a trace through the allocator; keeps what is live across replays.
class Replayer {
 public:
  Replayer(const DeviceTrace& trace, SimulatedDevice& device, runtime::DeviceReplayAllocator& allocator)
      : trace_(trace), device_(device), allocator_(allocator) {
    for (const StartSegment& s : trace.start) {
      for (const StartBlock& b : s.blocks) {
        if (!b.allocated) continue;
        const uint64_t id = s.address + b.offset;
        const LiveBlock block{.pointer = reinterpret_cast<void*>(static_cast<uintptr_t>(id)),
                              .size = b.requested_size != 0 ? b.requested_size : b.size,
                              .stream = s.stream,
                              .start = true};
        start_.emplace(id, block);
        live_.emplace(id, block);
      }
    }
  }

  Status replay() {
    MEMPLAN_RETURN_IF_ERROR(drive_requests(trace_, live_, *this));
    device_.set_index(-1);
    return Status::Ok();
  }

  // The model under the trace driver (trace_driver.h).
  void begin_request(int64_t index) { device_.set_index(index); }
  StatusOr<LiveBlock> allocate(int64_t index, const Request& q) {
    void* p = allocator_.allocate(q.size, trace_.device, handle_of(q.stream));
    if (p == nullptr) return Internal("the simulated device refused request " + std::to_string(index));
    requested_ += q.size;
    allocated_ += rounded(q.size);
    return LiveBlock{.pointer = p, .size = q.size, .stream = q.stream};
  }
  bool free(const LiveBlock& block) {
    release(block);
    return true;
  }
  void empty_cache() { device_.trim(); }
  void end_request(int64_t) {
    device_.note();
    peak_requested_ = std::max(peak_requested_, requested_);
    peak_allocated_ = std::max(peak_allocated_, allocated_);
  }

  // The boundary between two replays: what this replay made and still holds
  // is freed (the next replay makes it again), the iteration ends, and the
  // start state's blocks this replay freed are made again outside the
  // allocator, as they were made before the window.
  void restore_start() {
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second.start) {
        ++it;
        continue;
      }
      release(it->second);
      it = live_.erase(it);
    }
    allocator_.mark();
    for (const auto& [id, block] : start_) {
      if (live_.contains(id)) continue;
      LiveBlock made = block;
      made.pointer = device_.allocate(block.size, handle_of(block.stream));
      live_.emplace(id, made);
      requested_ += made.size;
      allocated_ += rounded(made.size);
    }
  }

  // Note [Warm start state]: the start state's live blocks, made through
  // the allocator before its first mark, in address order with those of
  // `first_stream` first, as a run served from plans since its start makes
  // them; then the mark that ends the start-up.
  Status remake_start(int64_t first_stream) {
    for (auto& [id, block] : start_order(first_stream)) {
      block.pointer = allocator_.allocate(block.size, trace_.device, handle_of(block.stream));
      if (block.pointer == nullptr) return Internal("the simulated device refused a block of the start state");
      start_[id] = block;
      live_[id] = block;
    }
    allocator_.mark();
    return Status::Ok();
  }

  // The start state's blocks in the order remake_start makes them.
  std::vector<std::pair<uint64_t, LiveBlock>> start_order(int64_t first_stream) const {
    std::vector<std::pair<uint64_t, LiveBlock>> blocks(start_.begin(), start_.end());
    std::sort(blocks.begin(), blocks.end(), [first_stream](const auto& a, const auto& b) {
      const bool a_first = a.second.stream == first_stream;
      const bool b_first = b.second.stream == first_stream;
      return a_first != b_first ? a_first : a.first < b.first;
    });
    return blocks;
  }

  void start_measuring() {
    peak_requested_ = requested_;
    peak_allocated_ = allocated_;
    device_.start_measuring();
  }
  void measure_start_state() {
    for (const auto& [id, block] : live_) {
      requested_ += block.size;
      allocated_ += rounded(block.size);
    }
  }
  uint64_t peak_requested() const { return peak_requested_; }
  uint64_t peak_allocated() const { return peak_allocated_; }

 private:
  static uint64_t rounded(uint64_t bytes) {
    return (std::max<uint64_t>(bytes, 1) + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment;
  }
  void release(const LiveBlock& block) {
    allocator_.deallocate(block.pointer, block.size, trace_.device, handle_of(block.stream));
    requested_ -= block.size;
    allocated_ -= rounded(block.size);
  }

  const DeviceTrace& trace_;
  SimulatedDevice& device_;
  runtime::DeviceReplayAllocator& allocator_;
  std::unordered_map<uint64_t, LiveBlock> start_;  // blocks allocated before the window
  std::unordered_map<uint64_t, LiveBlock> live_;   // id -> block
  uint64_t requested_ = 0;
  uint64_t allocated_ = 0;
  uint64_t peak_requested_ = 0;
  uint64_t peak_allocated_ = 0;
};

// The configuration the models run: the caller's, with room for the trace.
ReplayConfig sized_config(const DeviceTrace& trace, const ReplayConfig& config) {
  uint64_t bytes = kGranule;
  for (const Request& q : trace.requests) {
    if (q.kind == Request::Kind::kAlloc) bytes += (q.size + kBlockAlignment - 1) / kBlockAlignment * kBlockAlignment;
  }
  ReplayConfig sized = config;
  sized.max_slab_bytes = std::max<int64_t>(config.max_slab_bytes, static_cast<int64_t>(bytes));
  sized.max_plan_bytes = std::max<int64_t>(config.max_plan_bytes, static_cast<int64_t>(bytes));
  return sized;
}

// The stream of the window's first request (0 when it has none).
int64_t first_request_stream(const DeviceTrace& trace) {
  for (const Request& q : trace.requests) {
    if (q.kind == Request::Kind::kAlloc) return q.stream;
  }
  return 0;
}

// Note [Warm start state]: the start-up variant of the first stream's unit,
// put first in its saved variants (and the window's variant recorded as
// following it): the start state's blocks of that stream,
// in the order the warm model makes them, every one escaped, keyed as the
// unit's learner keys the iteration that makes them.
void lead_with_start_up(const DeviceTrace& trace, const std::vector<std::pair<uint64_t, LiveBlock>>& order,
                        int64_t first_stream, const ReplayConfig& config, PlanFile& file) {
  runtime::Profile profile;
  SavedVariant start_up;
  for (const auto& [id, block] : order) {
    if (block.stream != first_stream) break;
    const auto tick = static_cast<int64_t>(start_up.requests.size());
    start_up.requests.push_back({.size = block.size, .alignment = kBlockAlignment, .lower = tick, .upper = -1});
    profile.requests.push_back({block.size, kBlockAlignment});
    profile.uppers.push_back(runtime::kEscaped);
  }
  if (start_up.requests.empty() || start_up.requests.size() > kMaxSavedRequests) return;
  start_up.key = runtime::structure_key_of(profile, !config.upper_bound_plans);
  const std::string name = "cuda:" + std::to_string(trace.device) + "/0";
  auto unit = std::find_if(file.units.begin(), file.units.end(), [&](const SavedUnit& u) { return u.name == name; });
  if (unit == file.units.end()) unit = file.units.insert(file.units.end(), SavedUnit{.name = name});
  // The window's variant, which the unit ran first, follows the start-up
  // (its plan covers its first run: the model's replays are identical), so
  // that a loading unit serves the window from its first request.
  if (!unit->variants.empty() && unit->variants.front().after == 0) unit->variants.front().after = start_up.key;
  unit->variants.insert(unit->variants.begin(), std::move(start_up));
  if (unit->variants.size() > kMaxSavedVariants) unit->variants.resize(kMaxSavedVariants);
}

// `plans`: loaded before the first request (the warm model); `learnt`: what
// the allocator learnt, after the measured replay.
StatusOr<ModelResult> run_memplan(const DeviceTrace& trace, const MemplanModelOptions& options, bool steady,
                                  const PlanFile* plans = nullptr, PlanFile* learnt = nullptr) {
  MEMPLAN_RETURN_IF_ERROR(CachingModel::check_settings(options.settings));
  if (options.config.profile_iterations < 1) return InvalidArgument("profile_iterations must be at least 1");
  SimulatedDevice device(trace, options);
  const bool fresh_start = plans != nullptr;  // Note [Warm start state]
  MEMPLAN_RETURN_IF_ERROR(device.load_start(trace, !fresh_start));
  MEMPLAN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::DeviceReplayAllocator> allocator,
                           runtime::DeviceReplayAllocator::create(sized_config(trace, options.config), device));
  if (plans) MEMPLAN_RETURN_IF_ERROR((*allocator).load_plans(*plans));
  Replayer replayer(trace, device, *allocator);
  const int64_t first_stream = first_request_stream(trace);
  if (fresh_start) MEMPLAN_RETURN_IF_ERROR(replayer.remake_start(first_stream));
  replayer.measure_start_state();
  if (steady) {
    for (int64_t i = 0; i < options.config.profile_iterations; ++i) {
      MEMPLAN_RETURN_IF_ERROR(replayer.replay());
      replayer.restore_start();
    }
  }
  const ReplayStats before = allocator->stats();
  const uint64_t start_reserved = device.reserved();
  replayer.start_measuring();
  MEMPLAN_RETURN_IF_ERROR(replayer.replay());
  const ReplayStats after = allocator->stats();
  MEMPLAN_RETURN_IF_ERROR(allocator->check_invariants());
  if (device.unknown_frees() != 0) {
    return Internal("the device replay allocator freed " + std::to_string(device.unknown_frees()) +
                    " blocks its fallback never handed out");
  }

  if (learnt) {
    *learnt = allocator->saved_plans("");
    lead_with_start_up(trace, replayer.start_order(first_stream), first_stream, options.config, *learnt);
  }
  ModelResult r;
  r.peak_reserved_bytes = device.peak();
  r.peak_request_index = device.peak_index();
  r.peak_allocated_bytes = replayer.peak_allocated();
  r.peak_requested_bytes = replayer.peak_requested();
  r.start_reserved_bytes = start_reserved;
  r.final_reserved_bytes = device.reserved();
  r.device_allocations = device.device_allocations();
  r.device_frees = device.device_frees();
  r.out_of_memory = device.out_of_memory();
  r.requests = trace.requests.size();
  r.served = after.served - before.served;
  // Every other allocation went to the fallback (profiling, unplanned,
  // deviating, or a unit left to the fallback for good).
  const auto allocs = static_cast<uint64_t>(std::count_if(
      trace.requests.begin(), trace.requests.end(), [](const Request& q) { return q.kind == Request::Kind::kAlloc; }));
  r.fallback = allocs - r.served;
  r.plans = after.plans;
  r.plan_failures = after.plan_failures;
  r.arena_bytes = after.arena_bytes;
  r.slab_bytes = after.slab_bytes;
  r.resident_bytes = allocator->resident_bytes();
  r.peak_fallback_bytes = device.peak_fallback();
  return r;
}

}  // namespace

ReplayConfig memplan_model_config() {
  ReplayConfig config;
  config.plan_time_share = 1;
  return config;
}

StatusOr<ModelResult> simulate_memplan(const DeviceTrace& trace, const MemplanModelOptions& options, PlanFile* learnt) {
  return run_memplan(trace, options, true, nullptr, learnt);
}

StatusOr<ModelResult> simulate_memplan_warm(const DeviceTrace& trace, const PlanFile& plans,
                                            const MemplanModelOptions& options) {
  if (plans.adapter != "device") {
    return InvalidArgument("plans of the " + plans.adapter + " allocator; the model is the device allocator");
  }
  return run_memplan(trace, options, false, &plans);
}

StatusOr<ModelResult> simulate_memplan_cold(const DeviceTrace& trace, const MemplanModelOptions& options) {
  return run_memplan(trace, options, false);
}

}  // namespace memplan::simulate
