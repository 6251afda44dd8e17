// One-sided communication from GPU kernels: put/get, signals, atomics, fence/quiet and barriers on
// the symmetric GPU heaps of every PE. Each call chooses per PE: load/store where this GPU maps the
// peer's heap (NVLink or PCIe peer access; isReachable), else, for a PE on another node, a request
// to this PE's host proxy, which carries it out over UCX. (A node-local GPU without peer access is
// out of a kernel's reach: the call stops the kernel with a message.) Through the proxy one thread of the scope posts
// the request to a ring in pinned host memory; put, get, put_signal, g and fetching atomics wait
// for the proxy to complete it (a few microseconds plus the network's time), signal_op, p and the
// other atomics only post. The source of a put through the proxy must be global memory (the GPU
// heap, cudaMalloc, mapped host memory), not a thread's local variables; p and g carry values of
// up to 16 bytes.
//
// Every call takes the Context the host passed to the kernel (axon::deviceContext(), by value).
// A symmetric address is a pointer into *this* PE's GPU heap; it names the same offset on every
// PE. This header compiles under nvcc and NVRTC with no other header; a host compiler sees the
// declarations, and remote()/isReachable(), which host code may call too.
//
// ── Scopes ────────────────────────────────────────────────────────────────────────────────────
// The template argument Scope says which threads make a call together, with the same arguments:
//   Thread  the calling thread alone (the default);
//   Warp    every lane of the caller's warp (lane = linear thread index % 32; the last warp of a
//           block whose size is not a multiple of 32 has fewer lanes, and all of them call);
//   Block   every thread of the block (the linear index over blockDim.x * y * z).
// The threads share the work, and a Warp or Block call ends with __syncwarp()/__syncthreads(), so
// when it returns the whole scope has done its share. Like those intrinsics, Warp and Block calls
// must be reached by every thread of the scope (no thread may skip one in divergent code).
//
// ── Memory model (system scope: every GPU and CPU of the node observes the same order) ────────
// * put/get/p/g are plain stores to / loads from the peer's memory. put returns when the source
//   may be reused; its stores may still be on the way. get and g return with the data.
// * fence() and quiet() are a system-scope fence (__threadfence_system): every store the calling
//   thread made before it, to any PE, is visible to every observer before any memory operation the
//   thread makes after it. Stores over NVLink/PCIe have nothing outstanding that a fence does not
//   complete, so for them the two are the same; both exist to match OpenSHMEM. A fence covers the
//   calling thread's stores, and those of threads it synchronized with first: __syncthreads()
//   (or a Block call, which ends with one) and then a fence by one thread covers the whole block.
//   Through the proxy: requests from one thread to one PE are delivered in the order posted;
//   fence() also orders the proxy's deliveries around it; quiet() waits until every request this
//   PE posted before is complete at its target (a round trip to the proxy, skipped when nothing was
//   posted since the proxy's last quiet).
// * Signals are 64-bit words updated with a release at system scope and read with an acquire at
//   system scope. putSignal stores the data, synchronizes its scope, then one thread fences and
//   releases the signal: a PE that sees the new value (signalWaitUntil, signalFetch) sees the
//   data, and so does every thread of a Warp or Block signalWaitUntil, which synchronizes its
//   scope after the acquire. signalOp alone releases what the calling thread stored and what it
//   has synchronized with (a preceding __syncthreads()), so "put; __syncthreads(); signalOp" by
//   one thread is a putSignal.
// * Atomics are relaxed at system scope: atomic with respect to every system-scope atomic on the
//   same word from any GPU or CPU, ordered with nothing else. fence() first orders data before one.
// * A barrier synchronizes its scope, then one thread quiets (proxy included) and runs a dissemination
//   barrier whose increments are releases and whose waits are acquires, then the scope
//   synchronizes again. Afterwards every thread of the calling scope on every member sees every
//   store that the calling scopes of all members made before the barrier. Stores of other blocks
//   of the grid are covered only if they were ordered before the call (a grid sync, a signal).
//
// ── Waits and errors ──────────────────────────────────────────────────────────────────────────
// Every wait is bounded by AXON_TIMEOUT (Context::timeoutNs; 0 waits forever; waits on the proxy by
// twice that, so that the proxy's own bounded operation reports first). A kernel cannot throw: a
// call that times out, fails in the proxy or gets a PE that does not exist prints one line, e.g.
//   axon: PE 1: device signal_wait_until timed out after 30.0 s: signal at 0x7f... (GPU heap
//   offset 4096) expected >= 5, seen 3
// and stops the kernel with __trap(); the host sees the launch fail. Reachability is one bit test.
#pragma once

