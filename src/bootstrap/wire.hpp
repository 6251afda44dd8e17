// Framing of the key-value store protocol and the byte codec that frames and store values share.
//
// A frame is [u32 length of the rest][u32 magic][u16 wire version][u32 request id][u8 op or
// status][fields]; strings are [u32 n][bytes]. The length, magic and version lead every frame in
// every version of axon, so that a PE of another build is told apart instead of being misread.
// Integers are little-endian (the hosts axon runs on).
//
// A connection opens with the job key handshake (bootstrap/store_handshake.hpp): the store greets
// first with a frame of fixed size that carries its wire version and a nonce, and the client's
// first frame is a Hello that proves the job key. Until that proof checks out the store reads no
// frame longer than kMaxHelloFrame and no claim of the client.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace axon::wire {

constexpr std::uint32_t kFrameMagic = 0x53584178u;  // "xAXS" in memory: an axon store frame
// 1: the unversioned frames; 2: versioned frames, a Hello without proof; 3: the job key handshake.
constexpr std::uint16_t kWireVersion = 3;
// Bytes of a frame before its fields: length, magic, version, id, op/status.
constexpr std::size_t kFrameHeaderBytes = 4 + 4 + 2 + 4 + 1;
// Largest frame either side accepts: keeps a corrupt length word from allocating gigabytes. It
// also caps a store value: the runtime's largest are a few KiB per PE (cards, set-up steps).
constexpr std::uint32_t kMaxFrame = 256u << 20;
// Largest frame the store reads from a connection that has not proven the job key yet (its
// Hello): nonce, rank, a build string of at most kMaxVersionText bytes, proof.
constexpr std::uint32_t kMaxHelloFrame = 512;
constexpr std::size_t kMaxVersionText = 256;
constexpr std::size_t kNonceBytes = 32;
constexpr std::size_t kProofBytes = 32;

// Requests. Hello: [nonce][u32 rank][str axon version][proof] (store_handshake.hpp). Gather: [str group][u32 members][u32 index]
// [str value], answered when every member has contributed: [u32 n][str value]... in index order.
// GatherMissing: [str group] -> [u32 n][u32 index]... of the members not yet in.
enum class Op : std::uint8_t { Hello = 1, Set, Get, Check, Add, Del, Bye, Gather, GatherMissing };
// Replies carry a status where requests carry the op. Frames with request id 0 are events the
// server sends unasked: PeerGone [u32 rank][str why] when a rank's connection drops without Bye,
// and the Greeting [nonce] that opens every connection. Refused [str why]: the Hello did not
// prove the job key, or the store takes no more connections; the connection closes after it.
enum class Status : std::uint8_t { Ok = 0, PeerGone = 1, BadRequest = 2, VersionMismatch = 3, Greeting = 4, Refused = 5 };
constexpr std::uint32_t kEventId = 0;

// A field that runs past the end of what was received, a wrong magic, a count that cannot fit:
// the reader stops before touching memory it was not given.
class Malformed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Appends fields to a byte string.
class ByteWriter {
 public:
  ByteWriter& u8(std::uint8_t v) { return raw(&v, 1); }
  ByteWriter& u16(std::uint16_t v) { return raw(&v, 2); }
  ByteWriter& u32(std::uint32_t v) { return raw(&v, 4); }
  ByteWriter& u64(std::uint64_t v) { return raw(&v, 8); }
  ByteWriter& i32(std::int32_t v) { return raw(&v, 4); }
  ByteWriter& i64(std::int64_t v) { return raw(&v, 8); }
  ByteWriter& str(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    return raw(s.data(), s.size());
  }
  // Bytes of a size both sides know (a nonce, a proof): no length word.
  ByteWriter& fixed(std::span<const std::uint8_t> b) { return raw(b.data(), b.size()); }
  const std::string& bytes() const { return buf_; }

 protected:
  ByteWriter& raw(const void* p, std::size_t n) {
    buf_.append(static_cast<const char*>(p), n);
    return *this;
  }
  std::string buf_;
};

