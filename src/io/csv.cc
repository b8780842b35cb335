// csv.cc — the problem and plan CSV reader and writer (format in csv.h).
//
// Reading is one forward pass over the text with no per-field allocation:
//   1. Split lines on '\n' (dropping one trailing '\r'); skip blank lines.
//   2. The first non-blank line is the header: map each known column name
//      (and its aliases) to its position; unknown names are ignored.
//   3. Each further line is a row: split on ',', require the header's field
//      count, trim spaces and tabs, parse integers with std::from_chars (no
//      locale, no sign other than '-', the whole field must be consumed).
//   4. Check each row on the spot (sizes, lifetimes, alignment, offsets, the
//      running total of bytes, duplicate ids) so that every error can name the
//      line and the field; check_problem afterwards is a second line of defence.
// Cost: O(bytes) time plus one hash-table probe per row (expected O(1));
// memory O(rows).
#include "memplan/csv.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/csv_fields.h"

namespace memplan {
namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

// check_problem's bound on the total bytes of a problem (and on offset + size):
// below it every stacking of all buffers, padding included, fits in int64_t.
constexpr int64_t kMaxCsvTotalBytes = int64_t{1} << 62;

using csv_fields::split_fields;
using csv_fields::trim;

// A field's text for an error message: quoted, non-printable bytes escaped, and
// cut short so that a megabyte of garbage does not become a megabyte of message.
std::string quoted(std::string_view s) {
  constexpr size_t kMaxShown = 40;
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > kMaxShown) out += "...";
  out += '"';
  return out;
}

// Where an error happened: "<source>:<line>: " and, for a field, "field '<name>': ".
struct Location {
  std::string_view source;
  size_t line = 0;

  Status error(std::string message) const {
    std::string m(source);
    m += ':';
    m += std::to_string(line);
    m += ": ";
    m += message;
    return InvalidArgument(std::move(m));
  }
  Status field_error(std::string_view field, std::string message) const {
    std::string m = "field '";
    m += field;
    m += "': ";
    m += message;
    return error(std::move(m));
  }
};

// Yields the non-blank lines of a text with their 1-based line numbers.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {
    // A UTF-8 byte-order mark (spreadsheet exports add one) is not part of the header.
    if (text_.starts_with("\xEF\xBB\xBF")) text_.remove_prefix(3);
  }

  // Next line that holds more than spaces and tabs; false at the end.
  bool next(std::string_view* line, size_t* number) {
    while (pos_ < text_.size()) {
      const char* begin = text_.data() + pos_;
      const void* nl = std::memchr(begin, '\n', text_.size() - pos_);
      const size_t len = nl ? static_cast<size_t>(static_cast<const char*>(nl) - begin) : text_.size() - pos_;
      pos_ += len + (nl ? 1 : 0);
      ++line_;
      std::string_view l(begin, len);
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      if (trim(l).empty()) continue;
      *line = l;
      *number = line_;
      return true;
    }
    return false;
  }

  // An upper bound on the rows left, for reserving: every row takes at least
  // one line, and at least 8 bytes ("a,0,1,0\n") unless it is the last.
  size_t row_bound() const {
    const std::string_view rest = text_.substr(pos_);
    const auto newlines = static_cast<size_t>(std::count(rest.begin(), rest.end(), '\n'));
    return std::min(newlines, rest.size() / 8) + 1;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  size_t line_ = 0;
};

// Buffer ids -> buffer index, for duplicate checks and for matching plan rows
// to buffers. Open addressing with linear probing over 8-byte slots (32 bits of
// the hash, 32-bit index), at most half full; the ids themselves stay in the
// buffers. Probing touches one slot per row in the common case, where a
// node-based map costs several cache misses, which dominated reading time at a
// million rows.
class IdTable {
 public:
  // Indexes must stay below this (4 billion buffers is far beyond a CSV file).
  static constexpr size_t kMaxBuffers = UINT32_MAX - 1;

  explicit IdTable(const std::vector<Buffer>& buffers) : buffers_(buffers) {}

  // Sizes the table for `count` ids so that inserting them never rehashes.
  void reserve(size_t count) {
    if (2 * count > slots_.size()) grow(std::bit_ceil(2 * count));
  }