#include "axon/device/types.hpp"

namespace axon {
namespace device {

// ── Addresses ─────────────────────────────────────────────────────────────────────────────────

// Address, in this process, of the symmetric object `local` (in this PE's GPU heap) on PE `pe`:
// local + (pe - myPe) / peStride * heapStride. Pure arithmetic: no check that pe is reachable.
template <class T>
AXON_HOST_DEVICE_INLINE T* remote(const Context& ctx, T* local, int pe);

// Whether PE `pe`'s GPU heap is mapped here (bit pe of ctx.reachable); false outside [0, nPes).
// Calls to a PE for which it is false go through the proxy (ctx.proxy).
AXON_HOST_DEVICE_INLINE bool isReachable(const Context& ctx, int pe);

// World PE of member `i` of `team` (its member table, or start + i * stride).
AXON_HOST_DEVICE_INLINE int teamPe(const Team& team, int i);

// ── Data ──────────────────────────────────────────────────────────────────────────────────────

// Copies `bytes` from local memory `src` (any memory this GPU can read) to the symmetric address
// `dest` on PE `pe`. 16-byte vectors when src and dest agree modulo 16 (narrower words otherwise).
// Bulk data over all SMs: give each block chunks b, b + gridDim.x, ... of 64-512 KiB rather than
// one contiguous slice (on two H200s, 1 GiB: 372 against 349 GB/s, likely because the grid then
// touches fewer pages at once), and declare __launch_bounds__ in kernels of 1024 threads (a
// Block copy keeps 8 vectors per thread in flight; without the bound the kernel may not launch).
template <class Scope = Thread>
AXON_DEVICE_INLINE void put(const Context& ctx, void* dest, const void* src, SizeT bytes, int pe);

// Copies `bytes` from the symmetric address `src` on PE `pe` to local memory `dest`.
template <class Scope = Thread>
AXON_DEVICE_INLINE void get(const Context& ctx, void* dest, const void* src, SizeT bytes, int pe);

// One element: stores `value` at the symmetric `dest` on PE `pe` / loads it from `src` there.
template <class T>
AXON_DEVICE_INLINE void p(const Context& ctx, T* dest, T value, int pe);
template <class T>
AXON_DEVICE_INLINE T g(const Context& ctx, const T* src, int pe);

// ── Signals (64-bit words of the symmetric heap) ──────────────────────────────────────────────
// `sig` may also be an unsigned long* (what std::uint64_t is on Linux).

// put, then the signal `sig` on PE `pe` is set to / increased by `value` with a release at
// system scope, by one thread of the scope once the whole scope's data is stored.
template <class Scope = Thread>
AXON_DEVICE_INLINE void putSignal(const Context& ctx, void* dest, const void* src, SizeT bytes,
                                  unsigned long long* sig, unsigned long long value, SignalOp op,
                                  int pe);
template <class Scope = Thread>
AXON_DEVICE_INLINE void putSignal(const Context& ctx, void* dest, const void* src, SizeT bytes,
                                  unsigned long* sig, unsigned long value, SignalOp op, int pe);

// Sets / adds to the signal `sig` on PE `pe` with a release at system scope (calling thread).
AXON_DEVICE_INLINE void signalOp(const Context& ctx, unsigned long long* sig,
                                 unsigned long long value, SignalOp op, int pe);
AXON_DEVICE_INLINE void signalOp(const Context& ctx, unsigned long* sig, unsigned long value,
                                 SignalOp op, int pe);

// Reads this PE's signal `sig` with an acquire at system scope.
AXON_DEVICE_INLINE unsigned long long signalFetch(const Context& ctx,
                                                  const unsigned long long* sig);
AXON_DEVICE_INLINE unsigned long signalFetch(const Context& ctx, const unsigned long* sig);

// Waits until this PE's signal `sig` compares true against `value` (`*sig cmp value`) and returns
// the value seen, in every thread of the scope. One thread polls with acquire loads, sleeping
// between polls once the first few fail; the scope then synchronizes. Bounded by ctx.timeoutNs.
template <class Scope = Thread>
AXON_DEVICE_INLINE unsigned long long signalWaitUntil(const Context& ctx,
                                                      const unsigned long long* sig, Cmp cmp,
                                                      unsigned long long value);
template <class Scope = Thread>
AXON_DEVICE_INLINE unsigned long signalWaitUntil(const Context& ctx, const unsigned long* sig,
                                                 Cmp cmp, unsigned long value);

// ── Ordering ──────────────────────────────────────────────────────────────────────────────────

// Orders the calling thread's earlier stores to every PE before its later ones (system fence).
AXON_DEVICE_INLINE void fence(const Context& ctx);
// Makes the calling thread's earlier stores to every PE visible everywhere (system fence).
AXON_DEVICE_INLINE void quiet(const Context& ctx);

// ── Atomics on PE pe's symmetric memory, relaxed at system scope ──────────────────────────────
// T: int, unsigned int, long, unsigned long, long long, unsigned long long (4 or 8 bytes; the
// address aligned to its size). Those that return a value return the word's value before the op.

template <class T>
AXON_DEVICE_INLINE T atomicFetch(const Context& ctx, const T* src, int pe);
template <class T>
AXON_DEVICE_INLINE void atomicSet(const Context& ctx, T* dest, T value, int pe);
template <class T>
AXON_DEVICE_INLINE T atomicSwap(const Context& ctx, T* dest, T value, int pe);
// Stores `value` if the word equals `cond`.
template <class T>
AXON_DEVICE_INLINE T atomicCompareSwap(const Context& ctx, T* dest, T cond, T value, int pe);
template <class T>
AXON_DEVICE_INLINE T atomicFetchAdd(const Context& ctx, T* dest, T value, int pe);
// Adds without fetching (one-way over the link: cheaper than atomicFetchAdd).
template <class T>
AXON_DEVICE_INLINE void atomicAdd(const Context& ctx, T* dest, T value, int pe);
template <class T>
AXON_DEVICE_INLINE T atomicFetchAnd(const Context& ctx, T* dest, T value, int pe);
template <class T>
AXON_DEVICE_INLINE T atomicFetchOr(const Context& ctx, T* dest, T value, int pe);
template <class T>
AXON_DEVICE_INLINE T atomicFetchXor(const Context& ctx, T* dest, T value, int pe);

// ── Barriers ──────────────────────────────────────────────────────────────────────────────────

// quiet, then waits until every member of `team` has entered the barrier (see the memory model
// above). Every member must call it, from one scope (one thread, warp or block): at most one
// barrier per team may be in flight on a PE, as the counters are per team and PE. Calling it on a
// team this PE is not a member of is an error. Bounded by ctx.timeoutNs.
template <class Scope = Thread>
AXON_DEVICE_INLINE void barrier(const Context& ctx, const Team& team);
// barrier(ctx, ctx.world).
template <class Scope = Thread>
AXON_DEVICE_INLINE void barrierAll(const Context& ctx);

}  // namespace device
}  // namespace axon

// The bodies. Host compilers get the pure arithmetic only.
#include "axon/device/impl/address.hpp"
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#include "axon/device/impl/atomic_impl.hpp"
#include "axon/device/impl/barrier_impl.hpp"
#include "axon/device/impl/onesided_impl.hpp"
#endif
