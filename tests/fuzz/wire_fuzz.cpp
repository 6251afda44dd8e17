// libFuzzer target: the store's wire decoder, fed the way the server reads a connection, and the
// decoders of the values that travel through the store.
//
// The input is a byte stream as a client could send it: frames are cut off it with
// completeFrameBytes until it runs out or a length no frame may have comes (StoreServer::consume),
// and each complete frame is read with readHead and decodeStoreRequest (StoreServer::handleFrame).
// The first frame is also what the store reads before anything else: checkHello under a fixed test
// key and store nonce (kFuzzKey, kFuzzNonce; make_seeds proves its Hello seeds with them). A
// mutated Hello no longer proves the key, so each first frame is checked twice: as it came (it
// must be refused unless its proof is right), and with its proof made right by the harness, so
// that the fuzzer explores what the store reads after the proof as well.
// wire::Malformed is the expected refusal; a crash, a sanitizer report, another exception or a
// broken invariant (__builtin_trap) is a finding. The same bytes, and every value a decoded Set or
// Gather carries, are then read as a store value of each kind (bootstrap/blob.hpp), where
// axon::Error is the expected refusal. Both readings check their header first, so an input meant
// for one costs the other a few bytes; no mode byte is needed and real frames and blobs are seeds.
//
// Built two ways (tests/fuzz/CMakeLists.txt): with clang and -fsanitize=fuzzer for `make fuzz`,
// and with the project's compiler and replay_main.cpp as a ctest over tests/fuzz/corpus/wire.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "axon/error.hpp"
#include "bootstrap/blob.hpp"
#include "bootstrap/setup_step.hpp"
#include "bootstrap/store_handshake.hpp"
#include "bootstrap/store_request.hpp"
#include "bootstrap/wire.hpp"
#include "fuzz_key.hpp"