  // The index of the buffer called `id`, or kNone.
  size_t find(std::string_view id) const {
    if (slots_.empty()) return kNone;
    const uint64_t h = hash(id);
    for (size_t s = h & mask_;; s = (s + 1) & mask_) {
      if (slots_[s].index == kEmpty) return kNone;
      if (slots_[s].tag == tag(h) && buffers_[slots_[s].index].id == id) return slots_[s].index;
    }
  }

  // Adds buffer `index` (< kMaxBuffers) under its id and returns kNone, or
  // returns the index of an earlier buffer with the same id and adds nothing.
  size_t insert(size_t index) {
    if (2 * (count_ + 1) > slots_.size()) grow(slots_.empty() ? 64 : 2 * slots_.size());
    const std::string_view id = buffers_[index].id;
    const uint64_t h = hash(id);
    size_t s = h & mask_;
    for (; slots_[s].index != kEmpty; s = (s + 1) & mask_) {
      if (slots_[s].tag == tag(h) && buffers_[slots_[s].index].id == id) return slots_[s].index;
    }
    slots_[s] = {tag(h), static_cast<uint32_t>(index)};
    ++count_;
    return kNone;
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint32_t tag = 0;  // high half of the hash; the low bits chose the slot
    uint32_t index = kEmpty;
  };

  static uint64_t hash(std::string_view id) { return std::hash<std::string_view>{}(id); }
  static uint32_t tag(uint64_t h) { return static_cast<uint32_t>(h >> 32); }

  void grow(size_t slot_count) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(slot_count, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.index == kEmpty) continue;
      size_t s = hash(buffers_[slot.index].id) & mask_;
      while (slots_[s].index != kEmpty) s = (s + 1) & mask_;
      slots_[s] = slot;
    }
  }

  const std::vector<Buffer>& buffers_;
  std::vector<Slot> slots_;  // size is a power of two
  size_t mask_ = 0;
  size_t count_ = 0;
};

// The line of the `index`-th row (0-based) of `text`, for an error about an
// earlier row; rescanning on the error path saves keeping a line per buffer.
size_t line_of_row(std::string_view text, size_t index) {
  LineReader lines(text);
  std::string_view line;
  size_t number = 0;
  lines.next(&line, &number);  // the header
  for (size_t row = 0; row <= index && lines.next(&line, &number); ++row) {
  }
  return number;
}

// Positions of the known columns in a row, and their names as the file spells
// them (errors quote the user's own column names).
struct Header {
  size_t field_count = 0;
  size_t id = kNone, lower = kNone, upper = kNone, size = kNone, alignment = kNone, offset = kNone;
  size_t bank = kNone, priority = kNone;  // memory banks (banks.h): a pin and a priority, both optional
  bool inclusive_end = false;             // the upper column is an inclusive `end`
  std::string_view id_name = "id", lower_name = "lower", upper_name = "upper";
};

StatusOr<Header> parse_header(std::string_view line, const Location& at) {
  std::vector<std::string_view> names;
  split_fields(line, &names);
  Header h;
  h.field_count = names.size();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string_view name = trim(names[i]);
    size_t* slot = nullptr;
    if (name == "id" || name == "buffer" || name == "buffer_id") {
      slot = &h.id;
      h.id_name = name;
    } else if (name == "lower" || name == "start" || name == "begin") {
      slot = &h.lower;
      h.lower_name = name;
    } else if (name == "upper" || name == "end") {
      slot = &h.upper;
      h.upper_name = name;
      h.inclusive_end = name == "end";
    } else if (name == "size") {
      slot = &h.size;
    } else if (name == "alignment") {
      slot = &h.alignment;
    } else if (name == "offset") {
      slot = &h.offset;
    } else if (name == "bank") {
      slot = &h.bank;
    } else if (name == "priority") {
      slot = &h.priority;
    } else {
      continue;  // e.g. MiniMalloc's `hint` and `gaps`: not part of our model
    }
    if (*slot != kNone) {
      return at.field_error(name, "column given twice (the header names it or one of its aliases at positions " +
                                      std::to_string(*slot + 1) + " and " + std::to_string(i + 1) + ")");
    }
    *slot = i;
  }
  const auto missing = [&](std::string_view column, std::string_view aliases) {
    std::string m = "header lacks column '";
    m += column;
    m += "'";
    if (!aliases.empty()) {
      m += " (or ";
      m += aliases;
      m += ")";
    }
    m += "; header is " + quoted(line);
    // A file with old-Mac '\r' line endings reads as one long header line.
    if (line.find('\r') != std::string_view::npos) m += " (lines must end in \\n or \\r\\n)";
    return at.error(std::move(m));
  };
  if (h.id == kNone) return missing("id", "'buffer', 'buffer_id'");
  if (h.lower == kNone) return missing("lower", "'start', 'begin'");
  if (h.upper == kNone) return missing("upper", "inclusive 'end'");
  if (h.size == kNone) return missing("size", "");
  return h;
}

