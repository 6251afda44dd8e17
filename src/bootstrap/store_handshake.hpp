// The job key handshake that opens every connection to the store (docs/security.md, "Job key").
//
//   store  -> client  Greeting  [nonce S]                                 (fixed size, unasked)
//   client -> store   Hello     [nonce C][u32 rank][str build][proof P]   (at most kMaxHelloFrame)
//   store  -> client  Ok        [proof Q]   or Refused [str why], then the store closes
//
// P = proveKey(key, kClientLabel, S | C | rank | build) and Q the same with kServerLabel: the key
// never travels, a proof is good for one connection only (S is fresh), and the client knows that
// it reached its own job's store. The store checks P, in constant time, before it reads any claim
// of the Hello: a stranger's rank or build string never reaches the job's state.
//
// Pure functions over bytes, so that unit tests and the fuzz target (tests/fuzz/wire_fuzz.cpp)
// run them without sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bootstrap/wire.hpp"
#include "core/secret.hpp"

namespace axon::wire {

inline constexpr std::string_view kClientLabel = "axon-store/1 client";
inline constexpr std::string_view kServerLabel = "axon-store/1 server";

// The greeting frame the store sends first (request id 0, status Greeting).
std::string encodeGreeting(const Nonce& storeNonce);
// The nonce of a greeting frame's body (the bytes after its length word). Throws Malformed when it
// is not a greeting of this wire version; `version` is set to the version the frame claims (when
// it has a header at all), so that the caller can name another build's protocol.
Nonce decodeGreeting(std::string_view body, std::uint16_t& version);
// The size of the whole greeting frame, length word included.
std::size_t greetingFrameBytes();

// What a Hello claims, once proven.
struct HelloClaims {
  Nonce clientNonce{};
  std::uint32_t rank = 0;
  std::string version;
};

// The client's Hello frame for `claims`, proven under `key` for the store's nonce.
std::string encodeHello(std::uint32_t id, const Secret& key, const Nonce& storeNonce, const HelloClaims& claims);

// What the store makes of a connection's first frame.
struct HelloVerdict {
  bool proven = false;
  std::uint32_t id = 0;       // the request id to answer (0 when the header could not be read)
  std::string why;            // when not proven: for the log (never sent to the client in full)
  HelloClaims claims;         // when proven
  Digest answer{};            // when proven: the store's own proof Q, for the Ok reply
};
// Checks the proof of a Hello frame body (the bytes after the length word) before reading anything
// it claims. Never throws for what a client sends.
HelloVerdict checkHello(const Secret& key, const Nonce& storeNonce, std::string_view body);

// The client's check of the store's answer Q (the Ok reply's fields). False when the store did
// not prove the key for this connection.
bool storeProvedKey(const Secret& key, const Nonce& storeNonce, const HelloClaims& claims, std::string_view okFields);

}  // namespace axon::wire
