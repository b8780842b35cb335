// pickle_test.cc — the plain-data pickle reader: each accepted opcode builds
// the value Python would, each refused opcode is named with its offset, and
// truncated or malformed input is an error, never a crash.
#include "memplan/pickle.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace memplan::pickle {
namespace {

// A pickle from its opcodes: "\x80\x04" (PROTO 4) + body + "." (STOP).
std::string pickled(const std::string& body) { return std::string("\x80\x04", 2) + body + "."; }

StatusOr<Document> parse_document(const std::string& bytes) {
  return parse_pickle({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "t.pickle");
}

Document parse_document_ok(const std::string& bytes) {
  StatusOr<Document> d = parse_document(bytes);
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? std::move(d).value() : Document();
}

std::string error_of(const std::string& bytes) {
  StatusOr<Document> d = parse_document(bytes);
  EXPECT_FALSE(d.ok());
  return d.ok() ? "" : d.status().message();
}

std::string le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}
std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}
std::string short_str(const std::string& s) { return "\x8c" + std::string(1, static_cast<char>(s.size())) + s; }

int64_t root_int(const std::string& body) {
  Document d = parse_document_ok(pickled(body));
  return d.integer(d.root()).value_or(-999999);
}

// ---- accepted opcodes -------------------------------------------------------------------

