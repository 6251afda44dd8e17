// Framing of the key-value store protocol: little helpers to append and read fields.
// A frame is [u32 length of the rest][u32 request id][u8 op][fields]; strings are [u32 n][bytes].
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace axon::wire {

enum class Op : std::uint8_t { Hello = 1, Set, Get, Check, Add, Del, Bye };
enum class Status : std::uint8_t { Ok = 0, PeerGone = 1, BadRequest = 2 };

class Writer {
 public:
  explicit Writer(std::uint32_t id, std::uint8_t op) {
    buf_.resize(4);
    u32(id);
    u8(op);
  }
  Writer& u8(std::uint8_t v) { return raw(&v, 1); }
  Writer& u32(std::uint32_t v) { return raw(&v, 4); }
  Writer& i64(std::int64_t v) { return raw(&v, 8); }
  Writer& str(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    return raw(s.data(), s.size());
  }
  // The finished frame, with its length filled in.
  const std::string& frame() {
    std::uint32_t n = static_cast<std::uint32_t>(buf_.size() - 4);
    std::memcpy(buf_.data(), &n, 4);
    return buf_;
  }

 private:
  Writer& raw(const void* p, std::size_t n) {
    buf_.append(static_cast<const char*>(p), n);
    return *this;
  }
  std::string buf_;
};

// Reads fields from one frame body (without the length word); throws std::out_of_range when
// the frame is shorter than its fields say, which the server answers with BadRequest.
class Reader {
 public:
  explicit Reader(std::string_view body) : body_(body) {}
  std::uint8_t u8() { return get<std::uint8_t>(); }
  std::uint32_t u32() { return get<std::uint32_t>(); }
  std::int64_t i64() { return get<std::int64_t>(); }
  std::string str() {
    std::uint32_t n = u32();
    need(n);
    std::string s(body_.substr(pos_, n));
    pos_ += n;
    return s;
  }

 private:
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, body_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void need(std::size_t n) const {
    if (pos_ + n > body_.size()) throw std::out_of_range("truncated store frame");
  }
  std::string_view body_;
  std::size_t pos_ = 0;
};

// Largest frame either side accepts: keeps a corrupt length word from allocating gigabytes.
constexpr std::uint32_t kMaxFrame = 256u << 20;

}  // namespace axon::wire
