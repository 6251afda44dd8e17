// What a Team handle points to.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "axon/team.hpp"

namespace axon {
class GpuTeamWorkspace;
namespace coll {
class Workspace;
class Hierarchy;
class HostStaging;
}
namespace detail {

struct TeamState {
  int slot = -1;             // row of ControlBlock::barrier used by this team
  std::vector<int> members;  // world ranks, in team order
  int myIndex = -1;
  bool sharedMemory = false; // every member maps every other's heap: barrier through the heap
  // This PE's progress in the team, not its identity: mutable so that a const Team handle can
  // run barriers and splits.
  mutable std::uint64_t barriers = 0;  // barriers completed; the next one waits for counters > this
  std::string name;          // "world", "node", "split3"; used in messages and store keys
  mutable int splits = 0;    // teams split from this one so far, for unique names

  // This PE's collective workspace for the team (coll/workspace.hpp); null on teams whose members
  // do not share memory.
  mutable std::shared_ptr<coll::Workspace> workspace;
  // With the GPU backend, when every member's GPU maps every other's memory: the GPU collective
  // workspace, which then carries all of the team's collectives (host buffers are staged through
  // device memory), instead of `workspace`. Otherwise null, and `gpuWhyNot` says why.
  mutable std::shared_ptr<GpuTeamWorkspace> gpuWorkspace;
  mutable std::string gpuWhyNot;
  // When the members sit on several nodes: each node's part and its leader's network level
  // (coll/hierarchy.hpp), which then carries the team's host collectives.
  mutable std::shared_ptr<coll::Hierarchy> hierarchy;
  // Host copies of GPU buffers for the host-path collectives above (coll/host_staging.hpp),
  // made with the team (empty until a call needs it).
  std::shared_ptr<coll::HostStaging> hostStaging;

  static Team make(int slot, std::vector<int> members, int myWorldRank, bool sharedMemory,
                   std::string name);
};

// The team's state; throws InvalidArgument naming `api` for an invalid team.
const TeamState& requireValidTeam(const Team& t, const char* api);

}  // namespace detail
}  // namespace axon
