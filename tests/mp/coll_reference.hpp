// Inputs and expected results of the collective tests, computed independently of the library's
// reduction code: every PE can generate every other PE's input, so each checks its own output
// against a reference built from all inputs.
//  - integers: full-range values; sums and products wrap in the unsigned type, as NumPy's do;
//  - floats: small integers (sum, min, max) and +-1, +-2 (prod), so every order of reduction is
//    exact in float16 and bfloat16 too and results compare equal.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "axon/collectives.hpp"
#include "axon/half.hpp"

namespace axon::test {

inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline bool isFloat(DataType t) {
  return t == DataType::Float16 || t == DataType::BFloat16 || t == DataType::Float32 || t == DataType::Float64;
}
inline bool isSigned(DataType t) {
  return t == DataType::Int8 || t == DataType::Int32 || t == DataType::Int64;
}

// A value of element i of PE pe's input, as a double (floats) or raw 64 bits (integers).
struct Value {
  double f;
  std::uint64_t bits;
};

inline Value inputValue(DataType t, ReduceOp op, std::uint64_t seed, int pe, std::size_t i) {
  const std::uint64_t h = mix(seed ^ mix(static_cast<std::uint64_t>(pe) * 1000003u + i));
  if (!isFloat(t)) return {0, h};
  switch (op) {
    case ReduceOp::Prod: {
      const double mags[] = {1, 2};
      return {((h >> 8) & 1 ? -1 : 1) * mags[h & 1], 0};
    }
    case ReduceOp::Sum: return {static_cast<double>(static_cast<int>(h % 17) - 8), 0};
    default: return {static_cast<double>(static_cast<int>(h % 201) - 100), 0};
  }
}

inline void storeValue(DataType t, void* buf, std::size_t i, Value v) {
  char* p = static_cast<char*>(buf) + i * dataTypeSize(t);
  switch (t) {
    case DataType::Float16: { std::uint16_t x = floatToHalf(static_cast<float>(v.f)); std::memcpy(p, &x, 2); break; }
    case DataType::BFloat16: { std::uint16_t x = floatToBf16(static_cast<float>(v.f)); std::memcpy(p, &x, 2); break; }
    case DataType::Float32: { float x = static_cast<float>(v.f); std::memcpy(p, &x, 4); break; }
    case DataType::Float64: std::memcpy(p, &v.f, 8); break;
    default: std::memcpy(p, &v.bits, dataTypeSize(t)); break;  // little-endian: the low bytes
  }
}

inline Value loadValue(DataType t, const void* buf, std::size_t i) {
  const char* p = static_cast<const char*>(buf) + i * dataTypeSize(t);
  switch (t) {
    case DataType::Float16: { std::uint16_t x; std::memcpy(&x, p, 2); return {halfToFloat(x), 0}; }
    case DataType::BFloat16: { std::uint16_t x; std::memcpy(&x, p, 2); return {bf16ToFloat(x), 0}; }
    case DataType::Float32: { float x; std::memcpy(&x, p, 4); return {x, 0}; }
    case DataType::Float64: { double x; std::memcpy(&x, p, 8); return {x, 0}; }
    default: {
      std::uint64_t x = 0;
      std::memcpy(&x, p, dataTypeSize(t));
      return {0, x};
    }
  }
}

// Sign-extends the low `bytes` of v.
inline std::int64_t asSigned(std::uint64_t v, std::size_t bytes) {
  const int shift = 64 - static_cast<int>(bytes) * 8;
  return static_cast<std::int64_t>(v << shift) >> shift;
}

inline Value combine(DataType t, ReduceOp op, Value a, Value b) {
  if (isFloat(t)) {
    switch (op) {
      case ReduceOp::Sum: return {a.f + b.f, 0};
      case ReduceOp::Prod: return {a.f * b.f, 0};
      case ReduceOp::Min: return {a.f < b.f ? a.f : b.f, 0};
      case ReduceOp::Max: return {a.f > b.f ? a.f : b.f, 0};
    }
  }
  const std::size_t bytes = dataTypeSize(t);
  const std::uint64_t mask = bytes == 8 ? ~0ull : ((1ull << (bytes * 8)) - 1);
  const std::uint64_t x = a.bits & mask, y = b.bits & mask;
  bool less = isSigned(t) ? asSigned(x, bytes) < asSigned(y, bytes) : x < y;
  switch (op) {
    case ReduceOp::Sum: return {0, (x + y) & mask};
    case ReduceOp::Prod: return {0, (x * y) & mask};
    case ReduceOp::Min: return {0, less ? x : y};
    case ReduceOp::Max: return {0, less ? y : x};
  }
  return a;
}

inline bool sameValue(DataType t, Value a, Value b) {
  if (isFloat(t)) return a.f == b.f;
  const std::size_t bytes = dataTypeSize(t);
  const std::uint64_t mask = bytes == 8 ? ~0ull : ((1ull << (bytes * 8)) - 1);
  return (a.bits & mask) == (b.bits & mask);
}

// The reduction over all PEs of element i.
inline Value reduced(DataType t, ReduceOp op, std::uint64_t seed, int npes, std::size_t i) {
  Value acc = inputValue(t, op, seed, 0, i);
  for (int pe = 1; pe < npes; ++pe) acc = combine(t, op, acc, inputValue(t, op, seed, pe, i));
  return acc;
}

inline std::vector<char> inputBuffer(DataType t, ReduceOp op, std::uint64_t seed, int pe, std::size_t count) {
  std::vector<char> buf(count * dataTypeSize(t) + 1);
  for (std::size_t i = 0; i < count; ++i) storeValue(t, buf.data(), i, inputValue(t, op, seed, pe, i));
  return buf;
}

}  // namespace axon::test
