// Two-sided messages between PEs of one node, through shared memory: each PE's inbox holds a
// ring per node-local sender (p2p/ring_layout.hpp), itself included.
//
//   - Eager: the data is copied into a slot of the receiver's ring.
//   - Rendezvous: a slot announces the send buffer (an Offer); once matched, the receiver copies
//     the data once, straight from the send buffer into the receive buffer: from the sender's
//     symmetric heap as mapped here, from its host memory by CMA (process_vm_readv), or in-process
//     for a self-send; then tells the sender it is done. When none of those reaches the buffer
//     (GPU memory outside the heap, host memory into GPU memory, CMA not permitted), the receiver
//     asks the sender to stream the data through the ring instead, a slot at a time.
//   - Into a posted receive: a receiver whose receive for one sender is posted before that
//     sender's message (the only receive posted that accepts that sender, its buffer in either
//     symmetric heap) offers it in the ring's control line. The sender, when it has no earlier
//     message in flight to that PE, takes the offer (a compare-and-swap), copies the message
//     straight into the receive buffer through its mapping of the receiver's heap, and writes a
//     Delivered slot: one copy instead of two (for GPU buffers, one cuMemcpy instead of two),
//     and the send still completes without waiting for the receiver. A receive that a message
//     from the ring matches first is withdrawn (it cannot have been taken: that message was in
//     flight). AXON_P2P_POSTED=0 turns offers off.
//
// Created at init, collective over the node's PEs; the rings are pinned for the GPU, so slots take
// device data by DMA.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "axon/memory.hpp"
#include "memory/shm_segment.hpp"
#include "transport/message_channel.hpp"
#include "p2p/ring_layout.hpp"

namespace axon {
class PeContext;
namespace detail {
struct TeamState;
}
}  // namespace axon

namespace axon::p2p {

class LocalChannel final : public Channel {
 public:
  // Collective over `node` (the node team): makes this PE's inbox and maps the others'.
  static std::unique_ptr<LocalChannel> create(PeContext& rt, const detail::TeamState& node, RingLayout layout);
  ~LocalChannel() override;
  LocalChannel(const LocalChannel&) = delete;
  LocalChannel& operator=(const LocalChannel&) = delete;

  bool reaches(int pe) const { return pe >= 0 && pe < static_cast<int>(localOf_.size()) && localOf_[pe] >= 0; }

  std::uint64_t eagerMax() const override { return layout_.payload; }
  bool sendEager(int pe, const Header& h, const std::shared_ptr<Operation>& send) override;
  bool sendRendezvous(int pe, const Header& h, const std::shared_ptr<Operation>& send) override;
  void sendCredit(int pe, std::uint64_t bytes) override;
  bool poll(Sink& sink) override;
  void fetch(Arrived& message, const std::shared_ptr<Operation>& recv) override;
  void decline(Arrived& message) override;
  std::string describePath(int pe, std::uint64_t bytes, bool onDevice, bool eager) const override;

  // Receiver: offers posted receive `recv` (its source a PE of this node, not this PE) to its
  // sender; false when it cannot be offered (its buffer is in neither heap, or another receive is
  // offered to that sender now). The caller has checked that it is the only receive posted that
  // accepts that sender's messages.
  bool offer(const std::shared_ptr<Operation>& recv);
  // Whether a receive is offered to `pe` now.
  bool offering(int pe) const { return reaches(pe) && offered_[localOf_[pe]].recv != nullptr; }
  // Receiver: withdraws `recv`'s offer. Taken: its sender took it (the message is being copied in;
  // a Delivered slot follows).
  enum class Withdrawal { NotOffered, Withdrawn, Taken };
  Withdrawal withdraw(const Operation& recv);
  // Sender: copies the message into the receive its destination offered, when that offer
  // accepts it and no earlier message to that PE is in flight; completes (or fails) the send
  // and returns true then.
  bool sendIntoPosted(int pe, const Header& h, const std::shared_ptr<Operation>& send);

 private:
  LocalChannel(PeContext& rt, const detail::TeamState& node, RingLayout layout);

