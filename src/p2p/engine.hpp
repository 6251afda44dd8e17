// Two-sided messages of one PE: matching (p2p/matcher.hpp, one per team), the order of each
// destination's sends, eager credit, and the channels that move the data (transport/message_channel.hpp): the
// node's shared-memory rings for PEs of this node, UCX for PEs of other nodes.
//
// Credit bounds what waits unmatched here: each sender may have AXON_P2P_UNEXPECTED / nPes bytes
// of eager data (plus 64 bytes a message) at each receiver. It spends them when it sends eagerly
// and gets them back once the receiver has taken the message (a Credit message, sent when a
// quarter of the share is owed). A sender out of credit announces its messages instead
// (rendezvous): their data waits in the send buffer until matched. So the receiver's memory is
// bounded and a full receiver slows its senders down without refusing anything.
//
// Stream-ordered messages (send_on_stream / recv_on_stream, p2p/stream_messages.cpp) match in a
// context of their own per team, apart from the program's send/recv: the tag is the call's
// number among the pair's stream-ordered calls, given when the program makes the call, so that
// they match in call order whatever order the streams run them in.
//
// Thread safety: every entry point takes the engine's lock; channels are called with it held and
// complete operations from any thread (UCX callbacks) through the operation alone.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/progress_engine.hpp"
#include "transport/message_channel.hpp"
#include "p2p/local_channel.hpp"
#include "p2p/matcher.hpp"

namespace axon {
class PeContext;
namespace detail {
struct TeamState;
}
}  // namespace axon

namespace axon::p2p {

class Engine final : public ProgressClient, private Sink {
 public:
  // `network`: the channel to PEs of other nodes, or nullptr when the job runs on one node.
  Engine(PeContext& rt, std::unique_ptr<LocalChannel> local, Channel* network);
  ~Engine() override;

  // Team slots; context slot + kTeamSlots holds the team's stream-ordered messages.
  static constexpr int kTeamSlots = 64;

  // Arguments are checked here (InvalidPe, InvalidArgument naming `api`). streamOrdered: in the
  // team's stream-ordered context (`tag` from streamCallNumber).
  std::shared_ptr<Operation> isend(const detail::TeamState& team, const void* buf, std::uint64_t bytes, int dest,
                                   int tag, const char* api, bool streamOrdered = false);
  std::shared_ptr<Operation> irecv(const detail::TeamState& team, void* buf, std::uint64_t capacity, int source,
                                   int tag, const char* api, bool streamOrdered = false);
  // The number of this PE's next stream-ordered send to (or receive from) team member `peer`,
  // wrapping within [0, kMaxTag]: the tag that pairs it with the peer's call of the same number.
  int streamCallNumber(const detail::TeamState& team, int peer, bool send);
  // Whether `op` has ended (throws its failure); throws PeerDead when a PE died and Timeout past
  // `deadline`: the check a stream's host worker polls.
  bool ended(Operation& op, std::chrono::steady_clock::time_point deadline);
  std::optional<Status> iprobe(const detail::TeamState& team, int source, int tag, const char* api);
  // Waits until `op` has ended (bounded by AXON_TIMEOUT, PeerDead when a PE died) and throws its
  // failure.
  Status wait(Operation& op);
  // Waits (bounded) until one of `ops` has ended and returns its index; null entries are
  // skipped. Does not throw the operation's failure.
  std::size_t waitAny(const std::vector<Operation*>& ops);
  // Waits (bounded) for a message a receive (source, tag) would take.
  Status probe(const detail::TeamState& team, int source, int tag, const char* api);
  // Protocol and path of a message (axon::explainMessage).
  std::string explain(const detail::TeamState& team, std::uint64_t bytes, int dest, bool onDevice);

  MessageStats stats();

  // The team in `slot` was destroyed: its posted receives fail, its waiting messages are dropped
  // (and their senders released), and the slot may hold another team.
  void forgetTeam(int slot);

  bool progress() override;
  int armForSleep() override;

 private:
  // A team as this PE knows it for messages: registered by its first call here. Messages that
  // arrive before (a peer returned from the split first) wait in `early`.
  struct Context {
    bool registered = false;
    std::string name;
    std::vector<int> members;
    std::vector<int> indexOf;  // [world rank]: index in the team, or -1
    std::unique_ptr<Matcher> matcher;
    std::unordered_map<std::uint64_t, std::shared_ptr<Operation>> posted;  // by cookie
    std::unordered_map<std::uint64_t, std::unique_ptr<Arrived>> waiting;   // unexpected, by cookie
    std::deque<std::unique_ptr<Arrived>> early;
    // Stream-ordered context: the next call numbers, by team index.
    std::vector<std::uint32_t> nextSend, nextRecv;
  };
  struct Queued {
    std::shared_ptr<Operation> op;
    Header header;
  };
  static constexpr int kContexts = 2 * kTeamSlots;
  // Bytes of credit a message costs beyond its data: its slot header (so that empty messages
  // count too).
  static constexpr std::uint64_t kMessageCharge = 64;

  void arrived(std::unique_ptr<Arrived> message) override;
  void credited(int pe, std::uint64_t bytes) override;
  void delivered(int pe, const Header& h, std::uint64_t receiveId, const std::string& failure) override;
  // Offers the receive posted for team member `source` in context `slot`, when it is the only one
  // that accepts that source's messages, for the sender to copy into (LocalChannel::offer).
  void offerNext(int slot, int source);

  Context& context(const detail::TeamState& team, bool streamOrdered = false);
  void forgetLocked(int slot);
  void match(Context& c, std::unique_ptr<Arrived> m);
  // Delivers a matched message into `recv`.
  void deliver(Context& c, Arrived& m, const std::shared_ptr<Operation>& recv);
  // Gives back what a message held: its credit (eager), or its sender's wait (rendezvous).
  void release(Arrived& m);
  void owe(int pe, std::uint64_t credit);
  // Counts a message that starts (held) or stops waiting unmatched.
  void hold(const Arrived& m, bool held);
  // Sends what waits for `pe`, in order, while its channel has room.
  bool flush(int pe);
  Channel& channelTo(int pe);
  bool progressLocked();
  std::string timeoutMessage(const Operation& op);

  PeContext& rt_;
  std::unique_ptr<LocalChannel> local_;
  Channel* network_;
  std::mutex mutex_;
  std::array<Context, kContexts> contexts_;
  std::uint64_t nextId_ = 1;
  std::uint64_t share_ = 0;              // eager credit each sender starts with at each receiver
  std::vector<std::uint64_t> credit_;    // [pe]: what this PE may still send eagerly to pe
  std::vector<std::uint64_t> owed_;      // [pe]: credit taken here, not yet returned to pe
  std::vector<std::deque<Queued>> queued_;  // [pe]: sends not yet handed to a channel
  std::vector<int> queuedPes_;           // PEs with sends queued
  MessageStats stats_;  // counts; waiting* kept current as messages wait and are taken
  std::vector<std::shared_ptr<Operation>> live_;  // operations not yet ended (the engine's thread polls while any)
};

}  // namespace axon::p2p
