// Collectives called from inside a kernel, at block scope, on a team's GPU collective workspace.
//
//   #include <axon/device/collectives.hpp>
//   __global__ void step(axon::device::CollHandle h, float* grad, size_t n) {
//     namespace ad = axon::device;
//     // ... compute grad ...
//     if (!ad::allreduce<ad::Block>(h, grad, grad, n, ad::ReduceOp::Sum)) return;  // failed
//   }
//   // host: step<<<1, 512, 0, stream>>>(axon::deviceCollHandle(team), grad, n);
//
// Every thread of the calling block calls, with the same arguments (like __syncthreads()). Every
// member of the team makes the same calls in the same order on the same `channel`; one call per
// channel is in flight at a time on a PE, so blocks that run collectives at once use different
// channels (the workspace has AXON_COLL_GPU_CHANNELS of them, and the library's own
// stream-ordered collectives use them too: do not run those on the team at the same time).
// Buffers are any memory this GPU can read or write (they need not be symmetric): data travels
// through the workspaces, which every member maps.
//
// On a team whose members span nodes no workspace maps every member: the handle then sends each
// call whole to this PE's device proxy, which runs the host's blocking collective on the team
// (UCX between the nodes) and returns when it is done. Such a handle has one channel, and the
// proxy carries one call at a time in the order the PE's kernels post them: calls on two such teams
// must be posted in the same order on every member, and the program's own host calls on the team
// must not overlap a kernel's (synchronize the kernel first), as for blocking calls from two
// threads (docs/architecture.md, "The device proxy").
//
// Each call returns true when it completed. It returns false, in every thread of the block, when
// it did not: a member made a different call (count, type, op, root or collective), or a wait
// passed AXON_TIMEOUT. The first PE to see it prints one line naming both calls (or the PE, word,
// expected and seen value of the wait) and tells every member, whose calls then return false too;
// the host calls on the team throw CollectiveMismatch / Timeout with that report from then on.
// A call no member could run (a channel outside [0, AXON_COLL_GPU_CHANNELS), a root outside the
// team) prints what was wrong and stops the kernel with a trap, like a bad argument to put().
//
// Memory model: when a call returns true, every thread of the block sees the result in dst.
// barrier() also makes visible here what every member's calling block stored before it (its
// signals are releases at system scope and its waits acquires, followed by __syncthreads()); so
// do calls on the Simple protocol. Small calls (a block of at most AXON_COLL_GPU_LL_MAX and
// AXON_COLL_GPU_LL_CHUNK bytes) take the LL protocol: their data travels with its own flags,
// without fences, and orders no other memory. Use barrier() to publish other stores.
//
// Results are bit-identical on every member: reductions run in member order. Types:
// signed/unsigned char, int, unsigned int, long (long), unsigned long (long), float, double,
// axon::device::Half and axon::device::BFloat16 (which compute in float, rounding every step).
#pragma once

#include "axon/device/coll_types.hpp"

namespace axon {
namespace device {

// Allreduce above this many bytes on more than two members uses two shots (reduce-scatter, then
// allgather), below it one shot (every member reduces everything).
constexpr SizeT kDeviceTwoShotBytes = 256 * 1024;

// A barrier over the team: returns once every member's block called it.
template <class Scope>
AXON_DEVICE_INLINE bool barrier(const CollHandle& h, int channel = 0);

// root's src (count elements) to dst on every member; src is read on the root only. root is the
// root's index in the team, in [0, h.size).
template <class Scope, class T>
AXON_DEVICE_INLINE bool broadcast(const CollHandle& h, const T* src, T* dst, SizeT count, int root,
                                  int channel = 0);

// dst on the root (its index in the team, in [0, h.size)) receives the reduction of every
// member's src; other members' dst is untouched.
template <class Scope, class T>
AXON_DEVICE_INLINE bool reduce(const CollHandle& h, const T* src, T* dst, SizeT count, ReduceOp op,
                               int root, int channel = 0);

template <class Scope, class T>
AXON_DEVICE_INLINE bool allreduce(const CollHandle& h, const T* src, T* dst, SizeT count,
                                  ReduceOp op, int channel = 0);

// dst holds size * count elements: member i's src at i * count.
template <class Scope, class T>
AXON_DEVICE_INLINE bool allgather(const CollHandle& h, const T* src, T* dst, SizeT count,
                                  int channel = 0);

// src holds size * count elements; member i's dst receives the reduction of block i of every src.
template <class Scope, class T>
AXON_DEVICE_INLINE bool reduceScatter(const CollHandle& h, const T* src, T* dst, SizeT count,
                                      ReduceOp op, int channel = 0);

// src holds size blocks of count; block j goes to member j, which stores it as block i (i: sender).
template <class Scope, class T>
AXON_DEVICE_INLINE bool alltoall(const CollHandle& h, const T* src, T* dst, SizeT count,
                                 int channel = 0);

}  // namespace device
}  // namespace axon

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#include "axon/device/impl/coll_impl.hpp"
#endif
