// The store's framing: [u32 length of the rest][u32 request id][u8 op][fields]. Both ends trust
// these helpers, so a field read back must equal the field written, and a short frame must be
// refused (the server answers BadRequest) rather than read past its end.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "bootstrap/wire.hpp"

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
  w.u8(0xFE).u32(0xDEADBEEFu).i64(-5).i64(std::numeric_limits<std::int64_t>::min());
  w.str("hello").str("").str(binary);
  const std::string frame = w.frame();

  Reader r(bodyOf(frame));
  EXPECT_EQ(r.u32(), 0xA1B2C3D4u);
  EXPECT_EQ(r.u8(), static_cast<std::uint8_t>(Op::Set));
  EXPECT_EQ(r.u8(), 0xFE);
  EXPECT_EQ(r.u32(), 0xDEADBEEFu);
  EXPECT_EQ(r.i64(), -5);
  EXPECT_EQ(r.i64(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(r.str(), "hello");
  EXPECT_EQ(r.str(), "");
  EXPECT_EQ(r.str(), binary);
  EXPECT_THROW(r.u8(), std::out_of_range);  // the body is used up exactly
}

TEST(Wire, LengthWordCountsEverythingAfterIt) {
  Writer w(7, static_cast<std::uint8_t>(Op::Get));
  // id (4) + op (1)
  EXPECT_EQ(lengthWord(w.frame()), 5u);
  EXPECT_EQ(w.frame().size(), 9u);
  w.str("key");  // 4 + 3
  EXPECT_EQ(lengthWord(w.frame()), 12u);
  w.i64(1);
  const std::string& frame = w.frame();
  EXPECT_EQ(lengthWord(frame), 20u);
  EXPECT_EQ(frame.size(), 4u + lengthWord(frame));
}

TEST(Wire, TruncatedFrameThrowsOutOfRange) {
  const std::string frame = Writer(1, 2).u32(3).str("hello").frame();
  const std::string_view body = bodyOf(frame);
  // Every strict prefix is missing some field, wherever it is cut.
  for (std::size_t cut = 0; cut < body.size(); ++cut) {
    Reader r(body.substr(0, cut));
    EXPECT_THROW(
        {
          r.u32();
          r.u8();
          r.u32();
          r.str();
        },
        std::out_of_range)
        << "cut at " << cut;
  }
}

TEST(Wire, StringLongerThanTheFrameThrows) {
  // A corrupt length prefix must not make the reader allocate or read 4 GiB.
  Writer w(1, 2);
  w.u32(0xFFFFFFFFu);
  const std::string frame = w.frame();
  Reader r(bodyOf(frame));
  r.u32();
  r.u8();
  EXPECT_THROW(r.str(), std::out_of_range);
}

TEST(Wire, EmptyBodyHasNoFields) {
  Reader r(std::string_view{});
  EXPECT_THROW(r.u8(), std::out_of_range);
}

}  // namespace
}  // namespace axon::wire
