// The flag protocol every collective algorithm is written in. A call is a sequence of rounds
// numbered alike on every member. In round r a member may publish data (its half r % 2 of the
// workspace) to some readers: it writes the data, records the call in the half's record, then
// sets ready[me] = r in each reader's workspace (release). A reader waits for that flag
// (acquire), checks the half's record against its own call (the mismatch check), reads the data,
// and sets ack[reader] = r in the publisher's workspace. Before reusing a half, the publisher
// waits for the acks of everyone who was to read it. So nothing is overwritten while a peer still
// reads it, and every wait is on the waiter's own memory.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "coll/workspace.hpp"

namespace axon {
class Runtime;
namespace detail {
struct TeamState;
}

namespace coll {

class Call {
 public:
  // Starts a call: refuses it if an earlier one failed on this team, and publishes `record` as
  // this PE's current call.
  Call(Runtime& rt, const detail::TeamState& team, Workspace& ws, CallRecord record, const char* api);

  int members() const { return ws_.members(); }
  int me() const { return ws_.me(); }

  // The next round number.
  std::uint64_t nextRound() { return ++ws_.rounds; }
  // Reserves k consecutive rounds; returns the first.
  std::uint64_t reserveRounds(std::uint64_t k) {
    const std::uint64_t first = ws_.rounds + 1;
    ws_.rounds += k;
    return first;
  }
  // This PE's half for round r, once every reader of its previous contents has acked.
  char* beginPublish(std::uint64_t r);
  // Publishes round r (its half is written) to `readers` (member indices).
  void publish(std::uint64_t r, std::span<const int> readers);
  void publishToAll(std::uint64_t r);
  // Waits for member p's round r; returns p's half. Throws CollectiveMismatch when p's call
  // differs from this one.
  const char* await(int p, std::uint64_t r);
  void ack(int p, std::uint64_t r);
  // Ends the call. A PE that read nothing in it (a broadcast root, a reduce leaf) waits for the
  // acks of its last round, so that a mismatch is reported on every PE before the call returns.
  void finish();
  // Marks the team's collectives unusable after an exception escaped a call.
  void fail(const std::string& why) { ws_.failure = why; }

 private:
  std::uint64_t waitWord(std::uint64_t* word, std::uint64_t value, int member, const std::string& name);
  void checkRecord(const CallRecord& theirs, int member, std::uint64_t round);
  [[noreturn]] void mismatch(const std::string& text);
  void checkAbort();
  void checkPeers();

  Runtime& rt_;
  const detail::TeamState& team_;
  Workspace& ws_;
  CallRecord record_;
  const char* api_;
  std::function<void()> onCheck_;  // what waits run at each liveness check
  bool readSomething_ = false;
  std::uint64_t lastPublished_ = 0;
};

}  // namespace coll
}  // namespace axon
