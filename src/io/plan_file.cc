// plan_file.cc — the plan file's writer and reader (memplan/plan_file.h).
//
// The reader is strict: every line is one record of the grammar, every
// number is checked against the bounds plan_file.h names, counts must match
// the records that follow, and the first error stops it with the line and
// field. It allocates only what the records it has read so far need (a
// count in a header is a bound, never a reservation).
#include "memplan/plan_file.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace memplan {
namespace {

std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

// A command line as the file holds it: on one line, without spaces at
// either end (the writer and the reader both apply it, so that a file reads
// back to what was written).
std::string program_text(std::string_view text) {
  std::string out = one_line(text);
  const size_t first = out.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of(' ') - first + 1);
}

void put_hex(std::string& out, uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
  out.append(buf, r.ptr);
}

template <typename T>
void put_number(std::string& out, T v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// A tick or offset, "-" for -1.
void put_optional(std::string& out, int64_t v) {
  if (v < 0) {
    out += '-';
  } else {
    put_number(out, v);
  }
}

// The lines of the text, split on '\n' (a trailing '\r' is dropped), and
// whitespace-separated fields of one line.
class Lines {
 public:
  Lines(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  bool next() {
    if (pos_ >= text_.size()) return false;
    const size_t end = text_.find('\n', pos_);
    line_ = text_.substr(pos_, end == std::string_view::npos ? std::string_view::npos : end - pos_);
    if (!line_.empty() && line_.back() == '\r') line_.remove_suffix(1);
    pos_ = end == std::string_view::npos ? text_.size() : end + 1;
    ++number_;
    fields_.clear();
    size_t i = 0;
    while (i < line_.size()) {
      while (i < line_.size() && (line_[i] == ' ' || line_[i] == '\t')) ++i;
      const size_t start = i;
      while (i < line_.size() && line_[i] != ' ' && line_[i] != '\t') ++i;
      if (i > start) fields_.push_back(line_.substr(start, i - start));
    }
    return true;
  }
  std::string_view line() const { return line_; }
  const std::vector<std::string_view>& fields() const { return fields_; }
  Status error(std::string_view what) const {
    return InvalidArgument(std::string(source_) + ":" + std::to_string(number_) + ": " + std::string(what));
  }

 private:
  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
  size_t number_ = 0;
  std::string_view line_;
  std::vector<std::string_view> fields_;
};

template <typename T>
bool parse_number(std::string_view s, T& out, int base = 10) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// A non-negative tick or offset, or "-" (-1).
bool parse_optional(std::string_view s, int64_t& out) {
  if (s == "-") {
    out = -1;
    return true;
  }
  return parse_number(s, out) && out >= 0;
}

Status read_request(const Lines& in, bool keyed, size_t index, SavedRequest& r) {
  const std::vector<std::string_view>& f = in.fields();
  if (f.size() != (keyed ? 6u : 4u)) {
    return in.error(std::string("a ") + (keyed ? "keyed" : "sequence") + " request has " + (keyed ? "6" : "4") +
                    " fields, this line has " + std::to_string(f.size()));
  }
  if (!parse_number(f[0], r.size) || r.size > kMaxSavedSize) return in.error("size: not a byte count below 2^48");
  if (!parse_number(f[1], r.alignment) || r.alignment == 0 || (r.alignment & (r.alignment - 1)) != 0 ||
      r.alignment > kMaxSavedAlignment) {
    return in.error("alignment: not a power of two up to 2 MiB");
  }
  size_t next = 2;
  if (keyed) {
    if (!parse_number(f[next++], r.lower) || r.lower < 0 || r.lower > static_cast<int64_t>(kMaxSavedRequests)) {
      return in.error("lower: not a tick");
    }
  } else {
    r.lower = static_cast<int64_t>(index);
  }
  if (!parse_optional(f[next++], r.upper) || r.upper > static_cast<int64_t>(kMaxSavedRequests)) {
    return in.error("upper: not a tick or -");
  }
  if (r.upper != -1 && r.upper <= r.lower) return in.error("upper: not after the request's first tick");
  if (!parse_optional(f[next++], r.offset) || r.offset > static_cast<int64_t>(kMaxSavedSize)) {
    return in.error("offset: not a byte offset below 2^48 or -");
  }
  if (keyed && !parse_number(f[next], r.key, 16)) return in.error("key: not a hexadecimal number");
  return Status::Ok();
}

Status read_variant(Lines& in, int version, SavedVariant& v) {
  const std::vector<std::string_view>& f = in.fields();
  size_t requests = 0;
  const size_t fields = version == 1 ? 4 : 5;
  const char* expected = version == 1 ? "expected: variant <key, hex> <requests> <sequence|keyed>"
                                      : "expected: variant <key, hex> <requests> <sequence|keyed> <after, hex|->";
  if (f.size() != fields || !parse_number(f[1], v.key, 16)) return in.error(expected);
  if (!parse_number(f[2], requests) || requests > kMaxSavedRequests)
    return in.error("requests: not a count up to 2^24");
  if (f[3] != "sequence" && f[3] != "keyed") return in.error("identity: expected sequence or keyed");
  if (fields == 5 && f[4] != "-" && (!parse_number(f[4], v.after, 16) || v.after == 0)) {
    return in.error("after: not a nonzero hexadecimal key or -");
  }
  v.keyed = f[3] == "keyed";
  for (size_t i = 0; i < requests; ++i) {
    if (!in.next())
      return in.error("the file ends inside a variant (" + std::to_string(requests) + " requests expected)");
    SavedRequest r;
    MEMPLAN_RETURN_IF_ERROR(read_request(in, v.keyed, i, r));
    v.requests.push_back(r);
  }
  return Status::Ok();
}

// The course line that ends a unit (version 3).
Status read_course(Lines& in, SavedUnit& unit) {
  const char* expected = "expected: course <count> <key, hex>... (after unit ";
  if (!in.next() || in.fields().size() < 2 || in.fields()[0] != "course") {
    return in.error(expected + unit.name + "'s variants)");
  }
  const std::vector<std::string_view>& f = in.fields();
  size_t steps = 0;
  if (!parse_number(f[1], steps) || steps > kMaxSavedCourse) {
    return in.error("course: not a count up to " + std::to_string(kMaxSavedCourse));
  }
  if (f.size() != steps + 2) {
    return in.error("course: " + std::to_string(steps) + " keys announced, " + std::to_string(f.size() - 2) +
                    " on the line");
  }
  for (size_t i = 0; i < steps; ++i) {
    uint64_t key = 0;
    if (!parse_number(f[i + 2], key, 16) || key == 0) {
      return in.error("course: key " + std::to_string(i + 1) + " is not a nonzero hexadecimal key");
    }
    unit.course.push_back(key);
  }
  return Status::Ok();
}

Status read_header(Lines& in, PlanFile& file, int& version) {
  if (!in.next() || in.fields().size() != 2 || in.fields()[0] != "memplan-plans") {
    return in.error("not a memplan plan file (expected: memplan-plans " + std::to_string(kPlanFileVersion) + ")");
  }
  if (!parse_number(in.fields()[1], version) || version < 1 || version > kPlanFileVersion) {
    return in.error("version " + std::string(in.fields()[1]) + ": this memplan reads versions 1 to " +
                    std::to_string(kPlanFileVersion));
  }
  if (!in.next() || in.fields().size() != 2 || in.fields()[0] != "adapter") return in.error("expected: adapter <name>");
  file.adapter = std::string(in.fields()[1]);
  if (file.adapter != "drop-in" && file.adapter != "device" && file.adapter != "libtorch") {
    return in.error("adapter: expected drop-in, device or libtorch");
  }
  if (!in.next() || in.fields().empty() || in.fields()[0] != "program")
    return in.error("expected: program <command line|->");
  const std::string program = program_text(in.line().substr(in.line().find("program") + 7));
  file.program = program == "-" ? "" : program;
  return Status::Ok();
}

}  // namespace

std::string write_plan_file(const PlanFile& file) {
  std::string out = "memplan-plans ";
  put_number(out, kPlanFileVersion);
  out += "\nadapter ";
  out += one_line(file.adapter);
  out += "\nprogram ";
  const std::string program = program_text(file.program);
  out += program.empty() ? std::string("-") : program;
  out += '\n';
  for (const SavedUnit& u : file.units) {
    std::string name = one_line(u.name);
    for (char& c : name) {
      if (c == ' ') c = '_';
    }
    out += "unit ";
    out += name.empty() ? std::string("_") : name;
    out += ' ';
    put_number(out, u.variants.size());
    out += '\n';
    for (const SavedVariant& v : u.variants) {
      out += "variant ";
      put_hex(out, v.key);
      out += ' ';
      put_number(out, v.requests.size());
      out += v.keyed ? " keyed " : " sequence ";
      if (v.after == 0) {
        out += '-';
      } else {
        put_hex(out, v.after);
      }
      out += '\n';
      for (const SavedRequest& r : v.requests) {
        put_number(out, r.size);
        out += ' ';
        put_number(out, r.alignment);
        out += ' ';
        if (v.keyed) {
          put_number(out, r.lower);
          out += ' ';
        }
        put_optional(out, r.upper);
        out += ' ';
        put_optional(out, r.offset);
        if (v.keyed) {
          out += ' ';
          put_hex(out, r.key);
        }
        out += '\n';
      }
    }
    out += "course ";
    const size_t steps = std::min(u.course.size(), kMaxSavedCourse);
    put_number(out, steps);
    for (size_t i = 0; i < steps; ++i) {
      out += ' ';
      put_hex(out, u.course[i]);
    }
    out += '\n';
  }
  out += "end\n";
  return out;
}

StatusOr<PlanFile> read_plan_file(std::string_view text, std::string_view source) {
  Lines in(text, source);
  PlanFile file;
  int version = 0;
  MEMPLAN_RETURN_IF_ERROR(read_header(in, file, version));
  while (true) {
    if (!in.next()) return in.error("the file ends without its end line (cut short?)");
    const std::vector<std::string_view>& f = in.fields();
    if (f.size() == 1 && f[0] == "end") break;
    size_t variants = 0;
    if (f.size() != 3 || f[0] != "unit" || !parse_number(f[2], variants)) {
      return in.error("expected: unit <name> <variants> or end");
    }
    if (variants > kMaxSavedVariants) return in.error("variants: more than " + std::to_string(kMaxSavedVariants));
    if (file.units.size() >= kMaxSavedUnits) return in.error("more than " + std::to_string(kMaxSavedUnits) + " units");
    for (const char c : f[1]) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return in.error("unit name: a control character");
    }
    for (const SavedUnit& u : file.units) {
      if (u.name == f[1]) return in.error("unit " + std::string(f[1]) + " appears twice");
    }
    SavedUnit unit;
    unit.name = std::string(f[1]);
    for (size_t k = 0; k < variants; ++k) {
      if (!in.next()) return in.error("the file ends inside unit " + unit.name);
      if (in.fields().empty() || in.fields()[0] != "variant") {
        return in.error("expected: variant <key, hex> <requests> <sequence|keyed> <after, hex|->");
      }
      SavedVariant v;
      MEMPLAN_RETURN_IF_ERROR(read_variant(in, version, v));
      for (const SavedVariant& seen : unit.variants) {
        if (seen.key == v.key) return in.error("a variant's key appears twice in unit " + unit.name);
      }
      unit.variants.push_back(std::move(v));
    }
    if (version >= 3) MEMPLAN_RETURN_IF_ERROR(read_course(in, unit));
    file.units.push_back(std::move(unit));
  }
  while (in.next()) {
    if (!in.fields().empty()) return in.error("text after the end line");
  }
  return file;
}

