// csv_test.cc — the problem/plan CSV reader and writer: every error kind names
// the source, the line and the field; lenient spellings read the same problem;
// writing and reading back is the identity; the shared benchmark files read.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/plan.h"
#include "memplan/problem.h"
#include "memplan/validate.h"

namespace memplan {
namespace {

// Parses `text` as "t.csv" and returns the error message (empty if it parsed).
std::string problem_error(std::string_view text) {
  auto problem = parse_problem_csv(text, "t.csv");
  if (problem.ok()) return "";
  EXPECT_EQ(problem.status().code(), StatusCode::kInvalidArgument);
  return problem.status().message();
}

// Asserts that `text` fails to read, with a message that names t.csv:<line>
// and the field, and contains `detail`.
void expect_problem_error(std::string_view text, int line, std::string_view field, std::string_view detail = "") {
  const std::string message = problem_error(text);
  ASSERT_FALSE(message.empty()) << "expected an error for:\n" << text;
  const std::string where = "t.csv:" + std::to_string(line) + ":";
  EXPECT_EQ(message.rfind(where, 0), 0u) << message;
  if (!field.empty()) EXPECT_NE(message.find("'" + std::string(field) + "'"), std::string::npos) << message;
  if (!detail.empty()) EXPECT_NE(message.find(detail), std::string::npos) << message;
}

Problem parse_ok(std::string_view text) {
  auto problem = parse_problem_csv(text, "t.csv");
  EXPECT_TRUE(problem.ok()) << problem.status().to_string();
  return problem.ok() ? *problem : Problem{};
}

void expect_same_buffers(const Problem& a, const Problem& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("buffer #" + std::to_string(i));
    EXPECT_EQ(a.buffers[i].id, b.buffers[i].id);
    EXPECT_EQ(a.buffers[i].lower, b.buffers[i].lower);
    EXPECT_EQ(a.buffers[i].upper, b.buffers[i].upper);
    EXPECT_EQ(a.buffers[i].size, b.buffers[i].size);
    EXPECT_EQ(a.alignment_of(i), b.alignment_of(i));
    EXPECT_EQ(a.buffers[i].offset, b.buffers[i].offset);
  }
}

// ---- accepted forms ---------------------------------------------------------

// Found by the CSV fuzzer: the overlap was reported without a line.
TEST(CsvRead, RejectsFixedOffsetsThatOverlapAtTheLaterRow) {
  expect_problem_error(
      "id,lower,upper,size,alignment,offset\nx,0,10,64,1,0\ny,5,10,32,1,63\n", 3, "offset",
      "fixed offset 63 overlaps buffer \"x\" (line 2, also fixed): both hold bytes [63, 64) at tick 5");
}

TEST(CsvRead, ReadsHalfOpenLifetimes) {
  const Problem p = parse_ok("id,lower,upper,size\nx,0,3,4\ny,3,9,8\n");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.buffers[0].id, "x");
  EXPECT_EQ(p.buffers[0].lower, 0);
  EXPECT_EQ(p.buffers[0].upper, 3);
  EXPECT_EQ(p.buffers[0].size, 4);
  EXPECT_EQ(p.buffers[0].alignment, 1);
  EXPECT_FALSE(p.buffers[0].offset.has_value());
  // [0,3) and [3,9) touch but do not overlap.
  EXPECT_FALSE(p.buffers[0].overlaps_in_time(p.buffers[1]));
}

TEST(CsvRead, InclusiveEndColumnBecomesHalfOpenUpper) {
  const Problem p = parse_ok("buffer,start,end,size\nx,0,3,4\ny,3,9,8\n");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.buffers[0].upper, 4);
  EXPECT_EQ(p.buffers[1].upper, 10);
  // Inclusive [0,3] and [3,9] share tick 3.
  EXPECT_TRUE(p.buffers[0].overlaps_in_time(p.buffers[1]));
}

