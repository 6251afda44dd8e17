// Bodies of the device barriers (declared in axon/device/onesided.hpp): the host's dissemination
// barrier (src/onesided/team_barrier.cpp) on the ControlWords at offset 0 of every GPU heap.
// Members this GPU cannot store to get their increments through the proxy.
//
// Round r: increment the counter barrier[slot][r] of the member 2^r ahead, then wait until our own
// counter barrier[slot][r] reaches this barrier's epoch (the number of device barriers this PE has
// entered on the team's slot, kept in epoch[slot]). Counters only grow, so a fast member that
// enters the next barrier early cannot be mistaken for this one: that one waits for epoch + 1.
// After ceil(log2(size)) rounds every member has heard, directly or through others, from all.
#pragma once

#include "axon/device/impl/address.hpp"
#include "axon/device/impl/diagnostics.hpp"
#include "axon/device/impl/proxy_impl.hpp"
#include "axon/device/impl/ptx.hpp"
#include "axon/device/impl/scope.hpp"
#include "axon/device/impl/wait.hpp"
#include "axon/device/types.hpp"

namespace axon {
namespace device {
namespace detail {

// The barrier proper, run by one thread of the calling scope.
AXON_DEVICE_INLINE void teamBarrier(const Context& ctx, const Team& team) {
  const int n = team.size;
  const int me = team.myIndex;
  if (__builtin_expect(me < 0 || me >= n || team.slot < 0 || team.slot >= kMaxTeams, 0)) {
    failBadTeam("barrier", ctx.myPe, team.start, team.stride, n, team.slot, me);
  }
  // quiet: this scope's stores (ordered before this thread by the scope's sync) are visible
  // everywhere before any peer hears of this barrier. The release increments below would order
  // them too; the fence makes the barrier a quiet whatever the peer does with its counters. The
  // requests this PE posted to its proxy complete too (nothing to wait for if none is pending).
  fenceSys();
  proxyQuiet(ctx);

  ControlWords* ctrl = reinterpret_cast<ControlWords*>(ctx.heapBase);
  // Only this thread touches this PE's epoch of the slot (one barrier per team in flight), so
  // plain accesses would do; volatile makes each one a real memory access, so the word in memory
  // is the count at every moment, also for the host or a debugger reading it.
  volatile unsigned long long* epochWord = &ctrl->epoch[team.slot];
  const unsigned long long epoch = *epochWord + 1;
  *epochWord = epoch;

  unsigned long long* counters = ctrl->barrier[team.slot];
  for (int r = 0, dist = 1; dist < n; ++r, dist <<= 1) {
    const int toPe = teamPe(team, (me + dist) % n);
    const int fromPe = teamPe(team, (me - dist + n) % n);
    if (loadStoreReaches(ctx, toPe, "barrier")) {
      addReleaseSys(remote(ctx, &counters[r], toPe), 1ull);
    } else {
      // A peer on another node: the proxy adds with a release after what it carried before.
      ProxyRequest inc = proxyRequest(ProxyOp::Signal, toPe);
      inc.sig = reinterpret_cast<unsigned long long>(&counters[r]);
      inc.value = 1;
      inc.atomicOp = static_cast<unsigned int>(SignalOp::Add);
      proxyPost(ctx, inc, "barrier");
    }
    waitUntil(ctx, &counters[r], Cmp::Ge, epoch, WaitSite{WaitSite::Barrier, team.slot, r, fromPe});
  }
}

}  // namespace detail

template <class Scope>
AXON_DEVICE_INLINE void barrier(const Context& ctx, const Team& team) {
  using S = detail::ScopeOps<Scope>;
  S::sync();
  if (S::rank() == 0) detail::teamBarrier(ctx, team);
  // Carries rank 0's acquires to the rest of the scope.
  S::sync();
}

template <class Scope>
AXON_DEVICE_INLINE void barrierAll(const Context& ctx) {
  barrier<Scope>(ctx, ctx.world);
}

}  // namespace device
}  // namespace axon
