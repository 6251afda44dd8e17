// The network level of the flag protocol (coll/protocol.hpp), among a team's node leaders: a
// publisher puts its record and data into each reader's inbox, then signals ready after them (the
// network transport orders a signal after the puts before it); a reader acks with a signal back.
// Every wait is on the waiter's own region and drives progress. At its start a call puts its record
// into every other leader's `calls` (then signals `called`), so that each compares every leader's
// call before it returns, whether data flowed between them or not.
#pragma once

#include "coll/net_workspace.hpp"
#include "coll/protocol.hpp"
#include "transport/transport.hpp"

namespace axon::coll {

class NetCall final : public Call {
 public:
  // `local`: this leader's call inside its node, if any: a mismatch told there stops waits here.
  NetCall(PeContext& rt, const detail::TeamState& leaders, NetWorkspace& ws, CallRecord record, const char* api,
          Call* local);

  void publish(std::uint64_t r, std::span<const int> readers, std::size_t bytes) override;
  const char* await(int p, std::uint64_t r) override;
  void ack(int p, std::uint64_t r) override;
  void tellOthers(const std::string& message) override;
  void checkAbort() override;

 private:
  CallRecord awaitRecord(int p) override;
  std::uint64_t* ackWord(int reader) override { return ws_.ackWord(reader); }
  char* halfFor(std::uint64_t r) override { return ws_.outbox(r) + kSlotHeader; }
  void checkPeers() override;

  NetWorkspace& ws_;
  Transport& net_;
  Call* local_;
};

}  // namespace axon::coll
