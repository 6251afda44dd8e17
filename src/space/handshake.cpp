// The staging space's key handshake (handshake.hpp).
#include "space/handshake.hpp"

#include <cstring>

namespace axon::space::handshake {

namespace {

void appendBytes(std::string& out, std::span<const std::uint8_t> bytes) {
  out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

}  // namespace

std::string greeting(const Nonce& serverNonce) {
  std::string out = protocol::begin(protocol::Op::Greeting, 0).bytes();
  appendBytes(out, serverNonce);
  return out;
}

std::optional<Nonce> readGreeting(std::string_view message) {
  if (message.size() != kGreetingBytes) return std::nullopt;
  try {
    wire::ByteReader r(message);
    if (protocol::readHead(r).op != protocol::Op::Greeting) return std::nullopt;
  } catch (const wire::Malformed&) {
    return std::nullopt;
  }
  Nonce n;
  std::memcpy(n.data(), message.data() + protocol::kHeadBytes, n.size());
  return n;
}

Proofs prove(const Secret& key, protocol::Op op, const Nonce& serverNonce, const Nonce& clientNonce,
             std::string_view claims) {
  std::vector<std::uint8_t> transcript;
  transcript.reserve(2 * sizeof(Nonce) + 2 + claims.size());
  appendTranscript(transcript, serverNonce);
  appendTranscript(transcript, clientNonce);
  const auto code = static_cast<std::uint16_t>(op);
  transcript.push_back(static_cast<std::uint8_t>(code & 0xff));
  transcript.push_back(static_cast<std::uint8_t>(code >> 8));
  appendTranscript(transcript, claims);
  return Proofs{proveKey(key, kClientLabel, transcript), proveKey(key, kServerLabel, transcript)};
}

std::string opening(protocol::Op op, const Secret& key, const Nonce& serverNonce, const std::string& claims,
                    Digest& expectServer) {
  const Nonce clientNonce = makeNonce();
  const Proofs p = prove(key, op, serverNonce, clientNonce, claims);
  expectServer = p.server;
  std::string out = protocol::begin(op, 0).bytes();
  appendBytes(out, clientNonce);
  appendBytes(out, p.client);
  out += claims;
  return out;
}

Opening readOpening(std::string_view message) {
  Opening o;
  wire::ByteReader r(message);
  o.head = protocol::readHead(r);
  if (message.size() < kOpeningBytes) {
    throw wire::Malformed("an opening of " + std::to_string(message.size()) + " bytes (at least " +
                          std::to_string(kOpeningBytes) + ")");
  }
  const char* at = message.data() + protocol::kHeadBytes;
  std::memcpy(o.clientNonce.data(), at, o.clientNonce.size());
  std::memcpy(o.proof.data(), at + o.clientNonce.size(), o.proof.size());
  o.claims = message.substr(kOpeningBytes);
  return o;
}

bool sameProof(const Digest& a, std::span<const std::uint8_t> b) { return equalInConstantTime(a, b); }

void writeProof(wire::ByteWriter& w, const Digest& proof) {
  for (std::uint8_t b : proof) w.u8(b);
}

Digest readProof(wire::ByteReader& r) {
  Digest d;
  for (std::uint8_t& b : d) b = r.u8();
  return d;
}

}  // namespace axon::space::handshake
