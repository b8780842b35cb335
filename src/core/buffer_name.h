// buffer_name.h — how error messages name a buffer: its id and its index,
// "buffer 'a' (#0)", so that a duplicate or empty id still names one row.
#pragma once

#include <cstddef>
#include <string>

#include "memplan/problem.h"

namespace memplan {

inline std::string buffer_name(const Problem& problem, size_t i) {
  return "buffer '" + problem.buffers[i].id + "' (#" + std::to_string(i) + ")";
}

}  // namespace memplan