TEST(PickleReader, ReadsNone) {
  Document d = parse_document_ok(pickled("N"));
  EXPECT_EQ(d.kind(d.root()), Kind::kNone);
}
TEST(PickleReader, ReadsNewTrueAndNewFalse) {
  Document t = parse_document_ok(pickled("\x88"));
  EXPECT_EQ(t.boolean(t.root()), true);
  Document f = parse_document_ok(pickled("\x89"));
  EXPECT_EQ(f.boolean(f.root()), false);
}
TEST(PickleReader, ReadsBinInt) { EXPECT_EQ(root_int("J" + le32(static_cast<uint32_t>(-5))), -5); }
TEST(PickleReader, ReadsBinInt1) { EXPECT_EQ(root_int("K\xff"), 255); }
TEST(PickleReader, ReadsBinInt2) { EXPECT_EQ(root_int(std::string("M\x01\x02", 3)), 0x0201); }
TEST(PickleReader, ReadsLong1) {
  // 139930336493568 (an address from a real snapshot) in 6 bytes, and -1 in one.
  EXPECT_EQ(root_int(std::string("\x8a\x06\x00\x00\x40\x8f\x44\x7f", 8)), 0x7f448f400000);
  EXPECT_EQ(root_int(std::string("\x8a\x01\xff", 3)), -1);
  EXPECT_EQ(root_int(std::string("\x8a\x00", 2)), 0);
}
TEST(PickleReader, ReadsLong4) { EXPECT_EQ(root_int("\x8b" + le32(2) + std::string("\x00\x01", 2)), 256); }
TEST(PickleReader, KeepsIntsBeyond64BitsAsBigInts) {
  // SIZE_MAX, as PyTorch writes an unknown line number: 9 bytes with the sign byte.
  Document d = parse_document_ok(pickled("\x8a\x09" + std::string(8, '\xff') + std::string(1, '\0')));
  EXPECT_EQ(d.kind(d.root()), Kind::kBigInt);
  EXPECT_FALSE(d.integer(d.root()).has_value());
}
TEST(PickleReader, ReadsWideIntsExactly) {
  EXPECT_EQ(root_int("\x8a\x08" + le64(uint64_t{1} << 62)), int64_t{1} << 62);
  EXPECT_EQ(root_int("\x8a\x08" + le64(static_cast<uint64_t>(INT64_MIN))), INT64_MIN);
}
TEST(PickleReader, ReadsTextInt) {
  EXPECT_EQ(root_int("I-42\n"), -42);
  Document d = parse_document_ok(pickled("I01\n"));
  EXPECT_EQ(d.boolean(d.root()), true);
}
TEST(PickleReader, ReadsTextLong) { EXPECT_EQ(root_int("L123L\n"), 123); }
TEST(PickleReader, ReadsBinFloat) {
  Document d = parse_document_ok(pickled(std::string("G\x3f\xf8\x00\x00\x00\x00\x00\x00", 9)));  // 1.5 big-endian
  EXPECT_EQ(d.kind(d.root()), Kind::kFloat);
  EXPECT_DOUBLE_EQ(d.number(d.root()).value_or(0), 1.5);
}
TEST(PickleReader, ReadsTextFloat) {
  Document d = parse_document_ok(pickled("F0.25\n"));
  EXPECT_DOUBLE_EQ(d.number(d.root()).value_or(0), 0.25);
}
TEST(PickleReader, ReadsShortBinUnicode) {
  Document d = parse_document_ok(pickled(short_str("segments")));
  EXPECT_EQ(d.text(d.root()), "segments");
}
TEST(PickleReader, ReadsAnEmptyStringAsTheFirstString) {
  // Found by the fuzz target: the string table had no block yet.
  Document d = parse_document_ok(pickled(std::string("\x8c\x00", 2)));
  EXPECT_EQ(d.text(d.root()), "");
}
TEST(PickleReader, ReadsBinUnicode) {
  Document d = parse_document_ok(pickled("X" + le32(3) + "abc"));
  EXPECT_EQ(d.text(d.root()), "abc");
}
TEST(PickleReader, ReadsBinUnicode8) {
  Document d = parse_document_ok(pickled("\x8d" + le64(2) + "hi"));
  EXPECT_EQ(d.text(d.root()), "hi");
}
TEST(PickleReader, ReadsBytesOpcodes) {
  for (const std::string& body : {std::string("C\x02xy"), "B" + le32(2) + "xy", "\x8e" + le64(2) + "xy",
                                  "\x96" + le64(2) + "xy", std::string("U\x02xy"), "T" + le32(2) + "xy"}) {
    Document d = parse_document_ok(pickled(body));
    EXPECT_EQ(d.kind(d.root()), Kind::kBytes) << body;
    EXPECT_EQ(d.bytes(d.root()), "xy");
  }
}
TEST(PickleReader, ReadsEmptyListAppendAndAppends) {
  Document d =
      parse_document_ok(pickled("]K\x01"
                                "a(K\x02K\x03"
                                "e"));
  ASSERT_EQ(d.kind(d.root()), Kind::kList);
  std::vector<int64_t> items;
  d.for_each_item(d.root(), [&](Value v) { items.push_back(*d.integer(v)); });
  EXPECT_EQ(items, (std::vector<int64_t>{1, 2, 3}));
}
TEST(PickleReader, ReadsList) {
  Document d = parse_document_ok(pickled("(K\x01K\x02l"));
  EXPECT_EQ(d.kind(d.root()), Kind::kList);
  EXPECT_EQ(d.length(d.root()), 2u);
}
TEST(PickleReader, ReadsEmptyDictSetItemAndSetItems) {
  Document d = parse_document_ok(
      pickled("}" + short_str("a") + "K\x01s(" + short_str("b") + "K\x02" + short_str("a") + "K\x03u"));
  ASSERT_EQ(d.kind(d.root()), Kind::kDict);
  EXPECT_EQ(d.length(d.root()), 3u);               // every pair is kept ...
  EXPECT_EQ(d.integer(*d.get(d.root(), "a")), 3);  // ... and the last one answers
  EXPECT_EQ(d.integer(*d.get(d.root(), "b")), 2);
  EXPECT_FALSE(d.get(d.root(), "c").has_value());
}
TEST(PickleReader, ReadsDict) {
  Document d = parse_document_ok(pickled("(" + short_str("k") + "Nd"));
  EXPECT_EQ(d.kind(d.root()), Kind::kDict);
  EXPECT_EQ(d.kind(*d.get(d.root(), "k")), Kind::kNone);
}
TEST(PickleReader, ReadsTuples) {
  for (const auto& [body, n] : std::vector<std::pair<std::string, size_t>>{{")", 0},
                                                                           {"K\x01\x85", 1},
                                                                           {"K\x01K\x02\x86", 2},
                                                                           {"K\x01K\x02K\x03\x87", 3},
                                                                           {"(K\x01K\x02K\x03K\x04t", 4}}) {
    Document d = parse_document_ok(pickled(body));
    EXPECT_EQ(d.kind(d.root()), Kind::kTuple) << n;
    EXPECT_EQ(d.length(d.root()), n);
  }
}
TEST(PickleReader, ReadsSetsAndFrozenSets) {
  Document s = parse_document_ok(pickled("\x8f(K\x01K\x02\x90"));
  EXPECT_EQ(s.kind(s.root()), Kind::kSet);
  EXPECT_EQ(s.length(s.root()), 2u);
  Document f = parse_document_ok(pickled("(K\x01\x91"));
  EXPECT_EQ(f.kind(f.root()), Kind::kFrozenSet);
}
TEST(PickleReader, MemoizeAndBinGetShareOneObject) {
  // [x, x] where x = [] memoized as 0, fetched with BINGET 1 after the outer list (0).
  Document d =
      parse_document_ok(pickled("]\x94(]\x94h\x01"
                                "e"));
  std::vector<Value> items;
  d.for_each_item(d.root(), [&](Value v) { items.push_back(v); });
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0], items[1]);
}
TEST(PickleReader, PutAndGetInEveryWidth) {
  for (const auto& [put, get] : std::vector<std::pair<std::string, std::string>>{
           {"p7\n", "g7\n"}, {"q\x07", "h\x07"}, {"r" + le32(7), "j" + le32(7)}}) {
    Document d = parse_document_ok(pickled("(" + short_str("s") + put + get + "t"));
    std::vector<Value> items;
    d.for_each_item(d.root(), [&](Value v) { items.push_back(v); });
    ASSERT_EQ(items.size(), 2u) << put;
    EXPECT_EQ(d.text(items[1]), "s");
  }
}
TEST(PickleReader, PopPopMarkAndDup) {
  EXPECT_EQ(root_int("K\x01K\x02"
                     "0"),
            1);  // POP
  EXPECT_EQ(root_int("K\x01(K\x02K\x03"
                     "1"),
            1);  // POP_MARK
  Document d =
      parse_document_ok(pickled("K\x05"
                                "2\x86"));  // DUP then TUPLE2
  std::vector<int64_t> items;
  d.for_each_item(d.root(), [&](Value v) { items.push_back(*d.integer(v)); });
  EXPECT_EQ(items, (std::vector<int64_t>{5, 5}));
}
TEST(PickleReader, FrameIsAHint) { EXPECT_EQ(root_int("\x95" + le64(2) + "K\x09"), 9); }
TEST(PickleReader, AcceptsProtocolsTwoToFive) {
  for (char proto : {'\x02', '\x03', '\x05'}) {
    const std::string bytes = std::string("\x80", 1) + proto + "N.";
    EXPECT_TRUE(parse_document(bytes).ok()) << static_cast<int>(proto);
  }
}
TEST(PickleReader, StoresEqualListsOnceAndKeepsTheirValues) {
  // Two equal frame lists, each appended to an outer list as it is built
  // (as each event's frames are set on its dict): the second shares the
  // first's items.
  const std::string frames = "](" + short_str("f.py") +
                             "K\x0c"
                             "e";
  Document d = parse_document_ok(pickled("]" + frames + "a" + frames + "a"));
  std::vector<Value> lists;
  d.for_each_item(d.root(), [&](Value v) { lists.push_back(v); });
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_NE(lists[0], lists[1]);
  EXPECT_EQ(d.content_id(lists[0]), d.content_id(lists[1]));
  EXPECT_EQ(d.counts().shared_items, 2u);
  for (Value list : lists) {
    std::vector<Value> items;
    d.for_each_item(list, [&](Value v) { items.push_back(v); });
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(d.text(items[0]), "f.py");
    EXPECT_EQ(d.integer(items[1]), 12);
  }
}

