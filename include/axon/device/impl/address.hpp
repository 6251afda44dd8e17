// Symmetric addressing: pure arithmetic on the Context, callable from host code too (a host
// compiler sees these and nothing else of the device API's bodies).
#pragma once

#include "axon/device/types.hpp"

namespace axon {
namespace device {

// Heap slots from this PE's to `pe`'s: world ranks over the node-local PEs' spacing (a division
// only where PEs are not placed in blocks).
AXON_HOST_DEVICE_INLINE long long heapSlotsTo(int myPe, int pe, int peStride) {
  const int ranks = pe - myPe;
  return peStride > 1 ? ranks / peStride : ranks;
}

template <class T>
AXON_HOST_DEVICE_INLINE T* remote(const Context& ctx, T* local, int pe) {
  // C-style casts: T may be const or volatile, and the cast to bytes and back must keep that.
  const long long delta = heapSlotsTo(ctx.myPe, pe, ctx.peStride) * ctx.heapStride;
  return (T*)((char*)(local) + delta);
}

AXON_HOST_DEVICE_INLINE bool isReachable(const Context& ctx, int pe) {
  // Unsigned compares reject negative PEs too; the bounds keep the bit test inside `reachable`.
  const unsigned p = static_cast<unsigned>(pe);
  if (p >= static_cast<unsigned>(ctx.nPes) || p >= static_cast<unsigned>(kMaxPeers)) return false;
  // Every word read at a constant index and masked, not reachable[p / 32]: a kernel parameter
  // indexed at run time is copied to local memory by every thread at kernel start (the compiler
  // turns a plain "if (i == p / 32)" back into such an index, hence the arithmetic).
  // (No #pragma unroll: host compilers warn about it; four constant trips unroll anyway.)
  unsigned word = 0;
  for (unsigned i = 0; i < static_cast<unsigned>(kMaxPeers / 32); ++i) {
    word |= ctx.reachable[i] & (0u - static_cast<unsigned>((p >> 5) == i));
  }
  return ((word >> (p & 31u)) & 1u) != 0u;
}

// World PE of member `i` of `team`.
AXON_HOST_DEVICE_INLINE int teamPe(const Team& team, int i) {
  return team.members ? team.members[i] : team.start + i * team.stride;
}

}  // namespace device
}  // namespace axon
