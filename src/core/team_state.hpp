// What a Team handle points to.
#pragma once

#include <atomic>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "axon/team.hpp"
#include "core/sync_order.hpp"

namespace axon {
namespace coll {
class TeamCollectives;
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
  // This PE's bound on the team's waits, in seconds (Team::setTimeout); 0: AXON_TIMEOUT. Read by
  // waits on any thread (a stream's host worker, the device proxy): relaxed atomic accesses.
  double ownTimeout() const { return std::atomic_ref<double>(timeoutSec_).load(std::memory_order_relaxed); }
  void setOwnTimeout(double seconds) const {
    std::atomic_ref<double>(timeoutSec_).store(seconds, std::memory_order_relaxed);
  }
  alignas(std::atomic_ref<double>::required_alignment) mutable double timeoutSec_ = 0;

  // How the team's collectives run (coll/team_collectives.hpp): chosen when the team is made,
  // collectively, by coll::makeTeamCollectives; released by Team::destroy.
  mutable std::shared_ptr<coll::TeamCollectives> collectives;
  // The same object, seen by the team barrier (a floor below the collectives): its
  // synchronizations take their place among the collectives (core/sync_order.hpp).
  mutable std::shared_ptr<SyncOrder> syncOrder;
  // Why the team has no GPU collective workspace (its members' GPUs do not all map each other);
  // empty when it has one, or when its members do not all share a node.
  mutable std::string gpuWhyNot;
  // The members as a table in GPU memory, for kernels on a team that is not a strided range: the
  // GPU workspace keeps one (null without a GPU workspace).
  mutable const int* deviceMembers = nullptr;

  static Team make(int slot, std::vector<int> members, int myWorldRank, bool sharedMemory,
                   std::string name);
};

// The team's state; throws InvalidArgument naming `api` for an invalid team.
const TeamState& requireValidTeam(const Team& t, const char* api);

}  // namespace detail
}  // namespace axon
