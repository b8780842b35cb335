// plan_file_test.cc — the plan file's writer and reader (memplan/plan_file.h).
#include "memplan/plan_file.h"

#include <gtest/gtest.h>

#include <string>

namespace memplan {
namespace {

PlanFile sample() {
  PlanFile f;
  f.adapter = "device";
  f.program = "python3 train.py --ctx 256";
  SavedVariant sequence{.key = 0x8000a1b2c3d4e5f6ull, .keyed = false, .after = 0x5eed, .requests = {}};
  sequence.requests.push_back({.size = 4096, .alignment = 512, .lower = 0, .upper = 2, .offset = 0, .key = 0});
  sequence.requests.push_back({.size = 100, .alignment = 512, .lower = 1, .upper = -1, .offset = -1, .key = 0});
  sequence.requests.push_back({.size = 8192, .alignment = 512, .lower = 2, .upper = 3, .offset = 4096, .key = 0});
  SavedVariant keyed{.key = 7, .keyed = true, .requests = {}};
  keyed.requests.push_back({.size = 16, .alignment = 16, .lower = 4, .upper = 9, .offset = 32, .key = 0xab});
  f.units.push_back(
      {.name = "cuda:0/0", .variants = {sequence, keyed}, .course = {0x8000a1b2c3d4e5f6ull, 7, 0x8000a1b2c3d4e5f6ull}});
  f.units.push_back({.name = "1", .variants = {}});
  return f;
}

TEST(PlanFile, WritesAndReadsBackEveryField) {
  const PlanFile f = sample();
  const std::string text = write_plan_file(f);
  EXPECT_EQ(text.substr(0, text.find('\n')), "memplan-plans 3");
  EXPECT_NE(text.find("\nvariant 8000a1b2c3d4e5f6 3 sequence 5eed\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nvariant 7 1 keyed -\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\ncourse 3 8000a1b2c3d4e5f6 7 8000a1b2c3d4e5f6\nunit 1 0\ncourse 0\nend\n"), std::string::npos)
      << text;
  StatusOr<PlanFile> read = read_plan_file(text);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(*read, f);
  EXPECT_EQ(write_plan_file(*read), text);
}

TEST(PlanFile, ProgramDashIsAnyProgram) {
  PlanFile f = sample();
  f.program = "";
  StatusOr<PlanFile> read = read_plan_file(write_plan_file(f));
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->program, "");
  EXPECT_EQ(plan_file_mismatch(*read, "device", "anything at all"), "");
}

TEST(PlanFile, MismatchNamesTheAdapterOrTheProgram) {
  const PlanFile f = sample();
  EXPECT_EQ(plan_file_mismatch(f, "device", "python3 train.py --ctx 256"), "");
  EXPECT_NE(plan_file_mismatch(f, "drop-in", "python3 train.py --ctx 256").find("device allocator's"),
            std::string::npos);
  EXPECT_NE(plan_file_mismatch(f, "device", "python3 train.py --ctx 512").find("not by this program"),
            std::string::npos);
}

// Each malformed file is refused with the line it fails on (version 2
// files, whose units end without a course line, and version 3 ones).
TEST(PlanFile, RefusesMalformedFilesNamingTheLine) {
  const std::string head = "memplan-plans 2\nadapter drop-in\nprogram -\n";
  const std::string head3 = "memplan-plans 3\nadapter drop-in\nprogram -\n";
  const std::pair<std::string, std::string> cases[] = {
      {"", "f:0: not a memplan plan file"},
      {"memplan-plans 4\n", "f:1: version 4"},
      {"memplan-plans 0\n", "f:1: version 0"},
      {"memplan-plans 2\nadapter gpu\n", "f:2: adapter"},
      {head, "f:3: the file ends without its end line"},
      {head + "unit 0 1\nvariant 1 1 sequence -\n16 16 1\nend\n", "f:6: a sequence request has 4 fields"},
      {head + "unit 0 1\nvariant 1 1 sequence -\n16 24 1 0\nend\n", "f:6: alignment"},
      {head + "unit 0 1\nvariant 1 1 sequence -\n16 16 0 0\nend\n", "f:6: upper: not after"},
      {head + "unit 0 1\nvariant 1 1 sequence -\n281474976710657 16 1 0\nend\n", "f:6: size"},
      {head + "unit 0 1\nvariant 1 1 sequence -\n16 16 1 -5\nend\n", "f:6: offset"},
      {head + "unit 0 1\nvariant 1 2 sequence -\n16 16 1 0\n", "f:6: the file ends inside a variant"},
      {head + "unit 0 2\nvariant 1 0 sequence -\nvariant 1 0 sequence -\nend\n", "f:6: a variant's key appears twice"},
      {head + "unit 0 0\nunit 0 0\nend\n", "f:5: unit 0 appears twice"},
      {head + "unit 0 65\nend\n", "f:4: variants: more than 64"},
      {head + "unit 0 1\nvariant 1 16777217 sequence -\nend\n", "f:5: requests"},
      {head + "unit 0 1\nvariant 1 1 keyed -\n16 16 0 1 0 xyz\nend\n", "f:6: key"},
      {head + "unit 0 1\nvariant 1 1 sequence\n16 16 1 0\nend\n", "f:5: expected: variant"},
      {head + "unit 0 1\nvariant 1 1 sequence 0\n16 16 1 0\nend\n", "f:5: after"},
      {head + "unit 0 1\nvariant 1 1 sequence q\n16 16 1 0\nend\n", "f:5: after"},
      {head + "end\nunit 0 0\n", "f:5: text after the end line"},
      {head + "unit a\x01b 0\nend\n", "f:4: unit name: a control character"},
      {head3 + "unit 0 0\nend\n", "f:5: expected: course"},
      {head3 + "unit 0 1\nvariant 1 1 sequence -\n16 16 1 0\nunit 1 0\n", "f:7: expected: course"},
      {head3 + "unit 0 0\ncourse\nend\n", "f:5: expected: course"},
      {head3 + "unit 0 0\ncourse 2 a\nend\n", "f:5: course: 2 keys announced, 1 on the line"},
      {head3 + "unit 0 0\ncourse 1 a b\nend\n", "f:5: course: 1 keys announced, 2 on the line"},
      {head3 + "unit 0 0\ncourse 65\nend\n", "f:5: course: not a count up to 64"},
      {head3 + "unit 0 0\ncourse x\nend\n", "f:5: course: not a count"},
      {head3 + "unit 0 0\ncourse 2 a 0\nend\n", "f:5: course: key 2 is not a nonzero hexadecimal key"},
      {head3 + "unit 0 0\ncourse 1 zz\nend\n", "f:5: course: key 1 is not"},
  };
  for (const auto& [text, expected] : cases) {
    StatusOr<PlanFile> read = read_plan_file(text, "f");
    ASSERT_FALSE(read.ok()) << text;
    EXPECT_EQ(read.status().message().substr(0, expected.size()), expected) << read.status().message();
  }
}

// A version 2 file (no course lines) still reads: its units have no course.
TEST(PlanFile, ReadsVersionTwo) {
  const std::string text =
      "memplan-plans 2\nadapter drop-in\nprogram -\nunit 0 1\nvariant a 1 sequence b\n64 16 1 0\nend\n";
  StatusOr<PlanFile> read = read_plan_file(text, "f");
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->units.size(), 1u);
  EXPECT_EQ(read->units[0].variants.at(0).after, 0xbu);
  EXPECT_TRUE(read->units[0].course.empty());
}

