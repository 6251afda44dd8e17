// What a PE keeps per team and protocol level between collective calls: the call and round
// counters (every member counts alike), who still reads each half, and whether an earlier call
// failed. Shared by the shared-memory workspace (coll/workspace.hpp) and the network one among node
// leaders (coll/net_workspace.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace axon::coll {

struct ProtocolState {
  std::uint64_t calls = 0;   // collectives and team synchronizations started
  std::uint64_t rounds = 0;  // rounds used so far (every member counts the same)
  struct HalfUse {
    std::uint64_t round = 0;
    std::vector<int> readers;  // members that will ack `round` once they have read it
  };
  // Round r goes out through half r % depth: two on shared memory (a writer and a reader at a
  // time), more among nodes, where a round trip costs more than a round's data (NetWorkspace).
  std::vector<HalfUse> halfUse = std::vector<HalfUse>(2);
  std::uint64_t depth() const { return halfUse.size(); }
  std::string failure;  // set when a call failed midway: the counters no longer match the peers'

  // Fixed per team, built once: every member but this one, and the names waits give their flags.
  std::vector<int> others;
  std::vector<std::string> readyNames, ackNames, callNames;  // [member]
  // [member]: the last call whose record this PE compared with its own and found the same (read
  // with the member's data, or at the call's end). A call ends once every member's is its own.
  std::vector<std::uint64_t> agreed;

  // Fills `others` and the flag names: "ready[from team PE 2] of <what>".
  void nameFlags(int members, int me, const std::string& what) {
    for (int i = 0; i < members; ++i) {
      if (i != me) others.push_back(i);
      const std::string of = "[from team PE " + std::to_string(i) + "] of " + what;
      readyNames.push_back("ready" + of);
      ackNames.push_back("ack" + of);
      callNames.push_back("call record" + of);
    }
    agreed.assign(members, 0);
  }
};

}  // namespace axon::coll
