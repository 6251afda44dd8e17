// The two cryptographic primitives axon's handshakes need: HMAC-SHA-256 and random bytes.
//
// HMAC comes from the system's libcrypto (OpenSSL 3 or 1.1), loaded at first use as the CUDA
// driver is: every Linux with Python has it, and a hand-written hash would be one more thing to
// get wrong. Random bytes come from the kernel (getrandom). Both throw axon::Error(Internal /
// Unsupported) with the reason, never a weak fallback.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace axon {

using Digest = std::array<std::uint8_t, 32>;

// HMAC-SHA-256 of `message` under `key` (RFC 2104). Thread-safe.
Digest hmacSha256(std::span<const std::uint8_t> key, std::span<const std::uint8_t> message);

// Fills `out` with bytes from the kernel's random source.
void randomBytes(std::span<std::uint8_t> out);

// True when a and b hold the same bytes; the time taken depends only on the sizes, so a
// stranger cannot learn a proof byte by byte from how fast it is refused.
bool equalInConstantTime(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b);

}  // namespace axon
