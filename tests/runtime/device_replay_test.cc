// Tests of the device replay allocator (runtime/device/device_replay.h) on a
// mock device (mock_device.h): learning and serving per stream, growth,
// keyed plans, blocks kept past their plan, out-of-memory, resident slots
// seeded from a plan file, and a property test of the stream rule (Note
// [Streams]) on random multi-stream programs whose kernels run late and out
// of order across streams, with and without resident slots.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "memplan/plan_file.h"
#include "mock_device.h"
#include "runtime/device/device_replay.h"

namespace memplan::runtime {
namespace {

using testing::MockDevice;
using testing::MockDevices;
using testing::MockStreams;

ReplayConfig device_config() {
  ReplayConfig config;
  config.profile_iterations = 2;
  config.deviations_to_reprofile = 2;
  config.max_slab_bytes = int64_t{32} << 20;
  config.planner = "greedy_by_size";
  return config;
}

std::unique_ptr<DeviceReplayAllocator> make(MockDevices& devices, const ReplayConfig& config = device_config()) {
  auto made = DeviceReplayAllocator::create(config, devices);
  EXPECT_TRUE(made.ok()) << made.status().message();
  return made.ok() ? std::move(*made) : nullptr;
}

// One iteration on one stream: a chain of tensors, each freed after the next
// one is made (the shape of a forward pass). Returns the addresses.
std::vector<void*> chain(DeviceReplayAllocator& a, void* stream, const std::vector<size_t>& sizes, int device = 0) {
  std::vector<void*> got;
  void* previous = nullptr;
  size_t previous_size = 0;
  for (const size_t size : sizes) {
    void* p = a.allocate(size, device, stream);
    EXPECT_NE(p, nullptr);
    got.push_back(p);
    if (previous != nullptr) a.deallocate(previous, previous_size, device, stream);
    previous = p;
    previous_size = size;
  }
  if (previous != nullptr) a.deallocate(previous, previous_size, device, stream);
  return got;
}

const std::vector<size_t> kSizes = {4096, 1 << 20, 3 << 20, 512, 2 << 20};

// The profiled iterations (profile_iterations = 2) of kSizes on `stream`.
void learn(DeviceReplayAllocator& a, void* stream) {
  for (int i = 0; i < 2; ++i) {
    chain(a, stream, kSizes);
    a.mark();
  }
}

TEST(DeviceReplay, RepeatedIterationIsServedAtStableAddressesAfterProfiling) {
  MockDevices devices(1);
  auto a = make(devices);
  void* stream = MockStreams::handle(0);
  learn(*a, stream);
  const std::vector<void*> first = chain(*a, stream, kSizes);
  a->mark();
  const std::vector<void*> second = chain(*a, stream, kSizes);
  a->mark();
  // A captured CUDA graph replays fixed addresses: the plan gives the same ones.
  EXPECT_EQ(first, second);
  const ReplayStats s = a->stats();
  EXPECT_EQ(s.plans, 1u);
  EXPECT_EQ(s.served, 10u);
  EXPECT_EQ(s.fallback, 0u);
  EXPECT_EQ(s.threads, 1u);
  // Neighbours in the chain are live together; the rest share bytes.
  EXPECT_LT(s.slab_bytes, uint64_t{6} << 20);
  EXPECT_EQ(s.slab_bytes % testing::MockDevice::kGranule, 0u);
  EXPECT_EQ(devices[0].errors, 0);
  EXPECT_EQ(devices[0].fallback_live(), 0u);
  EXPECT_GE(devices[0].trims, 1);
  EXPECT_TRUE(a->check_invariants().ok()) << a->check_invariants().message();
}

TEST(DeviceReplay, EachStreamAndDeviceHasItsOwnUnitAndWindow) {
  MockDevices devices(2);
  auto a = make(devices);
  std::vector<std::set<void*>> seen(3);
  for (int i = 0; i < 4; ++i) {
    for (const void* p : chain(*a, MockStreams::handle(0), kSizes, 0)) seen[0].insert(const_cast<void*>(p));
    for (const void* p : chain(*a, MockStreams::handle(1), kSizes, 0)) seen[1].insert(const_cast<void*>(p));
    for (const void* p : chain(*a, MockStreams::handle(0), kSizes, 1)) seen[2].insert(const_cast<void*>(p));
    a->mark();
  }
  EXPECT_EQ(a->units(), 3u);
  const ReplayStats s = a->stats();
  EXPECT_EQ(s.plans, 3u);
  EXPECT_EQ(s.served, 30u);  // 2 served iterations x 3 units x 5 requests
  EXPECT_TRUE(a->check_invariants().ok()) << a->check_invariants().message();
  EXPECT_EQ(devices[0].errors + devices[1].errors, 0);
}

TEST(DeviceReplay, UnknownDeviceIsRefused) {
  MockDevices devices(1);
  auto a = make(devices);
  EXPECT_EQ(a->allocate(4096, 3, MockStreams::handle(0)), nullptr);
  EXPECT_EQ(a->units(), 0u);
}

TEST(DeviceReplay, LargerRequestGrowsThePlan) {
  MockDevices devices(1);
  auto a = make(devices);
  void* stream = MockStreams::handle(0);
  learn(*a, stream);
  std::vector<size_t> larger = kSizes;
  larger[2] += 8192;
  chain(*a, stream, larger);  // one fallback; the maxima rise
  a->mark();
  ReplayStats s = a->stats();
  EXPECT_EQ(s.fallback, 1u);
  EXPECT_EQ(s.growths, 1u);
  chain(*a, stream, larger);
  a->mark();
  chain(*a, stream, kSizes);  // the smaller shape fits the grown plan
  a->mark();
  s = a->stats();
  EXPECT_EQ(s.fallback, 1u);
  EXPECT_EQ(s.served, 4u + 10u);
  EXPECT_EQ(devices[0].fallback_live(), 0u);
  EXPECT_TRUE(a->check_invariants().ok()) << a->check_invariants().message();
}

TEST(DeviceReplay, KeyedMarksKeepOnePlanPerVariant) {
  MockDevices devices(1);
  auto a = make(devices);
  void* stream = MockStreams::handle(0);
  const std::vector<size_t> other = {8 << 20, 256, 256, 256};
  a->mark(1);
  for (int i = 0; i < 8; ++i) {
    chain(*a, stream, i % 2 == 0 ? kSizes : other);
    a->mark(1 + (i + 1) % 2);
  }
  const ReplayStats s = a->stats();
  EXPECT_EQ(s.plans, 2u);
  EXPECT_EQ(s.plans_held, 2u);
  EXPECT_EQ(s.fallback, 0u);
  EXPECT_EQ(s.served, 2u * 5 + 2u * 4);  // iterations 4-7 are served
  EXPECT_TRUE(a->check_invariants().ok()) << a->check_invariants().message();
}

TEST(DeviceReplay, BlockKeptPastItsPlanIsNeverShared) {
  MockDevices devices(1);
  auto a = make(devices);
  void* stream = MockStreams::handle(0);
  learn(*a, stream);
  // An iteration like the learnt ones, but its second tensor is kept past
  // the boundary (a served block): its bytes stay taken.
  std::vector<void*> p;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    p.push_back(a->allocate(kSizes[i], 0, stream));
    if (i >= 1 && i - 1 != 1) a->deallocate(p[i - 1], kSizes[i - 1], 0, stream);
  }
  a->deallocate(p.back(), kSizes.back(), 0, stream);
  void* held = p[1];
  std::memset(held, 0x5a, kSizes[1]);
  a->mark();
  const uint64_t busy_before = a->stats().busy;
  for (int i = 0; i < 2; ++i) {
    for (void* q : chain(*a, stream, kSizes)) {
      const bool overlaps =
          q < static_cast<unsigned char*>(held) + kSizes[1] && held < static_cast<unsigned char*>(q) + 1;
      EXPECT_FALSE(overlaps) << "a block shares bytes with the held one";
    }
    a->mark();
  }
  const auto* bytes = static_cast<const unsigned char*>(held);
  for (size_t i = 0; i < kSizes[1]; i += 4096) ASSERT_EQ(bytes[i], 0x5a) << "byte " << i;
  EXPECT_GT(a->stats().busy, busy_before);  // requests planned over the held bytes went to the fallback
  EXPECT_TRUE(a->check_invariants().ok()) << a->check_invariants().message();
  a->deallocate(held, kSizes[1], 0, stream);
}

TEST(DeviceReplay, OutOfDeviceMemoryIsNullAndStaleFreesAreIgnored) {
  MockDevices devices(1);
  auto a = make(devices);
  void* stream = MockStreams::handle(0);
  devices[0].fail_allocations = true;
  EXPECT_EQ(a->allocate(4096, 0, stream), nullptr);
  devices[0].fail_allocations = false;
  a->mark();
  for (int i = 0; i < 3; ++i) {
    chain(*a, stream, kSizes);
    a->mark();
  }
  // A pointer inside the slab that no live block starts at.
  void* p = a->allocate(kSizes[0], 0, stream);
  a->deallocate(static_cast<unsigned char*>(p) + 512, kSizes[0], 0, stream);
  EXPECT_EQ(a->stats().invalid_frees, 1u);
  a->deallocate(p, kSizes[0], 0, stream);
  EXPECT_TRUE(a->check_invariants().ok()) << a->check_invariants().message();
}

TEST(DeviceReplay, MemoryStatsCountLiveRequestsAndTheirPeaks) {
  MockDevices devices(1);
  auto a = make(devices);
  void* stream = MockStreams::handle(0);
  void* x = a->allocate(4096, 0, stream);
  void* y = a->allocate(1 << 20, 0, stream);
  DeviceMemoryStats s = a->memory_stats();
  EXPECT_EQ(s.allocated_bytes, 4096u + (1u << 20));
  EXPECT_EQ(s.peak_allocated_bytes, s.allocated_bytes);
  EXPECT_EQ(s.reserved_bytes, s.allocated_bytes);  // profiling: the fallback serves, no slab yet
  EXPECT_EQ(s.requests, 2u);
  EXPECT_EQ(s.served, 0u);
  a->deallocate(y, 1 << 20, 0, stream);
  s = a->memory_stats();
  EXPECT_EQ(s.allocated_bytes, 4096u);
  EXPECT_EQ(s.reserved_bytes, 4096u);
  EXPECT_EQ(s.peak_allocated_bytes, 4096u + (1u << 20));
  EXPECT_EQ(s.peak_reserved_bytes, 4096u + (1u << 20));
  a->reset_peaks();
  s = a->memory_stats();
  EXPECT_EQ(s.peak_allocated_bytes, 4096u);
  EXPECT_EQ(s.peak_reserved_bytes, 4096u);
  a->deallocate(x, 4096, 0, stream);
  EXPECT_EQ(a->memory_stats().allocated_bytes, 0u);
  EXPECT_EQ(a->memory_stats().requests, 2u);
}

TEST(DeviceReplay, MemoryStatsCountTheMappedSlabAsReservedWhenServing) {
  MockDevices devices(1);
  auto a = make(devices);
  void* stream = MockStreams::handle(0);
  learn(*a, stream);
  chain(*a, stream, kSizes);
  a->mark();
  const DeviceMemoryStats s = a->memory_stats();
  const ReplayStats r = a->stats();
  EXPECT_EQ(s.requests, 3 * kSizes.size());
  EXPECT_EQ(s.served, r.served);
  EXPECT_EQ(s.served, kSizes.size());
  EXPECT_EQ(s.allocated_bytes, 0u);
  // Nothing is live in the fallback: what is reserved is the slab, mapped
  // while its plan serves.
  EXPECT_GT(r.slab_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, r.slab_bytes);
  EXPECT_GE(s.peak_reserved_bytes, r.slab_bytes);
  // A chain keeps two neighbours live: the largest pair is 1 MiB + 3 MiB.
  EXPECT_EQ(s.peak_allocated_bytes, (1u << 20) + (3u << 20));
}

// ---------------------------------------------------------------------------
// Note [Resident blocks]: a seeded unit serves the requests no plan serves
// from slots made for the first saved variant's escaped requests.

// A saved variant of sequence identity: per request its size and the tick it
// is freed at (-1: escaped).
SavedVariant saved_variant(uint64_t key, const std::vector<std::pair<uint64_t, int64_t>>& requests) {
  SavedVariant v{.key = key};
  for (const auto& [size, upper] : requests) {
    v.requests.push_back(
        {.size = size, .alignment = 512, .lower = static_cast<int64_t>(v.requests.size()), .upper = upper});
  }
  return v;
}

PlanFile device_file(std::vector<SavedVariant> variants) {
  PlanFile file{.adapter = "device"};
  file.units.push_back({.name = "cuda:0/0", .variants = std::move(variants)});
  return file;
}

TEST(DeviceResident, EscapedRequestsOfTheFirstVariantAreServedFromSlotsOfTheirOwn) {
  MockDevices devices(1);
  auto a = make(devices);
  // The saving run's first iteration: three blocks kept (1 MiB, 600 B, 2 MiB)
  // and a 3 MiB temporary freed at tick 2.
  ASSERT_TRUE(a->load_plans(device_file({saved_variant(0x8000000000000001,
                                                       {{1 << 20, -1}, {3 << 20, 2}, {600, -1}, {2 << 20, -1}})}))
                  .ok());
  void* stream = MockStreams::handle(0);
  auto* p1 = static_cast<unsigned char*>(a->allocate(1 << 20, 0, stream));
  void* temporary = a->allocate(3 << 20, 0, stream);
  a->deallocate(temporary, 3 << 20, 0, stream);
  auto* p3 = static_cast<unsigned char*>(a->allocate(600, 0, stream));
  auto* p4 = static_cast<unsigned char*>(a->allocate(2 << 20, 0, stream));
  // Packed in the saved order, 600 B rounded to 512 B blocks.
  EXPECT_EQ(p3, p1 + (1 << 20));
  EXPECT_EQ(p4, p3 + 1024);
  EXPECT_EQ(devices[0].fallback_allocations, 0) << "the temporary is the seeded plan's, the rest resident";
  // One mapping holds the slots (3 MiB + 1 KiB) and the slab above them,
  // sharing a 64 KiB granule: the slab's bytes are counted in 512 B units.
  constexpr uint64_t kSpan = (3u << 20) + 1024;
  auto granules = [](uint64_t bytes) {
    return (bytes + MockDevice::kGranule - 1) / MockDevice::kGranule * MockDevice::kGranule;
  };
  const uint64_t slab = a->stats().slab_bytes;
  EXPECT_EQ(slab % 512, 0u);
  EXPECT_EQ(a->memory_stats().reserved_bytes, granules(kSpan + slab));
  EXPECT_EQ(a->resident_bytes(), kSpan);
  EXPECT_EQ(a->memory_stats().served, 4u);
  // A kept block freed and made again (a gradient of a later step) takes its
  // slot again, after the boundary too; a size with no free slot falls back.
  a->mark();
  a->deallocate(p4, 2 << 20, 0, stream);
  EXPECT_EQ(a->allocate(2 << 20, 0, stream), p4);
  void* other = a->allocate(2 << 20, 0, stream);
  EXPECT_FALSE(other == p1 || other == p3 || other == p4);
  EXPECT_EQ(devices[0].fallback_allocations, 1);
  a->deallocate(other, 2 << 20, 0, stream);
  // A free inside the region that is no live slot's start is ignored, never
  // handed to the fallback.
  a->deallocate(p1 + 512, 512, 0, stream);
  EXPECT_EQ(a->stats().invalid_frees, 1u);
  EXPECT_EQ(devices[0].errors, 0);
  ASSERT_TRUE(a->check_invariants().ok()) << a->check_invariants().message();
  // Once no slot is live at a boundary, the region is given back whole.
  a->deallocate(p1, 1 << 20, 0, stream);
  a->deallocate(p3, 600, 0, stream);
  a->deallocate(p4, 2 << 20, 0, stream);
  a->deallocate(p4, 2 << 20, 0, stream);  // twice: the slot is free, and listed free once
  EXPECT_EQ(a->stats().invalid_frees, 2u);
  ASSERT_TRUE(a->check_invariants().ok()) << a->check_invariants().message();
  const int64_t synchronized = devices[0].synchronizes;
  a->mark();
  // The granules below the slab's first go; the shared one stays with the slab.
  EXPECT_EQ(a->memory_stats().reserved_bytes, granules(kSpan + slab) - (3u << 20));
  EXPECT_EQ(a->resident_bytes(), 0u);
  EXPECT_GT(devices[0].synchronizes, synchronized) << "its stream's kernels finish before it is unmapped";
  ASSERT_TRUE(a->check_invariants().ok()) << a->check_invariants().message();
  EXPECT_EQ(devices[0].errors, 0);
}

// A training loop on one stream, in two processes: the first learns and
// saves its plans, the second loads them. The second's kept blocks
// (parameters made at start-up, the optimizer's state made in step 1) come
// from resident slots, its first iteration (start-up and step 1) from the
// first variant's plan and its later steps from the steady one's: it never
// asks the fallback for memory.
struct TrainingRun {
  PlanFile saved;
  int64_t fallback_allocations = 0;
  uint64_t peak_reserved = 0;
  uint64_t served = 0;
};

TrainingRun train(const PlanFile* plans) {
  ReplayConfig config = device_config();
  config.save_plans_file = "(test)";  // keeps the first iteration's profile
  MockDevices devices(1);
  TrainingRun run;
  auto a = make(devices, config);
  if (plans) EXPECT_TRUE(a->load_plans(*plans).ok());
  void* stream = MockStreams::handle(0);
  const std::vector<size_t> parameters = {1 << 20, 3 << 20, 4096};
  std::vector<void*> kept;
  for (const size_t size : parameters) kept.push_back(a->allocate(size, 0, stream));
  for (int step = 0; step < 6; ++step) {
    std::vector<void*> activations;
    for (const size_t size : {size_t{2} << 20, size_t{1} << 20, size_t{512} << 10}) {
      activations.push_back(a->allocate(size, 0, stream));
    }
    void* gradient_buffer = a->allocate(3 << 20, 0, stream);
    a->deallocate(gradient_buffer, 3 << 20, 0, stream);
    a->deallocate(activations[2], 512 << 10, 0, stream);
    a->deallocate(activations[1], 1 << 20, 0, stream);
    a->deallocate(activations[0], 2 << 20, 0, stream);
    if (step == 0) {
      for (const size_t size : parameters) kept.push_back(a->allocate(size, 0, stream));  // optimizer state
    }
    a->mark();
  }
  EXPECT_TRUE(a->check_invariants().ok()) << a->check_invariants().message();
  run.saved = a->saved_plans("");
  run.fallback_allocations = devices[0].fallback_allocations;
  run.peak_reserved = a->memory_stats().peak_reserved_bytes;
  run.served = a->memory_stats().served;
  for (size_t k = 0; k < kept.size(); ++k) a->deallocate(kept[k], parameters[k % parameters.size()], 0, stream);
  EXPECT_EQ(devices[0].errors, 0);
  EXPECT_EQ(a->stats().invalid_frees, 0u);
  return run;
}

TEST(DeviceResident, ASecondRunOfATrainingLoopKeepsItsStateInResidentSlots) {
  const TrainingRun first = train(nullptr);
  // Learning: the two profiled iterations' 8 requests and the 6 kept blocks,
  // then one more step until the plan is made at its end.
  EXPECT_EQ(first.fallback_allocations, 18);
  ASSERT_EQ(first.saved.units.size(), 1u);
  ASSERT_GE(first.saved.units[0].variants.size(), 2u);
  const TrainingRun second = train(&first.saved);
  EXPECT_EQ(second.fallback_allocations, 0);
  EXPECT_EQ(second.served, 3u + 6u * 4u + 3u);
  // The mock counts the fallback's bytes as requested, with no segments: the
  // region adds at most its rounding to a granule.
  EXPECT_LE(second.peak_reserved, first.peak_reserved + MockDevice::kGranule);
}

// A file whose first iteration does not fit is dropped with its slab
// (Note [Plans from a file]); the slots that hold blocks stay mapped with
// their contents.
TEST(DeviceResident, LiveSlotsOutlastTheSlabOfADroppedFile) {
  MockDevices devices(1);
  auto a = make(devices);
  ASSERT_TRUE(
      a->load_plans(device_file({saved_variant(0x8000000000000001, {{1 << 20, -1}, {2 << 20, 2}, {4096, 3}})})).ok());
  void* stream = MockStreams::handle(0);
  auto* kept = static_cast<unsigned char*>(a->allocate(1 << 20, 0, stream));
  std::memset(kept, 0x5a, 1 << 20);
  ASSERT_GT(a->stats().slab_bytes, 0u) << "the seeded plan's slab is mapped";
  void* larger = a->allocate(5 << 20, 0, stream);  // request 1 outgrows its block: the seed is dropped
  EXPECT_EQ(a->stats().slab_bytes, 0u);
  ASSERT_TRUE(a->check_invariants().ok()) << a->check_invariants().message();
  EXPECT_EQ(kept[0], 0x5a);
  EXPECT_EQ(kept[(1 << 20) - 1], 0x5a);
  a->deallocate(larger, 5 << 20, 0, stream);
  a->deallocate(kept, 1 << 20, 0, stream);
  a->mark();
  EXPECT_EQ(a->memory_stats().reserved_bytes, 0u) << "no slot live at the boundary: the region goes";
  EXPECT_EQ(devices[0].errors, 0);
}

TEST(DeviceResident, NoRegionWithoutEscapedRequestsOrBeyondTheSlabLimit) {
  void* stream = MockStreams::handle(0);
  {
    MockDevices devices(1);
    auto a = make(devices);
    ASSERT_TRUE(a->load_plans(device_file({saved_variant(0x8000000000000001, {{4096, 1}, {8192, 2}})})).ok());
    a->allocate(4096, 0, stream);  // the seeded plan's first block
    EXPECT_EQ(a->memory_stats().served, 1u);
    EXPECT_EQ(a->memory_stats().reserved_bytes, a->stats().slab_bytes) << "a slab and no region";
  }
  {
    MockDevices devices(1);
    auto a = make(devices);  // max_slab_bytes: 32 MiB
    ASSERT_TRUE(a->load_plans(device_file({saved_variant(0x8000000000000001, {{20 << 20, -1}, {20 << 20, -1}})})).ok());
    void* p = a->allocate(20 << 20, 0, stream);
    EXPECT_EQ(devices[0].fallback_allocations, 1);
    a->deallocate(p, 20 << 20, 0, stream);
  }
}

// ---------------------------------------------------------------------------
// The stream rule, as a property: random programs on 3 streams whose kernels
// run late and in random order across streams. Each tensor is filled by a
// kernel on its stream when made and checked by another just before the host
// frees it; a check that finds another cookie means the tensor's bytes were
// handed to another stream while its kernels were still queued.

struct Tensor {
  size_t size;
  int lifetime;  // freed after this many later requests of its stream
};

using Program = std::vector<std::vector<Tensor>>;  // per stream

Program random_program(std::mt19937_64& rng, int streams) {
  Program program(static_cast<size_t>(streams));
  for (auto& tensors : program) {
    const int n = std::uniform_int_distribution<int>(3, 24)(rng);
    for (int i = 0; i < n; ++i) {
      const size_t size = size_t{1} << std::uniform_int_distribution<int>(6, 18)(rng);
      tensors.push_back({size + 64 * std::uniform_int_distribution<size_t>(0, 3)(rng),
                         std::uniform_int_distribution<int>(0, 4)(rng)});
    }
  }
  return program;
}

// Runs `iterations` of `program` through `allocator` (anything with
// allocate/deallocate/mark); returns the checks that found another cookie.
template <class Allocator>
int64_t run_streams(Allocator& allocator, MockStreams& streams, const Program& program, int iterations, uint64_t seed) {
  std::mt19937_64 rng(seed);
  unsigned char cookie = 1;
  struct Live {
    void* p;
    size_t size;
    unsigned char cookie;
    int frees_at;
  };
  for (int it = 0; it < iterations; ++it) {
    // Some iterations deviate: a larger tensor (growth) or one more at the end.
    const bool grow = std::uniform_int_distribution<int>(0, 5)(rng) == 0;
    const bool extra = std::uniform_int_distribution<int>(0, 7)(rng) == 0;
    std::vector<size_t> next(program.size(), 0);
    std::vector<std::vector<Live>> live(program.size());
    auto release = [&](size_t s, const Live& t) {
      streams.check(static_cast<int>(s), t.p, t.size, t.cookie);
      allocator.deallocate(t.p, t.size, 0, MockStreams::handle(static_cast<int>(s)));
    };
    for (;;) {
      std::vector<size_t> pending;
      for (size_t s = 0; s < program.size(); ++s) {
        if (next[s] < program[s].size() + (extra ? 1 : 0)) pending.push_back(s);
      }
      if (pending.empty()) break;
      const size_t s = pending[std::uniform_int_distribution<size_t>(0, pending.size() - 1)(rng)];
      const size_t j = next[s]++;
      Tensor t = j < program[s].size() ? program[s][j] : Tensor{4096, 0};
      if (grow && j == 1) t.size += 4096;
      void* p = allocator.allocate(t.size, 0, MockStreams::handle(static_cast<int>(s)));
      if (p == nullptr) continue;
      cookie = static_cast<unsigned char>(cookie % 250 + 1);
      streams.fill(static_cast<int>(s), p, t.size, cookie);
      const int now = static_cast<int>(j);
      live[s].push_back({p, t.size, cookie, now + t.lifetime});
      for (size_t k = 0; k < live[s].size();) {
        if (live[s][k].frees_at <= now && live[s][k].p != p) {
          release(s, live[s][k]);
          live[s].erase(live[s].begin() + static_cast<std::ptrdiff_t>(k));
        } else {
          ++k;
        }
      }
      streams.run_some(std::uniform_int_distribution<int>(0, 3)(rng));
    }
    for (size_t s = 0; s < live.size(); ++s) {
      for (const Live& t : live[s]) release(s, t);
    }
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) streams.drain();  // no synchronize at most boundaries
    allocator.mark();
  }
  streams.drain();
  return streams.corrupted;
}