TEST(CsvRead, InclusiveEndEqualToStartIsOneTickLong) {
  const Problem p = parse_ok("buffer_id,begin,end,size\nx,5,5,1\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p.buffers[0].lower, 5);
  EXPECT_EQ(p.buffers[0].upper, 6);
}

TEST(CsvRead, AcceptsColumnsInAnyOrderAndIgnoresUnknownOnes) {
  const Problem p = parse_ok("size,hint,upper,gaps,id,lower\n16,3,10,2-4 6-7,a,1\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p.buffers[0].id, "a");
  EXPECT_EQ(p.buffers[0].lower, 1);
  EXPECT_EQ(p.buffers[0].upper, 10);
  EXPECT_EQ(p.buffers[0].size, 16);
}

TEST(CsvRead, ForgivesCrlfSpacesBlankLinesAndMissingFinalNewline) {
  const Problem strict = parse_ok("id,lower,upper,size\na,0,2,8\nb,1,3,4\n");
  expect_same_buffers(strict, parse_ok("\xEF\xBB\xBFid, lower ,upper,\tsize\r\n a ,0, 2 ,8\r\n\r\nb,1,3,4"));
  expect_same_buffers(strict, parse_ok("id,lower,upper,size\na,0,2,8\nb,1,3,4\n\n  \n\r\n"));
}

// Carriage returns at a field's ends are blank, like spaces: a bank name
// read as "s#\r\r" would be written back as it is and read with one fewer.
TEST(CsvRead, CarriageReturnsAroundAFieldAreNotPartOfIt) {
  const Problem p = parse_ok("id,lower,upper,size,bank\na\r,0,2,8,s#\r\r\r");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p.buffers[0].id, "a");
  EXPECT_EQ(p.buffers[0].bank, "s#");
  const Problem back = parse_ok(format_problem_csv(p));
  EXPECT_EQ(back.buffers[0].id, "a");
  EXPECT_EQ(back.buffers[0].bank, "s#");
}

TEST(CsvRead, HeaderWithoutRowsIsAnEmptyProblem) {
  EXPECT_EQ(parse_ok("id,lower,upper,size\n").size(), 0u);
  EXPECT_EQ(parse_ok("id,lower,upper,size").size(), 0u);
}

TEST(CsvRead, ReadsAlignmentAndFixedOffsets) {
  const Problem p = parse_ok("id,lower,upper,size,alignment,offset\na,0,2,8,16,32\nb,0,2,8,4,\n");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.buffers[0].alignment, 16);
  EXPECT_EQ(p.buffers[0].offset, 32);
  EXPECT_EQ(p.buffers[1].alignment, 4);
  EXPECT_FALSE(p.buffers[1].offset.has_value()) << "an empty offset field means not fixed";
}

