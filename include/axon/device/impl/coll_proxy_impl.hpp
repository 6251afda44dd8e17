// Device collectives on a team that spans nodes (CollHandle::proxyTeam != 0): no workspace maps
// every member, so the calling block's thread 0 posts the whole call to this PE's host proxy,
// which runs the host's blocking collective on the team (node-local parts, then UCX between the
// nodes' leaders) on the block's buffers, and waits for it. The call records the host compares
// make a different call on another member an error here too, and its waits are bounded by
// AXON_TIMEOUT.
//
// The proxy carries one request at a time, in the order this PE posts them: a PE runs one such
// collective at a time (channel 0 only), and the collectives of different teams that span nodes
// reach the proxies of their members in one order only if every member's kernels post them in
// that order.
#pragma once

#include "axon/device/coll_types.hpp"
#include "axon/device/impl/coll_common_impl.hpp"
#include "axon/device/impl/proxy_impl.hpp"

namespace axon {
namespace device {
namespace detail {

AXON_DEVICE_INLINE bool collThroughProxy(const CollHandle& h) { return h.proxyTeam != 0; }

// What the proxy functions read of a Context: this PE, the bound on waits, the channel.
AXON_DEVICE_INLINE Context collProxyContext(const CollHandle& h) {
  Context ctx{};
  ctx.myPe = h.myPe;
  ctx.timeoutNs = h.timeoutNs;
  ctx.proxy = h.proxy;
  return ctx;
}

// The whole call, by the block: true in every thread when the host ran it.
AXON_DEVICE_INLINE bool collRunThroughProxy(const CollHandle& h, const CollJob& job) {
  __shared__ int done;
  // The block's stores before the call (its src, what a barrier publishes) are ordered before
  // thread 0's post, whose system-scope fence then makes them visible to the host's copies.
  __syncthreads();
  if (linearThreadIndex() == 0) {
    ProxyRequest r = proxyRequest(ProxyOp::Collective, h.myPe);
    r.src = reinterpret_cast<unsigned long long>(job.src);
    r.dest = reinterpret_cast<unsigned long long>(job.dst);
    r.bytes = job.record.count;
    r.value = static_cast<unsigned long long>(job.record.collective) |
              static_cast<unsigned long long>(job.record.dtype) << 8 |
              static_cast<unsigned long long>(job.record.op) << 16;
    r.cond = static_cast<unsigned long long>(static_cast<unsigned>(job.record.root));
    r.width = h.proxyTeam - 1;
    done = proxyTry(collProxyContext(h), r, "collective") ? 1 : 0;
  }
  // Thread 0's acquire of the completion, then the barrier: every thread sees dst.
  __syncthreads();
  return done != 0;
}

}  // namespace detail
}  // namespace device
}  // namespace axon
