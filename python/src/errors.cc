// errors.cc — the module's exception classes (see errors.h).
#include "errors.h"

#include <Python.h>

#include "bindings.h"

namespace memplan::python {
namespace {

// Created once when the module is imported and kept for the life of the
// interpreter (the module holds references too).
PyObject* g_error = nullptr;
PyObject* g_input_error = nullptr;
PyObject* g_file_error = nullptr;
PyObject* g_unknown_planner_error = nullptr;
PyObject* g_planning_error = nullptr;

PyObject* new_exception(py::module_& m, const char* name, const char* doc, PyObject* bases) {
  const std::string qualified = std::string("memplan.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.attr(name) = py::reinterpret_borrow<py::object>(type);
  return type;
}

PyObject* class_for(StatusCode code, ErrorSource source) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnimplemented:
      return g_input_error;
    case StatusCode::kIoError:
      return g_file_error;
    case StatusCode::kNotFound:
      return source == ErrorSource::kFile      ? g_file_error
             : source == ErrorSource::kPlanner ? g_unknown_planner_error
                                               : g_input_error;
    default:
      return g_planning_error;
  }
}

[[noreturn]] void raise(PyObject* type, const std::string& message, StatusCode code) {
  py::object instance = py::reinterpret_borrow<py::object>(type)(message);
  instance.attr("code") = std::string(status_code_name(code));
  PyErr_SetObject(type, instance.ptr());
  throw py::error_already_set();
}

}  // namespace

void bind_errors(py::module_& m) {
  g_error = new_exception(m, "Error", "Base of memplan's exceptions; `code` names the library's status code.",
                          PyExc_Exception);
  auto bases = [](PyObject* second) { return py::make_tuple(py::handle(g_error), py::handle(second)); };
  g_input_error =
      new_exception(m, "InputError", "Malformed input or a bad argument; the message names the file, line and field.",
                    bases(PyExc_ValueError).ptr());
  g_file_error =
      new_exception(m, "FileError", "A file that is missing, unreadable or unwritable.", bases(PyExc_OSError).ptr());
  g_unknown_planner_error = new_exception(m, "UnknownPlannerError", "No planner is registered under that name.",
                                          bases(PyExc_LookupError).ptr());
  g_planning_error =
      new_exception(m, "PlanningError", "A planner failed: time limit, cancel, or an invalid plan (a bug in memplan).",
                    bases(PyExc_RuntimeError).ptr());
}

void raise_status(const Status& status, ErrorSource source) {
  raise(class_for(status.code(), source), status.message(), status.code());
}

void raise_input_error(const std::string& message) { raise(g_input_error, message, StatusCode::kInvalidArgument); }

}  // namespace memplan::python