TEST(CsvRead, AcceptsExtremeButValidValues) {
  const Problem p = parse_ok("id,lower,upper,size\na,-9223372036854775808,9223372036854775807,0\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p.buffers[0].lower, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(p.buffers[0].upper, std::numeric_limits<int64_t>::max());
}

// ---- one test per error kind -------------------------------------------------

TEST(CsvReadErrors, RejectsEmptyFile) {
  expect_problem_error("", 1, "", "no header");
  expect_problem_error("\n \r\n\n", 1, "", "no header");
}

TEST(CsvReadErrors, RejectsHeaderWithoutRequiredColumn) {
  expect_problem_error("id,lower,upper\na,0,1\n", 1, "size", "lacks column");
  expect_problem_error("name,lower,upper,size\na,0,1,1\n", 1, "id", "lacks column");
  expect_problem_error("id,from,upper,size\na,0,1,1\n", 1, "lower", "lacks column");
  expect_problem_error("id,lower,until,size\na,0,1,1\n", 1, "upper", "lacks column");
}

TEST(CsvReadErrors, HintsAtOldMacLineEndings) {
  expect_problem_error("id,lower,upper,size\ra,0,1,1\r", 1, "size", "\\r\\n");
}

TEST(CsvReadErrors, RejectsColumnGivenTwice) {
  expect_problem_error("id,lower,upper,size,start\na,0,1,1,0\n", 1, "start", "twice");
  expect_problem_error("id,lower,upper,end,size\na,0,1,1,1\n", 1, "end", "twice");
  expect_problem_error("id,lower,upper,size,size\na,0,1,1,1\n", 1, "size", "twice");
}

TEST(CsvReadErrors, RejectsRowWithWrongNumberOfFields) {
  expect_problem_error("id,lower,upper,size\na,0,1,1\nb,0,1\n", 3, "", "expected 4 fields");
  expect_problem_error("id,lower,upper,size\na,0,1,1,\n", 2, "", "found 5");
}

TEST(CsvReadErrors, RejectsFieldThatIsNotAnInteger) {
  expect_problem_error("id,lower,upper,size\na,0,1,12x\n", 2, "size", "\"12x\" is not an integer");
  expect_problem_error("id,lower,upper,size\na,0,1,1.5\n", 2, "size", "not an integer");
  expect_problem_error("id,lower,upper,size\na,0,1,+3\n", 2, "size", "not an integer");
  expect_problem_error("id,lower,upper,size\na,0,1,0x10\n", 2, "size", "not an integer");
  expect_problem_error("id,lower,upper,size\na,0,1,1 2\n", 2, "size", "not an integer");
  expect_problem_error("id,lower,upper,size\na,zero,1,1\n", 2, "lower", "not an integer");
  expect_problem_error("buffer,start,end,size\na,0,-,1\n", 2, "end", "not an integer");
}

TEST(CsvReadErrors, RejectsEmptyIntegerField) {
  expect_problem_error("id,lower,upper,size\na,0,1,\n", 2, "size", "empty");
  expect_problem_error("id,lower,upper,size\na, ,1,4\n", 2, "lower", "empty");
}

TEST(CsvReadErrors, RejectsEmptyId) {
  expect_problem_error("id,lower,upper,size\n ,0,1,1\n", 2, "id", "empty");
  expect_problem_error("buffer,start,end,size\n,0,1,1\n", 2, "buffer", "empty");
}

TEST(CsvReadErrors, RejectsValueBeyond64Bits) {
  expect_problem_error("id,lower,upper,size\na,0,1,9223372036854775808\n", 2, "size", "64-bit");
  expect_problem_error("id,lower,upper,size\na,-9223372036854775809,1,1\n", 2, "lower", "64-bit");
  expect_problem_error("id,lower,upper,size\na,0,99999999999999999999999999,1\n", 2, "upper", "64-bit");
}

TEST(CsvReadErrors, RejectsInclusiveEndThatOverflowsWhenMadeExclusive) {
  expect_problem_error("buffer,start,end,size\na,0,9223372036854775807,1\n", 2, "end", "end + 1");
}

TEST(CsvReadErrors, RejectsNegativeSize) {
  expect_problem_error("id,lower,upper,size\na,0,1,-1\n", 2, "size", "negative");
}

TEST(CsvReadErrors, RejectsEmptyLifetime) {
  expect_problem_error("id,lower,upper,size\na,0,1,1\nb,3,3,1\n", 3, "upper", "not greater than lower 3");
  expect_problem_error("id,lower,upper,size\nb,5,2,1\n", 2, "upper", "not greater");
  expect_problem_error("buffer,start,end,size\nb,5,4,1\n", 2, "end", "before start 5");
}

TEST(CsvReadErrors, RejectsDuplicateId) {
  expect_problem_error("id,lower,upper,size\na,0,1,1\nb,0,1,1\n\na,2,3,1\n", 5, "id", "first on line 2");
}

TEST(CsvReadErrors, RejectsAlignmentThatIsNotAPowerOfTwo) {
  expect_problem_error("id,lower,upper,size,alignment\na,0,1,1,3\n", 2, "alignment", "power of two");
  expect_problem_error("id,lower,upper,size,alignment\na,0,1,1,0\n", 2, "alignment", "power of two");
  expect_problem_error("id,lower,upper,size,alignment\na,0,1,1,-4\n", 2, "alignment", "power of two");
  expect_problem_error("id,lower,upper,size,alignment\na,0,1,1,\n", 2, "alignment", "empty");
}

TEST(CsvReadErrors, RejectsNegativeOffset) {
  expect_problem_error("id,lower,upper,size,offset\na,0,1,1,-8\n", 2, "offset", "negative");
}

TEST(CsvReadErrors, RejectsMisalignedFixedOffset) {
  expect_problem_error("id,lower,upper,size,alignment,offset\na,0,1,1,8,12\n", 2, "offset", "multiple of");
}

TEST(CsvReadErrors, RejectsFixedOffsetEndingBeyond2To62) {
  expect_problem_error("id,lower,upper,size,offset\na,0,1,2,4611686018427387903\n", 2, "offset", "2^62");
}

TEST(CsvReadErrors, RejectsTotalSizeBeyond2To62) {
  // Two buffers of 2^61 bytes each reach 2^62 together.
  expect_problem_error("id,lower,upper,size\na,0,1,2305843009213693952\nb,5,6,2305843009213693952\n", 3, "size",
                       "total size");
}

TEST(CsvReadErrors, LineNumbersCountBlankLinesAndCrlf) {
  expect_problem_error("id,lower,upper,size\r\n\r\na,0,1,1\r\n\r\n\r\nb,0,1,x\r\n", 6, "size", "\"x\"");
}

TEST(CsvReadErrors, QuotesFieldsSafelyAndBriefly) {
  const std::string junk = "1" + std::string(1000, '\x01');
  const std::string message = problem_error("id,lower,upper,size\na,0,1," + junk + "\n");
  EXPECT_NE(message.find("\\x01"), std::string::npos) << message;
  EXPECT_LT(message.size(), 300u) << "a long field must not be echoed in full";
}

TEST(CsvReadErrors, UsesTheFilesOwnColumnNames) {
  expect_problem_error("buffer_id,begin,end,size\na,0,1,1\na,1,2,1\n", 3, "buffer_id", "duplicate");
}

// ---- writing and round trips --------------------------------------------------

TEST(CsvWrite, WritesTheMinimalHeader) {
  const Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8}}};
  EXPECT_EQ(format_problem_csv(p), "id,lower,upper,size\na,0,2,8\n");
}

