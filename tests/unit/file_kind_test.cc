// file_kind_test.cc — the one dispatch test of the front ends (file_kind.h):
// each kind from its name or its first bytes, and what is none of them.
#include "memplan/file_kind.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace memplan {
namespace {

TEST(FileKind, NamesAnOnnxModelByItsSuffixWhateverItHolds) {
  EXPECT_EQ(sniff_file_kind("model.onnx", "MEMPLANT"), FileKind::kOnnxModel);
  EXPECT_EQ(sniff_file_kind("MODEL.ONNX", ""), FileKind::kOnnxModel);
  EXPECT_EQ(sniff_file_kind("model.onnx.csv", "id,lower"), FileKind::kTrace);
}

TEST(FileKind, TellsAnOnnxModelByItsFirstBytes) {
  // ir_version 8: tag 0x08 then the varint 8, as tests/cli/data/onnx/tiny.model starts.
  EXPECT_EQ(sniff_file_kind("tiny.model", std::string("\x08\x08\x12\x0d", 4)), FileKind::kOnnxModel);
  EXPECT_EQ(sniff_file_kind("-", std::string("\x08\x01", 2)), FileKind::kOnnxModel);
  // Version 0 is none, and a varint that continues (0x80 and above) is not a small version.
  EXPECT_EQ(sniff_file_kind("-", std::string("\x08\x00", 2)), FileKind::kTrace);
  EXPECT_EQ(sniff_file_kind("-", std::string("\x08\x80\x01", 3)), FileKind::kTrace);
  EXPECT_EQ(sniff_file_kind("-", std::string("\x08", 1)), FileKind::kTrace);
  EXPECT_TRUE(looks_like_onnx_model(std::string("\x08\x07", 2)));
  EXPECT_FALSE(looks_like_onnx_model("MEMPLANT"));
}

TEST(FileKind, TellsAProfileByItsJson) {
  EXPECT_EQ(sniff_file_kind("prof.json", "{\"traceEvents\": []}"), FileKind::kTorchProfile);
  EXPECT_EQ(sniff_file_kind("-", "\xEF\xBB\xBF \n [ {}"), FileKind::kTorchProfile);
  EXPECT_EQ(sniff_file_kind("run.trace", "MEMPLANT\x01"), FileKind::kTrace);
  EXPECT_EQ(sniff_file_kind("-", "  \n"), FileKind::kTrace);
  EXPECT_EQ(file_kind_name(FileKind::kTorchProfile), "PyTorch profile");
}

TEST(FileKind, ReadsTheHeadOfAFileAndNothingOfAMissingOne) {
  const std::string path = ::testing::TempDir() + "file_kind_head.bin";
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string(100, ' ') << "{";
  }
  EXPECT_EQ(read_file_head(path), std::string(kFileKindHeadBytes, ' '));
  EXPECT_EQ(read_file_head(path, 3), "   ");
  EXPECT_EQ(read_file_head(path + ".missing"), "");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace memplan
