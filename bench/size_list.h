// size_list.h — "1000,10000,100000" -> {1000, 10000, 100000}: the --sizes
// option of the benchmark programs that sweep problem sizes.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

inline std::vector<size_t> parse_size_list(const std::string& list) {
  std::vector<size_t> sizes;
  size_t at = 0;
  while (at < list.size()) {
    size_t comma = list.find(',', at);
    if (comma == std::string::npos) comma = list.size();
    sizes.push_back(std::strtoull(list.substr(at, comma - at).c_str(), nullptr, 10));
    at = comma + 1;
  }
  return sizes;
}
