// A request to the store, decoded from a frame: the one place where the server reads what a
// client sent (and what tests/fuzz feeds it). Every field is size-checked before it is read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/wire.hpp"

namespace axon::wire {

struct StoreRequest {
  FrameHead head;
  Op op = Op::Hello;
  bool foreign = false;           // another wire version: no field was read
  std::string nonce;              // Hello: the client's nonce (kNonceBytes)
  std::uint32_t rank = 0;         // Hello
  std::string version;            // Hello: the client's axon build
  std::string proof;              // Hello: its proof of the job key (kProofBytes)
  std::vector<std::string> keys;  // Get, Check; the key of Set, Add, Del; the group of Gather*
  std::string value;              // Set, Gather
  std::int64_t delta = 0;         // Add
  std::uint32_t members = 0;      // Gather
  std::uint32_t index = 0;        // Gather
};

// Decodes the fields that follow `head` in a frame body. Throws Malformed for an unknown op, a
// field cut short or corrupt, or bytes left over. A frame of another wire version never throws:
// it is marked foreign and none of its fields is read. The server decodes a connection's first
// frame with checkHello (store_handshake.hpp) instead, which checks the proof before any claim.
StoreRequest decodeStoreRequest(const FrameHead& head, std::string_view fields);

}  // namespace axon::wire
