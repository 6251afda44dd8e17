#include "transport/shm/shm_transport.hpp"

#include <atomic>
#include <cstring>

#include "axon/error.hpp"
#include "transport/apply_atomic.hpp"

namespace axon {

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
