// float16 and bfloat16 <-> float32 on the host, round to nearest even: for filling and reading
// buffers of those types (axon::DataType::Float16, BFloat16), and for the library's own host
// reductions. NaN stays NaN, infinities and subnormals convert exactly.
#pragma once

#include <bit>
#include <cstdint>

namespace axon {

inline float bf16ToFloat(std::uint16_t h) { return std::bit_cast<float>(std::uint32_t{h} << 16); }

inline std::uint16_t floatToBf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

inline float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    // Subnormal: value = mant * 2^-24, exact in float.
    float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline std::uint16_t floatToHalf(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;              // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;             // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {                                   // below 2^-14: subnormal or zero
    // Scale so that the half subnormal's unit (2^-24) becomes 1, then round to nearest even.
    const float scaled = std::bit_cast<float>(abs) * 0x1p24f;
    std::uint32_t m = static_cast<std::uint32_t>(scaled);
    const float rest = scaled - static_cast<float>(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1u))) ++m;
    return sign | static_cast<std::uint16_t>(m);              // m == 0x400 is the smallest normal
  }
  // Normal: drop 13 mantissa bits with round to nearest even; a carry may bump the exponent.
  std::uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);
  return sign | static_cast<std::uint16_t>((r - (112u << 23)) >> 13);
}

}  // namespace axon
