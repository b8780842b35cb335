// text_table.h — columns of text aligned for a terminal, or written as CSV.
//
// Cells are strings; a column is right-aligned if it was declared numeric.
// Column groups give a two-row header, so that wide names (planner names)
// appear once over a group of narrow columns instead of in every header.
// Rows may be added before the widths are known: widths are computed when the
// table is printed.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace memplan::cli {

class TextTable {
 public:
  // One entry per column: its header and whether its cells are numbers.
  // Consecutive columns with the same non-empty `group` get that label once,
  // centred in a row above their headers ("portfolio" over "arena  gap").
  struct Column {
    std::string header;
    bool numeric = false;
    std::string group;
    std::string csv_header;  // the CSV header, if not `header`
  };
  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // Missing trailing cells print empty; extra cells are dropped.
  void add_row(std::vector<std::string> cells);
  // A horizontal rule before the next row added (e.g. above a summary row).
  void add_rule();

  // Aligned columns separated by two spaces, group row and header, underlined.
  void print(std::FILE* out) const;
  // Header and rows as comma-separated values (rules left out). Cells are
  // written as they are: callers keep commas out of them.
  void print_csv(std::FILE* out) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
};

}  // namespace memplan::cli
