// Behaviour of the operator-scoped libtorch allocator on synthetic iterations:
// requests are made inside RecordFunction scopes named like operators, so the
// tests control which operator a request comes from and in which order.
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/os/mimalloc_library.h"
#include "torch/torch_allocator.h"

namespace memplan::torch_serving {
namespace {

class TorchAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ReplayConfig config;
    config.profile_iterations = 2;
    config.deviations_to_reprofile = 2;
    config.max_slab_bytes = int64_t{64} << 20;
    config.planner = "greedy_by_size";
    config.plan_in_background = false;  // the tests count iterations: the plan is adopted at the boundary that agreed
    config.backing = backing_;
    auto created = TorchReplayAllocator::create(config);
    ASSERT_TRUE(created.ok()) << created.status().message();
    allocator_ = std::move(*created);
    ASSERT_TRUE(allocator_->install().ok());
  }
  void TearDown() override {
    if (allocator_) {
      EXPECT_TRUE(allocator_->check_invariants().ok()) << allocator_->check_invariants().message();
      allocator_->uninstall();
    }
  }

  // One "operator": allocates `sizes` inside a scope named `name`, fills each
  // block with a cookie, checks the cookies and frees them when it returns.
  void run_operator(const char* name, const std::vector<size_t>& sizes) {
    RECORD_FUNCTION(name, std::vector<c10::IValue>());
    std::vector<c10::DataPtr> blocks;
    for (size_t i = 0; i < sizes.size(); ++i) {
      blocks.push_back(allocator_->allocate(sizes[i]));
      std::memset(blocks.back().get(), static_cast<int>(cookie_ + i), sizes[i]);
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      const auto* bytes = static_cast<const unsigned char*>(blocks[i].get());
      ASSERT_EQ(bytes[0], static_cast<unsigned char>(cookie_ + i));
      ASSERT_EQ(bytes[sizes[i] - 1], static_cast<unsigned char>(cookie_ + i));
    }
    ++cookie_;
  }

  void iteration(bool swapped) {
    IterationGuard iteration(*allocator_);
    if (swapped) {
      run_operator("test::second", {3 << 20, 1 << 20});
      run_operator("test::first", {1 << 20, 2 << 20});
    } else {
      run_operator("test::first", {1 << 20, 2 << 20});
      run_operator("test::second", {3 << 20, 1 << 20});
    }
  }

  std::unique_ptr<TorchReplayAllocator> allocator_;
  int cookie_ = 1;
  std::string backing_ = "next";
};

// Whether mimalloc holds `p` in the calling thread's heap. mi_heap_check_owned
// compares addresses with the heap's pages only, so it is safe on any pointer.
struct MimallocOwnership {
  void* (*default_heap)() = nullptr;
  bool (*heap_owns)(void*, const void*) = nullptr;

  static const MimallocOwnership& get() {
    static const MimallocOwnership ownership = [] {
      MimallocOwnership o;
      const runtime::os::MimallocLibrary library = runtime::os::open_mimalloc();
      if (library.handle == nullptr) return o;
      runtime::os::find_symbol(library.handle, o.default_heap, "mi_heap_get_default");
      runtime::os::find_symbol(library.handle, o.heap_owns, "mi_heap_check_owned");
      return o;
    }();
    return ownership;
  }
  bool available() const { return default_heap != nullptr && heap_owns != nullptr; }
  bool owns(const void* p) const { return heap_owns(default_heap(), p); }
};

// MEMPLAN_BACKING=mimalloc: the requests the slab does not serve go to mimalloc.
class TorchAllocatorMimallocTest : public TorchAllocatorTest {
 protected:
  void SetUp() override {
    if (!MimallocOwnership::get().available()) GTEST_SKIP() << "memplan was built without mimalloc";
    backing_ = "mimalloc";
    TorchAllocatorTest::SetUp();
  }
};

