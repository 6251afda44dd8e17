// How a connection to a staging server proves the space's key (docs/security.md, "Staging
// space"), the same shape as the bootstrap store's: the server speaks first, with a Greeting of
// fixed size that carries its nonce; the connecting side (a client's Hello, a server's Join)
// answers with its own nonce, a proof of the key over both nonces, the request's op and its claims
// (build, node, pid; a joining server's address), and then the claims; the server checks the
// proof before it reads a claim, and its reply carries the server's proof over the same
// transcript, which the connecting side checks in turn (it reached the real space, not a program
// that took the port). The key itself never travels.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "bootstrap/wire.hpp"
#include "core/secret.hpp"
#include "space/protocol.hpp"

namespace axon::space::handshake {

inline constexpr std::string_view kClientLabel = "axon-space/1 client";
inline constexpr std::string_view kServerLabel = "axon-space/1 server";
inline constexpr std::size_t kGreetingBytes = protocol::kHeadBytes + sizeof(Nonce);
inline constexpr std::size_t kProofBytes = sizeof(Digest);
// An opening (Hello, Join) before its claims: head, the connecting side's nonce, its proof.
inline constexpr std::size_t kOpeningBytes = protocol::kHeadBytes + sizeof(Nonce) + kProofBytes;

// The server's first message on a connection it accepted.
std::string greeting(const Nonce& serverNonce);
// The server's nonce from a greeting; nullopt when the message is no greeting of this protocol.
std::optional<Nonce> readGreeting(std::string_view message);

// Both sides' proofs for one connection: over the server's and the client's nonces, the opening's
// op (a Hello's proof is no Join's) and the claims as they travel.
struct Proofs {
  Digest client{};
  Digest server{};
};
Proofs prove(const Secret& key, protocol::Op op, const Nonce& serverNonce, const Nonce& clientNonce,
             std::string_view claims);

// An opening message: `claims` are the fields of the request (without a head), proved under `key`.
// `expectServer` receives the proof the server's reply must carry.
std::string opening(protocol::Op op, const Secret& key, const Nonce& serverNonce, const std::string& claims,
                    Digest& expectServer);

// An opening as it arrived: throws wire::Malformed when it is too short to hold one.
struct Opening {
  protocol::Head head;
  Nonce clientNonce{};
  Digest proof{};
  std::string_view claims;  // into the message
};
Opening readOpening(std::string_view message);

bool sameProof(const Digest& a, std::span<const std::uint8_t> b);

// A proof as a reply's first field.
void writeProof(wire::ByteWriter& w, const Digest& proof);
Digest readProof(wire::ByteReader& r);  // throws wire::Malformed when the reply is too short

}  // namespace axon::space::handshake