// One row's values, checked against the single-row rules of problem.h.
struct Row {
  std::string_view id;
  int64_t lower = 0;
  int64_t upper = 0;
  int64_t size = 0;
  int64_t alignment = 1;
  std::optional<int64_t> offset;
  std::string_view bank;            // empty: not pinned
  std::optional<int64_t> priority;  // empty field: the default
};

Status parse_int(std::string_view raw, std::string_view field, const Location& at, int64_t* out) {
  const std::string_view s = trim(raw);
  if (s.empty()) return at.field_error(field, "is empty (expected an integer)");
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec == std::errc::result_out_of_range) {
    return at.field_error(field, quoted(s) + " is out of the 64-bit integer range");
  }
  if (ec != std::errc() || end != s.data() + s.size()) {
    return at.field_error(field, quoted(s) + " is not an integer");
  }
  return Status::Ok();
}

Status parse_row(const Header& h, const std::vector<std::string_view>& fields, const Location& at, Row* row) {
  if (fields.size() != h.field_count) {
    return at.error("expected " + std::to_string(h.field_count) + " fields as in the header, found " +
                    std::to_string(fields.size()));
  }
  row->id = trim(fields[h.id]);
  if (row->id.empty()) return at.field_error(h.id_name, "is empty (every buffer needs an id)");

  MEMPLAN_RETURN_IF_ERROR(parse_int(fields[h.lower], h.lower_name, at, &row->lower));
  int64_t upper = 0;
  MEMPLAN_RETURN_IF_ERROR(parse_int(fields[h.upper], h.upper_name, at, &upper));
  if (h.inclusive_end) {
    // The one place where an inclusive `end` becomes the half-open upper bound.
    if (upper < row->lower) {
      return at.field_error(h.upper_name, "inclusive end " + std::to_string(upper) + " is before " +
                                              std::string(h.lower_name) + " " + std::to_string(row->lower));
    }
    if (upper == std::numeric_limits<int64_t>::max()) {
      return at.field_error(
          h.upper_name, "inclusive end " + std::to_string(upper) + " overflows 64 bits when made exclusive (end + 1)");
    }
    row->upper = upper + 1;
  } else {
    if (upper <= row->lower) {
      return at.field_error(h.upper_name, std::to_string(upper) + " is not greater than " + std::string(h.lower_name) +
                                              " " + std::to_string(row->lower) +
                                              " (lifetimes are half-open [lower, upper) and must not be empty)");
    }
    row->upper = upper;
  }

  MEMPLAN_RETURN_IF_ERROR(parse_int(fields[h.size], "size", at, &row->size));
  if (row->size < 0) return at.field_error("size", std::to_string(row->size) + " is negative");

  row->alignment = 1;
  if (h.alignment != kNone) {
    MEMPLAN_RETURN_IF_ERROR(parse_int(fields[h.alignment], "alignment", at, &row->alignment));
    if (!is_power_of_two(row->alignment)) {
      return at.field_error("alignment", std::to_string(row->alignment) + " is not a power of two");
    }
  }

  row->offset.reset();
  // An empty offset means "not fixed", so one file can fix some buffers only.
  if (h.offset != kNone && !trim(fields[h.offset]).empty()) {
    int64_t offset = 0;
    MEMPLAN_RETURN_IF_ERROR(parse_int(fields[h.offset], "offset", at, &offset));
    if (offset < 0) return at.field_error("offset", std::to_string(offset) + " is negative");
    if (offset > kMaxCsvTotalBytes - row->size) {
      return at.field_error("offset", "offset " + std::to_string(offset) + " + size " + std::to_string(row->size) +
                                          " exceeds 2^62 bytes");
    }
    row->offset = offset;
  }

  row->bank = h.bank != kNone ? trim(fields[h.bank]) : std::string_view();
  row->priority.reset();
  if (h.priority != kNone && !trim(fields[h.priority]).empty()) {
    int64_t priority = 0;
    MEMPLAN_RETURN_IF_ERROR(parse_int(fields[h.priority], "priority", at, &priority));
    if (priority < 0) return at.field_error("priority", std::to_string(priority) + " is negative");
    row->priority = priority;
  }
  return Status::Ok();
}

