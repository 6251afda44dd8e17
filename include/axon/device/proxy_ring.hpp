// The proxy channel between a PE's kernels and its host proxy: a ring in pinned host memory,
// mapped for the GPU, where device code posts the one-sided requests it cannot carry out by
// load/store (a PE on another node, or one whose GPU heap this GPU does not map). The host proxy
// (src/gpu/device_proxy.cpp, a client of the PE's progress engine) drains the ring in ticket order
// and carries each request out with the host API over the transport that reaches the PE (UCX
// across nodes).
//
// Posting: a thread takes a ticket t from a counter in GPU memory (one atomic add), waits until
// slot t % kProxySlots is free (its `released` word holds t - kProxySlots + 1), fills the request
// and stores t + 1 into request.ticket with a release. The proxy reads tickets in order.
// Completion: for requests whose caller waits (put, get, fetching atomics, quiet, ...) the proxy
// writes `result`, then t + 1 into `done` with a release; the caller reads them and frees the slot
// by storing t + 1 into `released`. The proxy frees the slots of requests nobody waits for as soon
// as it has copied them. So a slot is never overwritten while anyone still needs it: a full ring
// makes the poster wait (bounded by AXON_TIMEOUT), never overwrite.
//
// Every word holds ticket + 1, so that 0 means "never written". This header compiles alone under
// a host compiler, nvcc and NVRTC.
#pragma once

#include "axon/device/types.hpp"

namespace axon {
namespace device {

constexpr unsigned long long kProxySlots = 1024;
// Set in `done` (and in ProxyRing::failed) when the proxy could not carry out the request; the
// host printed why.
constexpr unsigned long long kProxyFailed = 1ull << 63;

// What a request asks for. Atomics carry the host's AtomicOp value (Fetch = 0 ... FetchXor = 8) in
// ProxyRequest::atomicOp.
enum class ProxyOp : unsigned int {
  Put = 1,        // bytes from the local `src` to the symmetric `dest` on pe
  Get = 2,        // bytes from the symmetric `src` on pe to the local `dest`
  PutSignal = 3,  // Put, then the signal `sig` on pe updated (value, signalOp), after the data
  Signal = 4,     // the signal `sig` on pe updated (value, signalOp)
  Atomic = 5,     // atomicOp on the `width`-byte word `dest` on pe (operand value, cond)
  Inline = 6,     // `bytes` (<= 16) carried in value and cond, stored at the symmetric `dest` on pe (p)
  GetInline = 7,  // `bytes` (<= 16) from the symmetric `src` on pe into the slot's result (g)
  Fence = 8,      // requests posted before it are delivered before those after it
  Quiet = 9,      // every request posted before it is complete (remote completion)
  // A device collective on a team that spans nodes, run by the proxy as the host's blocking
  // collective on that team: `value` packs the collective (bits 0-7), the data type (8-15) and
  // the reduction (16-23), as the host's enums; `bytes` is the count (in elements of the type),
  // `cond` the root, `src` and `dest` the buffers (any memory this GPU can reach), `width` the
  // team's slot.
  Collective = 10,
};

// Set in ProxyRequest::op by a caller that waits for the request's completion (the slot is then
// freed by that caller, not by the proxy): the proxy reads who waits from the request itself.
constexpr unsigned int kProxyWaited = 1u << 31;

// Atomic operations, as axon::AtomicOp on the host.
enum class ProxyAtomic : unsigned int {
  Fetch = 0, Set = 1, Swap = 2, CompareSwap = 3, FetchAdd = 4, Add = 5, FetchAnd = 6, FetchOr = 7,
  FetchXor = 8
};

// One request: one 64-byte line. Addresses are this process's: symmetric ones point into this
// PE's GPU heap and name the same offset on `pe`, as in the host API.
struct ProxyRequest {
  unsigned int op;         // ProxyOp, | kProxyWaited when the caller waits for it
  int pe;
  unsigned long long dest;
  unsigned long long src;
  unsigned long long bytes;
  unsigned long long sig;
  unsigned long long value;  // signal value, atomic operand, or the first 8 bytes of Inline data
  unsigned long long cond;   // compare-swap condition, or Inline bytes 8..15
  unsigned int atomicOp;     // ProxyAtomic (Atomic), or SignalOp (PutSignal, Signal)
  unsigned int width;        // atomic width: 4 or 8
};

// One slot: the request (the GPU writes it) and the words of its completion (the proxy writes
// them, the waiting caller reads them), on their own lines.
struct ProxySlot {
  ProxyRequest request;
  unsigned long long ticket;     // ticket + 1, stored with release once `request` is in place
  unsigned long long pad0[7];
  unsigned long long done;       // ticket + 1 (| kProxyFailed) once the request is complete
  unsigned long long result[2];  // what a fetching atomic or GetInline returns
  unsigned long long released;   // ticket + 1 once the slot may take ticket + kProxySlots
  unsigned long long pad1[4];
};

// The host proxy and kernels read these words at the same offsets; a request is one line.
static_assert(sizeof(ProxyRequest) == 64, "a proxy request is one 64-byte line");
static_assert(sizeof(ProxySlot) == 192, "a proxy slot is the request line and two lines of words");

struct ProxyRing {
  ProxySlot slots[kProxySlots];
  unsigned long long head;     // the proxy: requests read so far (for the diagnostics)
  // The proxy: every request with a smaller ticket is complete (the last quiet it ran covered
  // them), so a device quiet with nothing posted since has nothing to wait for.
  unsigned long long settled;
  // The proxy: ticket + 1 of the first request that failed, | kProxyFailed; 0 when none did.
  unsigned long long failed;
};

}  // namespace device
}  // namespace axon
