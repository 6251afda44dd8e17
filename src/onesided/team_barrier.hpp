// Barrier over a team: a dissemination barrier on the control block at the start of every PE's
// host heap, whose counters each member increments on its partner through the transport that
// reaches it (a CPU atomic on this node, a UCX atomic on another).
#pragma once

namespace axon {

class PeContext;
namespace detail {
struct TeamState;
}

// Synchronizes the team (no quiet). `what` names the caller for error messages.
void teamBarrier(PeContext& rt, const detail::TeamState& team, const char* what);

// Rounds of the dissemination barrier for n PEs: ceil(log2(n)). Pure, unit-tested.
int disseminationRounds(int n);

}  // namespace axon