TEST(CsvWrite, AddsAlignmentAndOffsetColumnsOnlyWhenNeeded) {
  const Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8, .alignment = 16},
                              {.id = "b", .lower = 1, .upper = 3, .size = 4, .offset = 64}}};
  EXPECT_EQ(format_problem_csv(p), "id,lower,upper,size,alignment,offset\na,0,2,8,16,\nb,1,3,4,1,64\n");
}

TEST(CsvWrite, FoldsTheProblemDefaultAlignmentIntoEachBuffer) {
  const Problem p{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8},
                              {.id = "b", .lower = 0, .upper = 2, .size = 8, .alignment = 64}},
                  .alignment = 32};
  const Problem back = parse_ok(format_problem_csv(p));
  EXPECT_EQ(back.buffers[0].alignment, 32);
  EXPECT_EQ(back.buffers[1].alignment, 64);
  expect_same_buffers(p, back);
}

TEST(CsvRoundTrip, ReadingWhatWasWrittenGivesTheSameProblem) {
  // A deterministic spread of shapes: extreme ticks, zero sizes, alignments,
  // some fixed offsets, ids with spaces inside and punctuation.
  Problem p;
  uint64_t state = 12345;
  const auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (int i = 0; i < 500; ++i) {
    Buffer b;
    b.id = "buf " + std::to_string(i) + (i % 7 == 0 ? "/x.y" : "");
    b.lower = static_cast<int64_t>(next() % 1000) - 500;
    b.upper = b.lower + 1 + static_cast<int64_t>(next() % 100);
    if (i == 0) {
      b.lower = std::numeric_limits<int64_t>::min();
      b.upper = std::numeric_limits<int64_t>::max();
    }
    b.size = static_cast<int64_t>(next() % 5000);
    b.alignment = int64_t{1} << (next() % 8);
    // Fixed buffers get disjoint 8 KiB slots (sizes are below 5000): fixed
    // offsets that overlap while live are rejected by check_problem.
    if (i % 5 == 0) b.offset = int64_t{8192} * (i / 5) + static_cast<int64_t>(next() % 16) * b.alignment;
    p.buffers.push_back(b);
  }
  ASSERT_TRUE(check_problem(p).ok());
  const std::string text = format_problem_csv(p);
  const Problem back = parse_ok(text);
  expect_same_buffers(p, back);
  EXPECT_EQ(format_problem_csv(back), text);
}

