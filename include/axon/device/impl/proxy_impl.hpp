// The device side of the proxy channel (axon/device/proxy_ring.hpp): how a device call posts a
// request for a PE it cannot reach by load/store, and waits for its completion.
//
// One thread of the calling scope posts; the others wait at the scope's synchronization. Posting
// is one atomic on the ticket counter, the request's stores into pinned host memory, and a release
// store of the ticket. A caller that needs the request done (the source reusable, data fetched)
// then polls its slot's `done` word over PCIe (a microsecond or two per poll), then frees the
// slot.
#pragma once

#include "axon/device/impl/address.hpp"
#include "axon/device/impl/diagnostics.hpp"
#include "axon/device/impl/ptx.hpp"
#include "axon/device/impl/wait.hpp"
#include "axon/device/proxy_ring.hpp"
#include "axon/device/types.hpp"

namespace axon {
namespace device {
namespace detail {

// How a call reaches `pe`: true for load/store (its GPU heap is mapped here), false for the proxy.
// Neither (a PE outside the world, or no proxy where the heap is not mapped): prints why and traps.
AXON_DEVICE_INLINE bool loadStoreReaches(const Context& ctx, int pe, const char* op) {
  if (__builtin_expect(isReachable(ctx, pe), 1)) return true;
  if (ctx.proxy.ring != nullptr && static_cast<unsigned>(pe) < static_cast<unsigned>(ctx.nPes)) {
    return false;
  }
  failUnreachable(op, ctx.myPe, ctx.nPes, pe);
}

// A request posted: its slot and ticket.
struct ProxyTicket {
  ProxySlot* slot;
  unsigned long long ticket;
};

AXON_DEVICE_INLINE ProxyRequest proxyRequest(ProxyOp op, int pe) {
  ProxyRequest r;
  r.op = static_cast<unsigned int>(op);
  r.pe = pe;
  r.dest = r.src = r.bytes = r.sig = r.value = r.cond = 0;
  r.atomicOp = r.width = 0;
  return r;
}

// What a proxy wait was for, for its timeout message.
enum class ProxyWaitKind : int { Slot = 0, Done = 1 };

[[noreturn]] inline AXON_DEVICE_NOINLINE void failProxyTimeout(const Context& ctx, const char* op, int pe,
                                                               ProxyWaitKind kind,
                                                               unsigned long long ticket,
                                                               const unsigned long long* word,
                                                               unsigned long long expected,
                                                               unsigned long long seen,
                                                               unsigned long long elapsedNs) {
  const bool reporter = beginFatalReport();
  if (reporter) {
    const double seconds = static_cast<double>(elapsedNs) * 1e-9;
    const unsigned long long head = loadRelaxedSys(&ctx.proxy.ring->head);
    if (kind == ProxyWaitKind::Slot) {
      printf(
          "axon: PE %d: device %s to PE %d: the proxy ring is full after %.1f s: slot %llu is still "
          "held (its released word at %p expected >= %llu, seen %llu); the host proxy has read %llu "
          "requests, ticket %llu waits\n",
          ctx.myPe, op, pe, seconds, ticket % kProxySlots, word, expected, seen, head, ticket);
    } else {
      printf(
          "axon: PE %d: device %s to PE %d: the host proxy did not complete request %llu within "
          "%.1f s: its done word at %p expected %llu, seen %llu; the proxy has read %llu requests\n",
          ctx.myPe, op, pe, ticket, seconds, word, expected, seen, head);
    }
  }
  endFatalReport(reporter);
}

[[noreturn]] inline AXON_DEVICE_NOINLINE void failProxyRequest(const Context& ctx, const char* op, int pe,
                                                               unsigned long long ticket) {
  const bool reporter = beginFatalReport();
  if (reporter) {
    printf(
        "axon: PE %d: device %s to PE %d failed in the host proxy (request %llu); the host printed "
        "why\n",
        ctx.myPe, op, pe, ticket);
  }
  endFatalReport(reporter);
}

[[noreturn]] inline AXON_DEVICE_NOINLINE void failProxyEarlier(const Context& ctx, unsigned long long ticket) {
  const bool reporter = beginFatalReport();
  if (reporter) {
    printf(
        "axon: PE %d: device quiet: request %llu, which no call waited for, failed in the host "
        "proxy; the host printed why\n",
        ctx.myPe, ticket);
  }
  endFatalReport(reporter);
}

// Waits until the proxy's word `word` reaches `atLeast` (the kProxyFailed bit aside) and returns
// it. Bounded by twice AXON_TIMEOUT: the proxy's own operation is bounded by AXON_TIMEOUT and
// then reports the PE and address it waited on, which says more than this wait could.
inline AXON_DEVICE_NOINLINE unsigned long long proxyAwait(const Context& ctx, const unsigned long long* word,
                                                          unsigned long long atLeast, const char* op, int pe,
                                                          unsigned long long ticket, ProxyWaitKind kind) {
  const unsigned long long limit = ctx.timeoutNs * 2;
  for (PollPacer pace;;) {
    const unsigned long long seen = loadAcquireSys(word);
    if ((seen & ~kProxyFailed) >= atLeast) return seen;
    if (pace.next() && pace.expired(limit)) {
      failProxyTimeout(ctx, op, pe, kind, ticket, word, atLeast, seen, pace.elapsedNs);
    }
  }
}

// Posts `request` (one thread). What this thread stored before, and what its scope stored before
// synchronizing with it, is visible to the proxy (and to the copies it makes) when it reads the
// request.
inline AXON_DEVICE_NOINLINE ProxyTicket proxyPost(const Context& ctx, const ProxyRequest& request,
                                                  const char* op) {
  ProxyRing* ring = ctx.proxy.ring;
  const unsigned long long ticket = ::atomicAdd(ctx.proxy.tickets, 1ull);
  ProxySlot* slot = &ring->slots[ticket % kProxySlots];
  if (ticket >= kProxySlots) {
    proxyAwait(ctx, &slot->released, ticket - kProxySlots + 1, op, request.pe, ticket, ProxyWaitKind::Slot);
  }
  slot->request = request;
  // The data a put names may have been written by other threads of the scope (ordered before this
  // thread by the scope's synchronization) and is read by a copy engine: a fence at system scope,
  // then the release of the ticket.
  fenceSys();
  storeReleaseSys(&slot->ticket, ticket + 1);
  return ProxyTicket{slot, ticket};
}

// Waits until the proxy completed `t`, copies its result (when `result`), and frees the slot.
// Returns false when the proxy could not carry it out (the host printed why).
inline AXON_DEVICE_NOINLINE bool proxyComplete(const Context& ctx, ProxyTicket t, const char* op, int pe,
                                               unsigned long long* result) {
  const unsigned long long seen = proxyAwait(ctx, &t.slot->done, t.ticket + 1, op, pe, t.ticket, ProxyWaitKind::Done);
  if (result) {
    result[0] = loadRelaxedSys(&t.slot->result[0]);
    result[1] = loadRelaxedSys(&t.slot->result[1]);
  }
  // Release: the loads above happen before the proxy may reuse the slot.
  storeReleaseSys(&t.slot->released, t.ticket + 1);
  return (seen & kProxyFailed) == 0;
}

// Posts and waits: a request whose caller needs it done. False when it failed in the proxy.
AXON_DEVICE_INLINE bool proxyTry(const Context& ctx, ProxyRequest request, const char* op,
                                 unsigned long long* result = nullptr) {
  request.op |= kProxyWaited;
  return proxyComplete(ctx, proxyPost(ctx, request, op), op, request.pe, result);
}

// The same for calls that cannot report a failure to their caller: the thread traps, saying so.
AXON_DEVICE_INLINE void proxyCall(const Context& ctx, ProxyRequest request, const char* op,
                                  unsigned long long* result = nullptr) {
  request.op |= kProxyWaited;
  const ProxyTicket t = proxyPost(ctx, request, op);
  if (!proxyComplete(ctx, t, op, request.pe, result)) failProxyRequest(ctx, op, request.pe, t.ticket);
}

// Every request this PE posted before is complete: nothing to do when the proxy's last quiet
// already covers every ticket taken, else a Quiet request. A request that failed earlier, which
// nobody waited for, is reported here.
inline AXON_DEVICE_NOINLINE void proxyQuiet(const Context& ctx) {
  ProxyRing* ring = ctx.proxy.ring;
  if (ring == nullptr) return;
  const unsigned long long posted = loadRelaxedSys(ctx.proxy.tickets);
  if (loadAcquireSys(&ring->settled) < posted) {
    proxyCall(ctx, proxyRequest(ProxyOp::Quiet, ctx.myPe), "quiet");
  }
  const unsigned long long failed = loadAcquireSys(&ring->failed);
  if (failed != 0) failProxyEarlier(ctx, (failed & ~kProxyFailed) - 1);
}

// Inline data of p and g: up to 16 bytes in two words, byte for byte.
template <class T>
AXON_DEVICE_INLINE void packInline(const T& value, unsigned long long* words) {
  words[0] = words[1] = 0;
  const unsigned char* from = reinterpret_cast<const unsigned char*>(&value);
  unsigned char* to = reinterpret_cast<unsigned char*>(words);
  for (SizeT i = 0; i < sizeof(T); ++i) to[i] = from[i];
}
template <class T>
AXON_DEVICE_INLINE T unpackInline(const unsigned long long* words) {
  T value;
  const unsigned char* from = reinterpret_cast<const unsigned char*>(words);
  unsigned char* to = reinterpret_cast<unsigned char*>(&value);
  for (SizeT i = 0; i < sizeof(T); ++i) to[i] = from[i];
  return value;
}

[[noreturn]] inline AXON_DEVICE_NOINLINE void failInlineTooLarge(const Context& ctx, const char* op, int pe,
                                                                 SizeT bytes) {
  const bool reporter = beginFatalReport();
  if (reporter) {
    printf(
        "axon: PE %d: device %s to PE %d goes through the host proxy, which carries values of at "
        "most 16 bytes (this one has %llu): use put/get with a buffer in global memory\n",
        ctx.myPe, op, pe, static_cast<unsigned long long>(bytes));
  }
  endFatalReport(reporter);
}

// An atomic through the proxy; fetching ones wait for the value.
template <class T>
AXON_DEVICE_INLINE T proxyAtomic(const Context& ctx, ProxyAtomic op, T* dest, T operand, T cond, int pe,
                                 const char* name) {
  ProxyRequest r = proxyRequest(ProxyOp::Atomic, pe);
  r.dest = reinterpret_cast<unsigned long long>(dest);
  r.atomicOp = static_cast<unsigned int>(op);
  r.width = sizeof(T);
  unsigned long long words[2];
  packInline(operand, words);
  r.value = words[0];
  packInline(cond, words);
  r.cond = words[0];
  if (op == ProxyAtomic::Set || op == ProxyAtomic::Add) {
    proxyPost(ctx, r, name);  // no value comes back: nobody waits
    return T(0);
  }
  proxyCall(ctx, r, name, words);
  return unpackInline<T>(words);
}

}  // namespace detail
}  // namespace device
}  // namespace axon
