// Bodies of the atomics on a peer's symmetric memory (declared in axon/device/onesided.hpp).
//
// CUDA's *_system intrinsics are atomic at system scope (relaxed): with respect to atomics of every
// GPU and CPU on the same word. They exist for int, unsigned int and unsigned long long; the other
// types go through the unsigned word of their size, which two's complement makes exact for every
// op here (add, and, or, xor, swap, compare).
#pragma once

#include "axon/device/impl/address.hpp"
#include "axon/device/impl/diagnostics.hpp"
#include "axon/device/impl/proxy_impl.hpp"
#include "axon/device/impl/ptx.hpp"
#include "axon/device/types.hpp"

namespace axon {
namespace device {
namespace detail {

// The intrinsic's word type for T; undefined for any other T (the static_assert below says why).
template <class T>
struct AtomicWord {
  static constexpr bool kValid = false;
};
template <>
struct AtomicWord<int> {
  static constexpr bool kValid = true;
  using Type = int;
};
template <>
struct AtomicWord<unsigned int> {
  static constexpr bool kValid = true;
  using Type = unsigned int;
};
template <>
struct AtomicWord<long long> {
  static constexpr bool kValid = true;
  using Type = unsigned long long;
};
template <>
struct AtomicWord<unsigned long long> {
  static constexpr bool kValid = true;
  using Type = unsigned long long;
};
// long is std::int64_t on Linux (64-bit), and 32-bit on LLP64 platforms.
template <>
struct AtomicWord<long> {
  static constexpr bool kValid = true;
  using Type = unsigned long long;
  static_assert(sizeof(long) == 8, "axon device atomics on long need a 64-bit long");
};
template <>
struct AtomicWord<unsigned long> {
  static constexpr bool kValid = true;
  using Type = unsigned long long;
  static_assert(sizeof(unsigned long) == 8,
                "axon device atomics on unsigned long need a 64-bit long");
};

template <class T>
AXON_DEVICE_INLINE void checkAtomicType() {
  static_assert(AtomicWord<T>::kValid,
                "axon device atomics take int, unsigned int, long, unsigned long, long long or "
                "unsigned long long");
}

// dest's address on PE pe, as the intrinsic's word type (PE pe reached by load/store).
template <class T>
AXON_DEVICE_INLINE typename AtomicWord<T>::Type* atomicTarget(const Context& ctx, T* dest, int pe) {
  return reinterpret_cast<typename AtomicWord<T>::Type*>(remote(ctx, dest, pe));
}

// The relaxed system-scope load and store of atomicFetch/atomicSet, for 4- and 8-byte words.
AXON_DEVICE_INLINE unsigned int atomicLoadWord(const int* p) {
  return loadRelaxedSys(reinterpret_cast<const unsigned int*>(p));
}
AXON_DEVICE_INLINE unsigned int atomicLoadWord(const unsigned int* p) { return loadRelaxedSys(p); }
AXON_DEVICE_INLINE unsigned long long atomicLoadWord(const unsigned long long* p) {
  return loadRelaxedSys(p);
}
AXON_DEVICE_INLINE void atomicStoreWord(int* p, int v) {
  storeRelaxedSys(reinterpret_cast<unsigned int*>(p), static_cast<unsigned int>(v));
}
AXON_DEVICE_INLINE void atomicStoreWord(unsigned int* p, unsigned int v) { storeRelaxedSys(p, v); }
AXON_DEVICE_INLINE void atomicStoreWord(unsigned long long* p, unsigned long long v) {
  storeRelaxedSys(p, v);
}

}  // namespace detail

template <class T>
AXON_DEVICE_INLINE T atomicFetch(const Context& ctx, const T* src, int pe) {
  detail::checkAtomicType<T>();
  using W = typename detail::AtomicWord<T>::Type;
  if (!detail::loadStoreReaches(ctx, pe, "atomic_fetch")) {
    return detail::proxyAtomic<T>(ctx, ProxyAtomic::Fetch, const_cast<T*>(src), T(0), T(0), pe,
                                  "atomic_fetch");
  }
  return static_cast<T>(detail::atomicLoadWord(reinterpret_cast<const W*>(remote(ctx, src, pe))));
}

template <class T>
AXON_DEVICE_INLINE void atomicSet(const Context& ctx, T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  using W = typename detail::AtomicWord<T>::Type;
  if (!detail::loadStoreReaches(ctx, pe, "atomic_set")) {
    detail::proxyAtomic<T>(ctx, ProxyAtomic::Set, dest, value, T(0), pe, "atomic_set");
    return;
  }
  detail::atomicStoreWord(detail::atomicTarget(ctx, dest, pe), static_cast<W>(value));
}

template <class T>
AXON_DEVICE_INLINE T atomicSwap(const Context& ctx, T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  using W = typename detail::AtomicWord<T>::Type;
  if (!detail::loadStoreReaches(ctx, pe, "atomic_swap")) {
    return detail::proxyAtomic<T>(ctx, ProxyAtomic::Swap, dest, value, T(0), pe, "atomic_swap");
  }
  return static_cast<T>(
      atomicExch_system(detail::atomicTarget(ctx, dest, pe), static_cast<W>(value)));
}

template <class T>
AXON_DEVICE_INLINE T atomicCompareSwap(const Context& ctx, T* dest, T cond, T value, int pe) {
  detail::checkAtomicType<T>();
  using W = typename detail::AtomicWord<T>::Type;
  if (!detail::loadStoreReaches(ctx, pe, "atomic_compare_swap")) {
    return detail::proxyAtomic<T>(ctx, ProxyAtomic::CompareSwap, dest, value, cond, pe,
                                  "atomic_compare_swap");
  }
  return static_cast<T>(atomicCAS_system(detail::atomicTarget(ctx, dest, pe),
                                         static_cast<W>(cond), static_cast<W>(value)));
}

template <class T>
AXON_DEVICE_INLINE T atomicFetchAdd(const Context& ctx, T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  using W = typename detail::AtomicWord<T>::Type;
  if (!detail::loadStoreReaches(ctx, pe, "atomic_fetch_add")) {
    return detail::proxyAtomic<T>(ctx, ProxyAtomic::FetchAdd, dest, value, T(0), pe, "atomic_fetch_add");
  }
  return static_cast<T>(atomicAdd_system(detail::atomicTarget(ctx, dest, pe),
                                         static_cast<W>(value)));
}

template <class T>
AXON_DEVICE_INLINE void atomicAdd(const Context& ctx, T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  using W = typename detail::AtomicWord<T>::Type;
  // The result unused, the compiler emits a reduction (red), which needs no reply.
  if (!detail::loadStoreReaches(ctx, pe, "atomic_add")) {
    detail::proxyAtomic<T>(ctx, ProxyAtomic::Add, dest, value, T(0), pe, "atomic_add");
    return;
  }
  atomicAdd_system(detail::atomicTarget(ctx, dest, pe), static_cast<W>(value));
}

template <class T>
AXON_DEVICE_INLINE T atomicFetchAnd(const Context& ctx, T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  using W = typename detail::AtomicWord<T>::Type;
  if (!detail::loadStoreReaches(ctx, pe, "atomic_fetch_and")) {
    return detail::proxyAtomic<T>(ctx, ProxyAtomic::FetchAnd, dest, value, T(0), pe, "atomic_fetch_and");
  }
  return static_cast<T>(atomicAnd_system(detail::atomicTarget(ctx, dest, pe),
                                         static_cast<W>(value)));
}

template <class T>
AXON_DEVICE_INLINE T atomicFetchOr(const Context& ctx, T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  using W = typename detail::AtomicWord<T>::Type;
  if (!detail::loadStoreReaches(ctx, pe, "atomic_fetch_or")) {
    return detail::proxyAtomic<T>(ctx, ProxyAtomic::FetchOr, dest, value, T(0), pe, "atomic_fetch_or");
  }
  return static_cast<T>(atomicOr_system(detail::atomicTarget(ctx, dest, pe),
                                        static_cast<W>(value)));
}

template <class T>
AXON_DEVICE_INLINE T atomicFetchXor(const Context& ctx, T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  using W = typename detail::AtomicWord<T>::Type;
  if (!detail::loadStoreReaches(ctx, pe, "atomic_fetch_xor")) {
    return detail::proxyAtomic<T>(ctx, ProxyAtomic::FetchXor, dest, value, T(0), pe, "atomic_fetch_xor");
  }
  return static_cast<T>(atomicXor_system(detail::atomicTarget(ctx, dest, pe),
                                         static_cast<W>(value)));
}

}  // namespace device
}  // namespace axon
