// snapshot_attribution_test.cc — Snapshot::describe_stack on hand-built
// stacks shaped like the frames PyTorch records: one test per rule.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "memplan/snapshot.h"

namespace memplan::snapshot {
namespace {

struct AttributionFrame {
  std::string file;
  int64_t line = 0;
  std::string name;
};

// A snapshot holding one stack (index 1), innermost frame first.
Snapshot with_stack(std::initializer_list<AttributionFrame> stack) {
  Snapshot s;
  s.strings.push_back("");
  s.stacks.emplace_back();
  std::vector<uint32_t> ids;
  for (const AttributionFrame& f : stack) {
    s.strings.push_back(f.file);
    s.strings.push_back(f.name);
    const auto name = static_cast<uint32_t>(s.strings.size() - 1);
    s.frames.push_back({.filename = name - 1, .name = name, .line = f.line});
    ids.push_back(static_cast<uint32_t>(s.frames.size() - 1));
  }
  s.stacks.push_back(std::move(ids));
  return s;
}

const AttributionFrame kMalloc{"CUDACachingAllocator.cpp", 0, "c10::cuda::CUDACachingAllocator::Native::malloc"};
const AttributionFrame kThreadRoutine{"/opt/gcc/work/gcc/libstdc++-v3/src/c++11/thread.cc", 82,
                                      "execute_native_thread_routine"};
const AttributionFrame kStartThread{"??", 0, "start_thread"};
const AttributionFrame kClone{"", 0, "__clone3"};
const AttributionFrame kEngine{"??", 0, "torch::autograd::Engine::thread_main(std::shared_ptr<GraphTask> const&)"};
const AttributionFrame kAddmmBackward{"??", 0,
                                      "torch::autograd::generated::AddmmBackward0::apply(std::vector<at::Tensor>&&)"};
const AttributionFrame kModule{"/env/lib/python3.11/site-packages/torch/nn/modules/module.py", 1750, "_call_impl"};

TEST(SnapshotAttribution, NamesTheInnermostUserFrame) {
  const Snapshot s =
      with_stack({kMalloc, kModule, {"/home/me/model.py", 12, "forward"}, {"/home/me/train.py", 40, "<module>"}});
  EXPECT_EQ(s.describe_stack(1), "me/model.py:12 forward");
}

TEST(SnapshotAttribution, SkipsThreadEntryFrames) {
  // A native thread with no Python and no autograd node: the thread's entry
  // has a line number but names nothing the user wrote.
  const Snapshot s = with_stack({kMalloc, {"worker.cpp", 31, "Worker::run"}, kThreadRoutine, kStartThread, kClone});
  EXPECT_EQ(s.describe_stack(1), "worker.cpp:31 Worker::run");
  const Snapshot only_entry = with_stack({kMalloc, kThreadRoutine, kStartThread, kClone});
  EXPECT_EQ(only_entry.describe_stack(1), "");
}

TEST(SnapshotAttribution, SkipsGeneratedCodeForTheUserFrameThatCalledIt) {
  const Snapshot s = with_stack({{"guards.cpp", 0, "torch::dynamo::_empty_strided_device"},
                                 {"/tmp/torchinductor_me/z3/cz3vcpgk.py", 1647, "call"},
                                 {"/home/me/cs336_basics/transformer.py", 22, "forward"},
                                 {"/env/site-packages/torch/_inductor/utils.py", 2128, "run"}});
  EXPECT_EQ(s.describe_stack(1), "cs336_basics/transformer.py:22 forward");
  const Snapshot triton = with_stack({{"/home/me/.triton/cache/ab/kernel.py", 7, "launcher"},
                                      {"/home/me/triton/runtime/jit.py", 300, "run"},
                                      {"/home/me/model.py", 9, "forward"}});
  EXPECT_EQ(triton.describe_stack(1), "me/model.py:9 forward");
}

TEST(SnapshotAttribution, NamesTheAutogradNodeOnTheBackwardThread) {
  const Snapshot s = with_stack({kMalloc, kAddmmBackward, kEngine, kThreadRoutine, kStartThread, kClone});
  EXPECT_EQ(s.describe_stack(1), "AddmmBackward0 (autograd backward)");
}

TEST(SnapshotAttribution, SaysWhenABlockIsACublasWorkspace) {
  const Snapshot backward = with_stack({kMalloc,
                                        {"", 0, "at::cuda::getNewWorkspace()"},
                                        {"??", 0, "at::cuda::getCurrentCUDABlasHandle()"},
                                        kAddmmBackward,
                                        kEngine,
                                        kThreadRoutine,
                                        kStartThread,
                                        kClone});
  EXPECT_EQ(backward.describe_stack(1), "AddmmBackward0 (autograd backward, cuBLAS workspace)");
  const Snapshot forward = with_stack({kMalloc,
                                       {"", 0, "at::cuda::getNewWorkspace()"},
                                       {"/tmp/torchinductor_me/z3/c.py", 1647, "call"},
                                       {"/home/me/cs336_basics/transformer.py", 22, "forward"}});
  EXPECT_EQ(forward.describe_stack(1), "cs336_basics/transformer.py:22 forward (cuBLAS workspace)");
}

TEST(SnapshotAttribution, SaysWhenABlockIsACudnnWorkspace) {
  const Snapshot s =
      with_stack({kMalloc,
                  {"Conv_v7.cpp", 0, "at::native::(anonymous namespace)::Workspace::Workspace(unsigned long)"},
                  {"Conv_v7.cpp", 0, "at::native::raw_cudnn_convolution_forward_out(at::Tensor const&)"},
                  kModule,
                  {"/home/me/cnn.py", 59, "forward"}});
  EXPECT_EQ(s.describe_stack(1), "me/cnn.py:59 forward (cuDNN workspace)");
}

TEST(SnapshotAttribution, FallsBackToLibraryThenNativeFrames) {
  const Snapshot library = with_stack({kMalloc, kModule, kThreadRoutine});
  EXPECT_EQ(library.describe_stack(1), "modules/module.py:1750 _call_impl");
  const Snapshot native = with_stack({kMalloc, {"Blas.cpp", 120, "at::native::addmm_out_cuda_impl"}, kThreadRoutine});
  EXPECT_EQ(native.describe_stack(1), "Blas.cpp:120 at::native::addmm_out_cuda_impl");
  EXPECT_EQ(native.describe_stack(0), "");
  EXPECT_EQ(native.describe_stack(7), "");
}

}  // namespace
}  // namespace memplan::snapshot
