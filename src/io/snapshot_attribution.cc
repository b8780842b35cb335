// snapshot_attribution.cc — who allocated a block, in words a user
// recognises (Snapshot::describe_stack; the rules are stated in snapshot.h).
//
// A stack is innermost first. Frames are sorted into kinds by their file and
// name; the description is the innermost user frame, else the autograd node
// on the backward thread, else the innermost frame that is neither machinery
// nor generated code, with a note when the block is a library's workspace:
//
//   getNewWorkspace  (cuBLAS workspace)      ─┐
//   AddmmBackward0::apply                     ├─> "AddmmBackward0 (autograd backward, cuBLAS workspace)"
//   Engine::thread_main ... start_thread     ─┘    (no Python frame on that thread)
//
//   torchinductor_u/z3/cz3v.py:1647 call      ─┐  generated: skipped
//   cs336_basics/transformer.py:22 forward     ├─> "cs336_basics/transformer.py:22 forward"
#include <string>
#include <string_view>

#include "memplan/snapshot.h"

namespace memplan::snapshot {
namespace {

std::string_view last_components(std::string_view path, int n) {
  size_t cut = path.size();
  for (int i = 0; i < n; ++i) {
    const size_t slash = path.rfind('/', cut == 0 ? 0 : cut - 1);
    if (slash == std::string_view::npos || cut == 0) return path;
    cut = slash;
  }
  return path.substr(cut + 1);
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

bool is_python(std::string_view file) { return file.ends_with(".py"); }

// Library frames (PyTorch, anything installed): not what the user wrote.
bool is_library(std::string_view file) { return contains(file, "/torch/") || contains(file, "/site-packages/"); }

// Code a compiler wrote: torch.compile's output (torchinductor_<user>/…py)
// and Triton's kernels and launchers.
bool is_generated(std::string_view file, std::string_view name) {
  return contains(file, "torchinductor_") || contains(file, "/triton/") || contains(file, "/.triton/") ||
         name.starts_with("triton_");
}

// Where every thread starts: the C library's and libstdc++'s entry points.
bool is_thread_entry(std::string_view file, std::string_view name) {
  return contains(file, "libstdc++") || file.ends_with("c++11/thread.cc") || name == "execute_native_thread_routine" ||
         name == "start_thread" || name == "clone" || name == "__clone" || name == "__clone3" || name == "_start" ||
         name.starts_with("__libc_start");
}

// "torch::autograd::generated::AddmmBackward0::apply(...)" -> "AddmmBackward0":
// the node the autograd engine was running. "" when the frame is none.
std::string_view autograd_node(std::string_view name) {
  const size_t apply = name.find("::apply(");
  if (apply == std::string_view::npos || !name.starts_with("torch::autograd::")) return {};
  const std::string_view scope = name.substr(0, apply);
  const size_t colon = scope.rfind("::");
  const std::string_view node = colon == std::string_view::npos ? scope : scope.substr(colon + 2);
  return contains(node, "Backward") ? node : std::string_view{};
}

// The library whose scratch space this is: cuBLAS's workspace
// (at::cuda::getNewWorkspace, made for a cuBLAS handle) or cuDNN's
// (a Workspace made by a cudnn convolution or batch norm); "" for neither.
std::string_view workspace_of(const Snapshot& s, const std::vector<uint32_t>& stack) {
  bool workspace = false;
  for (uint32_t id : stack) {
    const std::string& name = s.strings[s.frames[id].name];
    if (contains(name, "getNewWorkspace") || contains(name, "CUDABlasHandle")) return "cuBLAS workspace";
    if (contains(name, "Workspace") || contains(name, "workspace")) workspace = true;
    if (workspace && (contains(name, "cudnn") || contains(name, "Cudnn"))) return "cuDNN workspace";
  }
  return workspace ? "workspace" : "";
}

std::string describe_frame(const Snapshot& s, const Frame& f) {
  return std::string(last_components(s.strings[f.filename], 2)) + ":" + std::to_string(f.line) + " " +
         s.strings[f.name];
}

}  // namespace

std::string Snapshot::describe_stack(uint32_t stack) const {
  if (stack >= stacks.size()) return "";
  const std::vector<uint32_t>& s = stacks[stack];
  const Frame* user = nullptr;     // innermost Python frame the user wrote
  const Frame* library = nullptr;  // innermost Python frame of a library
  const Frame* native = nullptr;   // innermost other frame with a line number
  std::string_view node;
  for (uint32_t id : s) {
    const Frame& f = frames[id];
    const std::string& file = strings[f.filename];
    const std::string& name = strings[f.name];
    if (node.empty()) node = autograd_node(name);
    if (is_generated(file, name) || is_thread_entry(file, name)) continue;
    if (is_python(file)) {
      if (!is_library(file) && user == nullptr) user = &f;
      if (library == nullptr) library = &f;
    } else if (f.line > 0 && native == nullptr) {
      native = &f;
    }
  }
  std::string notes;
  std::string described;
  if (user != nullptr) {
    described = describe_frame(*this, *user);
  } else if (!node.empty()) {
    described = std::string(node);
    notes = "autograd backward";
  } else if (library != nullptr) {
    described = describe_frame(*this, *library);
  } else if (native != nullptr) {
    described = describe_frame(*this, *native);
  }
  const std::string_view workspace = workspace_of(*this, s);
  if (!workspace.empty()) notes += std::string(notes.empty() ? "" : ", ") + std::string(workspace);
  if (described.empty()) return std::string(workspace);
  return notes.empty() ? described : described + " (" + notes + ")";
}

}  // namespace memplan::snapshot
