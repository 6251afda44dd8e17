// Collectives over a team whose members sit on several nodes ("hierarchical"): the members of each
// node run the shared-memory protocol among themselves, and one leader per node (its first member)
// runs the network level (coll/net_protocol.hpp) with the other leaders. Each collective is a few
// steps of the algorithms on the two levels, e.g. allreduce = reduce to the leader, allreduce among
// leaders, broadcast from the leader. alltoall skips the leaders: every member exchanges its blocks
// with the members of the other nodes itself, over a third, direct level (a network workspace among
// all members), and with its own node's members in shared memory. Results are bit-identical on
// every member.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "axon/collectives.hpp"
#include "coll/hierarchy_layout.hpp"
#include "coll/net_workspace.hpp"
#include "coll/request.hpp"
#include "coll/workspace.hpp"
#include "coll/workspace_layout.hpp"
#include "core/team_state.hpp"

namespace axon {
class PeContext;
}

namespace axon::coll {

class Hierarchy {
 public:
  // Collective over the team's members: the workspace of each node's part, and the leaders' on
  // `net`, the transport to the other nodes.
  static std::shared_ptr<Hierarchy> create(PeContext& rt, NetworkTransport& net, const detail::TeamState& team,
                                           std::size_t halfBytes);
  // Gives the leaders' network region back; after the team's last barrier (Team::destroy).
  void release();

  const HierarchyLayout& layout() const { return layout_; }
  // Runs one call of the team on host buffers; `record` describes it (as on one node).
  void run(PeContext& rt, const Request& q, const CallRecord& record, const char* api);
  // A team synchronization (onesided/team_barrier.hpp; `what` names it): publishes its record on
  // both levels and returns once every member's record is the same, throwing CollectiveMismatch
  // naming both calls where a member made another call. Nothing after a failed call.
  void sync(PeContext& rt, const char* what);
  // explain(): fills `e` (path "hierarchical") with both levels' choices.
  void explain(PeContext& rt, Explanation& e, std::size_t count, DataType type) const;

 private:
  // One call: its steps (none when q is null: a synchronization), then every record compared.
  void runCall(PeContext& rt, const Request* q, const CallRecord& record, const char* api);

  HierarchyLayout layout_;
  NetworkTransport* net_ = nullptr;  // to the other nodes
  int myNode_ = 0, myLocal_ = 0;
  detail::TeamState local_, leaders_;     // this PE's node part and the leaders, as teams for names
  std::unique_ptr<Workspace> localWs_;    // when this node's part has more than one member
  std::unique_ptr<NetWorkspace> netWs_;   // on leaders
  detail::TeamState all_;                 // every member, for the direct level
  const detail::TeamState* team_ = nullptr;  // the team itself (its timeout bounds every level's waits)
  std::unique_ptr<NetWorkspace> directWs_;  // every member's, written by the members of other nodes
  // One call at a time: a stream's host worker runs the team's stream-ordered calls beside the
  // program's own threads.
  std::mutex callMutex_;
};

}  // namespace axon::coll
