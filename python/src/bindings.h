// bindings.h — what the files of the Python module share: the functions that
// add each part to the module, and the conversions from Python values that
// raise the module's exceptions (errors.h) with messages naming the argument.
//
// Ownership: Python objects own copies of memplan's plain values (Problem,
// Plan, Trace); nothing in the module points into another object's memory,
// so any object may outlive the one it came from.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memplan/plan.h"
#include "memplan/planning.h"
#include "memplan/problem.h"

namespace memplan::python {

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_problem(py::module_& m);
void bind_planning(py::module_& m);
void bind_formats(py::module_& m);
void bind_trace(py::module_& m);
void bind_marks(py::module_& m);
void bind_snapshot(py::module_& m);
void bind_banks(py::module_& m);
#if MEMPLAN_WITH_ONNX
void bind_onnx(py::module_& m);
// An ONNX model file and its input shapes ({name: dims} or ["NAME=DIMS"]) as
// a memplan.OnnxExtraction (onnx_binding.cc).
py::object extract_onnx_file(const std::string& path, py::handle inputs, py::handle alignment, bool keep_constants);
#endif

// A Python int as int64; raises InputError naming `what` for anything else
// (floats, bools, strings) and for values outside int64.
int64_t int64_from(py::handle value, const std::string& what);
// Bytes: an int, or a string with a unit as the CLI takes it ("64K", "1.5MiB").
int64_t bytes_from(py::handle value, const std::string& what);
// A 1-D sequence or NumPy array of integers as int64 values. Arrays must have
// an integer dtype (a float array is refused, not truncated).
std::vector<int64_t> int64_column(py::handle values, const std::string& what);
// A vector as a new 1-D NumPy int64 array.
py::array_t<int64_t> to_array(const std::vector<int64_t>& values);

// The result of memplan.plan(): run_planner's result and the CLI's message
// for the verdicts it reports as failures.
struct PlanResult {
  PlanningResult result;
  std::optional<int64_t> capacity;  // the capacity the problem was planned for
  std::string message;              // "" for planned and fits
};

// What functions that take a plan accept: a Plan, a PlanResult that has a
// plan, or the offsets alone (a sequence or NumPy array, one per buffer of
// `problem`). Raises InputError otherwise.
Plan plan_from(const Problem& problem, py::handle plan, const std::string& what = "plan");

}  // namespace memplan::python