// ---- refusals ---------------------------------------------------------------------------

TEST(PickleReader, RefusesEveryOpcodeThatImportsOrCalls) {
  const std::vector<std::pair<std::string, std::string>> refused = {{"c", "GLOBAL"},
                                                                    {"\x93", "STACK_GLOBAL"},
                                                                    {"R", "REDUCE"},
                                                                    {"b", "BUILD"},
                                                                    {"i", "INST"},
                                                                    {"o", "OBJ"},
                                                                    {"\x81", "NEWOBJ"},
                                                                    {"\x92", "NEWOBJ_EX"},
                                                                    {"\x82", "EXT1"},
                                                                    {"\x83", "EXT2"},
                                                                    {"\x84", "EXT4"},
                                                                    {"P", "PERSID"},
                                                                    {"Q", "BINPERSID"},
                                                                    {"\x97", "NEXT_BUFFER"},
                                                                    {"\x98", "READONLY_BUFFER"}};
  for (const auto& [op, name] : refused) {
    // The opcode comes after PROTO (2 bytes) and one NONE: offset 3.
    const std::string message = error_of(std::string("\x80\x04N", 3) + op + "os\nsystem\n.");
    EXPECT_NE(message.find("t.pickle: offset 3: "), std::string::npos) << message;
    EXPECT_NE(message.find("refused opcode " + name), std::string::npos) << message;
  }
}
TEST(PickleReader, RefusesGlobalBeforeReadingItsArgument) {
  // os.system would be named by GLOBAL's argument; nothing of it is read.
  EXPECT_NE(error_of(std::string("\x80\x02"
                                 "cos\nsystem\n(S'echo'\ntR.",
                                 23))
                .find("offset 2: GLOBAL: refused"),
            std::string::npos);
}
TEST(PickleReader, RefusesProtocolZeroTextStrings) {
  EXPECT_NE(error_of(pickled("S'x'\n")).find("STRING (0x53) is not supported"), std::string::npos);
  EXPECT_NE(error_of(pickled("Vx\n")).find("UNICODE (0x56) is not supported"), std::string::npos);
}
TEST(PickleReader, RefusesBytesThatAreNoOpcode) {
  EXPECT_NE(error_of(pickled("\xff")).find("offset 2: byte 0xff is not a pickle opcode"), std::string::npos);
}
TEST(PickleReader, RefusesProtocolsAboveFive) {
  EXPECT_NE(error_of(std::string("\x80\x06N.", 4)).find("protocol 6 is newer than 5"), std::string::npos);
}

