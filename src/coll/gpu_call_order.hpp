// A team barrier's place among the team's GPU collectives (the "gpu-p2p" path). The kernels compare
// the members' collective calls among themselves, but a team barrier runs on the host and leaves
// no record in them (a barrier kernel could overtake this PE's stream-ordered calls). So each PE's
// host logs, in its control block (core/control_block.hpp: TeamCallLog), how many GPU collectives
// it issued on the team and the last one's record; a team barrier logs that count when it enters,
// and before it signals anything it waits for every member to enter too, failing on every member
// when one issued a different number of GPU collectives before it, or a GPU collective instead of
// it (a blocking one whose kernel waits for this PE, which never comes). Whoever finds the mismatch
// reports it into every member's GPU workspace, so that their waiting kernels stop and report it.
//
// What it cannot see: a device-callable collective inside a user's kernel against a team barrier
// (the host issued no call); both sides then time out (AXON_TIMEOUT), naming each other.
#pragma once

#include "axon/device/coll_types.hpp"

namespace axon {
class GpuTeamWorkspace;
class PeContext;
namespace detail {
struct TeamState;
}
}  // namespace axon

namespace axon::coll {

// Logs a GPU collective this PE's host is about to issue on `team` (before it is launched, so that a
// member at a barrier sees it even while the call blocks this PE).
void logGpuCall(PeContext& rt, const detail::TeamState& team, const device::CollRecord& record);
// Undoes logGpuCall for a call whose launch failed (nothing was issued).
void unlogGpuCall(PeContext& rt, const detail::TeamState& team);

// A team barrier's entry on a team with a GPU workspace, before it signals anything: logs it, then
// waits for every member's entry and compares. Throws CollectiveMismatch naming both calls, after stopping the team's GPU
// collectives on every member; Timeout or PeerDead as any wait.
void enterGpuTeamBarrier(PeContext& rt, const detail::TeamState& team, GpuTeamWorkspace& ws, const char* what);

}  // namespace axon::coll