TEST(CsvRoundTrip, InclusiveFilesReadTheSameAfterRewriting) {
  const Problem inclusive = parse_ok("buffer,start,end,size\na,0,0,4\nb,0,7,2\n");
  const std::string text = format_problem_csv(inclusive);
  EXPECT_EQ(text, "id,lower,upper,size\na,0,1,4\nb,0,8,2\n");
  expect_same_buffers(inclusive, parse_ok(text));
}

// ---- plans --------------------------------------------------------------------

Problem three_buffers() {
  return Problem{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8},
                             {.id = "b", .lower = 2, .upper = 4, .size = 8},
                             {.id = "c", .lower = 0, .upper = 4, .size = 4, .alignment = 4}}};
}

std::string plan_error(std::string_view text) {
  auto plan = parse_plan_csv(three_buffers(), text, "p.csv");
  return plan.ok() ? "" : plan.status().message();
}

void expect_plan_error(std::string_view text, std::string_view where, std::string_view field, std::string_view detail) {
  const std::string message = plan_error(text);
  ASSERT_FALSE(message.empty()) << "expected an error for:\n" << text;
  EXPECT_EQ(message.rfind(where, 0), 0u) << message;
  if (!field.empty()) EXPECT_NE(message.find("'" + std::string(field) + "'"), std::string::npos) << message;
  EXPECT_NE(message.find(detail), std::string::npos) << message;
}

TEST(CsvPlan, WrittenPlanReadsBackAndValidates) {
  const Problem p = three_buffers();
  const Plan plan = make_plan(p, {0, 0, 8});
  ASSERT_TRUE(validate(p, plan).ok()) << validate(p, plan).message;
  const std::string text = format_plan_csv(p, plan);
  EXPECT_EQ(text, "id,lower,upper,size,alignment,offset\na,0,2,8,1,0\nb,2,4,8,1,0\nc,0,4,4,4,8\n");
  auto back = parse_plan_csv(p, text, "p.csv");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->offsets, plan.offsets);
  EXPECT_EQ(back->arena, 12);
}

TEST(CsvPlan, MatchesRowsById) {
  auto plan = parse_plan_csv(three_buffers(), "offset,id,lower,upper,size\n8,c,0,4,4\n0,b,2,4,8\n0,a,0,2,8\n");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->offsets, (std::vector<int64_t>{0, 0, 8}));
}

TEST(CsvPlan, ReadsAnInvalidPlanForTheValidatorToExplain) {
  const Problem p = three_buffers();
  auto plan = parse_plan_csv(p, "id,lower,upper,size,offset\na,0,2,8,0\nb,2,4,8,0\nc,0,4,4,2\n");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(validate(p, *plan).violation, Violation::kMisaligned);
}

TEST(CsvPlan, PlanFileReadAsProblemFixesEveryOffset) {
  const Problem p = three_buffers();
  const Problem fixed = parse_ok(format_plan_csv(p, make_plan(p, {0, 0, 8})));
  ASSERT_EQ(fixed.size(), 3u);
  EXPECT_EQ(fixed.buffers[0].offset, 0);
  EXPECT_EQ(fixed.buffers[2].offset, 8);
}