namespace {

using namespace axon;
using namespace axon::wire;

#define FUZZ_CHECK(cond) \
  do {                   \
    if (!(cond)) __builtin_trap(); \
  } while (0)

std::span<const std::uint8_t> bytesOf(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// The bytes an axon client writes for `q` (store_client.cpp's writers, field for field).
std::string encodeRequest(const StoreRequest& q) {
  Writer w(q.head.id, static_cast<std::uint8_t>(q.op), q.head.version);
  switch (q.op) {
    case Op::Hello: w.fixed(bytesOf(q.nonce)).u32(q.rank).str(q.version).fixed(bytesOf(q.proof)); break;
    case Op::Set: w.str(q.keys[0]).str(q.value); break;
    case Op::Get:
    case Op::Check:
      w.u32(static_cast<std::uint32_t>(q.keys.size()));
      for (const auto& k : q.keys) w.str(k);
      break;
    case Op::Add: w.str(q.keys[0]).i64(q.delta); break;
    case Op::Del:
    case Op::GatherMissing: w.str(q.keys[0]); break;
    case Op::Bye: break;
    case Op::Gather: w.str(q.keys[0]).u32(q.members).u32(q.index).str(q.value); break;
  }
  return w.frame();
}

// The readers of the runtime's own kinds live in anonymous namespaces next to their writers
// (runtime/runtime.cpp, runtime/memory_api.cpp, runtime/team.cpp, gpu/cuda_backend.cpp); these read the
// same fields in the same order, so decodeBlob sees what those readers would hand it.
void decodeValue(std::string_view blob) {
  const std::string origin = "the fuzzer's value";
  const std::string owned(blob);
  try {
    StepContribution c = decodeStepContribution(owned, origin);
    // What was read writes back to a value that reads the same (a flag of 0 ignores the code
    // and message that follow it, so the bytes themselves may differ).
    StepContribution again = decodeStepContribution(encodeStepContribution(c), origin);
    FUZZ_CHECK(again.payload == c.payload);
    FUZZ_CHECK(again.failure.has_value() == c.failure.has_value());
    if (c.failure) {
      FUZZ_CHECK(static_cast<int>(c.failure->code) < 0);
      FUZZ_CHECK(static_cast<int>(c.failure->code) >= static_cast<int>(ErrorCode::Cuda));
      FUZZ_CHECK(again.failure->code == c.failure->code && again.failure->message == c.failure->message);
    }
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == ErrorCode::Bootstrap);
  }
  try {
    const std::uint64_t v = readWordBlob(blob, origin);
    FUZZ_CHECK(wordBlob(v) == blob);  // a word has one encoding
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == ErrorCode::Bootstrap);
  }
  try {
    const std::string s = readTextBlob(blob, origin);
    FUZZ_CHECK(textBlob(s) == blob);  // and so has a text
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == ErrorCode::Bootstrap);
  }
  try {  // PeerCard: [str host][str pid namespace][i64 pid][str segment][u64 mapped]
    decodeBlob(blob, BlobKind::PeerCard, origin, [](ByteReader& in) {
      std::string host = in.str(), ns = in.str();
      const std::int64_t pid = in.i64();
      if (pid <= 0 || pid > std::numeric_limits<std::int32_t>::max()) throw Malformed("a pid of " + std::to_string(pid));
      std::string segment = in.str();
      return std::pair{host.size() + ns.size() + segment.size(), in.u64()};
    });
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == ErrorCode::Bootstrap);
  }
  try {  // HeapCall: [u8 op 1|2][u8 heap 0|1][u64 bytes][u64 alignment][u64 offset][u64 mapped]
    decodeBlob(blob, BlobKind::HeapCall, origin, [](ByteReader& in) {
      const std::uint8_t op = in.u8(), heap = in.u8();
      if (op != 1 && op != 2) throw Malformed("a heap call of type " + std::to_string(op));
      if (heap > 1) throw Malformed("a heap of kind " + std::to_string(heap));
      std::uint64_t sum = in.u64();
      sum += in.u64();
      sum += in.u64();
      sum += in.u64();
      return sum;
    });
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == ErrorCode::Bootstrap);
  }
  try {  // TeamSplit: [i32 start][i32 stride][i32 size][u64 team slots in use]
    decodeBlob(blob, BlobKind::TeamSplit, origin, [](ByteReader& in) {
      const std::int32_t start = in.i32(), stride = in.i32(), size = in.i32();
      return std::pair{static_cast<std::int64_t>(start) + stride + size, in.u64()};
    });
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == ErrorCode::Bootstrap);
  }
  try {  // GpuCard: [str channel address][str PCI bus id]
    decodeBlob(blob, BlobKind::GpuCard, origin, [](ByteReader& in) {
      std::string a = in.str();
      return std::pair{a, in.str()};
    });
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == ErrorCode::Bootstrap);
  }
}

// One frame body (the bytes after the length word), as StoreServer::handleFrame reads it. Returns
// false where the server closes the connection (a header it cannot read).
bool decodeFrame(std::string_view frame) {
  ByteReader in(frame);
  FrameHead head;
  try {
    head = readHead(in);
  } catch (const Malformed&) {
    return false;
  }
  StoreRequest q;
  try {
    q = decodeStoreRequest(head, in.rest());
  } catch (const Malformed&) {
    // Answered with BadRequest; the stream goes on. Only a frame of this version is refused.
    FUZZ_CHECK(head.version == kWireVersion);
    return true;
  }
  FUZZ_CHECK(q.head.version == head.version && q.head.id == head.id && q.head.code == head.code);
  if (q.foreign) {
    FUZZ_CHECK(head.version != kWireVersion);
    FUZZ_CHECK(q.keys.empty() && q.value.empty());
    return true;
  }
  FUZZ_CHECK(head.version == kWireVersion);
  FUZZ_CHECK(static_cast<std::uint8_t>(q.op) == head.code);
  FUZZ_CHECK(q.op >= Op::Hello && q.op <= Op::GatherMissing);
  switch (q.op) {  // the server indexes keys[0] for these without looking
    case Op::Set:
    case Op::Add:
    case Op::Del:
    case Op::Gather:
    case Op::GatherMissing: FUZZ_CHECK(q.keys.size() == 1); break;
    case Op::Get:
    case Op::Check: FUZZ_CHECK(q.keys.size() <= frame.size() / 4); break;
    case Op::Hello:
      FUZZ_CHECK(q.nonce.size() == kNonceBytes && q.proof.size() == kProofBytes);
      FUZZ_CHECK(q.keys.empty());
      break;
    case Op::Bye: FUZZ_CHECK(q.keys.empty()); break;
  }
  // Every byte was a field (leftovers are refused) and every field has one encoding, so
  // writing the request again gives the frame back.
  const std::string again = encodeRequest(q);
  FUZZ_CHECK(again.size() == frame.size() + 4 && std::string_view(again).substr(4) == frame);
  // What a Set or Gather stores is what clients later read as a value.
  if (q.op == Op::Set || q.op == Op::Gather) decodeValue(q.value);
  return true;
}

