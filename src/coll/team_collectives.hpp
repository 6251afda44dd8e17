// How a team's collectives run: one interface, one implementation per path, chosen once when the
// team is made (makeTeamCollectives, the only place that decides) and held by the team.
//
//   path           implementation                  when
//   "local"        local_collectives.cpp           a team of one PE
//   "gpu-p2p"      gpu_collectives.cpp (+ gpu_path) every member's GPU maps every other's memory
//   "host-shm"     shm_collectives.cpp             the members share a node, without a GPU workspace
//   "hierarchical" hierarchy_collectives.cpp       the members span nodes
//
// The public calls (collectives_api.cpp) check the arguments and hand the call to the team's
// implementation; a new path is a new implementation and one more branch in makeTeamCollectives.
#pragma once

#include <memory>
#include <string>

#include "axon/collectives.hpp"
#include "axon/device/coll_types.hpp"
#include "coll/request.hpp"
#include "core/sync_order.hpp"

namespace axon {
class PeContext;
class NetworkTransport;
class GpuTeamWorkspace;
namespace detail {
struct TeamState;
}
}  // namespace axon

namespace axon::coll {

class Workspace;
class Hierarchy;

class TeamCollectives : public detail::SyncOrder {
 public:
  ~TeamCollectives() override = default;

  // Runs a checked call on any buffers (host or GPU); returns when it is done on this PE.
  virtual void run(Request q, const char* api) = 0;
  // Enqueues a checked call on `team` (this path's) on `stream` (a CUstream; null: the legacy
  // default stream); the GPU backend is on. Throws Unsupported where the path cannot order a call on
  // a stream.
  virtual void enqueue(const Team& team, Request q, void* stream, const char* api) = 0;
  // explain(): `e` holds the host path's plan for the call; the path sets its name and may replace
  // the algorithm, the reason, the chunk and the rounds with its own.
  virtual void explain(Explanation& e, std::size_t count, DataType type) const = 0;
  // What kernels get from device_coll_handle(); throws Unsupported saying why the team has none.
  virtual device::CollHandle deviceHandle(const Team& team) = 0;
  // Team::destroy, after the team's last barrier: gives back what the peers reach.
  virtual void release() {}
  // A team synchronization's record among the calls (core/sync_order.hpp). Paths that compare no
  // records between calls (a team of one; the GPU workspace, whose records live in the kernels'
  // rounds) leave the barrier as it was.
  void enterSync(const char*) override {}
};

// The one choice of a team's path. Collective over the team's members (workspaces are made
// together). `net` is the transport to other nodes (null on one node).
std::shared_ptr<TeamCollectives> makeTeamCollectives(PeContext& rt, NetworkTransport* net,
                                                     const detail::TeamState& team, std::size_t halfBytes);

// The implementations, each in its own file.
std::shared_ptr<TeamCollectives> localCollectives(PeContext& rt, const detail::TeamState& team);
std::shared_ptr<TeamCollectives> gpuCollectives(PeContext& rt, const detail::TeamState& team,
                                                std::shared_ptr<GpuTeamWorkspace> ws);
std::shared_ptr<TeamCollectives> shmCollectives(PeContext& rt, const detail::TeamState& team,
                                                std::unique_ptr<Workspace> ws);
std::shared_ptr<TeamCollectives> hierarchyCollectives(PeContext& rt, const detail::TeamState& team,
                                                      std::shared_ptr<Hierarchy> hierarchy);

// device_coll_handle() on a team whose path has no GPU workspace: Unsupported, saying why.
[[noreturn]] void noDeviceHandle(PeContext& rt, const detail::TeamState& team);
// A stream-ordered call on a team without a GPU workspace (and not across nodes): Unsupported.
[[noreturn]] void noGpuWorkspace(PeContext& rt, const detail::TeamState& team, const char* api);
// explain() of the host path on one node, "host-shm".
void explainHostShm(PeContext& rt, const detail::TeamState& team, Explanation& e);

// The blocking call on `team` as the public API makes it (the arguments checked, the team's path
// run), for work that runs it later: the stream host worker, for a team across nodes.
void runOnTeam(const Team& team, Request q, const char* api);

}  // namespace axon::coll
