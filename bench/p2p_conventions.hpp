// What the point-to-point tests of axon_bench and its comparison peers agree on, so that every
// implementation runs the same iterations and sends the same bytes: OSU's window and default
// iteration counts, and the pattern each transfer carries for validation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace axon::bench {

constexpr int kWindow = 64;                  // messages per window (osu_bw's default)
constexpr std::size_t kLargeMessage = 8192;  // OSU: above this, fewer iterations

// -i counts windows for the windowed tests and messages for the others (as OSU does).
inline long defaultIters(bool windowed, std::size_t bytes) {
  if (windowed) return bytes > kLargeMessage ? 20 : 100;
  return bytes > kLargeMessage ? 1000 : 10000;
}

inline long defaultWarmup(bool windowed, std::size_t bytes) {
  if (windowed) return bytes > kLargeMessage ? 2 : 10;
  return bytes > kLargeMessage ? 10 : 100;
}

constexpr long kPoison = -7;  // the pattern a receiver clears its buffer with before each size

// The byte at `i` of the transfer that `sender` makes at iteration `iter` of size `bytes`.
inline unsigned char patternByte(std::size_t i, std::size_t bytes, long iter, int sender) {
  std::uint64_t x = i * 0x9E3779B1u + bytes * 131u + static_cast<std::uint64_t>(iter) * 31u +
                    static_cast<std::uint64_t>(sender) * 17u + 1u;
  return static_cast<unsigned char>(x ^ (x >> 11) ^ (x >> 23));
}

}  // namespace axon::bench