// The store's check of a connection's first frame (StoreServer::handleFirstFrame): it never
// throws, and proves only what carries the right proof.
void checkFirstFrame(std::string_view body) {
  const Secret& key = fuzzKey();
  HelloVerdict as;
  try {
    as = checkHello(key, kFuzzNonce, body);
  } catch (...) {
    FUZZ_CHECK(false);
  }
  // The same frame with the proof a holder of the key would send for its claims.
  if (body.size() < kFrameHeaderBytes - 4 + kProofBytes || body.size() > kMaxHelloFrame) {
    FUZZ_CHECK(!as.proven);
    return;
  }
  const std::size_t head = kFrameHeaderBytes - 4;
  const std::string_view claimed = body.substr(head, body.size() - head - kProofBytes);
  std::vector<std::uint8_t> transcript(kFuzzNonce.begin(), kFuzzNonce.end());
  appendTranscript(transcript, bytesOf(claimed));
  const Digest proof = proveKey(key, kClientLabel, transcript);
  std::string signedBody(body.substr(0, body.size() - kProofBytes));
  signedBody.append(reinterpret_cast<const char*>(proof.data()), proof.size());
  HelloVerdict v;
  try {
    v = checkHello(key, kFuzzNonce, signedBody);
  } catch (...) {
    FUZZ_CHECK(false);
  }
  FUZZ_CHECK(as.proven == (v.proven && signedBody == body));
  if (!v.proven) return;
  // Proven: a Hello of this version whose claims are exactly its fields.
  ByteReader in(signedBody);
  const FrameHead h = readHead(in);
  FUZZ_CHECK(h.version == kWireVersion && h.code == static_cast<std::uint8_t>(Op::Hello) && h.id == v.id);
  const StoreRequest q = decodeStoreRequest(h, in.rest());  // proven fields decode (no throw)
  FUZZ_CHECK(q.rank == v.claims.rank && q.version == v.claims.version);
  FUZZ_CHECK(q.nonce == std::string_view(reinterpret_cast<const char*>(v.claims.clientNonce.data()), kNonceBytes));
  // The client that sent it accepts the store's answer, and writes the same frame.
  FUZZ_CHECK(storeProvedKey(key, kFuzzNonce, v.claims, std::string_view(reinterpret_cast<const char*>(v.answer.data()), kProofBytes)));
  const std::string again = encodeHello(v.id, key, kFuzzNonce, v.claims);
  FUZZ_CHECK(std::string_view(again).substr(4) == signedBody);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    if (const std::size_t n = completeFrameBytes(bytes, kMaxHelloFrame)) checkFirstFrame(bytes.substr(4, n - 4));
  } catch (const Malformed&) {
    // A first frame longer than a Hello: the store drops the connection before reading it.
  }
  std::size_t used = 0;
  try {
    while (std::size_t n = completeFrameBytes(bytes.substr(used))) {
      FUZZ_CHECK(n >= kFrameHeaderBytes && n <= bytes.size() - used);
      if (!decodeFrame(bytes.substr(used + 4, n - 4))) break;
      used += n;
    }
  } catch (const Malformed&) {
    // A length no frame may have: the server closes the connection.
  }
  decodeValue(bytes);
  return 0;
}
