#include "coll/workspace.hpp"

#include "axon/error.hpp"
#include "core/runtime.hpp"
#include "core/team_state.hpp"

namespace axon::coll {

std::unique_ptr<Workspace> Workspace::create(Runtime& rt, const detail::TeamState& team, std::size_t halfBytes) {
  const int n = static_cast<int>(team.members.size());
  const WorkspaceLayout layout = workspaceLayout(n, halfBytes);
  std::unique_ptr<Workspace> ws(new Workspace(n, team.myIndex, layout));
  // A PE that cannot create its segment says so in the exchange, so that every member fails
  // naming it instead of waiting for a name that never comes.
  std::optional<ShmSegment> mine;
  std::string contribution;
  try {
    mine.emplace(ShmSegment::create(freshShmName(rt.myPe(), "-ws"), layout.total));
    mine->growTo(layout.total);
    contribution = mine->name();
  } catch (const Error& e) {
    contribution = std::string("!") + e.what();
  }
  const std::string tag = "coll-ws-" + team.name;
  auto names = rt.bootstrap().allgather(tag, team.members, contribution);
  for (int i = 0; i < n; ++i) {
    if (!names[i].empty() && names[i][0] == '!') {
      throw Error(ErrorCode::OutOfMemory, "PE " + std::to_string(rt.myPe()) + ": the collective workspace of team " +
                                              team.name + " could not be created on PE " +
                                              std::to_string(team.members[i]) + ": " + names[i].substr(1) +
                                              " (AXON_COLL_BUFFER sets its size)");
    }
  }
  for (int i = 0; i < n; ++i) {
    if (i == team.myIndex) {
      ws->segments_.push_back(std::move(*mine));
      continue;
    }
    ShmSegment peer = ShmSegment::open(names[i], layout.total);
    peer.growTo(layout.total);
    ws->segments_.push_back(std::move(peer));
  }
  for (int i = 0; i < n; ++i) {
    if (i != team.myIndex) ws->others.push_back(i);
    const std::string of = "[from team PE " + std::to_string(i) + "] of team " + team.name + "'s collective workspace";
    ws->readyNames.push_back("ready" + of);
    ws->ackNames.push_back("ack" + of);
  }
  // Every member has opened every name: ours can go, so that a crash leaves nothing behind.
  rt.bootstrap().barrier(tag + "-open", team.members);
  ws->segments_[team.myIndex].unlinkName();
  return ws;
}

}  // namespace axon::coll
