// How two-sided messages move between two PEs: one implementation per path behind this interface
// (PEs on this node: p2p/local_channel.hpp, rings in shared memory; PEs on other nodes: UCX active
// messages, transport/ucx/ucx_messages.hpp). The engine (p2p/engine.hpp) matches and keeps
// order and credit; a channel only moves messages and data. The engine calls a channel with its
// own lock held, so a channel never calls back into the engine except through the Sink it is
// handed by poll().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/message_operation.hpp"

namespace axon::p2p {

// What a message says about itself on the wire (the sender's world rank travels beside it).
struct Header {
  std::int32_t context = 0;  // the team's slot
  std::int32_t tag = 0;
  std::uint64_t bytes = 0;   // the message's length
  std::uint64_t sendId = 0;  // the sender's operation, named in a rendezvous' answers
  std::uint64_t credit = 0;  // eager: what the sender charged to its credit here (returned when consumed)
};

class Channel;

// A message that arrived: eager (its data is here) or a rendezvous announcement (its data waits
// at the sender, which `offer` or `handle` describes to the channel that brought it).
struct Arrived {
  int sourcePe = -1;
  Header header;
  bool eager = true;
  // Eager data: valid during Sink::arrived only unless it points into `owned`.
  const void* data = nullptr;
  std::vector<char> owned;
  // Rendezvous: what the channel needs to fetch the data.
  std::vector<char> offer;
  void* handle = nullptr;
  Channel* channel = nullptr;

  // Keeps eager data past the call that delivered it.
  void own() {
    if (!eager || data == owned.data() || header.bytes == 0) return;
    const char* p = static_cast<const char*>(data);
    owned.assign(p, p + header.bytes);
    data = owned.data();
  }
};

// Where a channel hands what it received.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void arrived(std::unique_ptr<Arrived> message) = 0;
  // `pe` returned `bytes` of eager credit to this PE.
  virtual void credited(int pe, std::uint64_t bytes) = 0;
  // `pe` copied a message (`h`: context, tag, bytes) straight into the posted receive
  // `receiveId` this PE had offered it (p2p/local_channel.hpp); `failure` is empty, or why the
  // copy failed.
  virtual void delivered(int pe, const Header& h, std::uint64_t receiveId, const std::string& failure) = 0;
};

class Channel {
 public:
  virtual ~Channel() = default;

  // The largest message sendEager takes.
  virtual std::uint64_t eagerMax() const = 0;
  // Sends a message whose data travels with it (at most eagerMax() bytes); the send completes
  // once its buffer is free again. False when the path has no room now: try again after poll().
  virtual bool sendEager(int pe, const Header& h, const std::shared_ptr<Operation>& send) = 0;
  // Announces a message whose data stays in the send buffer until the receiver fetches it; the
  // send completes then. False when the path has no room now.
  virtual bool sendRendezvous(int pe, const Header& h, const std::shared_ptr<Operation>& send) = 0;
  // Returns `bytes` of eager credit to `pe` (queued when there is no room now).
  virtual void sendCredit(int pe, std::uint64_t bytes) = 0;

  // Hands `sink` what arrived since the last call (each sender's messages in sending order),
  // and moves any data in flight; returns whether anything happened.
  virtual bool poll(Sink& sink) = 0;
  // Moves a matched rendezvous message into the receive `recv` (its status already set) and
  // completes or fails it, now or from a later poll().
  virtual void fetch(Arrived& message, const std::shared_ptr<Operation>& recv) = 0;
  // Lets the sender of a rendezvous message that will not be fetched (the receive was too
  // small, the team went) complete its send.
  virtual void decline(Arrived& message) = 0;

  // How a message of `bytes` (in GPU memory or not) would move to `pe`: "rendezvous by CUDA IPC".
  virtual std::string describePath(int pe, std::uint64_t bytes, bool onDevice, bool eager) const = 0;
};

}  // namespace axon::p2p
