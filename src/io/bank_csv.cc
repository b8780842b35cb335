// bank_csv.cc — the memory-bank files (banks.h): the bank file (one bank a
// row) and the banked plan (the problem's rows with bank and offset columns).
// Readers of data only; every judgment of a plan is validate_banked's.
#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/buffer_name.h"
#include "io/csv_fields.h"
#include "memplan/banks.h"
#include "memplan/csv.h"
#include "memplan/units.h"

namespace memplan {
namespace {

// A field of a file for an error message: quoted, at most 40 bytes, bytes
// that do not print as '?'.
std::string field_text(std::string_view field) {
  std::string out = "'";
  for (size_t j = 0; j < field.size() && j < 40; ++j) {
    const unsigned char c = static_cast<unsigned char>(field[j]);
    out.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?');
  }
  return out + (field.size() > 40 ? "...'" : "'");
}

// A header column a reader looks for, and where its index goes (SIZE_MAX
// while absent).
struct Column {
  std::string_view name;
  size_t* index;
  bool required = false;
};

// How a file of the two formats reads: its comments, its columns, whether
// other columns are refused, and what a file without a header should have.
struct Table {
  csv_fields::HashComments comments;
  std::vector<Column> columns;
  bool others_allowed = false;
  std::string_view expected;  // for "no header row (expected ...)"
};

// Finds the table's columns in a header row: kInvalidArgument for a column
// named twice, a required one missing, or, unless others are allowed, one
// not among them.
Status read_header(const std::vector<std::string_view>& fields, const Table& table, const std::string& where) {
  for (size_t c = 0; c < fields.size(); ++c) {
    const auto found =
        std::find_if(table.columns.begin(), table.columns.end(), [&](const Column& k) { return k.name == fields[c]; });
    if (found == table.columns.end()) {
      if (table.others_allowed) continue;
      std::string expected;
      for (const Column& k : table.columns) expected += (expected.empty() ? "" : ", ") + std::string(k.name);
      return InvalidArgument(where + "unknown column '" + std::string(fields[c]) + "' (expected " + expected + ")");
    }
    if (*found->index != SIZE_MAX)
      return InvalidArgument(where + "column '" + std::string(fields[c]) + "' given twice");
    *found->index = c;
  }
  for (const Column& k : table.columns) {
    if (k.required && *k.index == SIZE_MAX) {
      return InvalidArgument(where + "header lacks column '" + std::string(k.name) + "'");
    }
  }
  return Status::Ok();
}

// Reads the header, then calls `row` for each record, which has as many
// fields as the header. Errors name `source` and the line.
using RowFn = std::function<Status(size_t line, const std::vector<std::string_view>& fields, const std::string& where)>;
Status for_each_row(std::string_view text, std::string_view source, const Table& table, const RowFn& row) {
  auto where = [&](size_t line) { return std::string(source) + ":" + std::to_string(line) + ": "; };
  std::optional<size_t> columns;
  MEMPLAN_RETURN_IF_ERROR(csv_fields::for_each_record(
      text, table.comments, [&](size_t line, const std::vector<std::string_view>& fields) -> Status {
        if (!columns) {
          columns = fields.size();
          return read_header(fields, table, where(line));
        }
        if (fields.size() != *columns) {
          return InvalidArgument(where(line) + "expected " + std::to_string(*columns) +
                                 " fields as in the header, found " + std::to_string(fields.size()));
        }
        return row(line, fields, where(line));
      }));
  if (!columns)
    return InvalidArgument(std::string(source) + ": no header row (expected " + std::string(table.expected) + ")");
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<Bank>> parse_banks_csv(std::string_view text, std::string_view source) {
  std::vector<Bank> banks;
  size_t name_col = SIZE_MAX, capacity_col = SIZE_MAX, alignment_col = SIZE_MAX;
  const Table table{.comments = csv_fields::HashComments::kSkipped,
                    .columns = {{"name", &name_col, true}, {"capacity", &capacity_col}, {"alignment", &alignment_col}},
                    .expected = "e.g. \"name,capacity,alignment\""};
  MEMPLAN_RETURN_IF_ERROR(for_each_row(
      text, source, table,
      [&](size_t, const std::vector<std::string_view>& fields, const std::string& where) -> Status {
        Bank bank{.name = std::string(fields[name_col])};
        if (bank.name.empty()) return InvalidArgument(where + "field 'name' is empty");
        if (capacity_col != SIZE_MAX && !fields[capacity_col].empty()) {
          StatusOr<int64_t> bytes = parse_bytes(fields[capacity_col]);
          if (!bytes.ok()) return InvalidArgument(where + "field 'capacity': " + bytes.status().message());
          bank.capacity = *bytes;
        }
        if (alignment_col != SIZE_MAX && !fields[alignment_col].empty()) {
          StatusOr<int64_t> bytes = parse_bytes(fields[alignment_col]);
          if (!bytes.ok()) return InvalidArgument(where + "field 'alignment': " + bytes.status().message());
          if (!is_power_of_two(*bytes)) {
            return InvalidArgument(where + "field 'alignment': " + std::to_string(*bytes) + " is not a power of two");
          }
          bank.alignment = *bytes;
        }
        banks.push_back(std::move(bank));
        return Status::Ok();
      }));
  if (Status checked = check_banks(banks); !checked.ok()) {
    return InvalidArgument(std::string(source) + ": " + checked.message());
  }
  return banks;
}

std::string format_banked_plan_csv(const Problem& problem, std::span<const Bank> banks, const BankedPlan& plan) {
  // The problem's own writer, each buffer pinned where it went and fixed
  // where it sits.
  if (problem.buffers.empty()) return "id,lower,upper,size,offset,bank\n";  // the columns even with no row
  Problem rows = problem;
  for (size_t i = 0; i < rows.size() && i < plan.bank_of.size() && i < plan.offsets.size(); ++i) {
    const int32_t k = plan.bank_of[i];
    rows.buffers[i].bank = k >= 0 && static_cast<size_t>(k) < banks.size() ? banks[k].name : std::string();
    rows.buffers[i].offset = plan.offsets[i];
  }
  return format_problem_csv(rows);
}

StatusOr<BankedPlan> parse_banked_plan_csv(const Problem& problem, std::span<const Bank> banks, std::string_view text,
                                           std::string_view source) {
  std::unordered_map<std::string_view, size_t> index_of;
  index_of.reserve(problem.size());
  for (size_t i = 0; i < problem.size(); ++i) index_of.emplace(problem.buffers[i].id, i);
  std::vector<int32_t> bank_of(problem.size(), -1);
  std::vector<int64_t> offsets(problem.size(), 0);
  std::vector<size_t> line_of(problem.size(), 0);
  size_t id_col = SIZE_MAX, bank_col = SIZE_MAX, offset_col = SIZE_MAX;
  const Table table{.comments = csv_fields::HashComments::kRecords,
                    .columns = {{"id", &id_col, true}, {"bank", &bank_col, true}, {"offset", &offset_col, true}},
                    .others_allowed = true,
                    .expected = "id, bank and offset columns"};
  MEMPLAN_RETURN_IF_ERROR(for_each_row(
      text, source, table,
      [&](size_t line, const std::vector<std::string_view>& fields, const std::string& where) -> Status {
        const auto found = index_of.find(fields[id_col]);
        if (found == index_of.end()) {
          return InvalidArgument(where + "field 'id': " + field_text(fields[id_col]) +
                                 " is not a buffer of the problem");
        }
        const size_t i = found->second;
        if (line_of[i] != 0) {
          return InvalidArgument(where + "field 'id': " + field_text(fields[id_col]) +
                                 " is given twice (first on line " + std::to_string(line_of[i]) + ")");
        }
        line_of[i] = line;
        const std::optional<size_t> k = find_bank(banks, fields[bank_col]);
        if (!k) {
          return InvalidArgument(where + "field 'bank': " + field_text(fields[bank_col]) + " is not one of the banks");
        }
        bank_of[i] = static_cast<int32_t>(*k);
        const std::string_view o = fields[offset_col];
        int64_t offset = 0;
        const auto [ptr, ec] = std::from_chars(o.data(), o.data() + o.size(), offset);
        if (o.empty() || ec != std::errc() || ptr != o.data() + o.size()) {
          return InvalidArgument(where + "field 'offset': " + field_text(o) + " is not a 64-bit integer");
        }
        offsets[i] = offset;
        return Status::Ok();
      }));
  for (size_t i = 0; i < problem.size(); ++i) {
    if (line_of[i] == 0) return InvalidArgument(std::string(source) + ": " + buffer_name(problem, i) + " has no row");
  }
  return make_banked_plan(problem, banks.size(), std::move(bank_of), std::move(offsets));
}

}  // namespace memplan
