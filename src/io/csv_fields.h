// csv_fields.h — the field rules every CSV reader of memplan's shares
// (src/io/csv.cc for problems and plans, src/planning/banks.cc for bank files):
// fields are split on ',' with no quoting, and spaces and tabs around a field
// or a line are not part of it.
#pragma once

#include <string_view>
#include <vector>

namespace memplan::csv_fields {

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

// Splits `line` on ',' into `fields` (reused between rows to avoid allocation).
inline void split_fields(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      fields->push_back(line.substr(start));
      return;
    }
    fields->push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

}  // namespace memplan::csv_fields
