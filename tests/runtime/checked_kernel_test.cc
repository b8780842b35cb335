// Tests of the checked serving kernel (runtime/checked_kernel.h): the rule
// (a block is served only while neither it nor a block sharing its bytes is
// live), frees, one check_invariants failure per fact it states, and — in a
// build with MEMPLAN_EXPENSIVE_CHECKS — that the adapters run the checks at
// plan adoption and at every iteration boundary.
#include "runtime/checked_kernel.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "mock_device.h"
#include "runtime/device/device_replay.h"
#include "runtime/os/os_memory.h"

namespace memplan::runtime {
namespace {

constexpr size_t kWindow = size_t{1} << 20;

// The example of checked_kernel.h: a [0, 64), b [32, 96), c [64, 128).
class CheckedKernelTest : public ::testing::Test {
 protected:
  CheckedKernelTest() : window_(os::reserve(kWindow)), slab_(window_, kWindow), kernel_(slab_) {
    EXPECT_TRUE(slab_.commit(4096, false).ok());
    plan_.arena = 128;
    plan_.blocks = {{.offset = 0, .size = 64}, {.offset = 32, .size = 64}, {.offset = 64, .size = 64}};
    CheckedKernel::link_overlaps(plan_.blocks);
    kernel_.publish(plan_);
  }
  ~CheckedKernelTest() override {
    slab_.release();
    os::release(window_, kWindow);
  }
  unsigned char* at(int64_t offset) const { return slab_.base() + offset; }

  void* window_;
  Slab slab_;
  CheckedPlan plan_;
  CheckedKernel kernel_;
};

TEST_F(CheckedKernelTest, ServesABlockAtItsOffsetWhenNothingSharingItsBytesIsLive) {
  EXPECT_EQ(kernel_.serve(0, 64).p, at(0));
  EXPECT_EQ(kernel_.serve(2, 10).p, at(64));  // shares nothing with a
  EXPECT_TRUE(kernel_.in_use());
  EXPECT_TRUE(kernel_.check_invariants(&plan_).ok());
}

TEST_F(CheckedKernelTest, RefusesABlockSharingBytesWithALiveOne) {
  ASSERT_NE(kernel_.serve(0, 64).p, nullptr);
  const CheckedKernel::Served b = kernel_.serve(1, 64);
  EXPECT_EQ(b.p, nullptr);
  EXPECT_TRUE(b.busy);
  EXPECT_FALSE(b.larger);
  ASSERT_TRUE(kernel_.free(at(0)));
  EXPECT_EQ(kernel_.serve(1, 64).p, at(32));
}

TEST_F(CheckedKernelTest, RefusesALargerRequestAndChangesNothing) {
  const CheckedKernel::Served a = kernel_.serve(0, 65);
  EXPECT_EQ(a.p, nullptr);
  EXPECT_TRUE(a.larger);
  EXPECT_FALSE(a.busy);
  EXPECT_FALSE(kernel_.in_use());
}

TEST_F(CheckedKernelTest, FreeOfAPointerNoLiveBlockStartsAtChangesNothing) {
  ASSERT_NE(kernel_.serve(0, 64).p, nullptr);
  EXPECT_FALSE(kernel_.free(at(8)));
  EXPECT_TRUE(kernel_.free(at(0)));
  EXPECT_FALSE(kernel_.free(at(0)));  // a double free
  EXPECT_FALSE(kernel_.in_use());
}

TEST_F(CheckedKernelTest, WithdrawnKernelLooksUpNoFrees) {
  kernel_.withdraw();
  EXPECT_EQ(kernel_.plan(), nullptr);
  EXPECT_FALSE(kernel_.free(at(0)));
  EXPECT_TRUE(kernel_.check_invariants(nullptr).ok());
}

TEST_F(CheckedKernelTest, InvariantsFailForAnotherPlanThanTheLearners) {
  EXPECT_FALSE(kernel_.check_invariants(nullptr).ok());
}

TEST_F(CheckedKernelTest, InvariantsFailForAMissingOverlap) {
  plan_.blocks[1].overlaps = {0};  // c is left out
  EXPECT_FALSE(kernel_.check_invariants(&plan_).ok());
}

TEST_F(CheckedKernelTest, InvariantsFailForABlockPastTheArena) {
  plan_.blocks[2].size = 65;
  EXPECT_FALSE(kernel_.check_invariants(&plan_).ok());
}

TEST_F(CheckedKernelTest, InvariantsFailForALiveFlagTheKernelDidNotSet) {
  plan_.blocks[2].live = true;
  EXPECT_FALSE(kernel_.check_invariants(&plan_).ok());
}

TEST_F(CheckedKernelTest, InvariantsFailForTwoLiveBlocksSharingBytes) {
  ASSERT_NE(kernel_.serve(0, 64).p, nullptr);
  plan_.blocks[0].overlaps.clear();
  plan_.blocks[1].overlaps.clear();
  ASSERT_NE(kernel_.serve(1, 64).p, nullptr);
  EXPECT_FALSE(kernel_.check_invariants(&plan_).ok());
}

#ifdef MEMPLAN_EXPENSIVE_CHECKS
// The wiring of MEMPLAN_EXPENSIVE_CHECKS: an adapter's kernel is checked when
// a plan is adopted and at every iteration boundary, and a failed check stops
// the process.
TEST(CheckedKernelExpensiveChecks, RunAtPlanAdoptionAndEveryBoundary) {
  testing::MockDevices devices(1);
  ReplayConfig config;
  config.profile_iterations = 2;
  config.max_slab_bytes = int64_t{32} << 20;
  config.planner = "greedy_by_size";
  auto made = DeviceReplayAllocator::create(config, devices);
  ASSERT_TRUE(made.ok()) << made.status().message();
  DeviceReplayAllocator& a = **made;
  void* stream = testing::MockStreams::handle(0);
  const uint64_t before = CheckedKernel::expensive_checks();
  for (int i = 0; i < 4; ++i) {
    void* p = a.allocate(4096, 0, stream);
    a.deallocate(p, 4096, 0, stream);
    a.mark();
  }
  EXPECT_EQ(a.stats().plans, 1u);
  EXPECT_EQ(a.stats().served, 2u);
  // Four boundaries and one adoption.
  EXPECT_EQ(CheckedKernel::expensive_checks() - before, 5u);
}

TEST_F(CheckedKernelTest, AFailedExpensiveCheckStopsTheProcess) {
  plan_.blocks[1].overlaps.clear();
  EXPECT_DEATH(kernel_.after_boundary(&plan_), "checked kernel invariant failed at iteration boundary");
}
#else
TEST(CheckedKernelExpensiveChecks, RunNowhereWithoutTheSwitch) { EXPECT_EQ(CheckedKernel::expensive_checks(), 0u); }
#endif

}  // namespace
}  // namespace memplan::runtime
