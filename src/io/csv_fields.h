// csv_fields.h — the field rules every CSV reader of memplan's shares
// (src/io/csv.cc for problems and plans, src/planning/banks.cc for bank files):
// fields are split on ',' with no quoting, and spaces, tabs and carriage
// returns around a field or a line are not part of it.
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "memplan/status.h"

namespace memplan::csv_fields {

// A carriage return is blank too: a field written back without it (the
// writers never add one) must read as the same field.
inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

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

// Whether a line that starts with '#' is a comment. Only in files people
// write by hand (bank files): files memplan writes carry buffer ids in their
// first column, and an id may start with '#', as the problem reader allows.
enum class HashComments { kSkipped, kRecords };

// Calls visit(line_number, fields) for every line of `text` that is not
// blank (nor a '#' comment, when they are skipped), its fields split and
// trimmed (a carriage return before the newline dropped); line numbers count
// from 1. Stops at, and returns, the first error visit returns.
template <typename Visit>
Status for_each_record(std::string_view text, HashComments comments, Visit&& visit) {
  std::vector<std::string_view> fields;
  size_t line_number = 0;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = trim(line);
    start = end + 1;
    ++line_number;
    if (line.empty() || (comments == HashComments::kSkipped && line.front() == '#')) continue;
    split_fields(line, &fields);
    for (std::string_view& field : fields) field = trim(field);
    MEMPLAN_RETURN_IF_ERROR(visit(line_number, fields));
  }
  return Status::Ok();
}

}  // namespace memplan::csv_fields