// The negative control: one free list shared by every stream (what a
// stream-blind allocator does). The property must catch it.
class StreamBlindAllocator {
 public:
  void* allocate(size_t size, int, void*) {
    auto& list = free_[size];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      return p;
    }
    blocks_.push_back(std::make_unique<unsigned char[]>(size));
    return blocks_.back().get();
  }
  void deallocate(void* p, size_t size, int, void*) { free_[size].push_back(p); }
  void mark() {}

 private:
  std::unordered_map<size_t, std::vector<void*>> free_;
  std::vector<std::unique_ptr<unsigned char[]>> blocks_;
};

TEST(DeviceReplayStreams, TheStreamCheckCatchesAStreamBlindAllocator) {
  int64_t caught = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::mt19937_64 rng(seed);
    StreamBlindAllocator blind;
    MockStreams streams(3, seed);
    caught += run_streams(blind, streams, random_program(rng, 3), 6, seed) > 0 ? 1 : 0;
  }
  EXPECT_GT(caught, 10);
}

TEST(DeviceReplayStreams, RandomProgramsNeverShareBytesAcrossStreams) {
  int64_t served = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::mt19937_64 rng(seed);
    const Program program = random_program(rng, 3);
    MockDevices devices(1);
    MockStreams streams(3, seed);
    devices[0].on_synchronize = [&streams](void* stream) { streams.drain_handle(stream); };
    devices[0].in_use = [&streams](void* p, size_t bytes) { return streams.touches(p, bytes); };
    auto a = make(devices);
    ASSERT_EQ(run_streams(*a, streams, program, 10, seed), 0) << "seed " << seed;
    ASSERT_EQ(devices[0].unmapped_in_use, 0) << "seed " << seed;
    ASSERT_TRUE(a->check_invariants().ok()) << "seed " << seed << ": " << a->check_invariants().message();
    ASSERT_EQ(devices[0].errors, 0) << "seed " << seed;
    ASSERT_EQ(devices[0].fallback_live(), 0u) << "seed " << seed;
    served += static_cast<int64_t>(a->stats().served);
  }
  EXPECT_GT(served, 0);  // the property ran on served blocks, not only on fallbacks
}

