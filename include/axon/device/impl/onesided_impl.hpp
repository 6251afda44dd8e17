// Bodies of put/get/p/g, the signal calls and fence/quiet (declared in axon/device/onesided.hpp).
// Each call to a peer takes load/store when the peer's GPU heap is mapped here, else the proxy
// (impl/proxy_impl.hpp), where one thread of the scope posts and, when the call must not return
// before, waits.
#pragma once

#include "axon/device/impl/address.hpp"
#include "axon/device/impl/copy.hpp"
#include "axon/device/impl/diagnostics.hpp"
#include "axon/device/impl/proxy_impl.hpp"
#include "axon/device/impl/ptx.hpp"
#include "axon/device/impl/scope.hpp"
#include "axon/device/impl/wait.hpp"
#include "axon/device/types.hpp"

namespace axon {
namespace device {
namespace detail {

// The signal calls take unsigned long* too (std::uint64_t on Linux); it is the same 64-bit word.
AXON_DEVICE_INLINE unsigned long long* signalWord(unsigned long* sig) {
  static_assert(sizeof(unsigned long) == 8, "axon signals are 64-bit words");
  return reinterpret_cast<unsigned long long*>(sig);
}
AXON_DEVICE_INLINE const unsigned long long* signalWord(const unsigned long* sig) {
  static_assert(sizeof(unsigned long) == 8, "axon signals are 64-bit words");
  return reinterpret_cast<const unsigned long long*>(sig);
}

// The update of a signal already translated to the peer's address.
AXON_DEVICE_INLINE void updateSignal(unsigned long long* remoteSig, unsigned long long value,
                                     SignalOp op) {
  if (op == SignalOp::Add) {
    addReleaseSys(remoteSig, value);
  } else {
    storeReleaseSys(remoteSig, value);
  }
}

}  // namespace detail

namespace detail {

// A put or get through the proxy, by one thread of the scope; the scope returns once it is done
// (put: the source may be reused; get: the data is in dest).
template <class Scope>
AXON_DEVICE_INLINE void proxyCopy(const Context& ctx, ProxyOp op, void* dest, const void* src, SizeT bytes,
                                  int pe, const char* name) {
  using S = ScopeOps<Scope>;
  S::sync();
  if (S::rank() == 0 && bytes > 0) {
    ProxyRequest r = proxyRequest(op, pe);
    r.dest = reinterpret_cast<unsigned long long>(dest);
    r.src = reinterpret_cast<unsigned long long>(src);
    r.bytes = bytes;
    proxyCall(ctx, r, name);
  }
  S::sync();
}

}  // namespace detail

template <class Scope>
AXON_DEVICE_INLINE void put(const Context& ctx, void* dest, const void* src, SizeT bytes, int pe) {
  using S = detail::ScopeOps<Scope>;
  if (!detail::loadStoreReaches(ctx, pe, "put")) {
    detail::proxyCopy<Scope>(ctx, ProxyOp::Put, dest, src, bytes, pe, "put");
    return;
  }
  detail::copyCooperative(remote(ctx, dest, pe), src, bytes, S::rank(), S::size());
  S::sync();
}

template <class Scope>
AXON_DEVICE_INLINE void get(const Context& ctx, void* dest, const void* src, SizeT bytes, int pe) {
  using S = detail::ScopeOps<Scope>;
  if (!detail::loadStoreReaches(ctx, pe, "get")) {
    detail::proxyCopy<Scope>(ctx, ProxyOp::Get, dest, src, bytes, pe, "get");
    return;
  }
  detail::copyCooperative(dest, remote(ctx, src, pe), bytes, S::rank(), S::size());
  S::sync();
}

template <class T>
AXON_DEVICE_INLINE void p(const Context& ctx, T* dest, T value, int pe) {
  static_assert(__is_trivially_copyable(T), "axon::device::p copies its value byte for byte");
  if (detail::loadStoreReaches(ctx, pe, "p")) {
    *remote(ctx, dest, pe) = value;
    return;
  }
  // The value travels in the request: nothing to wait for.
  if (sizeof(T) > 16) detail::failInlineTooLarge(ctx, "p", pe, sizeof(T));
  ProxyRequest r = detail::proxyRequest(ProxyOp::Inline, pe);
  unsigned long long words[2];
  detail::packInline(value, words);
  r.dest = reinterpret_cast<unsigned long long>(dest);
  r.bytes = sizeof(T);
  r.value = words[0];
  r.cond = words[1];
  detail::proxyPost(ctx, r, "p");
}

template <class T>
AXON_DEVICE_INLINE T g(const Context& ctx, const T* src, int pe) {
  static_assert(__is_trivially_copyable(T), "axon::device::g copies its value byte for byte");
  if (detail::loadStoreReaches(ctx, pe, "g")) return *remote(ctx, src, pe);
  if (sizeof(T) > 16) detail::failInlineTooLarge(ctx, "g", pe, sizeof(T));
  ProxyRequest r = detail::proxyRequest(ProxyOp::GetInline, pe);
  r.src = reinterpret_cast<unsigned long long>(src);
  r.bytes = sizeof(T);
  unsigned long long words[2];
  detail::proxyCall(ctx, r, "g", words);
  return detail::unpackInline<T>(words);
}

template <class Scope>
AXON_DEVICE_INLINE void putSignal(const Context& ctx, void* dest, const void* src, SizeT bytes,
                                  unsigned long long* sig, unsigned long long value, SignalOp op,
                                  int pe) {
  using S = detail::ScopeOps<Scope>;
  if (!detail::loadStoreReaches(ctx, pe, "put_signal")) {
    // One request: the proxy puts the data, then updates the signal after it.
    S::sync();
    if (S::rank() == 0) {
      ProxyRequest r = detail::proxyRequest(ProxyOp::PutSignal, pe);
      r.dest = reinterpret_cast<unsigned long long>(dest);
      r.src = reinterpret_cast<unsigned long long>(src);
      r.bytes = bytes;
      r.sig = reinterpret_cast<unsigned long long>(sig);
      r.value = value;
      r.atomicOp = static_cast<unsigned int>(op);
      detail::proxyCall(ctx, r, "put_signal");
    }
    S::sync();
    return;
  }
  detail::copyCooperative(remote(ctx, dest, pe), src, bytes, S::rank(), S::size());
  // One thread: its own stores precede its release in program order, and the release store or
  // add orders them before the signal at system scope; no separate fence (the latency path).
  // Warp and block: every thread's share is stored before the barrier; the barrier puts those
  // stores before rank 0's fence and release, so whoever acquires the signal sees all of them.
  if (S::size() > 1) {
    S::sync();
    if (S::rank() == 0) detail::fenceSys();
  }
  if (S::rank() == 0) detail::updateSignal(remote(ctx, sig, pe), value, op);
}

template <class Scope>
AXON_DEVICE_INLINE void putSignal(const Context& ctx, void* dest, const void* src, SizeT bytes,
                                  unsigned long* sig, unsigned long value, SignalOp op, int pe) {
  putSignal<Scope>(ctx, dest, src, bytes, detail::signalWord(sig), value, op, pe);
}

AXON_DEVICE_INLINE void signalOp(const Context& ctx, unsigned long long* sig,
                                 unsigned long long value, SignalOp op, int pe) {
  if (detail::loadStoreReaches(ctx, pe, "signal_op")) {
    detail::updateSignal(remote(ctx, sig, pe), value, op);
    return;
  }
  ProxyRequest r = detail::proxyRequest(ProxyOp::Signal, pe);
  r.sig = reinterpret_cast<unsigned long long>(sig);
  r.value = value;
  r.atomicOp = static_cast<unsigned int>(op);
  detail::proxyPost(ctx, r, "signal_op");  // the proxy orders it after what was posted before
}

AXON_DEVICE_INLINE void signalOp(const Context& ctx, unsigned long* sig, unsigned long value,
                                 SignalOp op, int pe) {
  signalOp(ctx, detail::signalWord(sig), value, op, pe);
}

AXON_DEVICE_INLINE unsigned long long signalFetch(const Context&, const unsigned long long* sig) {
  return detail::loadAcquireSys(sig);
}

AXON_DEVICE_INLINE unsigned long signalFetch(const Context& ctx, const unsigned long* sig) {
  return static_cast<unsigned long>(signalFetch(ctx, detail::signalWord(sig)));
}

template <class Scope>
AXON_DEVICE_INLINE unsigned long long signalWaitUntil(const Context& ctx,
                                                      const unsigned long long* sig, Cmp cmp,
                                                      unsigned long long value) {
  using S = detail::ScopeOps<Scope>;
  unsigned long long seen = 0;
  if (S::rank() == 0) {
    seen = detail::waitUntil(ctx, sig, cmp, value,
                             detail::WaitSite{detail::WaitSite::Signal, -1, -1, -1});
  }
  // Also the scope's synchronization: it carries rank 0's acquire to the other threads.
  return S::broadcast(seen);
}

template <class Scope>
AXON_DEVICE_INLINE unsigned long signalWaitUntil(const Context& ctx, const unsigned long* sig,
                                                 Cmp cmp, unsigned long value) {
  return static_cast<unsigned long>(
      signalWaitUntil<Scope>(ctx, detail::signalWord(sig), cmp, value));
}

AXON_DEVICE_INLINE void fence(const Context& ctx) {
  detail::fenceSys();
  // The proxy carries requests out in order; a Fence request makes it order their delivery too.
  if (ctx.proxy.ring != nullptr) detail::proxyPost(ctx, detail::proxyRequest(ProxyOp::Fence, ctx.myPe), "fence");
}

AXON_DEVICE_INLINE void quiet(const Context& ctx) {
  detail::fenceSys();
  detail::proxyQuiet(ctx);
}

}  // namespace device
}  // namespace axon
