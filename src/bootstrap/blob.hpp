// Values the runtime exchanges through the store (what each PE contributes to a rendezvous):
// [u32 magic][u16 format version][u16 kind][fields]. A value from another axon build, or one meant
// for another step, is refused with a message naming who wrote it and what was wrong, never read
// past its end or taken for something else.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "axon/error.hpp"
#include "bootstrap/wire.hpp"

namespace axon::wire {

constexpr std::uint32_t kBlobMagic = 0x42584178u;  // "xAXB" in memory
constexpr std::uint16_t kBlobVersion = 1;

// What a value holds; a reader names the kind it expects.
enum class BlobKind : std::uint16_t {
  Step = 1,   // a set-up step's outcome wrapping its payload (bootstrap/setup_step.hpp)
  PeerCard,   // init: host identity, pid, heap segment (runtime/runtime.cpp)
  HeapCall,   // an allocation call (runtime/memory_api.cpp)
  TeamSplit,  // team_split_strided's arguments and free slots (runtime/team.cpp)
  GpuCard,    // the GPU backend's start-up card (gpu/cuda_backend.cpp)
  Word,       // one 64-bit number
  Text,       // one string
  NetworkCard,   // the network transport's start-up card (transport/network_setup.cpp)
  Registration,  // where a heap is registered with the network transport (transport/ucx/ucx_registry.cpp)
  CollRegion,    // a leader's network collective workspace: region number and registration (coll/net_workspace.cpp)
};

class BlobWriter : public ByteWriter {
 public:
  explicit BlobWriter(BlobKind kind) {
    u32(kBlobMagic);
    u16(kBlobVersion);
    u16(static_cast<std::uint16_t>(kind));
  }
  std::string take() { return std::move(buf_); }
};

// Checks the header of `blob` and hands a reader over its fields to `read`, which must consume
// them all. Any fault (wrong magic, another format version or kind, a field past the end, bytes
// left over, or a value `read` rejects by throwing Malformed) throws Error(Bootstrap) naming
// `origin` ("PE 3's contribution to 'heap' (round 7)").
template <class Read>
auto decodeBlob(std::string_view blob, BlobKind kind, const std::string& origin, Read&& read) {
  auto fail = [&](const std::string& why) {
    return Error(ErrorCode::Bootstrap, "malformed store value: " + origin + " " + why);
  };
  ByteReader in(blob);
  try {
    if (in.left() < 8 || in.u32() != kBlobMagic) {
      throw fail("is not an axon store value (" + std::to_string(blob.size()) + " bytes, wrong magic)");
    }
    const std::uint16_t version = in.u16();
    if (version != kBlobVersion) {
      throw fail("has format version " + std::to_string(version) + " but this axon reads version " +
                 std::to_string(kBlobVersion) + ": every PE must run the same axon build");
    }
    const std::uint16_t got = in.u16();
    if (got != static_cast<std::uint16_t>(kind)) {
      throw fail("holds a value of kind " + std::to_string(got) + " where kind " +
                 std::to_string(static_cast<int>(kind)) + " was expected");
    }
    auto value = read(in);
    if (in.left() != 0) throw fail("has " + std::to_string(in.left()) + " bytes more than its fields");
    return value;
  } catch (const Malformed& e) {
    throw fail(std::string("is cut short or corrupt: ") + e.what());
  }
}

// The two plain kinds.
inline std::string wordBlob(std::uint64_t v) {
  BlobWriter w(BlobKind::Word);
  w.u64(v);
  return w.take();
}
inline std::string textBlob(std::string_view s) {
  BlobWriter w(BlobKind::Text);
  w.str(s);
  return w.take();
}
inline std::uint64_t readWordBlob(std::string_view blob, const std::string& origin) {
  return decodeBlob(blob, BlobKind::Word, origin, [](ByteReader& in) { return in.u64(); });
}
inline std::string readTextBlob(std::string_view blob, const std::string& origin) {
  return decodeBlob(blob, BlobKind::Text, origin, [](ByteReader& in) { return in.str(); });
}

}  // namespace axon::wire
