#include "transport/shm/shm_transport.hpp"

#include <atomic>
#include <cstring>

#include "axon/error.hpp"

namespace axon {
namespace {

// Applies `op` to the word at `addr` with std::atomic_ref, which is lock-free for aligned 4- and
// 8-byte integers and so works across processes on a shared mapping.
template <class T>
void applyAtomic(AtomicOp op, T* addr, const void* operandPtr, const void* condPtr, void* resultPtr) {
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

}  // namespace

bool ShmTransport::reaches(int pe) const noexcept {
  return pe >= 0 && static_cast<std::size_t>(pe) < reachable_.size() && reachable_[pe];
}

void ShmTransport::put(const RemoteRef& dst, const void* src, std::size_t bytes) {
  std::memcpy(dst.mapped, src, bytes);
}

void ShmTransport::get(void* dst, const RemoteRef& src, std::size_t bytes) {
  std::memcpy(dst, src.mapped, bytes);
}

void ShmTransport::signal(const RemoteRef& sig, std::uint64_t value, SignalOp op) {
  std::atomic_ref<std::uint64_t> word(*static_cast<std::uint64_t*>(sig.mapped));
  // Release: the data stored before the signal is visible to an acquire load that sees it.
  if (op == SignalOp::Set) word.store(value, std::memory_order_release);
  else word.fetch_add(value, std::memory_order_release);
}

void ShmTransport::atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand,
                          const void* cond, void* result) {
  if (width == 4) applyAtomic(op, static_cast<std::uint32_t*>(dst.mapped), operand, cond, result);
  else if (width == 8) applyAtomic(op, static_cast<std::uint64_t*>(dst.mapped), operand, cond, result);
  else throw Error(ErrorCode::InvalidArgument, "atomic width must be 4 or 8 bytes");
}

// Stores through a shared mapping are globally visible in program order once a full fence retires.
void ShmTransport::fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
void ShmTransport::quiet() { std::atomic_thread_fence(std::memory_order_seq_cst); }

}  // namespace axon
