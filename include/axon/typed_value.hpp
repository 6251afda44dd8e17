// Element i of a buffer of any collective data type (axon::DataType), read or written as a double
// (exact for small integers): for filling and checking buffers on the host, in programs, tests and
// benchmarks. Not for arithmetic: a double does not hold every 64-bit integer.
#pragma once

#include <axon/collectives.hpp>

#include <cstdint>
#include <cstring>

#include <axon/half.hpp>

namespace axon {

inline void storeAt(DataType t, void* buf, std::size_t i, double v) {
  char* p = static_cast<char*>(buf) + i * dataTypeSize(t);
  auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (t) {
    case DataType::Int8: put(static_cast<std::int8_t>(v)); break;
    case DataType::Uint8: put(static_cast<std::uint8_t>(v)); break;
    case DataType::Int32: put(static_cast<std::int32_t>(v)); break;
    case DataType::Uint32: put(static_cast<std::uint32_t>(v)); break;
    case DataType::Int64: put(static_cast<std::int64_t>(v)); break;
    case DataType::Uint64: put(static_cast<std::uint64_t>(v)); break;
    case DataType::Float16: put(floatToHalf(static_cast<float>(v))); break;
    case DataType::BFloat16: put(floatToBf16(static_cast<float>(v))); break;
    case DataType::Float32: put(static_cast<float>(v)); break;
    case DataType::Float64: put(v); break;
  }
}

inline double loadAt(DataType t, const void* buf, std::size_t i) {
  const char* p = static_cast<const char*>(buf) + i * dataTypeSize(t);
  auto get = [&](auto x) { std::memcpy(&x, p, sizeof x); return static_cast<double>(x); };
  switch (t) {
    case DataType::Int8: return get(std::int8_t{});
    case DataType::Uint8: return get(std::uint8_t{});
    case DataType::Int32: return get(std::int32_t{});
    case DataType::Uint32: return get(std::uint32_t{});
    case DataType::Int64: return get(std::int64_t{});
    case DataType::Uint64: return get(std::uint64_t{});
    case DataType::Float16: { std::uint16_t h; std::memcpy(&h, p, 2); return halfToFloat(h); }
    case DataType::BFloat16: { std::uint16_t h; std::memcpy(&h, p, 2); return bf16ToFloat(h); }
    case DataType::Float32: return get(float{});
    case DataType::Float64: return get(double{});
  }
  return 0;
}

}  // namespace axon
