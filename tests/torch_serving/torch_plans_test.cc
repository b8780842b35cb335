// Plan files for the libtorch allocator (TorchReplayAllocator::load_plans /
// saved_plans; memplan/plan_file.h): what one allocator learnt, written to a
// plan file's text and read back, serves a fresh allocator's first
// iteration; plans of another model or another input shape never serve a
// wrong byte. The oracle for every output is the same computation under
// libtorch's default allocator.
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "boundary_config.h"
#include "memplan/plan_file.h"
#include "torch/operator_identity.h"
#include "torch/torch_allocator.h"

namespace memplan::torch_serving {
namespace {

std::unique_ptr<TorchReplayAllocator> make_allocator() {
  auto created = TorchReplayAllocator::create(boundary_config());
  EXPECT_TRUE(created.ok()) << created.status().message();
  return created.ok() ? std::move(*created) : nullptr;
}

// The plan file's text round trip, as between two processes.
PlanFile through_text(const PlanFile& file) {
  StatusOr<PlanFile> read = read_plan_file(write_plan_file(file));
  EXPECT_TRUE(read.ok()) << read.status().message();
  return read.ok() ? *read : PlanFile{};
}

// A small convolutional model whose tensors the allocator serves. When
// `allocator` is given, its invariants (no two live slab blocks share a
// byte) are checked while the intermediate tensors are alive.
at::Tensor conv_model(const at::Tensor& input, const at::Tensor& filters, const at::Tensor& weights,
                      const TorchReplayAllocator* allocator = nullptr) {
  const at::Tensor a = at::relu(at::conv2d(input, filters, {}, 1, 1));
  const at::Tensor b = at::max_pool2d(a, {2, 2});
  const at::Tensor c = at::matmul(b.flatten(1), weights);
  if (allocator != nullptr) {
    const Status invariants = allocator->check_invariants();
    EXPECT_TRUE(invariants.ok()) << invariants.message();
  }
  return at::softmax(c, 1);
}

// Another model: other operators, other sizes.
at::Tensor mlp_model(const at::Tensor& input, const at::Tensor& w1, const at::Tensor& w2) {
  const at::Tensor h = at::gelu(at::matmul(input, w1));
  return at::log_softmax(at::addmm(h.new_zeros({w2.size(1)}), h, w2), 1);
}

struct ConvInputs {
  at::Tensor input, filters, weights;
  // batch x 3 x side x side images, 16 filters, 10 classes.
  static ConvInputs make(int64_t batch, int64_t side) {
    at::manual_seed(static_cast<uint64_t>(batch * 1000 + side));
    return {at::randn({batch, 3, side, side}), at::randn({16, 3, 3, 3}), at::randn({16 * (side / 2) * (side / 2), 10})};
  }
  at::Tensor run(const TorchReplayAllocator* allocator = nullptr) const {
    return conv_model(input, filters, weights, allocator);
  }
};

void expect_same_bytes(const at::Tensor& got, const at::Tensor& expected, const std::string& what) {
  ASSERT_EQ(got.sizes(), expected.sizes()) << what;
  ASSERT_EQ(std::memcmp(got.data_ptr(), expected.data_ptr(), expected.nbytes()), 0) << what;
}

// Learns `model` with a fresh allocator (two profiled passes, two served)
// and returns its plans as they come out of a plan file.
PlanFile learnt_plans(const std::function<at::Tensor()>& model) {
  std::unique_ptr<TorchReplayAllocator> allocator = make_allocator();
  EXPECT_TRUE(allocator->install().ok());
  for (int i = 0; i < 4; ++i) {
    IterationGuard pass(*allocator);
    model();
  }
  EXPECT_EQ(allocator->phase(), ReplayPhase::kReplaying);
  EXPECT_GT(allocator->stats().served, 0u);
  const PlanFile saved = allocator->saved_plans("test program");
  allocator->uninstall();
  EXPECT_EQ(saved.adapter, "libtorch");
  EXPECT_EQ(saved.program, "test program");
  return through_text(saved);
}

TEST(TorchPlans, SavedPlansServeTheFirstIterationOfAFreshAllocator) {
  const ConvInputs model = ConvInputs::make(2, 32);
  const at::Tensor expected = model.run();
  const PlanFile file = learnt_plans([&] { return model.run(); });
  ASSERT_EQ(file.units.size(), 1u);
  EXPECT_EQ(file.units[0].name, "0");
  ASSERT_EQ(file.units[0].variants.size(), 1u);
  EXPECT_TRUE(file.units[0].variants[0].keyed);

  std::unique_ptr<TorchReplayAllocator> allocator = make_allocator();
  ASSERT_TRUE(allocator->load_plans(file).ok());
  EXPECT_EQ(allocator->phase(), ReplayPhase::kReplaying);
  ASSERT_TRUE(allocator->install().ok());
  {
    IterationGuard first(*allocator);
    expect_same_bytes(model.run(allocator.get()), expected, "first pass");
  }
  ReplayStats s = allocator->stats();
  EXPECT_EQ(s.plans_loaded, 1u);
  EXPECT_EQ(s.profiled, 0u);
  EXPECT_GT(s.served, 0u);
  EXPECT_EQ(s.deviations, 0u);
  for (int i = 0; i < 3; ++i) {
    IterationGuard pass(*allocator);
    expect_same_bytes(model.run(allocator.get()), expected, "pass " + std::to_string(i + 1));
  }
  s = allocator->stats();
  EXPECT_EQ(s.profiled, 0u);
  EXPECT_EQ(s.deviations, 0u);
  EXPECT_EQ(s.plans, 1u);
  EXPECT_TRUE(allocator->check_invariants().ok()) << allocator->check_invariants().message();
  allocator->uninstall();
}

// A fresh allocator given `file` runs `model` for `passes` passes: every
// output is the default allocator's, no two live slab blocks ever share a
// byte, and the last pass is served from a plan without a fallback (it
// learnt its own plan, or grew the loaded one).
void expect_safe_and_learnt(const PlanFile& file, const std::function<at::Tensor(const TorchReplayAllocator*)>& model,
                            int passes) {
  const at::Tensor expected = model(nullptr);
  std::unique_ptr<TorchReplayAllocator> allocator = make_allocator();
  ASSERT_TRUE(allocator->load_plans(file).ok());
  ASSERT_TRUE(allocator->install().ok());
  ReplayStats before;
  for (int i = 0; i < passes; ++i) {
    before = allocator->stats();
    IterationGuard pass(*allocator);
    expect_same_bytes(model(allocator.get()), expected, "pass " + std::to_string(i));
  }
  const ReplayStats s = allocator->stats();
  EXPECT_EQ(s.plans_loaded, 1u);
  EXPECT_GT(s.fallback, 0u) << "the loaded plan fitted: not a test of another pattern";
  EXPECT_GT(s.served - before.served, 0u) << "the last pass was not served";
  EXPECT_EQ(s.fallback, before.fallback) << "the last pass still fell back";
  EXPECT_EQ(s.profiled, before.profiled) << "the last pass was profiled";
  const Status invariants = allocator->check_invariants();
  EXPECT_TRUE(invariants.ok()) << invariants.message();
  allocator->uninstall();
}

TEST(TorchPlans, PlansOfAnotherShapeFallBackAndLearn) {
  const ConvInputs learnt = ConvInputs::make(2, 32);
  const PlanFile file = learnt_plans([&] { return learnt.run(); });
  // Larger images and batches: the same operators, larger requests.
  for (const auto& [batch, side] : {std::pair<int64_t, int64_t>{2, 48}, {4, 32}, {3, 40}}) {
    SCOPED_TRACE("batch " + std::to_string(batch) + ", side " + std::to_string(side));
    const ConvInputs other = ConvInputs::make(batch, side);
    expect_safe_and_learnt(
        file, [&](const TorchReplayAllocator* allocator) { return other.run(allocator); }, 8);
  }
}

TEST(TorchPlans, PlansOfAnotherModelFallBackAndLearn) {
  const ConvInputs conv = ConvInputs::make(2, 32);
  const PlanFile file = learnt_plans([&] { return conv.run(); });
  at::manual_seed(3);
  const at::Tensor input = at::randn({64, 256});
  const at::Tensor w1 = at::randn({256, 512});
  const at::Tensor w2 = at::randn({512, 32});
  expect_safe_and_learnt(
      file,
      [&](const TorchReplayAllocator* allocator) {
        const at::Tensor out = mlp_model(input, w1, w2);
        if (allocator != nullptr) EXPECT_TRUE(allocator->check_invariants().ok());
        return out;
      },
      8);
  // And the other way round: the model's plans given to the convolution.
  const PlanFile mlp_file = learnt_plans([&] { return mlp_model(input, w1, w2); });
  expect_safe_and_learnt(
      mlp_file, [&](const TorchReplayAllocator* allocator) { return conv.run(allocator); }, 8);
}

// Operator keys are the same in every process: a request's key is
// mix(mix(FNV-1a of the operator's name, its invocation count), the
// request's index in the invocation), nothing that depends on addresses or
// on the order names were first seen. The expected keys are computed here
// from the names' text.
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

TEST(TorchPlans, SavedKeysAreComputedFromOperatorNamesAndCounts) {
  std::unique_ptr<TorchReplayAllocator> allocator = make_allocator();
  ASSERT_TRUE(allocator->install().ok());
  // Names built at run time, so that their addresses differ between passes.
  const std::vector<std::string> names = {"keys::first", "keys::second", "keys::first"};
  for (int i = 0; i < 3; ++i) {
    IterationGuard pass(*allocator);
    std::vector<c10::DataPtr> blocks;
    for (const std::string& name : names) {
      RECORD_FUNCTION(std::string(name), std::vector<c10::IValue>());
      blocks.push_back(allocator->allocate(size_t{1} << 20));
      blocks.push_back(allocator->allocate(size_t{2} << 20));
      blocks.clear();
    }
  }
  const PlanFile file = allocator->saved_plans("");
  allocator->uninstall();
  ASSERT_EQ(file.units.size(), 1u);
  ASSERT_EQ(file.units[0].variants.size(), 1u);
  std::set<uint64_t> saved;
  for (const SavedRequest& r : file.units[0].variants[0].requests) saved.insert(r.key);
  using torch_identity::mix;
  const uint64_t first = fnv1a("keys::first"), second = fnv1a("keys::second");
  const std::set<uint64_t> expected = {
      mix(mix(first, 1), 1),  mix(mix(first, 1), 2), mix(mix(second, 1), 1),
      mix(mix(second, 1), 2), mix(mix(first, 2), 1), mix(mix(first, 2), 2),
  };
  EXPECT_EQ(saved, expected);
}

// ReplayConfig::save_plans_file and plans_file (MEMPLAN_SAVE_PLANS,
// MEMPLAN_PLANS): written at uninstall() and read by create(), one line each.
TEST(TorchPlans, ConfiguredFilesAreWrittenAtUninstallAndReadAtCreation) {
  const std::string path = ::testing::TempDir() + "torch_plans_test.plans";
  std::remove(path.c_str());
  const ConvInputs model = ConvInputs::make(1, 32);
  const at::Tensor expected = model.run();
  ReplayConfig config = boundary_config();
  config.save_plans_file = path;
  {
    auto created = TorchReplayAllocator::create(config);
    ASSERT_TRUE(created.ok()) << created.status().message();
    TorchReplayAllocator& allocator = **created;
    ASSERT_TRUE(allocator.install().ok());
    for (int i = 0; i < 3; ++i) {
      IterationGuard pass(allocator);
      model.run();
    }
    ::testing::internal::CaptureStderr();
    allocator.uninstall();
    EXPECT_EQ(::testing::internal::GetCapturedStderr(),
              "memplan libtorch: saved plans to " + path + " (1 unit, 1 variant)\n");
    StatusOr<PlanFile> saved = load_plan_file(path);
    ASSERT_TRUE(saved.ok()) << saved.status().message();
    EXPECT_EQ(*saved, allocator.saved_plans(saved->program));
    EXPECT_FALSE(saved->program.empty());  // this process's command line
  }
  config.save_plans_file.clear();
  config.plans_file = path;
  ::testing::internal::CaptureStderr();
  auto created = TorchReplayAllocator::create(config);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "memplan libtorch: serving plans from " + path + " (1 unit, 1 variant) from the first iteration\n");
  ASSERT_TRUE(created.ok()) << created.status().message();
  TorchReplayAllocator& allocator = **created;
  ASSERT_TRUE(allocator.install().ok());
  {
    IterationGuard first(allocator);
    expect_same_bytes(model.run(&allocator), expected, "first pass");
  }
  EXPECT_EQ(allocator.stats().profiled, 0u);
  EXPECT_GT(allocator.stats().served, 0u);
  allocator.uninstall();
  // A process that learnt nothing leaves the file as it was.
  config.plans_file.clear();
  config.save_plans_file = path;
  auto idle = TorchReplayAllocator::create(config);
  ASSERT_TRUE(idle.ok());
  ASSERT_TRUE((*idle)->install().ok());
  ::testing::internal::CaptureStderr();
  (*idle)->uninstall();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "memplan libtorch: no plans learnt; " + path + " left as it was\n");
  EXPECT_TRUE(load_plan_file(path).ok());
  std::remove(path.c_str());
}

