// Where things sit in a PE's message inbox: one ring per node-local sender (the senders' order in
// the node), each a control line the receiver writes (slots consumed) and `slots` slots the
// sender writes (a 64-byte header, then up to `payload` bytes). Single producer, single consumer:
// the sender fills slot n % slots and publishes it by storing seq = n + 1 last (release); the
// receiver reads it once seq is n + 1 (acquire), then counts it consumed (release), which frees it.
// Beside `consumed`, the control line holds the receiver's posted receive for that sender (a
// PostedRecord): a receive the sender may copy its next message straight into (one copy instead
// of two). Pure arithmetic, tested on the host (tests/unit/p2p_ring_test.cpp).
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
  Delivered = 7,   // a message copied straight into posted receive `id` (aux: 0, or 1 when the copy failed)
};

// Slots that carry a message, counted by both sides of a ring: a sender may copy into a posted
// receive only when the receiver had consumed every message it sent before (no message in flight
// could take that receive first).
constexpr bool carriesMessage(SlotKind k) {
  return k == SlotKind::Eager || k == SlotKind::Rendezvous || k == SlotKind::Delivered;
}

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

// The word a posted receive is offered, taken and withdrawn by: compare-and-swapped by both sides
// of a ring. `state` in the low 2 bits, then the count of the sender's messages the receiver had
// consumed when it offered the receive (mod 2^32), then a generation that changes with every
// offer, so that a sender holding an old word never takes a newer offer by mistake.
enum class PostedState : std::uint64_t { Empty = 0, Offered = 1, Taken = 2 };
struct PostedWord {
  PostedState state = PostedState::Empty;
  std::uint32_t messages = 0;
  std::uint32_t generation = 0;  // 30 bits

  static constexpr std::uint32_t kGenerationMask = (1u << 30) - 1;
  std::uint64_t pack() const {
    return static_cast<std::uint64_t>(state) | static_cast<std::uint64_t>(messages) << 2 |
           static_cast<std::uint64_t>(generation & kGenerationMask) << 34;
  }
  static PostedWord unpack(std::uint64_t w) {
    return PostedWord{static_cast<PostedState>(w & 3), static_cast<std::uint32_t>(w >> 2),
                      static_cast<std::uint32_t>(w >> 34) & kGenerationMask};
  }
  PostedWord with(PostedState s) const { return PostedWord{s, messages, generation}; }
};

// A receive the receiver offers to one sender: written while the word is Empty, then published
// by storing the word Offered (release). The sender reads the fields after an acquire load of the
// word and takes the receive by a compare-and-swap from that very word to Taken, so that fields it
// read while the receiver rewrote them (a newer offer) fail the swap.
struct alignas(64) PostedRecord {
  std::uint64_t word;        // PostedWord
  std::uint64_t receiveId;   // the receiver's operation, named by the Delivered slot
  std::uint64_t capacity;    // room in the receive buffer
  std::uint64_t heapOffset;  // where the buffer starts in the receiver's heap
  std::int32_t context;      // matching context (team slot)
  std::int32_t tag;          // or kAnyTag
  std::uint32_t heapKind;    // HeapKind of the buffer's heap
  std::uint32_t reserved;
};
static_assert(sizeof(PostedRecord) == 64);

struct alignas(64) RingControl {
  std::uint64_t consumed;  // slots the receiver has consumed
  std::uint64_t pad[7];
  PostedRecord posted;     // the receive offered to this ring's sender
};
static_assert(sizeof(RingControl) == 128);

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
