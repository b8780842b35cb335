// status.h — the error type of memplan's API.
//
// Planners, solvers and readers never throw across the API and never abort on
// bad input: they return a Status (or a StatusOr<T> carrying either a value or
// an error). Only the CLI turns errors into messages and exit codes.
//
// A Status is cheap when OK (no allocation); the message of an error names
// what went wrong in the user's terms (file, line, field; buffer ids).
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace memplan {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // the input is malformed or violates a contract
  kNotFound,          // a named thing (planner, file, buffer id) does not exist
  kInfeasible,        // proven: no plan fits the requested capacity
  kCapacityExceeded,  // the plan found does not fit the capacity (no proof that none does)
  kDeadlineExceeded,  // the time limit ran out before an answer was found
  kCancelled,         // the caller cancelled the work
  kUnimplemented,     // the operation is not supported for this input
  kIoError,           // reading or writing a file failed
  kInternal,          // a bug in memplan: please report it
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: <message>" — for logs and the CLI.
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Infeasible(std::string m) { return {StatusCode::kInfeasible, std::move(m)}; }
inline Status CapacityExceeded(std::string m) { return {StatusCode::kCapacityExceeded, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
inline Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Either a T or a non-OK Status. Accessing the value of an error is a bug
// (asserted in debug builds).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "StatusOr built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace memplan

// Propagates a non-OK Status from an expression returning Status.
#define MEMPLAN_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::memplan::Status memplan_status_ = (expr);        \
    if (!memplan_status_.ok()) return memplan_status_; \
  } while (0)

#define MEMPLAN_CONCAT_INNER_(a, b) a##b
#define MEMPLAN_CONCAT_(a, b) MEMPLAN_CONCAT_INNER_(a, b)
// `MEMPLAN_ASSIGN_OR_RETURN(auto x, f());` — binds the value or returns the error.
#define MEMPLAN_ASSIGN_OR_RETURN(lhs, expr)                                                                 \
  auto MEMPLAN_CONCAT_(memplan_or_, __LINE__) = (expr);                                                     \
  if (!MEMPLAN_CONCAT_(memplan_or_, __LINE__).ok()) return MEMPLAN_CONCAT_(memplan_or_, __LINE__).status(); \
  lhs = std::move(MEMPLAN_CONCAT_(memplan_or_, __LINE__)).value()
