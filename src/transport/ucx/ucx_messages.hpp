// Two-sided messages to PEs on other nodes (transport/message_channel.hpp) as UCX active messages: the header
// travels as the message's header and the data as its payload, eagerly (UCX copies it through
// its buffers) up to AXON_P2P_EAGER, else by UCX's rendezvous, which the receiver starts only
// once the message is matched and completes straight into the receive buffer
// (ucp_am_recv_data_nbx; GPUDirect RDMA where UCX has it, its pipelined staging otherwise).
// Active messages rather than UCX's tag matching so that one matcher (p2p/engine.hpp) orders the
// messages of every source, on this node or another, for wildcard receives.
//
// UCX's handlers run inside whichever thread polls the worker; they only queue what arrived,
// and the engine takes it in poll(). A per-pair sequence number restores sending order, whatever
// order UCX hands messages over in.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/message_channel.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace axon::ucx {

class UcxMessages final : public p2p::Channel {
 public:
  UcxMessages(UcxWorker& worker, std::uint64_t eagerMax);
  ~UcxMessages() override;
  UcxMessages(const UcxMessages&) = delete;
  UcxMessages& operator=(const UcxMessages&) = delete;

  std::uint64_t eagerMax() const override { return eagerMax_; }
  bool sendEager(int pe, const p2p::Header& h, const std::shared_ptr<p2p::Operation>& send) override;
  bool sendRendezvous(int pe, const p2p::Header& h, const std::shared_ptr<p2p::Operation>& send) override;
  void sendCredit(int pe, std::uint64_t bytes) override;
  bool poll(p2p::Sink& sink) override;
  void fetch(p2p::Arrived& message, const std::shared_ptr<p2p::Operation>& recv) override;
  void decline(p2p::Arrived& message) override;
  std::string describePath(int pe, std::uint64_t bytes, bool onDevice, bool eager) const override;

  struct Wire;

 private:
  bool send(int pe, const p2p::Header& h, const std::shared_ptr<p2p::Operation>& op, bool eager);
  static ucs_status_t onMessage(void* arg, const void* header, std::size_t headerLength, void* data,
                                std::size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t onCredit(void* arg, const void* header, std::size_t headerLength, void* data,
                               std::size_t length, const ucp_am_recv_param_t* param);

  UcxWorker& worker_;
  std::uint64_t eagerMax_;
  std::vector<std::uint64_t> sent_;  // [pe]: messages sent to it (the engine's lock serializes)
  // Filled by the handlers, under inboxMutex_ alone (never held while calling UCX).
  std::mutex inboxMutex_;
  std::vector<std::pair<std::uint64_t, std::unique_ptr<p2p::Arrived>>> inbox_;  // with its sequence number
  std::vector<std::pair<int, std::uint64_t>> credits_;
  // Taken by poll(), under the engine's lock.
  std::vector<std::uint64_t> expected_;  // [pe]: sequence number of its next message
  std::vector<std::map<std::uint64_t, std::unique_ptr<p2p::Arrived>>> early_;  // [pe]: ahead of their turn
};

}  // namespace axon::ucx