void append_int(std::string* out, int64_t v) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, end);
}

// Writes buffer i's row up to and including the size (and alignment if wanted).
void append_buffer_fields(std::string* out, const Problem& problem, size_t i, bool with_alignment) {
  const Buffer& b = problem.buffers[i];
  out->append(b.id);
  out->push_back(',');
  append_int(out, b.lower);
  out->push_back(',');
  append_int(out, b.upper);
  out->push_back(',');
  append_int(out, b.size);
  if (with_alignment) {
    out->push_back(',');
    append_int(out, problem.alignment_of(i));
  }
}

bool needs_alignment_column(const Problem& problem) {
  for (size_t i = 0; i < problem.size(); ++i) {
    if (problem.alignment_of(i) > 1) return true;
  }
  return false;
}

}  // namespace

StatusOr<Problem> parse_problem_csv(std::string_view text, std::string_view source) {
  LineReader lines(text);
  std::string_view line;
  Location at{.source = source};
  if (!lines.next(&line, &at.line)) {
    at.line = 1;
    return at.error("no header row (the file is empty; expected e.g. \"id,lower,upper,size\")");
  }
  MEMPLAN_ASSIGN_OR_RETURN(const Header header, parse_header(line, at));

  Problem problem;
  problem.buffers.reserve(lines.row_bound());
  IdTable ids(problem.buffers);
  ids.reserve(problem.buffers.capacity());
  std::vector<std::string_view> fields;
  Row row;
  int64_t total = 0;  // bytes of all buffers so far, each rounded up to its alignment
  while (lines.next(&line, &at.line)) {
    if (problem.size() == IdTable::kMaxBuffers) return at.error("more than 4294967294 buffers");
    split_fields(line, &fields);
    MEMPLAN_RETURN_IF_ERROR(parse_row(header, fields, at, &row));
    if (row.size > kMaxCsvTotalBytes - total - row.alignment) {
      // Blame the field that tipped it: an alignment that alone takes a
      // quarter of the range is the alignment's fault, not the size's.
      if (row.alignment >= kMaxCsvTotalBytes / 4) {
        return at.field_error("alignment", "alignment " + std::to_string(row.alignment) +
                                               " leaves no room: the padded total of all buffers exceeds 2^62 bytes");
      }
      return at.field_error("size", "the total size of all buffers exceeds 2^62 bytes");
    }
    total += align_up(row.size, row.alignment);
    if (row.offset && *row.offset % row.alignment != 0) {
      return at.field_error("offset", "fixed offset " + std::to_string(*row.offset) +
                                          " is not a multiple of the alignment " + std::to_string(row.alignment));
    }
    problem.buffers.push_back(Buffer{.id = std::string(row.id),
                                     .lower = row.lower,
                                     .upper = row.upper,
                                     .size = row.size,
                                     .alignment = row.alignment,
                                     .offset = row.offset,
                                     .bank = std::string(row.bank),
                                     .priority = row.priority});
    if (const size_t first = ids.insert(problem.size() - 1); first != kNone) {
      return at.field_error(header.id_name, "duplicate id " + quoted(row.id) + " (first on line " +
                                                std::to_string(line_of_row(text, first)) + ")");
    }
  }
  // Fixed offsets that overlap while both buffers live: named at the later
  // row's offset field.
  if (const std::optional<FixedOffsetClash> clash = find_fixed_offset_clash(problem, FixedOffsetScope::kPerBank)) {
    const size_t row = std::max(clash->first, clash->second);
    const size_t other = std::min(clash->first, clash->second);
    const Location where{.source = source, .line = line_of_row(text, row)};
    return where.field_error("offset", "fixed offset " + std::to_string(*problem.buffers[row].offset) +
                                           " overlaps buffer " + quoted(problem.buffers[other].id) + " (line " +
                                           std::to_string(line_of_row(text, other)) +
                                           ", also fixed): both hold bytes [" + std::to_string(clash->from) + ", " +
                                           std::to_string(clash->to) + ") at tick " + std::to_string(clash->tick));
  }
  // The row checks above cover every invariant; this catches any drift between
  // them and problem.h rather than handing a planner a bad problem. Fixed
  // offsets are checked per bank: buffers pinned to different banks may share
  // bytes (planning into one arena refuses them in check_problem).
  if (Status s = check_problem(problem, FixedOffsetScope::kPerBank); !s.ok()) {
    return InvalidArgument(std::string(source) + ": " + s.message());
  }
  return problem;
}

