// module.cc — the extension module memplan._memplan; the package memplan
// (python/memplan/__init__.py) re-exports it. docs/python.md is the guide.
#include "bindings.h"

#ifndef MEMPLAN_WITH_ONNX
#define MEMPLAN_WITH_ONNX 0
#endif
#ifndef MEMPLAN_TRACE_PRELOAD_BUILD_PATH
#define MEMPLAN_TRACE_PRELOAD_BUILD_PATH ""
#endif
#ifndef MEMPLAN_REPLAY_PRELOAD_BUILD_PATH
#define MEMPLAN_REPLAY_PRELOAD_BUILD_PATH ""
#endif

PYBIND11_MODULE(_memplan, m) {
  namespace mp = memplan::python;
  m.doc() = "memplan: plans the memory of deep-learning tensors (the C++ library's Python binding)";
  m.attr("__version__") = MEMPLAN_VERSION;
  // Where the build tree put the preload libraries (memplan.library_path looks
  // beside an installed package first).
  pybind11::dict build_paths;
  build_paths["trace"] = MEMPLAN_TRACE_PRELOAD_BUILD_PATH;
  build_paths["replay"] = MEMPLAN_REPLAY_PRELOAD_BUILD_PATH;
  m.attr("_build_library_paths") = build_paths;
  mp::bind_errors(m);
  mp::bind_problem(m);
  mp::bind_planning(m);
  mp::bind_formats(m);
  mp::bind_trace(m);
  mp::bind_marks(m);
  mp::bind_snapshot(m);
  mp::bind_banks(m);
#if MEMPLAN_WITH_ONNX
  mp::bind_onnx(m);
#endif
  m.attr("HAS_ONNX") = static_cast<bool>(MEMPLAN_WITH_ONNX);
}
