// One atomic operation on a word this process can address: what the shared-memory transport does
// to a peer's mapped word, and what the UCX transport's target does for a peer on another node
// that asked by active message.
#pragma once

#include <atomic>
#include <cstring>

#include "axon/onesided.hpp"

namespace axon {

// Applies `op` to the word at `addr` with std::atomic_ref, which is lock-free for aligned 4- and
// 8-byte integers and so works across processes on a shared mapping.
template <class T>
inline void applyAtomic(AtomicOp op, T* addr, const void* operandPtr, const void* condPtr, void* resultPtr) {
  std::atomic_ref<T> word(*addr);
  T operand{}, cond{}, result{};
  if (operandPtr) std::memcpy(&operand, operandPtr, sizeof(T));
  if (condPtr) std::memcpy(&cond, condPtr, sizeof(T));
  constexpr auto order = std::memory_order_seq_cst;
  switch (op) {
    case AtomicOp::Fetch: result = word.load(order); break;
    case AtomicOp::Set: word.store(operand, order); break;
    case AtomicOp::Swap: result = word.exchange(operand, order); break;
    case AtomicOp::CompareSwap: {
      T expected = cond;
      word.compare_exchange_strong(expected, operand, order);
      result = expected;  // the value before, whether or not the swap happened
      break;
    }
    case AtomicOp::FetchAdd: result = word.fetch_add(operand, order); break;
    case AtomicOp::Add: word.fetch_add(operand, order); break;
    case AtomicOp::FetchAnd: result = word.fetch_and(operand, order); break;
    case AtomicOp::FetchOr: result = word.fetch_or(operand, order); break;
    case AtomicOp::FetchXor: result = word.fetch_xor(operand, order); break;
  }
  if (resultPtr) std::memcpy(resultPtr, &result, sizeof(T));
}

}  // namespace axon