TEST(TorchPlans, FilesItCannotServeAreRefused) {
  std::unique_ptr<TorchReplayAllocator> allocator = make_allocator();
  PlanFile other_adapter{.adapter = "drop-in"};
  EXPECT_FALSE(allocator->load_plans(other_adapter).ok());
  PlanFile other_unit{.adapter = "libtorch", .units = {{.name = "1"}}};
  EXPECT_FALSE(allocator->load_plans(other_unit).ok());
  // A sequence variant (the drop-in's identity) cannot be this allocator's.
  PlanFile sequence{
      .adapter = "libtorch",
      .units = {{.name = "0",
                 .variants = {{.key = 0,
                               .keyed = false,
                               .requests = {{.size = 4096, .alignment = 64, .lower = 0, .upper = 1, .offset = 0}}}}}}};
  const Status refused = allocator->load_plans(sequence);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("none of its 1 variants"), std::string::npos) << refused.message();
  EXPECT_EQ(allocator->phase(), ReplayPhase::kProfiling);
  EXPECT_TRUE(allocator->load_plans(PlanFile{.adapter = "libtorch"}).ok());  // empty: nothing to load
  // After the first request, too late.
  c10::DataPtr block = allocator->allocate(4096);
  EXPECT_FALSE(allocator->load_plans(PlanFile{.adapter = "libtorch"}).ok());
}

TEST(TorchPlans, NothingLearntSavesNoUnit) {
  std::unique_ptr<TorchReplayAllocator> allocator = make_allocator();
  const PlanFile file = allocator->saved_plans("p");
  EXPECT_EQ(file.adapter, "libtorch");
  EXPECT_TRUE(file.units.empty());
}

}  // namespace
}  // namespace memplan::torch_serving
