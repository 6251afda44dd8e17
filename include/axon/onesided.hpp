// One-sided communication from the host (OpenSHMEM 1.5 memory model).
//
// `dest`/`src` on the remote side are symmetric addresses: pointers into *this* PE's heap that
// name the same offset on PE `pe`. The local side (src of a put, dest of a get) may be any memory.
// Every call checks its PE and that the whole range lies inside one allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "axon/team.hpp"

namespace axon {

// Blocking: returns when the local buffer may be reused (put) or holds the data (get).
void put(void* dest, const void* src, std::size_t bytes, int pe);
void get(void* dest, const void* src, std::size_t bytes, int pe);
// Non-blocking: complete at the next quiet() (or barrierAll()).
void putNbi(void* dest, const void* src, std::size_t bytes, int pe);
void getNbi(void* dest, const void* src, std::size_t bytes, int pe);

// Single elements.
template <class T>
void p(T* dest, T value, int pe) {
  static_assert(std::is_trivially_copyable_v<T>);
  put(dest, &value, sizeof(T), pe);
}
template <class T>
T g(const T* src, int pe) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  get(&value, src, sizeof(T), pe);
  return value;
}

enum class SignalOp { Set, Add };
enum class Cmp { Eq, Ne, Gt, Ge, Lt, Le };
const char* cmpName(Cmp cmp) noexcept;  // "==", "!=", ...

// Puts the data, then updates the 64-bit signal at `sig` on `pe` so that a PE that sees the
// signal also sees the data.
void putSignal(void* dest, const void* src, std::size_t bytes, std::uint64_t* sig,
               std::uint64_t value, SignalOp op, int pe);
void putSignalNbi(void* dest, const void* src, std::size_t bytes, std::uint64_t* sig,
                  std::uint64_t value, SignalOp op, int pe);
// Updates a remote signal alone.
void signalOp(std::uint64_t* sig, std::uint64_t value, SignalOp op, int pe);
// Reads the local signal.
std::uint64_t signalFetch(const std::uint64_t* sig);
// Waits until the local signal compares true against `value`; returns the value seen. Bounded by
// AXON_TIMEOUT: throws Timeout naming the PE, the address, the expected and the seen value, or
// PeerDead when a PE exits while this one waits.
std::uint64_t signalWaitUntil(std::uint64_t* sig, Cmp cmp, std::uint64_t value);

// Atomics on 32- and 64-bit integers (signed and unsigned) of PE `pe`'s symmetric memory.
enum class AtomicOp { Fetch, Set, Swap, CompareSwap, FetchAdd, Add, FetchAnd, FetchOr, FetchXor };
namespace detail {
// operand/cond/result point to values of `width` bytes (4 or 8).
void atomic(AtomicOp op, void* dest, std::size_t width, const void* operand, const void* cond,
            void* result, int pe);
template <class T>
constexpr void checkAtomicType() {
  static_assert(std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8),
                "axon atomics take 32- or 64-bit integers");
}
}  // namespace detail

template <class T>
T atomicFetch(const T* src, int pe) {
  detail::checkAtomicType<T>();
  T r{};
  detail::atomic(AtomicOp::Fetch, const_cast<T*>(src), sizeof(T), nullptr, nullptr, &r, pe);
  return r;
}
template <class T>
void atomicSet(T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  detail::atomic(AtomicOp::Set, dest, sizeof(T), &value, nullptr, nullptr, pe);
}
template <class T>
T atomicSwap(T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  T r{};
  detail::atomic(AtomicOp::Swap, dest, sizeof(T), &value, nullptr, &r, pe);
  return r;
}
// Writes `value` when the current value equals `cond`; returns the value before.
template <class T>
T atomicCompareSwap(T* dest, T cond, T value, int pe) {
  detail::checkAtomicType<T>();
  T r{};
  detail::atomic(AtomicOp::CompareSwap, dest, sizeof(T), &value, &cond, &r, pe);
  return r;
}
template <class T>
T atomicFetchAdd(T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  T r{};
  detail::atomic(AtomicOp::FetchAdd, dest, sizeof(T), &value, nullptr, &r, pe);
  return r;
}
template <class T>
void atomicAdd(T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  detail::atomic(AtomicOp::Add, dest, sizeof(T), &value, nullptr, nullptr, pe);
}
template <class T>
T atomicFetchAnd(T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  T r{};
  detail::atomic(AtomicOp::FetchAnd, dest, sizeof(T), &value, nullptr, &r, pe);
  return r;
}
template <class T>
T atomicFetchOr(T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  T r{};
  detail::atomic(AtomicOp::FetchOr, dest, sizeof(T), &value, nullptr, &r, pe);
  return r;
}
template <class T>
T atomicFetchXor(T* dest, T value, int pe) {
  detail::checkAtomicType<T>();
  T r{};
  detail::atomic(AtomicOp::FetchXor, dest, sizeof(T), &value, nullptr, &r, pe);
  return r;
}

// Ordering and completion.
void fence();      // puts to one PE are delivered in the order issued
void quiet();      // every outstanding put/get/atomic of this PE is complete
void barrierAll(); // quiet, then all PEs of the world synchronize
void syncAll();    // all PEs of the world synchronize (no quiet)

}  // namespace axon
