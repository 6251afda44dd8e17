// Bodies of put/get/p/g, the signal calls and fence/quiet (declared in axon/device/onesided.hpp).
#pragma once

#include "axon/device/impl/address.hpp"
#include "axon/device/impl/copy.hpp"
#include "axon/device/impl/diagnostics.hpp"
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

template <class Scope>
AXON_DEVICE_INLINE void put(const Context& ctx, void* dest, const void* src, SizeT bytes, int pe) {
  using S = detail::ScopeOps<Scope>;
  detail::checkReachable(ctx, pe, "put");
  detail::copyCooperative(remote(ctx, dest, pe), src, bytes, S::rank(), S::size());
  S::sync();
}

template <class Scope>
AXON_DEVICE_INLINE void get(const Context& ctx, void* dest, const void* src, SizeT bytes, int pe) {
  using S = detail::ScopeOps<Scope>;
  detail::checkReachable(ctx, pe, "get");
  detail::copyCooperative(dest, remote(ctx, src, pe), bytes, S::rank(), S::size());
  S::sync();
}

template <class T>
AXON_DEVICE_INLINE void p(const Context& ctx, T* dest, T value, int pe) {
  static_assert(__is_trivially_copyable(T), "axon::device::p copies its value byte for byte");
  detail::checkReachable(ctx, pe, "p");
  *remote(ctx, dest, pe) = value;
}

template <class T>
AXON_DEVICE_INLINE T g(const Context& ctx, const T* src, int pe) {
  static_assert(__is_trivially_copyable(T), "axon::device::g copies its value byte for byte");
  detail::checkReachable(ctx, pe, "g");
  return *remote(ctx, src, pe);
}

template <class Scope>
AXON_DEVICE_INLINE void putSignal(const Context& ctx, void* dest, const void* src, SizeT bytes,
                                  unsigned long long* sig, unsigned long long value, SignalOp op,
                                  int pe) {
  using S = detail::ScopeOps<Scope>;
  detail::checkReachable(ctx, pe, "put_signal");
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
  detail::checkReachable(ctx, pe, "signal_op");
  detail::updateSignal(remote(ctx, sig, pe), value, op);
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

AXON_DEVICE_INLINE void fence(const Context&) { detail::fenceSys(); }

AXON_DEVICE_INLINE void quiet(const Context&) { detail::fenceSys(); }

}  // namespace device
}  // namespace axon
