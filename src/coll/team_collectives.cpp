#include "coll/team_collectives.hpp"

#include "axon/error.hpp"
#include "coll/hierarchy.hpp"
#include "coll/workspace.hpp"
#include "core/log.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon::coll {

std::shared_ptr<TeamCollectives> makeTeamCollectives(PeContext& rt, NetworkTransport* net,
                                                     const detail::TeamState& team, std::size_t halfBytes) {
  if (team.members.size() <= 1) return localCollectives(rt, team);
  if (!team.sharedMemory) {
    // Members on several nodes: each node's part shares memory, its leader reaches the others.
    if (!net) throw Error(ErrorCode::Internal, "no network transport, yet team " + team.name + " spans nodes");
    return hierarchyCollectives(rt, team, Hierarchy::create(rt, *net, team, halfBytes));
  }
  if (GpuBackend* gpu = rt.gpu()) {
    // Every member alike gets a GPU workspace or none (with the same reason): the choice is the
    // same on every member.
    if (auto ws = gpu->createTeamWorkspace(rt, team, team.gpuWhyNot)) return gpuCollectives(rt, team, std::move(ws));
    log(LogLevel::Info, rt.myPe(), "team " + team.name + ": collectives take the host path (" + team.gpuWhyNot + ")");
  }
  return shmCollectives(rt, team, Workspace::create(rt, team, halfBytes));
}

void noDeviceHandle(PeContext& rt, const detail::TeamState& team) {
  throw Error(ErrorCode::Unsupported, "PE " + std::to_string(rt.myPe()) + ": device_coll_handle: team " + team.name +
                                          " has no GPU collective workspace (" +
                                          (!rt.gpu() ? "the GPU backend is off"
                                           : team.members.size() == 1 ? "a team of one PE needs none"
                                           : team.gpuWhyNot.empty() ? "its members do not all share a node"
                                                                    : team.gpuWhyNot) +
                                          ")");
}

void noGpuWorkspace(PeContext& rt, const detail::TeamState& team, const char* api) {
  throw Error(ErrorCode::Unsupported, "PE " + std::to_string(rt.myPe()) + ": " + api + " on team " + team.name +
                                          ": no GPU collective workspace (" +
                                          (team.gpuWhyNot.empty() ? std::string("its members do not all share a node")
                                                                  : team.gpuWhyNot) +
                                          "); use the blocking call, which takes the host path");
}

void explainHostShm(PeContext& rt, const detail::TeamState& team, Explanation& e) {
  e.path = "host-shm";
  if (rt.gpu()) {
    e.reason += "; GPU buffers are copied through host memory around the call (no GPU workspace: " +
                team.gpuWhyNot + ")";
  }
}

}  // namespace axon::coll