TEST(CsvPlanErrors, RejectsFileWithoutOffsetColumn) {
  expect_plan_error("id,lower,upper,size\na,0,2,8\n", "p.csv:1:", "offset", "lacks column");
}

TEST(CsvPlanErrors, RejectsUnknownId) {
  expect_plan_error("id,lower,upper,size,offset\na,0,2,8,0\nz,0,2,8,0\n", "p.csv:3:", "id", "no buffer");
}

TEST(CsvPlanErrors, RejectsBufferGivenTwice) {
  expect_plan_error("id,lower,upper,size,offset\na,0,2,8,0\na,0,2,8,0\n", "p.csv:3:", "id", "first on line 2");
}

TEST(CsvPlanErrors, RejectsMissingBuffer) {
  expect_plan_error("id,lower,upper,size,offset\na,0,2,8,0\nc,0,4,4,8\n", "p.csv:", "", "no row for buffer \"b\"");
}

TEST(CsvPlanErrors, RejectsDifferentLifetime) {
  expect_plan_error("id,lower,upper,size,offset\na,0,3,8,0\n", "p.csv:2:", "upper", "differs");
  expect_plan_error("buffer,start,end,size,offset\na,1,1,8,0\n", "p.csv:2:", "start", "differs");
}

TEST(CsvPlanErrors, RejectsDifferentSize) {
  expect_plan_error("id,lower,upper,size,offset\na,0,2,9,0\n", "p.csv:2:", "size", "differs");
}

TEST(CsvPlanErrors, RejectsDifferentAlignment) {
  expect_plan_error("id,lower,upper,size,alignment,offset\na,0,2,8,1,0\nb,2,4,8,1,0\nc,0,4,4,8,8\n",
                    "p.csv:4:", "alignment", "differs");
}

TEST(CsvPlanErrors, RejectsEmptyOffset) {
  expect_plan_error("id,lower,upper,size,offset\na,0,2,8,\n", "p.csv:2:", "offset", "empty");
}

TEST(CsvPlanErrors, RejectsOffsetThatOverflowsTheArena) {
  expect_plan_error("id,lower,upper,size,offset\na,0,2,8,9223372036854775800\n", "p.csv:2:", "offset", "2^62");
}

TEST(CsvPlanErrors, RejectsProblemWhoseIdsAreNotUnique) {
  Problem p = three_buffers();
  p.buffers[1].id = "a";
  auto plan = parse_plan_csv(p, "id,lower,upper,size,offset\n");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("\"a\""), std::string::npos) << plan.status().message();
}

// ---- files --------------------------------------------------------------------

TEST(CsvFiles, MissingFileIsNotFoundAndNamesThePath) {
  auto problem = read_problem_csv("/nonexistent/memplan/x.csv");
  ASSERT_FALSE(problem.ok());
  EXPECT_EQ(problem.status().code(), StatusCode::kNotFound);
  EXPECT_NE(problem.status().message().find("/nonexistent/memplan/x.csv"), std::string::npos);
}

TEST(CsvFiles, DirectoryIsAnIoError) {
  auto text = read_text_file(testing::TempDir());
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kIoError);
}

TEST(CsvFiles, WriteThenReadGivesTheSameProblemAndErrorsNameThePath) {
  const std::string path = testing::TempDir() + "/memplan_csv_test_roundtrip.csv";
  const Problem p = three_buffers();
  ASSERT_TRUE(write_text_file(path, format_problem_csv(p)).ok());
  auto back = read_problem_csv(path);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  expect_same_buffers(p, *back);
  auto plan = read_plan_csv(p, path);  // a problem file has no offsets
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message().rfind(path + ":1:", 0), 0u) << plan.status().message();
  std::remove(path.c_str());
}

TEST(CsvFiles, WritingIntoAMissingDirectoryFails) {
  EXPECT_FALSE(write_text_file("/nonexistent/memplan/out.csv", "x").ok());
}

