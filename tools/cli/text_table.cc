// text_table.cc — aligned text and CSV output of a TextTable.
#include "text_table.h"

#include <algorithm>

namespace memplan::cli {

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void TextTable::add_rule() { rows_.emplace_back(); }

void TextTable::print(std::FILE* out) const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = columns_[c].header.size();
    for (const auto& row : rows_) {
      if (!row.empty()) widths[c] = std::max(widths[c], row[c].size());
    }
  }
  // A group label wider than its columns widens the group's last column.
  bool any_group = false;
  for (size_t begin = 0; begin < columns_.size();) {
    size_t end = begin + 1;
    while (end < columns_.size() && columns_[end].group == columns_[begin].group) ++end;
    size_t span = 2 * (end - begin - 1);
    for (size_t c = begin; c < end; ++c) span += widths[c];
    const size_t label = columns_[begin].group.size();
    any_group |= label > 0;
    if (label > span) widths[end - 1] += label - span;
    begin = end;
  }
  size_t total = 0;
  for (size_t w : widths) total += w + 2;
  const std::string rule(total > 2 ? total - 2 : 0, '-');

  auto print_cells = [&](auto cell_of) {
    std::string line;
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string& cell = cell_of(c);
      const std::string padding(widths[c] - std::min(widths[c], cell.size()), ' ');
      if (c > 0) line += "  ";
      line += columns_[c].numeric ? padding + cell : cell + padding;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::fprintf(out, "%s\n", line.c_str());
  };
  if (any_group) {
    std::string line;
    for (size_t begin = 0; begin < columns_.size();) {
      size_t end = begin + 1;
      while (end < columns_.size() && columns_[end].group == columns_[begin].group) ++end;
      size_t span = 2 * (end - begin - 1);
      for (size_t c = begin; c < end; ++c) span += widths[c];
      const std::string& label = columns_[begin].group;
      const size_t left = (span - label.size()) / 2;
      if (begin > 0) line += "  ";
      line += std::string(left, ' ') + label + std::string(span - left - label.size(), ' ');
      begin = end;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::fprintf(out, "%s\n", line.c_str());
  }
  print_cells([&](size_t c) -> const std::string& { return columns_[c].header; });
  std::fprintf(out, "%s\n", rule.c_str());
  for (const auto& row : rows_) {
    if (row.empty()) {
      std::fprintf(out, "%s\n", rule.c_str());
    } else {
      print_cells([&](size_t c) -> const std::string& { return row[c]; });
    }
  }
}

void TextTable::print_csv(std::FILE* out) const {
  auto print_cells = [&](auto cell_of) {
    std::string line;
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (c > 0) line += ',';
      line += cell_of(c);
    }
    std::fprintf(out, "%s\n", line.c_str());
  };
  print_cells([&](size_t c) -> const std::string& {
    return columns_[c].csv_header.empty() ? columns_[c].header : columns_[c].csv_header;
  });
  for (const auto& row : rows_) {
    if (!row.empty()) print_cells([&](size_t c) -> const std::string& { return row[c]; });
  }
}

}  // namespace memplan::cli