// A small computation whose tensors the allocator serves: convolution,
// activation, pooling, a matrix product. Its result is cloned out.
at::Tensor small_model(const at::Tensor& input, const at::Tensor& filters, const at::Tensor& weights) {
  at::Tensor x = at::relu(at::conv2d(input, filters, {}, 1, 1));
  x = at::max_pool2d(x, {2, 2});
  x = at::matmul(x.flatten(1), weights);
  return at::softmax(x, 1);
}

TEST_F(TorchAllocatorTest, RepeatedIterationIsServedFromTheSlabAfterProfiling) {
  for (int i = 0; i < 2; ++i) iteration(false);
  EXPECT_EQ(allocator_->phase(), ReplayPhase::kReplaying);
  for (int i = 0; i < 3; ++i) iteration(false);
  const ReplayStats s = allocator_->stats();
  EXPECT_EQ(s.plans, 1u);
  EXPECT_EQ(s.served, 12u);
  EXPECT_EQ(s.fallback, 0u);
  EXPECT_EQ(s.deviations, 0u);
  // The operators' blocks never live together, so the plan shares bytes.
  EXPECT_LT(s.slab_bytes, uint64_t{7} << 20);
}

TEST_F(TorchAllocatorTest, OperatorsInAnotherOrderAreStillServed) {
  for (int i = 0; i < 2; ++i) iteration(false);
  for (int i = 0; i < 3; ++i) iteration(true);
  const ReplayStats s = allocator_->stats();
  EXPECT_EQ(s.served, 12u);
  EXPECT_EQ(s.deviations, 0u);
  EXPECT_EQ(allocator_->phase(), ReplayPhase::kReplaying);
}

TEST_F(TorchAllocatorTest, LargerRequestFallsBackAndRepeatedDeviationReprofiles) {
  for (int i = 0; i < 2; ++i) iteration(false);
  for (int i = 0; i < 2; ++i) {
    IterationGuard iteration(*allocator_);
    run_operator("test::first", {(1 << 20) + 1, 2 << 20});
  }
  const ReplayStats s = allocator_->stats();
  EXPECT_EQ(s.fallback, 2u);
  EXPECT_EQ(s.served, 2u);
  EXPECT_EQ(s.deviations, 2u);
  EXPECT_EQ(s.reprofiles, 1u);
  EXPECT_EQ(allocator_->phase(), ReplayPhase::kProfiling);
}

TEST_F(TorchAllocatorTest, BlockKeptAcrossTheBoundaryIsNeverShared) {
  for (int i = 0; i < 2; ++i) iteration(false);
  c10::DataPtr kept;
  {
    IterationGuard iteration(*allocator_);
    RECORD_FUNCTION("test::first", std::vector<c10::IValue>());
    kept = allocator_->allocate(1 << 20);  // planned to die inside the operator
    std::memset(kept.get(), 0x5a, 1 << 20);
  }
  // The next iteration's blocks that share bytes with `kept` must go elsewhere.
  for (int i = 0; i < 2; ++i) iteration(false);
  const auto* bytes = static_cast<const unsigned char*>(kept.get());
  for (size_t i = 0; i < (1 << 20); i += 4096) ASSERT_EQ(bytes[i], 0x5a) << "byte " << i << " was overwritten";
  EXPECT_TRUE(allocator_->check_invariants().ok()) << allocator_->check_invariants().message();
  EXPECT_GT(allocator_->stats().busy, 0u);
  kept.clear();
}

TEST_F(TorchAllocatorTest, UnequalProfilesAreNotPlanned) {
  iteration(false);
  {
    IterationGuard iteration(*allocator_);
    run_operator("test::first", {1 << 20});
  }
  EXPECT_EQ(allocator_->phase(), ReplayPhase::kProfiling);
  EXPECT_EQ(allocator_->stats().plans, 0u);
}

