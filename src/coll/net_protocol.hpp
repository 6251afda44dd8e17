// The network level of the flag protocol (coll/protocol.hpp), among a team's node leaders (or, for
// the direct steps, among every member and the members of the other nodes): a publisher puts its
// record and data into each reader's inbox with the ready signal in the same put_signal (one
// message up to 64 KiB; above, the transport orders the signal after the data); a reader acks with
// a signal back. Every wait is on the waiter's own region and drives progress. Each member
// compares every other's call before it returns, whether data flowed between them or not: the
// record travels with the call's first data to a member, and to the members that had none by the
// time this one waits or finishes, it is put into their `calls` (then `called` is signalled).
// So a call whose data goes to every member costs no message of its own.
#pragma once

#include <vector>

#include "coll/net_workspace.hpp"
#include "coll/protocol.hpp"
#include "transport/transport.hpp"

namespace axon::coll {

class NetCall final : public Call {
 public:
  // `local`: this leader's call inside its node, if any: a mismatch told there stops waits here.
  // `watch`: a call on another level of the team whose peers' records this one's waits compare too
  // (the leaders' call, while every member exchanges data directly).
  NetCall(PeContext& rt, const detail::TeamState& leaders, NetWorkspace& ws, CallRecord record, const char* api,
          Call* local, Call* watch = nullptr);

  void publish(std::uint64_t r, std::span<const int> readers, std::size_t bytes) override;
  const char* await(int p, std::uint64_t r) override;
  void ack(int p, std::uint64_t r) override;
  void tellOthers(const std::string& message) override;
  void checkAbort() override;
  void sendRecords() override;

 private:
  CallRecord awaitRecord(int p) override;
  std::uint64_t* ackWord(int reader) override { return ws_.ackWord(reader); }
  char* halfFor(std::uint64_t r) override { return ws_.outbox(r) + kSlotHeader; }
  void checkPeers() override;

  NetWorkspace& ws_;
  Transport& net_;
  Call* local_;
  std::vector<char> recordDue_;  // [member]: has not had this call's record yet
  bool recordsDue_ = false;
};

}  // namespace axon::coll
