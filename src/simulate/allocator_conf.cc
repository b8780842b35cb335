// allocator_conf.cc — PYTORCH_CUDA_ALLOC_CONF as AllocatorSettings
// (parse_allocator_conf in memplan/allocator_model.h), read the way c10's
// AllocatorConfig::parseArgs reads it: the text is cut into words at ',',
// ':', '[' and ']' (spaces dropped), then read as key ':' value pairs
// separated by ','.
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "memplan/allocator_model.h"

namespace memplan::simulate {
namespace {

constexpr size_t kIntervals = 16;

std::vector<std::string> words_of(std::string_view conf) {
  std::vector<std::string> words;
  std::string word;
  for (const char c : conf) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
      words.emplace_back(1, c);
    } else if (c != ' ') {
      word.push_back(c);
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

class Reader {
 public:
  explicit Reader(std::vector<std::string> words) : words_(std::move(words)) {}
  bool done() const { return i_ >= words_.size(); }
  const std::string& peek() const { return i_ < words_.size() ? words_[i_] : empty_; }
  std::string next() { return i_ < words_.size() ? words_[i_++] : std::string(); }
  Status expect(std::string_view word, std::string_view key) {
    if (next() != word)
      return InvalidArgument("allocator settings: '" + std::string(key) + "' needs '" + std::string(word) + "'");
    return Status::Ok();
  }

 private:
  std::vector<std::string> words_;
  size_t i_ = 0;
  std::string empty_;
};

StatusOr<uint64_t> whole_number(const std::string& word, std::string_view key) {
  uint64_t v = 0;
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (error != std::errc() || end != word.data() + word.size() || word.empty()) {
    return InvalidArgument("allocator settings: '" + std::string(key) + "' needs a whole number, got '" + word + "'");
  }
  return v;
}

StatusOr<double> number(const std::string& word, std::string_view key) {
  try {
    size_t used = 0;
    const double v = std::stod(word, &used);
    if (used == word.size()) return v;
  } catch (const std::exception&) {
  }
  return InvalidArgument("allocator settings: '" + std::string(key) + "' needs a number, got '" + word + "'");
}

StatusOr<bool> truth(const std::string& word, std::string_view key) {
  if (word == "True" || word == "true" || word == "1") return true;
  if (word == "False" || word == "false" || word == "0") return false;
  return InvalidArgument("allocator settings: '" + std::string(key) + "' needs True or False, got '" + word + "'");
}

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// roundup_power2_divisions: N (every interval), or [MiB:N, ..., >:N] where
// MiB starts an interval (a power of two); the first entry also covers the
// intervals below it, '>' every interval after the last one named.
Status read_divisions(Reader& in, AllocatorSettings& out) {
  constexpr std::string_view key = "roundup_power2_divisions";
  if (in.peek() != "[") {
    MEMPLAN_ASSIGN_OR_RETURN(const uint64_t v, whole_number(in.next(), key));
    if (!power_of_two(v)) return InvalidArgument("allocator settings: roundup_power2_divisions must be a power of two");
    out.roundup_power2_divisions.assign(kIntervals, v);
    return Status::Ok();
  }
  in.next();
  std::vector<uint64_t> divisions(kIntervals, 0);
  bool first = true;
  size_t last = 0;
  while (!in.done() && in.peek() != "]") {
    const std::string at = in.next();
    MEMPLAN_RETURN_IF_ERROR(in.expect(":", key));
    MEMPLAN_ASSIGN_OR_RETURN(const uint64_t v, whole_number(in.next(), key));
    if (v != 0 && !power_of_two(v)) {
      return InvalidArgument("allocator settings: roundup_power2_divisions must be powers of two or 0");
    }
    if (at == ">") {
      for (size_t i = last + 1; i < kIntervals; ++i) divisions[i] = v;
    } else {
      MEMPLAN_ASSIGN_OR_RETURN(const uint64_t mib, whole_number(at, key));
      if (!power_of_two(mib)) {
        return InvalidArgument("allocator settings: roundup_power2_divisions intervals must be powers of two, got " +
                               at);
      }
      const size_t index = std::min<size_t>(static_cast<size_t>(63 - __builtin_clzll(mib)), kIntervals - 1);
      if (first) {
        for (size_t i = 0; i < index; ++i) divisions[i] = v;
        first = false;
      }
      divisions[index] = v;
      last = index;
    }
    if (in.peek() == ",") in.next();
  }
  if (in.next() != "]") return InvalidArgument("allocator settings: roundup_power2_divisions misses its ']'");
  out.roundup_power2_divisions = std::move(divisions);
  return Status::Ok();
}

}  // namespace

StatusOr<AllocatorSettings> parse_allocator_conf(std::string_view conf) {
  AllocatorSettings out;
  Reader in(words_of(conf));
  while (!in.done()) {
    const std::string key = in.next();
    MEMPLAN_RETURN_IF_ERROR(in.expect(":", key));
    if (key == "max_split_size_mb") {
      MEMPLAN_ASSIGN_OR_RETURN(const uint64_t v, whole_number(in.next(), key));
      out.max_split_size_mb = static_cast<double>(v);
    } else if (key == "max_non_split_rounding_mb") {
      MEMPLAN_ASSIGN_OR_RETURN(const uint64_t v, whole_number(in.next(), key));
      out.max_non_split_rounding_mb = static_cast<double>(v);
    } else if (key == "garbage_collection_threshold") {
      MEMPLAN_ASSIGN_OR_RETURN(out.garbage_collection_threshold, number(in.next(), key));
      if (out.garbage_collection_threshold <= 0 || out.garbage_collection_threshold >= 1) {
        return InvalidArgument("allocator settings: garbage_collection_threshold must be in (0, 1)");
      }
    } else if (key == "roundup_power2_divisions") {
      MEMPLAN_RETURN_IF_ERROR(read_divisions(in, out));
    } else if (key == "expandable_segments") {
      MEMPLAN_ASSIGN_OR_RETURN(out.expandable_segments, truth(in.next(), key));
    } else if (key == "backend") {
      const std::string backend = in.next();
      if (backend == "cudaMallocAsync") {
        return Unimplemented("allocator settings: backend:cudaMallocAsync is not modelled");
      }
      if (backend != "native") return InvalidArgument("allocator settings: unknown backend '" + backend + "'");
    } else if (key == "release_lock_on_cudamalloc" || key.starts_with("pinned_")) {
      in.next();  // no effect on reserved memory
    } else {
      return InvalidArgument("allocator settings: unknown option '" + key + "'");
    }
    if (!in.done()) MEMPLAN_RETURN_IF_ERROR(in.expect(",", key));
  }
  return out;
}

}  // namespace memplan::simulate