StatusOr<Plan> parse_plan_csv(const Problem& problem, std::string_view text, std::string_view source) {
  if (Status s = check_problem(problem); !s.ok()) {
    return InvalidArgument("cannot read a plan for an invalid problem: " + s.message());
  }
  if (problem.size() >= IdTable::kMaxBuffers) return InvalidArgument("more than 4294967294 buffers");
  IdTable index_of_id(problem.buffers);
  index_of_id.reserve(problem.size());
  for (size_t i = 0; i < problem.size(); ++i) {
    if (index_of_id.insert(i) != kNone) {
      return InvalidArgument("cannot match plan rows to the problem by id: buffer id " + quoted(problem.buffers[i].id) +
                             " occurs more than once in the problem");
    }
  }

  LineReader lines(text);
  std::string_view line;
  Location at{.source = source};
  if (!lines.next(&line, &at.line)) {
    at.line = 1;
    return at.error("no header row (the file is empty; expected e.g. \"id,lower,upper,size,offset\")");
  }
  MEMPLAN_ASSIGN_OR_RETURN(const Header header, parse_header(line, at));
  if (header.offset == kNone) {
    return at.error("header lacks column 'offset' (a plan gives every buffer an offset); header is " + quoted(line));
  }

  std::vector<int64_t> offsets(problem.size(), 0);
  std::vector<size_t> line_of(problem.size(), 0);  // 0: no row yet
  std::vector<std::string_view> fields;
  Row row;
  while (lines.next(&line, &at.line)) {
    split_fields(line, &fields);
    MEMPLAN_RETURN_IF_ERROR(parse_row(header, fields, at, &row));
    const size_t i = index_of_id.find(row.id);
    if (i == kNone) return at.field_error(header.id_name, "no buffer with id " + quoted(row.id) + " in the problem");
    const Buffer& b = problem.buffers[i];
    if (line_of[i] != 0) {
      return at.field_error(header.id_name,
                            "duplicate id " + quoted(row.id) + " (first on line " + std::to_string(line_of[i]) + ")");
    }
    line_of[i] = at.line;
    const std::string which = "buffer " + quoted(b.id);
    if (row.lower != b.lower || row.upper != b.upper) {
      return at.field_error(row.lower != b.lower ? header.lower_name : header.upper_name,
                            "lifetime [" + std::to_string(row.lower) + ", " + std::to_string(row.upper) +
                                ") differs from the problem's " + which + " [" + std::to_string(b.lower) + ", " +
                                std::to_string(b.upper) + ")");
    }
    if (row.size != b.size) {
      return at.field_error("size", std::to_string(row.size) + " differs from the problem's " + which + " size " +
                                        std::to_string(b.size));
    }
    if (header.alignment != kNone && row.alignment != problem.alignment_of(i)) {
      return at.field_error("alignment", std::to_string(row.alignment) + " differs from the problem's " + which +
                                             " alignment " + std::to_string(problem.alignment_of(i)));
    }
    if (!row.offset) return at.field_error("offset", "is empty (a plan gives every buffer an offset)");
    offsets[i] = *row.offset;
  }
  for (size_t i = 0; i < problem.size(); ++i) {
    if (line_of[i] == 0) {
      return InvalidArgument(std::string(source) + ": no row for buffer " + quoted(problem.buffers[i].id) + " (#" +
                             std::to_string(i) + "); a plan gives every buffer of the problem an offset");
    }
  }
  return make_plan(problem, std::move(offsets));
}

std::string format_problem_csv(const Problem& problem) { return format_problem_csv(problem, {}); }

