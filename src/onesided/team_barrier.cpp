#include "onesided/team_barrier.hpp"

#include <atomic>
#include <string>

#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "core/wait.hpp"
#include "core/control_block.hpp"
#include "transport/transport.hpp"

namespace axon {

int disseminationRounds(int n) {
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  return rounds;
}

void teamBarrier(PeContext& rt, const detail::TeamState& team, const char* what) {
  const int n = static_cast<int>(team.members.size());
  // Round r: signal the PE 2^r ahead, wait for the one 2^r behind. Counters only grow, so a fast
  // PE that enters the next barrier early cannot be mistaken for this one: this barrier waits for
  // the count to pass `barriers`, the next for it to pass `barriers + 1`.
  const std::uint64_t target = team.barriers + 1;
  const int me = team.myIndex;
  // A member in a collective (or another kind of synchronization) instead: a mismatch on every
  // member, found before anything is signalled.
  if (team.syncOrder) team.syncOrder->enterSync(what);
  for (int r = 0; r < disseminationRounds(n); ++r) {
    const int to = team.members[(me + (1 << r)) % n];
    const int from = team.members[(me - (1 << r) % n + n) % n];
    // A signal add is ordered after everything this PE put to `to` before it.
    const RemoteRef counter = rt.controlRef(to, &rt.control(rt.myPe()).barrier[team.slot][r]);
    rt.transportFor(counter, nullptr, what).signal(counter, 1, SignalOp::Add);
    waitUntil(rt, &rt.control(rt.myPe()).barrier[team.slot][r], Cmp::Ge, target,
              WaitSite{what, team.name.c_str(), r, from, nullptr, nullptr, team.ownTimeout()});
  }
  team.barriers = target;
}

}  // namespace axon
