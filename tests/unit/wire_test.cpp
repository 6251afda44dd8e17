// The store's framing ([u32 length][u32 magic][u16 version][u32 id][u8 op][fields]) and the
// values exchanged through the store ([u32 magic][u16 version][u16 kind][fields]). Both ends
// trust these helpers: a field read back must equal the field written, and anything short, long,
// foreign or corrupt must be refused by name rather than read past its end.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "bootstrap/blob.hpp"
#include "bootstrap/wire.hpp"
#include "expect_error.hpp"

namespace axon::wire {
namespace {

std::uint32_t lengthWord(const std::string& frame) {
  std::uint32_t n = 0;
  std::memcpy(&n, frame.data(), 4);
  return n;
}

std::string_view bodyOf(const std::string& frame) { return std::string_view(frame).substr(4); }

TEST(Wire, FieldsRoundTrip) {
  const std::string binary("a\0b\xff", 4);  // strings are length-prefixed: NULs survive
  Writer w(0xA1B2C3D4u, static_cast<std::uint8_t>(Op::Set));
  w.u8(0xFE).u16(0xBEEF).u32(0xDEADBEEFu).u64(~0ull).i32(-7).i64(-5).i64(std::numeric_limits<std::int64_t>::min());
  w.str("hello").str("").str(binary);
  const std::string frame = w.frame();

  ByteReader r(bodyOf(frame));
  const FrameHead head = readHead(r);
  EXPECT_EQ(head.version, kWireVersion);
  EXPECT_EQ(head.id, 0xA1B2C3D4u);
  EXPECT_EQ(head.code, static_cast<std::uint8_t>(Op::Set));
  EXPECT_EQ(r.u8(), 0xFE);
  EXPECT_EQ(r.u16(), 0xBEEF);
  EXPECT_EQ(r.u32(), 0xDEADBEEFu);
  EXPECT_EQ(r.u64(), ~0ull);
  EXPECT_EQ(r.i32(), -7);
  EXPECT_EQ(r.i64(), -5);
  EXPECT_EQ(r.i64(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(r.str(), "hello");
  EXPECT_EQ(r.view(), "");
  EXPECT_EQ(r.str(), binary);
  EXPECT_EQ(r.left(), 0u);
  EXPECT_THROW(r.u8(), Malformed);  // the body is used up exactly
}

TEST(Wire, LengthWordCountsEverythingAfterIt) {
  Writer w(7, static_cast<std::uint8_t>(Op::Get));
  // magic (4) + version (2) + id (4) + op (1)
  EXPECT_EQ(lengthWord(w.frame()), kFrameHeaderBytes - 4);
  EXPECT_EQ(w.frame().size(), kFrameHeaderBytes);
  w.str("key");  // 4 + 3
  EXPECT_EQ(lengthWord(w.frame()), kFrameHeaderBytes - 4 + 7);
  w.i64(1);
  const std::string& frame = w.frame();
  EXPECT_EQ(frame.size(), 4u + lengthWord(frame));
  EXPECT_EQ(completeFrameBytes(frame), frame.size());
  EXPECT_EQ(completeFrameBytes(std::string_view(frame).substr(0, frame.size() - 1)), 0u) << "not all there yet";
  EXPECT_EQ(completeFrameBytes(std::string_view(frame).substr(0, 3)), 0u);
}

TEST(Wire, ImpossibleLengthsAreRefusedBeforeAnythingIsBuffered) {
  std::string huge(4, '\0');
  const std::uint32_t tooLong = kMaxFrame + 1;
  std::memcpy(huge.data(), &tooLong, 4);
  EXPECT_THROW(completeFrameBytes(huge), Malformed);
  std::string tiny(4, '\0');
  const std::uint32_t shorterThanHeader = 3;
  std::memcpy(tiny.data(), &shorterThanHeader, 4);
  EXPECT_THROW(completeFrameBytes(tiny), Malformed);
}

TEST(Wire, WrongMagicIsRefused) {
  std::string frame = Writer(1, 2).frame();
  frame[4] ^= 0x55;
  ByteReader r(bodyOf(frame));
  EXPECT_THROW(readHead(r), Malformed);
}

TEST(Wire, AnotherVersionIsReportedNotHidden) {
  // The header of a frame of another wire version still reads: the caller decides.
  const std::string frame = Writer(9, static_cast<std::uint8_t>(Status::VersionMismatch), 77).str("why").frame();
  ByteReader r(bodyOf(frame));
  const FrameHead head = readHead(r);
  EXPECT_EQ(head.version, 77);
  EXPECT_EQ(head.id, 9u);
  EXPECT_EQ(r.str(), "why");
}

TEST(Wire, TruncatedFrameThrowsMalformed) {
  const std::string frame = Writer(1, 2).u32(3).str("hello").frame();
  const std::string_view body = bodyOf(frame);
  // Every strict prefix is missing some field, wherever it is cut.
  for (std::size_t cut = 0; cut < body.size(); ++cut) {
    ByteReader r(body.substr(0, cut));
    EXPECT_THROW(
        {
          readHead(r);
          r.u32();
          r.str();
        },
        Malformed)
        << "cut at " << cut;
  }
}

TEST(Wire, StringLongerThanTheFrameThrows) {
  // A corrupt length prefix must not make the reader allocate or read 4 GiB.
  Writer w(1, 2);
  w.u32(0xFFFFFFFFu);
  const std::string frame = w.frame();
  ByteReader r(bodyOf(frame));
  readHead(r);
  EXPECT_THROW(r.str(), Malformed);
}

TEST(Wire, CountThatCannotFitIsRefused) {
  ByteWriter w;
  w.u32(1000).u32(1).u32(2);  // claims 1000 items, holds 2
  ByteReader r(w.bytes());
  EXPECT_THROW(r.count(4), Malformed);
  ByteWriter two;
  two.u32(2).u32(1).u32(2);
  ByteReader fits(two.bytes());
  EXPECT_EQ(fits.count(4), 2u);
}

TEST(Blob, RoundTripAndSizeChecks) {
  BlobWriter w(BlobKind::HeapCall);
  w.u64(42).str("x");
  const std::string blob = w.take();
  auto [n, s] = decodeBlob(blob, BlobKind::HeapCall, "PE 3's test value", [](ByteReader& in) {
    std::uint64_t a = in.u64();
    return std::pair{a, in.str()};
  });
  EXPECT_EQ(n, 42u);
  EXPECT_EQ(s, "x");
  EXPECT_EQ(readWordBlob(wordBlob(7), "w"), 7u);
  EXPECT_EQ(readTextBlob(textBlob("name"), "t"), "name");
}

TEST(Blob, EveryFaultNamesTheValueAndWhatWasWrong) {
  const std::string good = wordBlob(5);
  struct Case {
    std::string blob;
    BlobKind kind;
    const char* says;
  };
  std::string otherVersion = good;
  otherVersion[4] = 9;
  std::string badMagic = good;
  badMagic[0] ^= 1;
  for (const Case& c : {Case{good, BlobKind::Text, "kind"},
                        Case{otherVersion, BlobKind::Word, "format version 9"},
                        Case{badMagic, BlobKind::Word, "not an axon store value"},
                        Case{good.substr(0, good.size() - 1), BlobKind::Word, "cut short"},
                        Case{good + "!", BlobKind::Word, "1 bytes more"},
                        Case{"", BlobKind::Word, "not an axon store value"},
                        Case{"legacy text", BlobKind::Word, "not an axon store value"}}) {
    SCOPED_TRACE(c.says);
    std::string msg = test::errorMessageOf(
        [&] { decodeBlob(c.blob, c.kind, "PE 3's contribution to 'heap' (round 7)", [](ByteReader& in) { return in.u64(); }); },
        ErrorCode::Bootstrap);
    EXPECT_TRUE(test::contains(msg, "PE 3's contribution to 'heap' (round 7)"));
    EXPECT_TRUE(test::contains(msg, c.says));
  }
}

}  // namespace
}  // namespace axon::wire