// Two threads entering the same operator make the same keys: such keys are
// ambiguous, so they are never planned, and no block is shared between the
// threads. Each thread checks its cookies after the other may have written.
TEST_F(TorchAllocatorTest, ThreadsInTheSameOperatorNeverShareBytes) {
  auto worker = [this](int id, std::atomic<int>* corrupted) {
    RECORD_FUNCTION("test::shared", std::vector<c10::IValue>());
    std::vector<c10::DataPtr> blocks;
    for (int i = 0; i < 4; ++i) {
      blocks.push_back(allocator_->allocate(size_t{256} << 10));
      std::memset(blocks.back().get(), id, size_t{256} << 10);
    }
    std::this_thread::yield();
    for (const c10::DataPtr& block : blocks) {
      const auto* bytes = static_cast<const unsigned char*>(block.get());
      for (size_t i = 0; i < (size_t{256} << 10); i += 512) {
        if (bytes[i] != id) corrupted->fetch_add(1);
      }
    }
  };
  std::atomic<int> corrupted{0};
  for (int iteration = 0; iteration < 6; ++iteration) {
    IterationGuard guard(*allocator_);
    std::thread a(worker, 0x11, &corrupted);
    std::thread b(worker, 0x22, &corrupted);
    a.join();
    b.join();
  }
  EXPECT_EQ(corrupted.load(), 0);
  EXPECT_EQ(allocator_->stats().served, 0u);
  EXPECT_TRUE(allocator_->check_invariants().ok());
}

// Upper-bound plans (Note [Upper-bound plans]): the same operators asking for
// more bytes deviate once, raise the plan's maxima, and are then served.
TEST_F(TorchAllocatorTest, LargerRequestOfTheSameOperatorsGrowsThePlan) {
  for (int i = 0; i < 2; ++i) iteration(false);
  ASSERT_EQ(allocator_->phase(), ReplayPhase::kReplaying);
  auto larger = [this] {
    IterationGuard guard(*allocator_);
    run_operator("test::first", {(1 << 20) + 4096, 2 << 20});
    run_operator("test::second", {3 << 20, 1 << 20});
  };
  larger();  // deviates: its first request goes to c10, the maxima rise
  ReplayStats s = allocator_->stats();
  EXPECT_EQ(s.deviations, 1u);
  EXPECT_EQ(s.fallback, 1u);
  EXPECT_EQ(s.growths, 1u);
  const uint64_t served_before = s.served;
  for (int i = 0; i < 3; ++i) larger();
  iteration(false);  // the smaller shape fits the grown plan too
  s = allocator_->stats();
  EXPECT_EQ(s.served - served_before, 16u);
  EXPECT_EQ(s.fallback, 1u);
  EXPECT_EQ(s.deviations, 1u);
  EXPECT_EQ(allocator_->phase(), ReplayPhase::kReplaying);
}

// Keyed marks (Note [Keyed plans]): two variants with different operators,
// alternating, each marked with its key, get a plan each and are both served.
TEST_F(TorchAllocatorTest, KeyedMarksKeepOnePlanPerVariant) {
  auto variant = [this](int which) {
    if (which == 0) {
      run_operator("test::first", {1 << 20, 2 << 20});
      run_operator("test::second", {3 << 20, 1 << 20});
    } else {
      run_operator("test::third", {5 << 20});
      run_operator("test::first", {4096, 8192});
      run_operator("test::fourth", {1 << 20, 1 << 20, 1 << 20});
    }
  };
  allocator_->mark(uint64_t{1});
  for (int i = 0; i < 12; ++i) {
    variant(i % 2);
    allocator_->mark(static_cast<uint64_t>(1 + (i + 1) % 2));
  }
  const ReplayStats s = allocator_->stats();
  EXPECT_EQ(s.plans, 2u);
  EXPECT_EQ(s.plans_held, 2u);
  EXPECT_EQ(s.fallback, 0u);
  EXPECT_EQ(s.deviations, 0u);
  // Iterations 0-3 profile (two of each variant); 4-11 are served: 4 x 4 + 4 x 6 requests.
  EXPECT_EQ(s.served, 40u);
  // Without keys the two variants never agree, and nothing is planned.
  allocator_->uninstall();
  allocator_.reset();
  SetUp();
  for (int i = 0; i < 12; ++i) {
    IterationGuard guard(*allocator_);
    variant(i % 2);
  }
  EXPECT_EQ(allocator_->stats().plans, 0u);
  EXPECT_EQ(allocator_->stats().served, 0u);
}