  // A stream of a send's data through the ring, asked for by the receiver.
  struct Stream {
    std::shared_ptr<Operation> send;
    int local;
    std::uint64_t receive;  // the receiver's id for it
    std::uint64_t offset = 0;
  };

  // Writes one slot to node-local PE `local`'s ring for this PE: false when it is full.
  // `payloadOnDevice`: the payload is GPU memory (copied by the GPU backend).
  bool write(int local, const SlotHeader& h, const void* payload, std::uint64_t bytes, bool payloadOnDevice);
  void writeControl(int local, const SlotHeader& h);
  bool flushControls();
  bool pumpStreams();
  // One slot of sender `local`'s ring in this PE's inbox.
  void handle(int local, const SlotHeader& h, const char* payload, Sink& sink);
  // Copies a matched rendezvous message straight from its send buffer; false when no direct way
  // reaches that buffer from here.
  bool copyDirect(int pe, const struct Offer& offer, Operation& recv, std::uint64_t bytes);
  void finished(int local, std::uint64_t sendId, bool declined);
  // Copies between any two local buffers (host or GPU).
  void copy(void* dst, bool dstOnDevice, const void* src, bool srcOnDevice, std::uint64_t bytes);
  // Writes one slot that carries a message (counted: carriesMessage()).
  bool writeMessage(int local, const SlotHeader& h, const void* payload, std::uint64_t bytes, bool payloadOnDevice);
  // Where this process sees [offset, offset + bytes) of node-local PE `pe`'s heap of kind
  // `kindValue` (a HeapKind, as the peer wrote it), or nullptr where it cannot reach all of it (no
  // such kind; not mapped here, or not that far; a GPU heap this GPU has no peer access to).
  void* peerHeapAt(int pe, std::uint32_t kindValue, std::uint64_t offset, std::uint64_t bytes) const;
  // Where this process sees the first `bytes` of the receive buffer `r` offers, or nullptr where it
  // cannot copy them there.
  void* offeredBuffer(int pe, PostedRecord& r, std::uint64_t bytes, bool& onDevice) const;
  // A message (not a Delivered one) from node-local PE `local` was taken in: an offer to it that
  // still stands now counts that message as consumed.
  void recount(int local);
  std::uint64_t& postedWord(int owner, int ring) const { return control(owner, ring).posted.word; }
  char* slotAt(int owner, int ring, std::uint64_t n) const {
    return inboxes_[owner].base() + layout_.slotOffset(ring, n);
  }
  RingControl& control(int owner, int ring) const {
    return *reinterpret_cast<RingControl*>(inboxes_[owner].base() + layout_.ringOffset(ring));
  }

  PeContext& rt_;
  RingLayout layout_;
  int me_;                      // this PE's index in the node
  std::vector<int> peOf_;       // [local] world rank
  std::vector<int> localOf_;    // [world rank] index in the node, or -1
  std::vector<ShmSegment> inboxes_;  // [local]
  std::vector<void*> pinned_;        // inbox bases pinned for the GPU
  std::vector<std::uint64_t> written_;   // [local]: slots written to its ring for this PE
  std::vector<std::uint64_t> consumed_;  // [local]: slots of its ring here consumed
  std::vector<bool> cmaWorks_;           // [local]: CMA reads from it were permitted (so far)
  std::vector<std::deque<SlotHeader>> controls_;  // [local]: control slots that found no room yet
  std::unordered_map<std::uint64_t, std::shared_ptr<Operation>> announced_;  // sends by id, awaiting an answer
  std::unordered_map<std::uint64_t, std::shared_ptr<Operation>> filling_;    // receives by id, streamed
  std::deque<Stream> streams_;
  // Messages (carriesMessage slots) written to each local PE's ring, and consumed from each.
  std::vector<std::uint64_t> messagesWritten_, messagesConsumed_;
  // [local]: the receive offered to that sender now (nullptr: none), and the word it was offered with.
  struct Offered {
    std::shared_ptr<Operation> recv;
    PostedWord word;
  };
  std::vector<Offered> offered_;
  std::uint32_t generation_ = 0;
  bool offers_ = true;  // AXON_P2P_POSTED
};

}  // namespace axon::p2p