// The same property with a plan file loaded whose first variant keeps blocks
// of the program's sizes on every stream: resident slots serve some requests
// of every stream, and still no byte is shared or unmapped while queued
// kernels use it.
TEST(DeviceReplayStreams, RandomProgramsWithResidentSlotsNeverShareBytes) {
  uint64_t resident_served = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    std::mt19937_64 rng(seed);
    const Program program = random_program(rng, 3);
    PlanFile file{.adapter = "device"};
    for (size_t s = 0; s < program.size(); ++s) {
      std::vector<std::pair<uint64_t, int64_t>> kept;
      for (const Tensor& t : program[s]) {
        if (std::uniform_int_distribution<int>(0, 1)(rng) == 0) kept.push_back({t.size, -1});
      }
      if (kept.empty()) continue;
      file.units.push_back(
          {.name = "cuda:0/" + std::to_string(s), .variants = {saved_variant(0x8000000000000001 + s, kept)}});
    }
    MockDevices devices(1);
    MockStreams streams(3, seed);
    devices[0].on_synchronize = [&streams](void* stream) { streams.drain_handle(stream); };
    devices[0].in_use = [&streams](void* p, size_t bytes) { return streams.touches(p, bytes); };
    auto a = make(devices);
    ASSERT_TRUE(a->load_plans(file).ok());
    ASSERT_EQ(run_streams(*a, streams, program, 6, seed), 0) << "seed " << seed;
    ASSERT_EQ(devices[0].unmapped_in_use, 0) << "seed " << seed;
    ASSERT_TRUE(a->check_invariants().ok()) << "seed " << seed << ": " << a->check_invariants().message();
    ASSERT_EQ(devices[0].errors, 0) << "seed " << seed;
    ASSERT_EQ(devices[0].fallback_live(), 0u) << "seed " << seed;
    const DeviceMemoryStats m = a->memory_stats();
    resident_served += m.served - a->stats().served;
  }
  EXPECT_GT(resident_served, 100u);  // the property ran on resident slots
}