std::string format_problem_csv(const Problem& problem, std::span<const std::string> operators) {
  const bool with_alignment = needs_alignment_column(problem);
  const bool with_operator = !operators.empty();
  bool with_offset = false;
  bool with_bank = false, with_priority = false;
  for (const Buffer& b : problem.buffers) {
    with_offset |= b.offset.has_value();
    with_bank |= !b.bank.empty();
    with_priority |= b.priority.has_value();
  }

  std::string out = "id,lower,upper,size";
  if (with_alignment) out += ",alignment";
  if (with_offset) out += ",offset";
  if (with_bank) out += ",bank";
  if (with_priority) out += ",priority";
  if (with_operator) out += ",operator";
  out += '\n';
  out.reserve(out.size() + problem.size() * 40);
  for (size_t i = 0; i < problem.size(); ++i) {
    append_buffer_fields(&out, problem, i, with_alignment);
    if (with_offset) {
      out.push_back(',');
      if (problem.buffers[i].offset) append_int(&out, *problem.buffers[i].offset);
    }
    if (with_bank) {
      out.push_back(',');
      out += problem.buffers[i].bank;
    }
    if (with_priority) {
      out.push_back(',');
      if (problem.buffers[i].priority) append_int(&out, *problem.buffers[i].priority);
    }
    if (with_operator) {
      out.push_back(',');
      // The format has no quoting: a comma or line break would split the row,
      // and surrounding spaces would be trimmed on reading.
      if (i < operators.size()) {
        std::string_view name = operators[i];
        while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
        while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
        for (const char c : name) out.push_back(c == ',' ? ';' : (c == '\n' || c == '\r') ? ' ' : c);
      }
    }
    out.push_back('\n');
  }
  return out;
}

std::string format_plan_csv(const Problem& problem, const Plan& plan) {
  const bool with_alignment = needs_alignment_column(problem);
  std::string out = with_alignment ? "id,lower,upper,size,alignment,offset\n" : "id,lower,upper,size,offset\n";
  out.reserve(out.size() + problem.size() * 48);
  for (size_t i = 0; i < problem.size(); ++i) {
    append_buffer_fields(&out, problem, i, with_alignment);
    out.push_back(',');
    // A plan of the wrong length is a caller bug; leaving the offset empty makes
    // the file fail to read back rather than read back wrong.
    if (i < plan.offsets.size()) append_int(&out, plan.offsets[i]);
    out.push_back('\n');
  }
  return out;
}

StatusOr<Problem> read_problem_csv(const std::string& path) {
  MEMPLAN_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));
  return parse_problem_csv(text, path);
}

StatusOr<Plan> read_plan_csv(const Problem& problem, const std::string& path) {
  MEMPLAN_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));
  return parse_plan_csv(problem, text, path);
}

namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

Status file_error(std::string_view verb, const std::string& path, int err) {
  std::string m = "cannot ";
  m += verb;
  m += " '" + path + "': " + std::strerror(err);
  return err == ENOENT ? NotFound(std::move(m)) : IoError(std::move(m));
}

}  // namespace

StatusOr<std::string> read_text_file(const std::string& path) {
  errno = 0;
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) return file_error("open", path, errno);
  std::string text;
  char chunk[1 << 16];
  while (true) {
    const size_t n = std::fread(chunk, 1, sizeof chunk, f.get());
    text.append(chunk, n);
    if (n < sizeof chunk) break;
  }
  // fopen succeeds on a directory on Linux; the read then fails with EISDIR.
  if (std::ferror(f.get())) return file_error("read", path, errno != 0 ? errno : EIO);
  return text;
}

Status write_text_file(const std::string& path, std::string_view text) {
  errno = 0;
  File f(std::fopen(path.c_str(), "wb"));
  if (!f) return file_error("open for writing", path, errno);
  if (std::fwrite(text.data(), 1, text.size(), f.get()) != text.size()) {
    return file_error("write", path, errno != 0 ? errno : EIO);
  }
  // Buffered bytes reach the disk (and a full disk is noticed) only at close.
  std::FILE* raw = f.release();
  if (std::fclose(raw) != 0) return file_error("write", path, errno != 0 ? errno : EIO);
  return Status::Ok();
}

}  // namespace memplan
