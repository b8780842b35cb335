// file_kind.h — which of the files memplan reads a file is, told from its
// name and its first bytes: the one test every front end dispatches on
// (`memplan extract`, memplan.extract in Python), so they cannot disagree.
//
//   kind              recognised by
//   ONNX model        a name ending in .onnx (or .ONNX), or first bytes as a
//                     serialized ModelProto starts: field 1 (ir_version) as a
//                     varint, tag 0x08, then a small version number
//   PyTorch profile   after white space and a UTF-8 byte-order mark, '{' or
//                     '[' (a chrome trace is JSON)
//   memplan trace     anything else: the trace reader checks its magic and
//                     says what is wrong
//
// A memplan trace starts with its magic ("MEMPLANT"), which neither test accepts;
// a problem CSV starts with its header, which neither test accepts either.
// The tests are cheap guesses, not checks: each reader is the real check.
// Thread-safety: pure functions, except read_file_head, which reads a file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace memplan {

enum class FileKind { kTrace, kTorchProfile, kOnnxModel };

// "memplan trace", "PyTorch profile", "ONNX model".
std::string_view file_kind_name(FileKind kind);

// The bytes sniff_file_kind looks at, at most: enough for white space before
// a JSON document's first character.
inline constexpr size_t kFileKindHeadBytes = 64;

// The kind of a file named `name` ("-" or "" for standard input: no name to
// go by) whose first bytes are `head` (all of them, or at least
// kFileKindHeadBytes).
FileKind sniff_file_kind(std::string_view name, std::string_view head);

// True when `text` looks like a JSON document (the PyTorch profile test above).
bool looks_like_json(std::string_view text);

// True when `bytes` start as a serialized ModelProto does (the ONNX test above,
// without the name).
bool looks_like_onnx_model(std::string_view bytes);

// The first `bytes` bytes of the file at `path`; fewer for a shorter file,
// none for a file that cannot be read (its reader then says why).
std::string read_file_head(const std::string& path, size_t bytes = kFileKindHeadBytes);

}  // namespace memplan