// A slab is unmapped (the allocator goes, or a unit re-profiles and gives its
// slab back) only after its stream's queued kernels ran: with the stream's
// synchronisation the queued kernel is done first; a device whose
// synchronisation does nothing shows what would fault on a GPU.
TEST(DeviceReplayStreams, ASlabIsUnmappedOnlyAfterItsStreamSynchronizes) {
  for (const bool synchronizing : {true, false}) {
    MockDevices devices(1);
    MockStreams streams(1, 0);
    if (synchronizing) devices[0].on_synchronize = [&streams](void* s) { streams.drain_handle(s); };
    devices[0].in_use = [&streams](void* p, size_t bytes) { return streams.touches(p, bytes); };
    void* stream = MockStreams::handle(0);
    {
      auto a = make(devices);
      learn(*a, stream);
      void* p = a->allocate(kSizes[0], 0, stream);
      ASSERT_GT(a->stats().served, 0u);
      streams.fill(0, p, kSizes[0], 7);  // a kernel still queued when the tensor dies
      a->deallocate(p, kSizes[0], 0, stream);
    }
    EXPECT_EQ(devices[0].unmapped_in_use, synchronizing ? 0 : 1);
    streams.discard();  // the kernel's memory is gone with the window
  }
}

}  // namespace
}  // namespace memplan::runtime