// Profiled requests, fallbacks and unplanned keys: every block the slab does
// not hold is mimalloc's, and every block carries the allocator's one deleter.
TEST_F(TorchAllocatorMimallocTest, BlocksTheSlabDoesNotServeAreMimallocs) {
  const MimallocOwnership& mimalloc = MimallocOwnership::get();
  {
    IterationGuard pass(*allocator_);
    RECORD_FUNCTION("test::first", std::vector<c10::IValue>());
    c10::DataPtr profiled = allocator_->allocate(1 << 20);
    EXPECT_TRUE(mimalloc.owns(profiled.get()));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(profiled.get()) % 64, 0u);
    EXPECT_EQ(profiled.get_deleter(), allocator_->raw_deleter());
  }
  for (int i = 0; i < 2; ++i) iteration(false);
  ASSERT_EQ(allocator_->phase(), ReplayPhase::kReplaying);
  IterationGuard pass(*allocator_);
  RECORD_FUNCTION("test::first", std::vector<c10::IValue>());
  c10::DataPtr served = allocator_->allocate(1 << 20);
  c10::DataPtr larger = allocator_->allocate((2 << 20) + 1);  // larger than planned: a fallback
  c10::DataPtr unknown = allocator_->allocate(4096);          // a key the plan never saw
  EXPECT_FALSE(mimalloc.owns(served.get()));
  EXPECT_TRUE(mimalloc.owns(larger.get()));
  EXPECT_TRUE(mimalloc.owns(unknown.get()));
  for (const c10::DataPtr* block : {&served, &larger, &unknown}) {
    EXPECT_EQ(block->get_deleter(), allocator_->raw_deleter());
  }
  std::memset(larger.get(), 0x33, (2 << 20) + 1);
  const ReplayStats s = allocator_->stats();
  EXPECT_EQ(s.served, 1u);
  EXPECT_EQ(s.fallback, 2u);
}

// raw_allocate / raw_deallocate (c10's raw_deleter contract) on either kind
// of block.
TEST_F(TorchAllocatorMimallocTest, RawDeleterFreesEveryBlock) {
  void* profiled = allocator_->raw_allocate(4096);
  EXPECT_TRUE(MimallocOwnership::get().owns(profiled));
  allocator_->raw_deallocate(profiled);
  for (int i = 0; i < 3; ++i) iteration(false);  // the first has the request above too
  ASSERT_EQ(allocator_->phase(), ReplayPhase::kReplaying);
  IterationGuard pass(*allocator_);
  RECORD_FUNCTION("test::first", std::vector<c10::IValue>());
  void* served = allocator_->raw_allocate(1 << 20);
  EXPECT_FALSE(MimallocOwnership::get().owns(served));
  allocator_->raw_deallocate(served);
  EXPECT_EQ(allocator_->stats().served, 1u);
}

TEST_F(TorchAllocatorMimallocTest, BlocksOutliveUninstallAndTheAllocator) {
  c10::DataPtr profiled = allocator_->allocate(1 << 20);
  ASSERT_TRUE(MimallocOwnership::get().owns(profiled.get()));
  std::memset(profiled.get(), 0x5a, 1 << 20);
  allocator_->uninstall();
  allocator_.reset();
  EXPECT_EQ(static_cast<const unsigned char*>(profiled.get())[(1 << 20) - 1], 0x5a);
  profiled.clear();  // mi_free, with no allocator left
}