// A version 1 file (no <after> on its variant lines) still reads: its
// variants follow no other.
TEST(PlanFile, ReadsVersionOne) {
  const std::string text =
      "memplan-plans 1\nadapter drop-in\nprogram -\nunit 0 1\nvariant a 2 sequence\n64 16 2 0\n32 16 - -\nend\n";
  StatusOr<PlanFile> read = read_plan_file(text, "f");
  ASSERT_TRUE(read.ok()) << read.status().message();
  ASSERT_EQ(read->units.size(), 1u);
  ASSERT_EQ(read->units[0].variants.size(), 1u);
  const SavedVariant& v = read->units[0].variants[0];
  EXPECT_EQ(v.key, 0xau);
  EXPECT_EQ(v.after, 0u);
  ASSERT_EQ(v.requests.size(), 2u);
  EXPECT_EQ(v.requests[0].upper, 2);
  EXPECT_EQ(v.requests[1].offset, -1);
  EXPECT_FALSE(
      read_plan_file("memplan-plans 1\nadapter drop-in\nprogram -\nunit 0 1\nvariant a 0 sequence -\nend\n").ok())
      << "a version 1 variant line has four fields";
}

// A command line with control characters or spaces at either end reads back
// as written (once written, the text does not change).
TEST(PlanFile, ProgramLinesReadBackAsWritten) {
  PlanFile f = sample();
  f.program = std::string("\0\0  python3\ttrain.py  ", 22);
  const std::string text = write_plan_file(f);
  StatusOr<PlanFile> read = read_plan_file(text);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->program, "python3 train.py");
  EXPECT_EQ(write_plan_file(*read), text);
  EXPECT_EQ(plan_file_mismatch(*read, "device", " python3 train.py"), "");
}

TEST(PlanFile, SavesAndLoadsAPath) {
  const std::string path = ::testing::TempDir() + "/plan_file_test.plans";
  ASSERT_TRUE(save_plan_file(sample(), path).ok());
  StatusOr<PlanFile> loaded = load_plan_file(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(*loaded, sample());
  EXPECT_EQ(load_plan_file(path + ".missing").status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace memplan
