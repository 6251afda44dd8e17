#include "onesided/team_barrier.hpp"

#include <atomic>
#include <string>

#include "core/runtime.hpp"
#include "core/team_state.hpp"
#include "onesided/wait.hpp"

namespace axon {

int disseminationRounds(int n) {
  int rounds = 0;
  while ((1 << rounds) < n) ++rounds;
  return rounds;
}

void teamBarrier(Runtime& rt, const detail::TeamState& team, const char* what) {
  const int n = static_cast<int>(team.members.size());
  if (!team.sharedMemory) {
    rt.bootstrap().barrier("team-" + team.name, team.members);
    ++team.barriers;
    return;
  }
  // Round r: signal the PE 2^r ahead, wait for the one 2^r behind. Counters only grow, so a fast
  // PE that enters the next barrier early cannot be mistaken for this one: this barrier waits for
  // the count to pass `barriers`, the next for it to pass `barriers + 1`.
  const std::uint64_t target = team.barriers + 1;
  const int me = team.myIndex;
  for (int r = 0; r < disseminationRounds(n); ++r) {
    const int to = team.members[(me + (1 << r)) % n];
    const int from = team.members[(me - (1 << r) % n + n) % n];
    std::atomic_ref<std::uint64_t>(rt.control(to).barrier[team.slot][r])
        .fetch_add(1, std::memory_order_acq_rel);
    waitUntil(rt, &rt.control(rt.myPe()).barrier[team.slot][r], Cmp::Ge, target,
              WaitSite{what, team.name.c_str(), r, from});
  }
  team.barriers = target;
}

}  // namespace axon
