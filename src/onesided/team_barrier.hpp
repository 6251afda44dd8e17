// Barrier over a team: a dissemination barrier on the heap's control block when every member
// shares memory, else a rendezvous through the key-value store.
#pragma once

namespace axon {

class Runtime;
namespace detail {
struct TeamState;
}

// Synchronizes the team (no quiet). `what` names the caller for error messages.
void teamBarrier(Runtime& rt, const detail::TeamState& team, const char* what);

// Rounds of the dissemination barrier for n PEs: ceil(log2(n)). Pure, unit-tested.
int disseminationRounds(int n);

}  // namespace axon