// ---- malformed input --------------------------------------------------------------------

TEST(PickleReader, TruncationIsAnErrorWithTheOffset) {
  EXPECT_NE(error_of(std::string("\x80\x04N", 3)).find("offset 3: the pickle ends before its STOP"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x80\x04J\x01", 4)).find("offset 2: BININT: the pickle ends inside"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("\x80\x04\x8c\x05"
                                 "ab",
                                 6))
                .find("length 5 runs past the end"),
            std::string::npos);
  EXPECT_NE(error_of("").find("ends before its STOP"), std::string::npos);
}
TEST(PickleReader, HugeLengthFieldsFailBeforeAllocating) {
  EXPECT_NE(error_of(pickled("\x8d" + le64(~uint64_t{0}))).find("runs past the end of the input"), std::string::npos);
}
TEST(PickleReader, BadMemoIndexIsAnError) {
  EXPECT_NE(error_of(pickled("h\x03")).find("offset 2: BINGET: no memo entry 3"), std::string::npos);
  EXPECT_NE(error_of(pickled("j" + le32(1000000))).find("no memo entry 1000000"), std::string::npos);
  EXPECT_NE(error_of(pickled("g-1\n")).find("is not a memo index"), std::string::npos);
  EXPECT_NE(error_of(pickled("q\x01")).find("BINPUT: stack underflow"), std::string::npos);
}
TEST(PickleReader, SparseMemoIndicesWork) {
  EXPECT_EQ(root_int("K\x04r" + le32(4000000000u) + "0j" + le32(4000000000u)), 4);
}
TEST(PickleReader, StackUnderflowIsAnError) {
  EXPECT_NE(error_of(pickled("a")).find("APPEND: stack underflow"), std::string::npos);
  EXPECT_NE(error_of(pickled("\x86")).find("TUPLE2: stack underflow"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x80\x04.", 3)).find("stack is empty at STOP"), std::string::npos);
  // A MARK hides what is below it.
  EXPECT_NE(error_of(pickled("]K\x01(a")).find("APPEND: stack underflow"), std::string::npos);
}
TEST(PickleReader, MissingMarkIsAnError) {
  EXPECT_NE(error_of(pickled("]K\x01"
                             "e"))
                .find("APPENDS: no MARK before it"),
            std::string::npos);
  EXPECT_NE(error_of(pickled("K\x01t")).find("TUPLE: no MARK"), std::string::npos);
}
TEST(PickleReader, WrongTargetsAreErrors) {
  EXPECT_NE(error_of(pickled("K\x01K\x02"
                             "a"))
                .find("APPEND: the target is not a list"),
            std::string::npos);
  EXPECT_NE(error_of(pickled("](K\x01K\x02u")).find("SETITEMS: the target is not a dict"), std::string::npos);
  EXPECT_NE(error_of(pickled("}(K\x01u")).find("odd number of values"), std::string::npos);
  EXPECT_NE(error_of(pickled("(K\x01"
                             "e"))
                .find("no container below the MARK"),
            std::string::npos);
}
TEST(PickleReader, DataAfterStopIsAnError) {
  EXPECT_NE(error_of(std::string("\x80\x04N.N", 5)).find("offset 4: data after STOP"), std::string::npos);
}
TEST(PickleReader, ReadsAFileThroughItsBuffer) {
  // A list of 300,000 ints: more than one buffer of the file reader.
  std::string body = "](";
  for (int i = 0; i < 300000; ++i) body += "J" + le32(static_cast<uint32_t>(i));
  body += "e";
  const std::string path = ::testing::TempDir() + "/pickle_test_big.pickle";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  const std::string bytes = pickled(body);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  StatusOr<Document> d = read_pickle_file(path);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->length(d->root()), 300000u);
  int64_t last = -1;
  d->for_each_item(d->root(), [&](Value v) { last = *d->integer(v); });
  EXPECT_EQ(last, 299999);
  // Truncated by one byte: the error names the offset of the end.
  f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size() - 1, f);
  std::fclose(f);
  StatusOr<Document> cut = read_pickle_file(path);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("offset " + std::to_string(bytes.size() - 1)), std::string::npos)
      << cut.status().message();
  std::remove(path.c_str());
  EXPECT_EQ(read_pickle_file(path).status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace memplan::pickle
