// units.h — byte quantities and durations as people read and write them.
//
// Used at the edges only (the CLI's flags, its reports, the heap map's axes);
// inside the library every quantity is a plain int64_t of bytes.
//
// Parsing accepts an integer or decimal number with an optional suffix, case
// and one space ignored:
//     B                    bytes
//     K  KiB  M  MiB  G  GiB  T  TiB     binary: 2^10, 2^20, 2^30, 2^40
//     KB  MB  GB  TB       decimal: 10^3, 10^6, 10^9, 10^12 (as disks and dd use them)
// The result must be a whole number of bytes ("1.5K" = 1536 is fine, "1.3K" is
// not) and fit in int64_t; anything else is an error naming the text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "memplan/status.h"

namespace memplan {

StatusOr<int64_t> parse_bytes(std::string_view text);

// Binary units with two decimals: "512 B", "1.00 KiB", "641.00 KiB", "1.50 MiB".
// Below 1 KiB the exact byte count. Negative values keep their sign.
std::string format_bytes(int64_t bytes);

// The shortest exact-looking form, for axis labels: "0", "384 KiB", "1.5 MiB",
// "12 B". Up to one decimal; trailing ".0" dropped.
std::string format_bytes_short(int64_t bytes);

// A wall-clock duration given in seconds, in milliseconds: "0.042 ms", "12.35 ms",
// "2345.6 ms" (three significant decimals below 1 ms, two below 1 s, one above).
std::string format_milliseconds(double seconds);

}  // namespace memplan