// ---- shared benchmark instances ----------------------------------------------

struct SharedFile {
  const char* path;  // under MEMPLAN_SHARED_DATA_DIR/dsa
  size_t buffers;
  int64_t load;  // max live bytes from the data's README; 0 if not given there
};

TEST(CsvSharedData, ReadsEveryBenchmarkInstance) {
  const SharedFile files[] = {
      {"minimalloc/challenging/A.1048576.csv", 154, 1048576},
      {"minimalloc/challenging/B.1048576.csv", 170, 1048576},
      {"minimalloc/challenging/C.1048576.csv", 203, 1039360},
      {"minimalloc/challenging/D.1048576.csv", 213, 986112},
      {"minimalloc/challenging/E.1048576.csv", 215, 1048576},
      {"minimalloc/challenging/F.1048576.csv", 296, 1048576},
      {"minimalloc/challenging/G.1048576.csv", 308, 1048576},
      {"minimalloc/challenging/H.1048576.csv", 316, 1048576},
      {"minimalloc/challenging/I.1048576.csv", 374, 1048576},
      {"minimalloc/challenging/J.1048576.csv", 409, 989184},
      {"minimalloc/challenging/K.1048576.csv", 454, 1048576},
      {"minimalloc/examples/input.12.csv", 5, 12},
      {"idealloc/iopddl/G_1.csv", 816, 0},
      {"idealloc/iopddl/S_1.csv", 28526, 0},
      {"idealloc/iopddl/Y_1.csv", 62185, 0},
      {"idealloc/somas_tensors/resnet50.csv", 1042, 0},
      {"idealloc/somas_tensors/pangu_2.6B.csv", 18692, 0},
  };
  const std::filesystem::path dir = std::filesystem::path(MEMPLAN_SHARED_DATA_DIR) / "dsa";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no shared data at " << dir;
  for (const SharedFile& f : files) {
    SCOPED_TRACE(f.path);
    auto problem = read_problem_csv((dir / f.path).string());
    ASSERT_TRUE(problem.ok()) << problem.status().to_string();
    EXPECT_EQ(problem->size(), f.buffers);
    if (f.load != 0) EXPECT_EQ(load(*problem), f.load);
    // Writing and reading back reproduces the file's problem exactly.
    auto back = parse_problem_csv(format_problem_csv(*problem));
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    expect_same_buffers(*problem, *back);
  }
}

TEST(CsvSharedData, ReadsMiniMallocExample) {
  const std::string path = std::string(MEMPLAN_SHARED_DATA_DIR) + "/dsa/minimalloc/examples/input.12.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no shared data at " << path;
  auto problem = read_problem_csv(path);
  ASSERT_TRUE(problem.ok()) << problem.status().to_string();
  ASSERT_EQ(problem->size(), 5u);
  EXPECT_EQ(problem->buffers[0].id, "b1");
  EXPECT_EQ(problem->buffers[0].lower, 0);
  EXPECT_EQ(problem->buffers[0].upper, 3);
  EXPECT_EQ(problem->buffers[0].size, 4);
}

// ---- scale ----------------------------------------------------------------------

TEST(CsvScale, ReadsAHundredThousandRows) {
  std::string text = "id,lower,upper,size\n";
  constexpr int kRows = 100000;
  for (int i = 0; i < kRows; ++i) {
    text += std::to_string(i) + "," + std::to_string(i) + "," + std::to_string(i + 10) + ",4096\n";
  }
  auto problem = parse_problem_csv(text);
  ASSERT_TRUE(problem.ok()) << problem.status().to_string();
  ASSERT_EQ(problem->size(), static_cast<size_t>(kRows));
  EXPECT_EQ(problem->buffers[kRows - 1].upper, kRows - 1 + 10);
  EXPECT_EQ(load(*problem), 10 * 4096);
}

}  // namespace
}  // namespace memplan
