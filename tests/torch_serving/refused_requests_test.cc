// The two adapters of the checked kernel — the libtorch allocator and the
// device replay allocator (on the mock device) — count a request the kernel
// refused by one rule (Note [Refused requests], runtime/checked_kernel.h):
// one request sequence, run through both, gives both the same counters, and
// the ones the rule says.
#include <ATen/record_function.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "boundary_config.h"
#include "mock_device.h"
#include "runtime/device/device_replay.h"
#include "torch/torch_allocator.h"

namespace memplan::torch_serving {
namespace {

// One step of a program: allocate block `id` of `bytes`, or free it.
struct Step {
  bool allocate;
  int id;
  size_t bytes = 0;
};
using Iteration = std::vector<Step>;

constexpr size_t kA = 1 << 20;
constexpr size_t kB = 2 << 20;

// Two agreeing iterations (a plan: a and b live together), then:
//   3: a served and kept past the boundary;
//   4: a asks for more than planned while its block is still live (larger
//      and busy), b served; the kept a is freed;
//   5: the grown plan serves both;
//   6: a kept past the boundary again;
//   7: a, of its planned size, finds its block live (busy only).
std::vector<Iteration> program() {
  const Iteration plain = {{true, 0, kA}, {true, 1, kB}, {false, 0}, {false, 1}};
  return {plain,
          plain,
          {{true, 10, kA}, {true, 1, kB}, {false, 1}},
          {{true, 0, kA + 4096}, {true, 1, kB}, {false, 0}, {false, 1}, {false, 10}},
          plain,
          {{true, 10, kA}, {true, 1, kB}, {false, 1}},
          {{true, 0, kA}, {true, 1, kB}, {false, 0}, {false, 1}, {false, 10}},
          plain};
}

ReplayStats run_torch(const std::vector<Iteration>& iterations) {
  auto created = TorchReplayAllocator::create(boundary_config());
  EXPECT_TRUE(created.ok()) << created.status().message();
  if (!created.ok()) return {};
  std::unique_ptr<TorchReplayAllocator> allocator = std::move(*created);
  EXPECT_TRUE(allocator->install().ok());
  std::map<int, c10::DataPtr> live;
  for (const Iteration& steps : iterations) {
    {
      IterationGuard iteration(*allocator);  // marks after the operator scope below ends
      RECORD_FUNCTION("test::refused", std::vector<c10::IValue>());
      for (const Step& step : steps) {
        if (step.allocate) {
          live[step.id] = allocator->allocate(step.bytes);
        } else {
          live.erase(step.id);
        }
      }
    }
  }
  EXPECT_TRUE(allocator->check_invariants().ok()) << allocator->check_invariants().message();
  const ReplayStats s = allocator->stats();
  live.clear();
  allocator->uninstall();
  return s;
}

ReplayStats run_device(const std::vector<Iteration>& iterations) {
  runtime::testing::MockDevices devices(1);
  auto made = runtime::DeviceReplayAllocator::create(boundary_config(), devices);
  EXPECT_TRUE(made.ok()) << made.status().message();
  if (!made.ok()) return {};
  runtime::DeviceReplayAllocator& allocator = **made;
  void* stream = runtime::testing::MockStreams::handle(0);
  std::map<int, std::pair<void*, size_t>> live;
  for (const Iteration& steps : iterations) {
    for (const Step& step : steps) {
      if (step.allocate) {
        live[step.id] = {allocator.allocate(step.bytes, 0, stream), step.bytes};
      } else {
        allocator.deallocate(live[step.id].first, live[step.id].second, 0, stream);
        live.erase(step.id);
      }
    }
    allocator.mark();
  }
  EXPECT_TRUE(allocator.check_invariants().ok()) << allocator.check_invariants().message();
  EXPECT_EQ(devices[0].errors, 0);
  return allocator.stats();
}

TEST(RefusedRequests, BothAdaptersCountTheSameSequenceAlike) {
  const ReplayStats torch = run_torch(program());
  const ReplayStats device = run_device(program());
  // The counters of requests and of the learning cycle; not the slab's
  // bytes (the device rounds to its granule), times or predictions (the
  // device adapter predicts variants, the libtorch one is told them).
  for (const char* name : {"iterations", "profiled", "served", "unplanned", "fallback", "busy", "deviations", "plans",
                           "reprofiles", "plan_failures", "growths", "planned_buffers"}) {
    for (const ReplayCounter& c : kReplayCounters) {
      if (std::string_view(c.name) == name) EXPECT_EQ(torch.*c.member, device.*c.member) << name;
    }
  }
  // The rule: the larger request deviates (and grows the plan) though its
  // block was busy too; the one that fits but finds its block live is busy.
  for (const ReplayStats& s : {torch, device}) {
    EXPECT_EQ(s.fallback, 2u);
    EXPECT_EQ(s.busy, 1u);
    EXPECT_EQ(s.deviations, 1u);
    EXPECT_EQ(s.growths, 1u);
    EXPECT_EQ(s.reprofiles, 0u);
  }
}

}  // namespace
}  // namespace memplan::torch_serving
