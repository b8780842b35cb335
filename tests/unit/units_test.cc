// units_test.cc — byte sizes and durations as people write and read them.
#include <gtest/gtest.h>

#include "memplan/units.h"

namespace memplan {
namespace {

int64_t bytes(std::string_view text) {
  auto parsed = parse_bytes(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status().to_string();
  return parsed.ok() ? *parsed : -1;
}

TEST(ParseBytes, AcceptsPlainIntegers) {
  EXPECT_EQ(bytes("0"), 0);
  EXPECT_EQ(bytes("4096"), 4096);
  EXPECT_EQ(bytes(" 12 "), 12);
  EXPECT_EQ(bytes("9223372036854775807"), INT64_MAX);
}

TEST(ParseBytes, BinarySuffixesArePowersOfTwo) {
  EXPECT_EQ(bytes("1K"), 1024);
  EXPECT_EQ(bytes("1KiB"), 1024);
  EXPECT_EQ(bytes("64k"), 65536);
  EXPECT_EQ(bytes("1M"), 1 << 20);
  EXPECT_EQ(bytes("1 MiB"), 1 << 20);
  EXPECT_EQ(bytes("2G"), int64_t{2} << 30);
  EXPECT_EQ(bytes("3GiB"), int64_t{3} << 30);
  EXPECT_EQ(bytes("1TiB"), int64_t{1} << 40);
  EXPECT_EQ(bytes("512B"), 512);
}

TEST(ParseBytes, TwoLetterSuffixesAreDecimal) {
  EXPECT_EQ(bytes("1KB"), 1000);
  EXPECT_EQ(bytes("5MB"), 5000000);
  EXPECT_EQ(bytes("2gb"), 2000000000);
}

TEST(ParseBytes, AcceptsFractionsThatAreWholeBytes) {
  EXPECT_EQ(bytes("1.5K"), 1536);
  EXPECT_EQ(bytes("0.25MiB"), 1 << 18);
  EXPECT_EQ(bytes("2.0"), 2);
}

TEST(ParseBytes, RejectsMalformedOrInexactSizes) {
  for (std::string_view text :
       {"", "K", "-1", "1.3K", "0.5", "12x", "1 2", "1KiBB", "1e6", "99999999999999999999", "9007199254740992T"}) {
    auto parsed = parse_bytes(text);
    EXPECT_FALSE(parsed.ok()) << "accepted \"" << text << "\"";
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(parsed.status().message().find(std::string(text)), std::string::npos);
    }
  }
}

TEST(FormatBytes, UsesBinaryUnitsWithTwoDecimals) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(656384), "641.00 KiB");
  EXPECT_EQ(format_bytes(1 << 20), "1.00 MiB");
  EXPECT_EQ(format_bytes(3 << 29), "1.50 GiB");
  EXPECT_EQ(format_bytes(-2048), "-2.00 KiB");
  EXPECT_EQ(format_bytes(INT64_MIN), "-8.00 EiB");
}

TEST(FormatBytesShort, DropsTrailingZeroDecimal) {
  EXPECT_EQ(format_bytes_short(0), "0");
  EXPECT_EQ(format_bytes_short(12), "12 B");
  EXPECT_EQ(format_bytes_short(384 << 10), "384 KiB");
  EXPECT_EQ(format_bytes_short(3 << 19), "1.5 MiB");
}

TEST(FormatMilliseconds, KeepsThreeSignificantPlacesForShortTimes) {
  EXPECT_EQ(format_milliseconds(0.000042), "0.042 ms");
  EXPECT_EQ(format_milliseconds(0.012345), "12.35 ms");
  EXPECT_EQ(format_milliseconds(2.3456), "2345.6 ms");
}

}  // namespace
}  // namespace memplan
