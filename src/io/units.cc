// units.cc — parsing and printing byte quantities and durations (see units.h).
#include "memplan/units.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

namespace memplan {
namespace {

struct Suffix {
  std::string_view name;  // lower case
  int64_t multiplier;
};

constexpr int64_t kKi = int64_t{1} << 10;
constexpr std::array<Suffix, 14> kSuffixes = {{
    {"", 1},
    {"b", 1},
    {"k", kKi},
    {"kib", kKi},
    {"m", kKi* kKi},
    {"mib", kKi* kKi},
    {"g", kKi* kKi* kKi},
    {"gib", kKi* kKi* kKi},
    {"t", kKi* kKi* kKi* kKi},
    {"tib", kKi* kKi* kKi* kKi},
    {"kb", 1000},
    {"mb", 1000 * 1000},
    {"gb", int64_t{1000} * 1000 * 1000},
    {"tb", int64_t{1000} * 1000 * 1000 * 1000},
}};

Status bad(std::string_view text, std::string_view why) {
  std::string message = "\"";
  message.append(text);
  message += "\" is not a byte size: ";
  message.append(why);
  message += " (examples: 4096, 64K, 1.5MiB, 2GB)";
  return InvalidArgument(std::move(message));
}

}  // namespace

StatusOr<int64_t> parse_bytes(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) return bad(text, "empty");

  // The number is kept exact as integer / 10^decimals (at most 18 digits after
  // the point, so 10^decimals fits in int64_t).
  size_t pos = 0;
  unsigned __int128 integer = 0;
  unsigned __int128 fraction = 0;
  int decimals = 0;
  bool any_digit = false;
  for (; pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])); ++pos) {
    integer = integer * 10 + static_cast<unsigned>(s[pos] - '0');
    any_digit = true;
    if (integer > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max())) return bad(text, "too large");
  }
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    for (; pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])); ++pos) {
      if (decimals == 18) return bad(text, "too many decimals");
      fraction = fraction * 10 + static_cast<unsigned>(s[pos] - '0');
      ++decimals;
      any_digit = true;
    }
  }
  if (!any_digit) return bad(text, "no number");
  if (pos < s.size() && s[pos] == ' ') ++pos;

  std::string suffix;
  for (; pos < s.size(); ++pos) suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(s[pos])));
  int64_t multiplier = 0;
  for (const Suffix& candidate : kSuffixes) {
    if (candidate.name == suffix) multiplier = candidate.multiplier;
  }
  if (multiplier == 0) return bad(text, "unknown unit '" + suffix + "'");

  unsigned __int128 scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  const unsigned __int128 fractional_bytes = fraction * static_cast<unsigned __int128>(multiplier);
  if (fractional_bytes % scale != 0) return bad(text, "not a whole number of bytes");
  const unsigned __int128 total = integer * static_cast<unsigned __int128>(multiplier) + fractional_bytes / scale;
  if (total > static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max())) return bad(text, "too large");
  return static_cast<int64_t>(total);
}

namespace {

constexpr std::array<std::string_view, 7> kBinaryUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

// Picks the largest binary unit that keeps the magnitude >= 1.
int unit_index(uint64_t magnitude) {
  int unit = 0;
  while (unit + 1 < static_cast<int>(kBinaryUnits.size()) && magnitude >= (uint64_t{1} << (10 * (unit + 1)))) ++unit;
  return unit;
}

uint64_t magnitude_of(int64_t bytes) {
  // Negating INT64_MIN overflows; go through unsigned arithmetic.
  return bytes < 0 ? uint64_t{0} - static_cast<uint64_t>(bytes) : static_cast<uint64_t>(bytes);
}

}  // namespace

std::string format_bytes(int64_t bytes) {
  const uint64_t magnitude = magnitude_of(bytes);
  const int unit = unit_index(magnitude);
  const char* sign = bytes < 0 ? "-" : "";
  char out[48];
  if (unit == 0) {
    std::snprintf(out, sizeof out, "%s%llu B", sign, static_cast<unsigned long long>(magnitude));
  } else {
    const double value = static_cast<double>(magnitude) / static_cast<double>(uint64_t{1} << (10 * unit));
    std::snprintf(out, sizeof out, "%s%.2f %s", sign, value, kBinaryUnits[unit].data());
  }
  return out;
}

std::string format_bytes_short(int64_t bytes) {
  if (bytes == 0) return "0";
  const uint64_t magnitude = magnitude_of(bytes);
  const int unit = unit_index(magnitude);
  const char* sign = bytes < 0 ? "-" : "";
  const double value = static_cast<double>(magnitude) / static_cast<double>(uint64_t{1} << (10 * unit));
  char number[40];
  std::snprintf(number, sizeof number, "%.1f", value);
  std::string_view digits = number;
  if (digits.size() > 2 && digits.substr(digits.size() - 2) == ".0") digits.remove_suffix(2);
  std::string text = sign;
  text.append(digits);
  text += ' ';
  text.append(kBinaryUnits[unit]);
  return text;
}

std::string format_milliseconds(double seconds) {
  const double ms = seconds * 1e3;
  char out[48];
  if (std::fabs(ms) < 1) {
    std::snprintf(out, sizeof out, "%.3f ms", ms);
  } else if (std::fabs(ms) < 1000) {
    std::snprintf(out, sizeof out, "%.2f ms", ms);
  } else {
    std::snprintf(out, sizeof out, "%.1f ms", ms);
  }
  return out;
}

}  // namespace memplan
