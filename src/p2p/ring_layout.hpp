// Where things sit in a PE's message inbox: one ring per node-local sender (the senders' order in
// the node), each a control line the receiver writes (slots consumed) and `slots` slots the
// sender writes (a 64-byte header, then up to `payload` bytes). Single producer, single consumer:
// the sender fills slot n % slots and publishes it by storing seq = n + 1 last (release); the
// receiver reads it once seq is n + 1 (acquire), then counts it consumed (release), which frees it.
// Pure arithmetic, tested on the host (tests/unit/p2p_ring_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace axon::p2p {

enum class SlotKind : std::uint32_t {
  Eager = 1,       // a message, its data in the payload
  Rendezvous = 2,  // a message announced, the payload an Offer (local_channel.cpp)
  ClearToSend = 3, // receiver to sender: stream the data of send `id` through the ring as Data
  Finished = 4,    // receiver to sender: send `id` is done with (aux: 0, or 1 when declined)
  Data = 5,        // a piece of a streamed message: receive `id`, at offset `aux`
  Credit = 6,      // eager credit returned: `bytes`
};

// The first 64 bytes of a slot.
struct alignas(64) SlotHeader {
  std::uint64_t seq;  // n + 1 once slot use n is published
  SlotKind kind;
  std::int32_t context;
  std::int32_t tag;
  std::uint32_t reserved;
  std::uint64_t bytes;   // message length (Eager, Rendezvous), piece length (Data), credit (Credit)
  std::uint64_t id;      // the sender's send id, or (Data) the receiver's receive id
  std::uint64_t aux;     // see SlotKind
  std::uint64_t credit;  // Eager: credit charged
  std::uint64_t receive; // ClearToSend: the receiver's receive id
};
static_assert(sizeof(SlotHeader) == 64);

struct alignas(64) RingControl {
  std::uint64_t consumed;  // slots the receiver has consumed
};
static_assert(sizeof(RingControl) == 64);

struct RingLayout {
  std::uint32_t slots = 32;
  std::uint64_t payload = 8192;  // bytes after each slot's header (AXON_P2P_EAGER)

  std::uint64_t slotBytes() const { return sizeof(SlotHeader) + roundUp(payload); }
  std::uint64_t ringBytes() const { return sizeof(RingControl) + slots * slotBytes(); }
  std::uint64_t inboxBytes(int rings) const { return static_cast<std::uint64_t>(rings) * ringBytes(); }
  std::uint64_t ringOffset(int ring) const { return static_cast<std::uint64_t>(ring) * ringBytes(); }
  // Of use n (any n: slots repeat).
  std::uint64_t slotOffset(int ring, std::uint64_t n) const {
    return ringOffset(ring) + sizeof(RingControl) + (n % slots) * slotBytes();
  }
  // Pieces a streamed message of `bytes` takes.
  std::uint64_t pieces(std::uint64_t bytes) const { return bytes == 0 ? 0 : (bytes + payload - 1) / payload; }
  // Whether the sender, having published `written` uses, may write another when the receiver has
  // consumed `consumed`.
  bool hasRoom(std::uint64_t written, std::uint64_t consumed) const { return written - consumed < slots; }

  static std::uint64_t roundUp(std::uint64_t n) { return (n + 63) / 64 * 64; }
};

}  // namespace axon::p2p
