// mark_binding.cc — memplan.mark() and memplan.mark_key(k): the iteration
// marks of memplan/mark.h, called through whichever memplan library is loaded
// in this process (the serving drop-in libmemplan_replay.so, or the tracer
// libmemplan_trace.so), found with dlsym(RTLD_DEFAULT). Without one they do
// nothing, so a program marks its iterations once and runs either way.
//
// The symbols are looked up again on every call until found: a library
// loaded later (ctypes.CDLL(path, mode=RTLD_GLOBAL)) is then picked up. Once
// found they are kept (both libraries are linked -z nodelete: never unloaded).
#include <dlfcn.h>

#include <atomic>

#include "bindings.h"

namespace memplan::python {
namespace {

using MarkFunction = void (*)();
using MarkKeyFunction = void (*)(uint64_t);

std::atomic<MarkFunction> g_mark{nullptr};
std::atomic<MarkKeyFunction> g_mark_key{nullptr};

MarkFunction mark_function() {
  MarkFunction f = g_mark.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = reinterpret_cast<MarkFunction>(dlsym(RTLD_DEFAULT, "memplan_mark"));
    if (f != nullptr) g_mark.store(f, std::memory_order_release);
  }
  return f;
}

MarkKeyFunction mark_key_function() {
  MarkKeyFunction f = g_mark_key.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = reinterpret_cast<MarkKeyFunction>(dlsym(RTLD_DEFAULT, "memplan_mark_key"));
    if (f != nullptr) g_mark_key.store(f, std::memory_order_release);
  }
  return f;
}

}  // namespace

void bind_marks(py::module_& m) {
  m.def(
      "mark",
      [] {
        if (MarkFunction f = mark_function()) f();
      },
      "Marks an iteration boundary for the memplan library loaded in this process (memplan_mark); does nothing "
      "when none is loaded. Mark before each iteration and once after the last.");
  m.def(
      "mark_key",
      [](uint64_t key) {
        if (MarkKeyFunction f = mark_key_function()) f(key);
      },
      py::arg("key"),
      "Marks an iteration boundary and names the iteration that starts with `key` (memplan_mark_key): the "
      "drop-in learns and serves each key's iterations as one variant. mark() is key 0. Does nothing when no "
      "memplan library is loaded.");
  m.def(
      "loaded",
      []() -> py::object {
        MarkFunction f = mark_function();
        if (f == nullptr) return py::none();
        Dl_info info{};
        if (dladdr(reinterpret_cast<void*>(f), &info) == 0 || info.dli_fname == nullptr) return py::str("unknown");
        const std::string file = info.dli_fname;
        if (file.find("libmemplan_replay") != std::string::npos) return py::str("replay");
        if (file.find("libmemplan_trace") != std::string::npos) return py::str("trace");
        return py::str(file);
      },
      "Which memplan library mark() calls: 'replay' (the serving drop-in), 'trace' (the tracer), the path of "
      "another library that defines memplan_mark, or None when none is loaded (mark() does nothing).");
}

}  // namespace memplan::python
