// errors.h — memplan's Status codes as Python exceptions.
//
//   memplan.Error                      base of all; `code` is the status code's name
//   ├── InputError(Error, ValueError)  malformed input (file, line, field), bad argument
//   ├── FileError(Error, OSError)      a file that is missing, unreadable or unwritable
//   ├── UnknownPlannerError(Error, LookupError)
//   └── PlanningError(Error, RuntimeError)  a planner failed (time limit, cancelled,
//                                       an invalid plan: a bug in memplan)
//
// The message is the library's, the same text the CLI prints after "memplan: ".
#pragma once

#include <string>

#include "memplan/status.h"

namespace memplan::python {

// What a kNotFound means where the error came from.
enum class ErrorSource { kValue, kFile, kPlanner };

// Raises the exception for a non-OK status (as pybind11::error_already_set).
[[noreturn]] void raise_status(const Status& status, ErrorSource source = ErrorSource::kValue);
[[noreturn]] void raise_input_error(const std::string& message);

template <typename T>
T value_or_raise(StatusOr<T>&& result, ErrorSource source = ErrorSource::kValue) {
  if (!result.ok()) raise_status(result.status(), source);
  return std::move(result).value();
}

inline void raise_if_error(const Status& status, ErrorSource source = ErrorSource::kValue) {
  if (!status.ok()) raise_status(status, source);
}

}  // namespace memplan::python