Status save_plan_file(const PlanFile& file, const std::string& path) {
  // Written beside the target and renamed over it: a reader never sees half a file.
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return IoError(temporary + ": cannot open for writing");
    const std::string text = write_plan_file(file);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) return IoError(temporary + ": write failed");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return IoError(path + ": cannot replace it with the new plans");
  }
  return Status::Ok();
}

StatusOr<PlanFile> load_plan_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return IoError(path + ": read failed");
  return read_plan_file(text.str(), path);
}

std::string plan_file_summary(const PlanFile& file) {
  size_t units = 0, variants = 0;
  for (const SavedUnit& u : file.units) {
    if (u.variants.empty()) continue;
    ++units;
    variants += u.variants.size();
  }
  return std::to_string(units) + (units == 1 ? " unit, " : " units, ") + std::to_string(variants) +
         (variants == 1 ? " variant" : " variants");
}

std::string plan_file_mismatch(const PlanFile& file, std::string_view adapter, std::string_view program) {
  if (file.adapter != adapter)
    return "its plans are the " + file.adapter + " allocator's, not the " + std::string(adapter) + "'s";
  if (!file.program.empty() && program_text(file.program) != program_text(program)) {
    return "its plans were learnt by `" + file.program + "`, not by this program (`" + program_text(program) + "`)";
  }
  return "";
}

}  // namespace memplan
