// libFuzzer target: what a staging server reads of a connection before the connection has proved
// the space's key, and what a connecting side reads of the server's first messages
// (space/handshake.hpp; server_gate.cpp, server_membership.cpp's hello and join,
// client_connection.cpp's greeting and hello reply).
//
// The input is one message, read three ways: as a greeting (a nonce, or refused), as an opening
// (the gate's fixed part, the proof checked under a fixed key over a fixed server nonce, and the
// claims read as a Hello's and a Join's only when the proof holds, as the server does), and as the
// server's answer to a Hello (status, message, proof, then the space). wire::Malformed is the
// expected refusal; a crash, a sanitizer report, another exception or a broken invariant
// (__builtin_trap) is a finding. The seeds (tests/fuzz/corpus/space_handshake, seed-*) were written
// once by hand, their proofs with Python's hmac (an independent check of the format): a greeting,
// a Hello and a Join proved under the fixed key (so the claims are reached), a wrong proof, a
// Define sent first, a Hello's answer and a refusal.
//
// Built two ways (tests/fuzz/CMakeLists.txt): with clang and -fsanitize=fuzzer for `make fuzz`,
// and with the project's compiler and replay_main.cpp as a ctest over the corpus.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "bootstrap/wire.hpp"
#include "space/handshake.hpp"
#include "space/protocol.hpp"

namespace {

using namespace axon;
using namespace axon::space;

#define FUZZ_CHECK(cond) \
  do {                   \
    if (!(cond)) __builtin_trap(); \
  } while (0)

// The seeds' key (64 hex digits of 0x11) and server nonce (32 bytes of 0x22).
const Secret& fuzzKey() {
  static const Secret key = Secret::fromHex(std::string(64, '1'), "fuzz key");
  return key;
}
Nonce fuzzNonce() {
  Nonce n;
  n.fill(0x22);
  return n;
}

void readAsOpening(std::string_view message) {
  handshake::Opening o;
  try {
    o = handshake::readOpening(message);
  } catch (const wire::Malformed&) {
    return;
  }
  FUZZ_CHECK(message.size() >= handshake::kOpeningBytes);
  FUZZ_CHECK(o.claims.size() == message.size() - handshake::kOpeningBytes);
  const handshake::Proofs p = handshake::prove(fuzzKey(), o.head.op, fuzzNonce(), o.clientNonce, o.claims);
  FUZZ_CHECK(!handshake::sameProof(p.client, p.server));  // the two labels never give one proof
  if (handshake::sameProof(p.client, o.proof)) {
    try {  // a Hello's claims, as Membership::hello reads them
      wire::ByteReader r(o.claims);
      r.str();
      r.str();
      r.u32();
    } catch (const wire::Malformed&) {
    }
    try {  // a Join's
      wire::ByteReader r(o.claims);
      r.str();
    } catch (const wire::Malformed&) {
    }
  }
  // What a connecting side writes with these claims reads back, and proves, the same.
  Digest expect{};
  const std::string again =
      handshake::opening(protocol::Op::Hello, fuzzKey(), fuzzNonce(), std::string(o.claims), expect);
  const handshake::Opening back = handshake::readOpening(again);
  FUZZ_CHECK(back.head.op == protocol::Op::Hello && back.claims == o.claims);
  const handshake::Proofs q = handshake::prove(fuzzKey(), protocol::Op::Hello, fuzzNonce(), back.clientNonce, back.claims);
  FUZZ_CHECK(handshake::sameProof(q.client, back.proof) && handshake::sameProof(q.server, expect));
}

void readAsHelloReply(std::string_view message) {
  try {
    wire::ByteReader r(message);
    protocol::readHead(r);
    if (r.i32() != 0) {
      r.str();
      return;
    }
    r.str();
    handshake::readProof(r);
    r.u32();
    r.u32();
    r.u64();
    r.str();
    r.str();
    r.u64();
    const std::uint32_t n = r.count(4);
    for (std::uint32_t i = 0; i < n; ++i) r.str();
  } catch (const wire::Malformed&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view message(reinterpret_cast<const char*>(data), size);
  if (auto nonce = handshake::readGreeting(message)) FUZZ_CHECK(size == handshake::kGreetingBytes);
  readAsOpening(message);
  readAsHelloReply(message);
  return 0;
}
