// The job key handshake's frames and checks. See store_handshake.hpp.
#include "bootstrap/store_handshake.hpp"

#include <algorithm>
#include <vector>

#include "core/hmac.hpp"

namespace axon::wire {
namespace {

std::span<const std::uint8_t> asBytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// The claims as they travel, and as both proofs cover them: [nonce C][u32 rank][str build].
std::string signedFields(const HelloClaims& claims) {
  ByteWriter w;
  w.fixed(claims.clientNonce).u32(claims.rank).str(claims.version);
  return w.bytes();
}

Digest proof(const Secret& key, std::string_view label, const Nonce& storeNonce, std::string_view claimed) {
  std::vector<std::uint8_t> transcript;
  transcript.reserve(storeNonce.size() + claimed.size());
  appendTranscript(transcript, storeNonce);
  appendTranscript(transcript, asBytes(claimed));
  return proveKey(key, label, transcript);
}

// The smallest Hello body: header, nonce, rank, an empty build string, proof.
constexpr std::size_t kMinHelloBody = kFrameHeaderBytes - 4 + kNonceBytes + 4 + 4 + kProofBytes;

}  // namespace

std::string encodeGreeting(const Nonce& storeNonce) {
  return Writer(kEventId, static_cast<std::uint8_t>(Status::Greeting)).fixed(storeNonce).frame();
}

std::size_t greetingFrameBytes() { return kFrameHeaderBytes + kNonceBytes; }

Nonce decodeGreeting(std::string_view body, std::uint16_t& version) {
  ByteReader in(body);
  const FrameHead head = readHead(in);
  version = head.version;
  if (head.version != kWireVersion) throw Malformed("a greeting of store protocol version " + std::to_string(head.version));
  if (head.id != kEventId || head.code != static_cast<std::uint8_t>(Status::Greeting) || in.left() != kNonceBytes) {
    throw Malformed("not a store greeting (status " + std::to_string(head.code) + ", " + std::to_string(in.left()) + " bytes)");
  }
  Nonce n{};
  const std::string_view bytes = in.fixed(kNonceBytes);
  std::copy(bytes.begin(), bytes.end(), n.begin());
  return n;
}

std::string encodeHello(std::uint32_t id, const Secret& key, const Nonce& storeNonce, const HelloClaims& claims) {
  const std::string claimed = signedFields(claims);
  Writer w(id, static_cast<std::uint8_t>(Op::Hello));
  w.fixed(asBytes(claimed)).fixed(proof(key, kClientLabel, storeNonce, claimed));
  return w.frame();
}

HelloVerdict checkHello(const Secret& key, const Nonce& storeNonce, std::string_view body) {
  HelloVerdict v;
  if (body.size() < kMinHelloBody || body.size() > kMaxHelloFrame) {
    v.why = "a first frame of " + std::to_string(body.size()) + " bytes is not a Hello";
    return v;
  }
  ByteReader in(body);
  FrameHead head;
  try {
    head = readHead(in);
  } catch (const Malformed& e) {
    v.why = e.what();
    return v;
  }
  v.id = head.id;
  if (head.version != kWireVersion || head.code != static_cast<std::uint8_t>(Op::Hello)) {
    v.why = "a first frame of store protocol version " + std::to_string(head.version) + ", request " +
            std::to_string(head.code) + " (a Hello of version " + std::to_string(kWireVersion) + " was due)";
    return v;
  }
  // The proof first: the bytes it covers are checked as bytes, none of them read as a claim yet.
  const std::string_view fields = in.rest();
  const std::string_view claimed = fields.substr(0, fields.size() - kProofBytes);
  const Digest expected = proof(key, kClientLabel, storeNonce, claimed);
  if (!equalInConstantTime(expected, asBytes(fields.substr(claimed.size())))) {
    v.why = "its Hello did not prove the job key";
    return v;
  }
  try {
    ByteReader c(claimed);
    const std::string_view nonce = c.fixed(kNonceBytes);
    std::copy(nonce.begin(), nonce.end(), v.claims.clientNonce.begin());
    v.claims.rank = c.u32();
    v.claims.version = c.str();
    if (c.left() != 0) throw Malformed(std::to_string(c.left()) + " bytes past the Hello's fields");
  } catch (const Malformed& e) {
    // Proven but malformed: only a holder of the key sends it; still no claim is used.
    v.why = std::string("a proven Hello with corrupt fields (") + e.what() + ")";
    v.claims = {};
    return v;
  }
  v.proven = true;
  v.answer = proof(key, kServerLabel, storeNonce, claimed);
  return v;
}

bool storeProvedKey(const Secret& key, const Nonce& storeNonce, const HelloClaims& claims, std::string_view okFields) {
  if (okFields.size() != kProofBytes) return false;
  const Digest expected = proof(key, kServerLabel, storeNonce, signedFields(claims));
  return equalInConstantTime(expected, asBytes(okFields));
}

}  // namespace axon::wire
