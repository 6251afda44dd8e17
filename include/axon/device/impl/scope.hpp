// What a cooperation scope (Thread, Warp, Block) means to the implementation: the caller's rank in
// the scope, the scope's size, a synchronization of the scope and a broadcast from its rank 0.
//
// Ranks come from the linear thread index over all three block dimensions, which is also how the
// hardware assigns threads to warps, so lane = linear index % 32 is the lane in its warp.
#pragma once

#include "axon/device/types.hpp"

namespace axon {
namespace device {
namespace detail {

AXON_DEVICE_INLINE unsigned linearThreadIndex() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
AXON_DEVICE_INLINE unsigned blockThreadCount() { return blockDim.x * blockDim.y * blockDim.z; }

// Only the three scopes exist; anything else fails to compile with this message.
template <class Scope>
struct ScopeOps {
  static_assert(sizeof(Scope) == 0, "axon::device scope must be Thread, Warp or Block");
};

template <>
struct ScopeOps<Thread> {
  static AXON_DEVICE_INLINE unsigned rank() { return 0; }
  static AXON_DEVICE_INLINE unsigned size() { return 1; }
  static AXON_DEVICE_INLINE void sync() {}
  static AXON_DEVICE_INLINE unsigned long long broadcast(unsigned long long v) { return v; }
};

// A warp is the 32 lanes that exist: the last warp of a block whose thread count is not a multiple
// of 32 is smaller, and its mask names only its lanes (a full mask there would be undefined).
template <>
struct ScopeOps<Warp> {
  static AXON_DEVICE_INLINE unsigned rank() { return linearThreadIndex() & 31u; }
  static AXON_DEVICE_INLINE unsigned size() {
    const unsigned left = blockThreadCount() - (linearThreadIndex() & ~31u);
    return left < 32u ? left : 32u;
  }
  static AXON_DEVICE_INLINE unsigned mask() {
    const unsigned n = size();
    return n == 32u ? 0xffffffffu : (1u << n) - 1u;
  }
  // __syncwarp orders memory among the lanes as well as joining them.
  static AXON_DEVICE_INLINE void sync() { __syncwarp(mask()); }
  // The sync first: lane 0's earlier acquire then covers the other lanes' later loads (a shuffle
  // alone exchanges the value but promises no memory ordering).
  static AXON_DEVICE_INLINE unsigned long long broadcast(unsigned long long v) {
    const unsigned m = mask();
    __syncwarp(m);
    return __shfl_sync(m, v, 0);
  }
};

template <>
struct ScopeOps<Block> {
  static AXON_DEVICE_INLINE unsigned rank() { return linearThreadIndex(); }
  static AXON_DEVICE_INLINE unsigned size() { return blockThreadCount(); }
  static AXON_DEVICE_INLINE void sync() { __syncthreads(); }
  // One shared word for every broadcast of the block. The second barrier keeps rank 0 from
  // overwriting it in a next broadcast before every thread has read this one.
  static AXON_DEVICE_INLINE unsigned long long broadcast(unsigned long long v) {
    __shared__ unsigned long long word;
    if (rank() == 0) word = v;
    __syncthreads();
    v = word;
    __syncthreads();
    return v;
  }
};

}  // namespace detail
}  // namespace device
}  // namespace axon