// Reads fields back; every read checks the size first and throws Malformed when it would pass
// the end.
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  std::uint8_t u8() { return get<std::uint8_t>(); }
  std::uint16_t u16() { return get<std::uint16_t>(); }
  std::uint32_t u32() { return get<std::uint32_t>(); }
  std::uint64_t u64() { return get<std::uint64_t>(); }
  std::int32_t i32() { return get<std::int32_t>(); }
  std::int64_t i64() { return get<std::int64_t>(); }
  std::string str() { return std::string(view()); }
  // A string field without copying it.
  std::string_view view() {
    std::uint32_t n = u32();
    need(n, "a string");
    std::string_view s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  // A count of items each at least `minItemBytes` long: refused when the rest could not hold
  // them, so a corrupt count cannot make the caller reserve gigabytes.
  std::uint32_t count(std::size_t minItemBytes) {
    std::uint32_t n = u32();
    if (minItemBytes && n > left() / minItemBytes) {
      throw Malformed("a count of " + std::to_string(n) + " items does not fit in the " + std::to_string(left()) +
                      " bytes left");
    }
    return n;
  }
  // `n` bytes of a size both sides know (a nonce, a proof).
  std::string_view fixed(std::size_t n) {
    need(n, "a fixed field");
    std::string_view s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::size_t left() const { return bytes_.size() - pos_; }
  std::size_t position() const { return pos_; }
  // The rest, unread.
  std::string_view rest() const { return bytes_.substr(pos_); }

 private:
  template <class T>
  T get() {
    need(sizeof(T), "a field");
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void need(std::size_t n, const char* what) const {
    if (n > bytes_.size() - pos_) {
      throw Malformed(std::string(what) + " of " + std::to_string(n) + " bytes at byte " + std::to_string(pos_) +
                      " runs past the end of " + std::to_string(bytes_.size()) + " bytes");
    }
  }
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

// One frame: the header, then fields; frame() fills in the length.
class Writer : public ByteWriter {
 public:
  Writer(std::uint32_t id, std::uint8_t opOrStatus, std::uint16_t version = kWireVersion) {
    buf_.resize(4);
    u32(kFrameMagic);
    u16(version);
    u32(id);
    u8(opOrStatus);
  }
  // The field writers again, returning Writer& so that a frame is written in one expression.
  Writer& u8(std::uint8_t v) { ByteWriter::u8(v); return *this; }
  Writer& u16(std::uint16_t v) { ByteWriter::u16(v); return *this; }
  Writer& u32(std::uint32_t v) { ByteWriter::u32(v); return *this; }
  Writer& u64(std::uint64_t v) { ByteWriter::u64(v); return *this; }
  Writer& i32(std::int32_t v) { ByteWriter::i32(v); return *this; }
  Writer& i64(std::int64_t v) { ByteWriter::i64(v); return *this; }
  Writer& str(std::string_view s) { ByteWriter::str(s); return *this; }
  Writer& fixed(std::span<const std::uint8_t> b) { ByteWriter::fixed(b); return *this; }
  // The finished frame, with its length filled in.
  const std::string& frame() {
    std::uint32_t n = static_cast<std::uint32_t>(buf_.size() - 4);
    std::memcpy(buf_.data(), &n, 4);
    return buf_;
  }
};

// The header of a frame body (the bytes after the length word).
struct FrameHead {
  std::uint16_t version = 0;
  std::uint32_t id = 0;
  std::uint8_t code = 0;  // op in a request, status in a reply
};

// Reads the header of `in` (a reader over a frame body). Throws Malformed when the body is too
// short or does not start with the magic; the version is returned, not checked: the caller
// decides what a frame of another version may still say.
inline FrameHead readHead(ByteReader& in) {
  if (in.u32() != kFrameMagic) throw Malformed("not an axon store frame (wrong magic)");
  FrameHead h;
  h.version = in.u16();
  h.id = in.u32();
  h.code = in.u8();
  return h;
}

// The length word at the start of `buffered` (at least 4 bytes): the bytes of the frame after it.
inline std::uint32_t lengthWord(std::string_view buffered) {
  std::uint32_t len;
  std::memcpy(&len, buffered.data(), 4);
  return len;
}

// Checks the length word at the start of `buffered`: how many bytes the whole frame takes, or 0
// while it is not all there. Throws Malformed for a length that no frame may have, or above
// `maxLen` (kMaxHelloFrame before a connection has proven the job key).
inline std::size_t completeFrameBytes(std::string_view buffered, std::uint32_t maxLen = kMaxFrame) {
  if (buffered.size() < 4) return 0;
  const std::uint32_t len = lengthWord(buffered);
  if (len > maxLen) throw Malformed("a frame of " + std::to_string(len) + " bytes (the most is " + std::to_string(maxLen) + ")");
  if (len < kFrameHeaderBytes - 4) throw Malformed("a frame of " + std::to_string(len) + " bytes is shorter than its header");
  return buffered.size() >= 4 + std::size_t{len} ? 4 + std::size_t{len} : 0;
}

}  // namespace axon::wire
