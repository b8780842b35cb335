// file_kind.cc — tells the kinds of input files apart (see file_kind.h).
#include "memplan/file_kind.h"

#include <fstream>

namespace memplan {

std::string_view file_kind_name(FileKind kind) {
  switch (kind) {
    case FileKind::kTrace:
      return "memplan trace";
    case FileKind::kTorchProfile:
      return "PyTorch profile";
    case FileKind::kOnnxModel:
      return "ONNX model";
  }
  return "memplan trace";
}

bool looks_like_json(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
}

bool looks_like_onnx_model(std::string_view bytes) {
  // Tag 0x08: field 1 (ir_version) as a varint, then a small version number.
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x08 &&
         static_cast<unsigned char>(bytes[1]) >= 1 && static_cast<unsigned char>(bytes[1]) < 0x80;
}

FileKind sniff_file_kind(std::string_view name, std::string_view head) {
  if (name.ends_with(".onnx") || name.ends_with(".ONNX") || looks_like_onnx_model(head)) return FileKind::kOnnxModel;
  if (looks_like_json(head)) return FileKind::kTorchProfile;
  return FileKind::kTrace;
}

std::string read_file_head(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string head(bytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

}  // namespace memplan