// The outputs of a small model, profiled and then served from the slab, are
// the default allocator's bytes with either backing.
TEST_F(TorchAllocatorMimallocTest, OutputsAreTheDefaultAllocatorsBytes) {
  allocator_->uninstall();
  const at::Tensor input = at::randn({2, 3, 32, 32}, at::TensorOptions().dtype(at::kFloat));
  const at::Tensor filters = at::randn({16, 3, 3, 3});
  const at::Tensor weights = at::randn({16 * 16 * 16, 10});
  const at::Tensor expected = small_model(input, filters, weights);
  ASSERT_TRUE(allocator_->install().ok());
  for (int i = 0; i < 6; ++i) {
    IterationGuard pass(*allocator_);
    const at::Tensor got = small_model(input, filters, weights);
    if (i < 2) ASSERT_TRUE(MimallocOwnership::get().owns(got.data_ptr())) << "profiled pass " << i;
    ASSERT_EQ(got.sizes(), expected.sizes());
    ASSERT_EQ(std::memcmp(got.data_ptr(), expected.data_ptr(), expected.nbytes()), 0) << "pass " << i;
  }
  EXPECT_EQ(allocator_->phase(), ReplayPhase::kReplaying);
  EXPECT_GT(allocator_->stats().served, 0u);
}

// MEMPLAN_BACKING=next (the default): c10::alloc_cpu as before, never mimalloc.
TEST_F(TorchAllocatorTest, NextBackingKeepsC10sAllocation) {
  if (!MimallocOwnership::get().available()) GTEST_SKIP() << "memplan was built without mimalloc";
  c10::DataPtr profiled = allocator_->allocate(1 << 20);
  EXPECT_FALSE(MimallocOwnership::get().owns(profiled.get()));
  for (int i = 0; i < 2; ++i) iteration(false);
  IterationGuard pass(*allocator_);
  RECORD_FUNCTION("test::unknown", std::vector<c10::IValue>());
  c10::DataPtr fallback = allocator_->allocate(4096);
  EXPECT_FALSE(MimallocOwnership::get().owns(fallback.get()));
  EXPECT_EQ(fallback.get_deleter(), allocator_->raw_deleter());
  ReplayConfig mimalloc_config;
  mimalloc_config.backing = "mimalloc";
  auto other = TorchReplayAllocator::create(mimalloc_config);
  ASSERT_TRUE(other.ok());
  EXPECT_NE((*other)->raw_deleter(), allocator_->raw_deleter());
}

TEST(TorchAllocatorInstall, UnknownBackingIsRejected) {
  ReplayConfig config;
  config.backing = "jemalloc";
  EXPECT_FALSE(TorchReplayAllocator::create(config).ok());
}

TEST(TorchShapeKey, NamesShapesTypesAndScalars) {
  auto key = [](std::vector<c10::IValue> inputs) { return shape_key(inputs); };
  const at::Tensor a = at::zeros({2, 3, 64, 64});
  const uint64_t k = key({a});
  EXPECT_NE(k, 0u);
  EXPECT_EQ(k, key({at::ones({2, 3, 64, 64})}));  // values do not matter
  EXPECT_NE(k, key({at::zeros({1, 3, 64, 64})}));
  EXPECT_NE(k, key({at::zeros({2, 3, 64, 80})}));
  EXPECT_NE(k, key({at::zeros({2, 3, 64, 64}, at::kDouble)}));
  EXPECT_NE(k, key({at::zeros({2, 3, 4096})}));  // same element count, other rank
  EXPECT_NE(k, key({a, a}));
  EXPECT_NE(key({a, c10::IValue(int64_t{8})}), key({a, c10::IValue(int64_t{9})}));
  EXPECT_NE(key({c10::ivalue::Tuple::create({a, a})}), key({a, a}));
  EXPECT_NE(key({c10::IValue(true)}), key({c10::IValue(false)}));
  EXPECT_NE(key({}), 0u);
}

TEST(TorchAllocatorInstall, SecondAllocatorCannotInstallWhileOneIs) {
  auto first = TorchReplayAllocator::create(ReplayConfig{});
  auto second = TorchReplayAllocator::create(ReplayConfig{});
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE((*first)->install().ok());
  EXPECT_FALSE((*second)->install().ok());
  (*first)->uninstall();
  EXPECT_TRUE((*second)->install().ok());
  (*second)->uninstall();
}

TEST(TorchAllocatorInstall, UnknownPlannerIsRejected) {
  ReplayConfig config;
  config.planner = "no_such_planner";
  EXPECT_FALSE(TorchReplayAllocator::create(config).ok());
}

}  // namespace
}  // namespace memplan::torch_serving
