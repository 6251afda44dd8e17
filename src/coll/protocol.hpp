// The flag protocol every collective algorithm is written in. A call is a sequence of rounds
// numbered alike on every member. In round r a member may publish data (its half r % 2) to some
// readers: it writes the data, records the call with it, then raises ready[me] = r at each reader
// (release). A reader waits for that flag (acquire), checks the record against its own call (the
// mismatch check), reads the data, and raises ack[reader] = r at the publisher. Before reusing a
// half, the publisher waits for the acks of everyone who was to read it. So nothing is
// overwritten while a peer still reads it, and every wait is on the waiter's own memory.
//
// Two levels carry it:
//  - ShmCall, inside a node: halves in shared memory, readers read the publisher's half;
//  - NetCall (coll/net_protocol.hpp), among node leaders: the publisher puts its half into each
//    reader's inbox over the network transport and signals after it.
// The algorithms (coll/algorithms.hpp) see only Call, so each runs on either level.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "coll/protocol_state.hpp"
#include "coll/workspace.hpp"

namespace axon {
class PeContext;
namespace detail {
struct TeamState;
}

namespace coll {

class Call {
 public:
  virtual ~Call() = default;
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  int members() const { return members_; }
  int me() const { return me_; }
  // How many rounds this PE may have published and not yet seen acked (its halves).
  std::uint64_t depth() const { return state_.depth(); }

  // The next round number.
  std::uint64_t nextRound() { return ++state_.rounds; }
  // Reserves k consecutive rounds; returns the first. Members that take no part in some rounds
  // reserve them too, so that every member keeps counting alike.
  std::uint64_t reserveRounds(std::uint64_t k) {
    const std::uint64_t first = state_.rounds + 1;
    state_.rounds += k;
    return first;
  }
  // This PE's half for round r, once every reader of its previous contents has acked.
  char* beginPublish(std::uint64_t r);
  // Publishes the first `bytes` of round r's half to `readers` (member indices).
  virtual void publish(std::uint64_t r, std::span<const int> readers, std::size_t bytes) = 0;
  void publishToAll(std::uint64_t r, std::size_t bytes) { publish(r, state_.others, bytes); }
  // Waits for member p's round r; returns its data. Throws CollectiveMismatch when p's call
  // differs from this one.
  virtual const char* await(int p, std::uint64_t r) = 0;
  virtual void ack(int p, std::uint64_t r) = 0;
  // Ends the call: waits for the record of every member whose record it has not compared yet (no
  // data came from it) and compares it, so that no PE returns from a call that some member made
  // differently (a broadcast reader whose root agrees while another member names another root).
  // It does not wait for the acks of the rounds it published (a broadcast root, a reduce leaf
  // returns once every record is in, while its readers may still read): the half is reused only
  // after them (beginPublish, in this call or a later one), and a team is destroyed or finalized
  // only after a synchronization that every reader enters once it has read and flushed its acks.
  // On 2 cores a broadcast of 8 bytes on 4 PEs took 22-34 us with that wait, 13-24 us without.
  void finish();
  // Waits for the record of every member not compared yet and compares it (finish() starts so).
  void agreeWithAll();
  // The call's number on the team (this level's count).
  std::uint64_t seq() const { return record_.seq; }
  // Marks the team's collectives unusable after an exception escaped a call.
  void fail(const std::string& why) { state_.failure = why; }
  // Tells every other member to stop with `message` (a mismatch found on another level); their
  // waits throw it as CollectiveMismatch.
  virtual void tellOthers(const std::string& message) = 0;
  // Throws when a member told this one to stop.
  virtual void checkAbort() = 0;
  // Runs what every wait of this call runs at its liveness checks (checkAbort, then the peers'
  // records): a call on another level of the same team runs it while it waits.
  void check() { onCheck_(); }
  // Sends this PE's record of the call to the members that have not had it yet (a level that
  // defers it so that it travels with the data where it can). Run before every wait and at
  // finish(), so that no member waits for a record that has not left.
  virtual void sendRecords() {}

 protected:
  // Starts a call: refuses it if an earlier one failed on this level of the team.
  Call(PeContext& rt, const detail::TeamState& team, ProtocolState& state, int members, int me, CallRecord record,
       const char* api);

  // Member p's record of this call (its number): waits until p has published it.
  virtual CallRecord awaitRecord(int p) = 0;
  // This PE's ack[reader] and its half for round r.
  virtual std::uint64_t* ackWord(int reader) = 0;
  virtual char* halfFor(std::uint64_t r) = 0;
  // Compares the calls of members this one does not read from (run at each liveness check).
  virtual void checkPeers() = 0;

  std::uint64_t waitWord(std::uint64_t* word, std::uint64_t value, int member, const std::string& name);
  void checkRecord(const CallRecord& theirs, int member, std::uint64_t round);
  // Compares member's record of a call with this one's when it has the same number (mismatch
  // otherwise); records of other calls are left alone.
  void comparePeer(const CallRecord& theirs, int member);
  // Member `member` made another call than this one (`theirs`): a mismatch naming both.
  [[noreturn]] void differs(const CallRecord& theirs, int member);
  // A member whose call differs: tells the others, marks the level failed, throws.
  [[noreturn]] void mismatch(const std::string& text);
  // Notes that round r went to `readers`: its half is reused only after their acks.
  void published(std::uint64_t r, std::span<const int> readers);

  PeContext& rt_;
  const detail::TeamState& team_;
  ProtocolState& state_;
  CallRecord record_;
  const char* api_;
  std::function<void()> onCheck_;  // what waits run at each liveness check

 private:
  int members_, me_;
};

// Whether two members' records describe the same call (its round aside).
bool sameCall(const CallRecord& a, const CallRecord& b);
// "allreduce(count 1024, int32, sum, oneshot, buffer 65536)", "finalize()"
std::string describeCall(const CallRecord& r);
// The record of a team synchronization (onesided/team_barrier.hpp): `what` is its caller's name,
// "barrier_all", "sync_all", "barrier", "sync", "finalize" or "team_destroy".
CallRecord syncRecord(const char* what);

// The shared-memory level: every member maps every member's workspace.
class ShmCall final : public Call {
 public:
  ShmCall(PeContext& rt, const detail::TeamState& team, Workspace& ws, CallRecord record, const char* api);

  void publish(std::uint64_t r, std::span<const int> readers, std::size_t bytes) override;
  const char* await(int p, std::uint64_t r) override;
  void ack(int p, std::uint64_t r) override;
  void tellOthers(const std::string& message) override;
  void checkAbort() override;

  // Hierarchical teams: the node's leader tells its node that every leader agreed on this call;
  // the others wait for it before they return (a mismatch among leaders reaches them as an abort).
  void confirmToNode();
  void awaitNodeLeader(int leader);

 private:
  CallRecord awaitRecord(int p) override;
  std::uint64_t* ackWord(int reader) override { return ws_.ackWord(me(), reader); }
  char* halfFor(std::uint64_t r) override { return ws_.half(me(), r); }
  void checkPeers() override;

  Workspace& ws_;
};

}  // namespace coll
}  // namespace axon
