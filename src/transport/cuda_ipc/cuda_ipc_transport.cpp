#include "transport/cuda_ipc/cuda_ipc_transport.hpp"

#include <cstring>

#include "gpu/copy_async.hpp"
#include "kernels/kernels.hpp"

namespace axon::gpu {

TransportCaps CudaIpcTransport::caps() const noexcept {
  TransportCaps c;
  c.loadStore = true;
  c.remoteAtomics = true;
  c.deviceMemory = true;
  c.asyncNbi = true;
  return c;
}

void* CudaIpcTransport::target(const RemoteRef& ref, const char* api) const {
  if (ref.mapped) return ref.mapped;
  throw Error(ErrorCode::Unsupported,
              std::string("axon: ") + api + ": PE " + std::to_string(ref.pe) + "'s " + heapKindName(ref.heap) +
                  " is not mapped here (" + heap_.unreachableReason(ref.pe) + ")");
}

void CudaIpcTransport::enqueueCopy(void* dst, const void* src, std::size_t bytes, const char* api) {
  cuCheck(copyAsync(cu_, dst, src, bytes, stream_),
          std::string("axon: ") + api + ": cuMemcpyAsync of " + std::to_string(bytes) + " bytes");
  pending_ = true;
}

void CudaIpcTransport::wait(const char* api) {
  cuCheck(cu_.cuStreamSynchronize(stream_), std::string("axon: ") + api + ": waiting for the GPU");
  pending_ = false;
}

void CudaIpcTransport::put(const RemoteRef& dst, const void* src, std::size_t bytes) {
  enqueueCopy(target(dst, "put"), src, bytes, "put");
  wait("put");
}

void CudaIpcTransport::get(void* dst, const RemoteRef& src, std::size_t bytes) {
  enqueueCopy(dst, target(src, "get"), bytes, "get");
  wait("get");
}

void CudaIpcTransport::putNbi(const RemoteRef& dst, const void* src, std::size_t bytes) {
  enqueueCopy(target(dst, "put_nbi"), src, bytes, "put_nbi");
}

void CudaIpcTransport::getNbi(void* dst, const RemoteRef& src, std::size_t bytes) {
  enqueueCopy(dst, target(src, "get_nbi"), bytes, "get_nbi");
}

void CudaIpcTransport::signal(const RemoteRef& sig, std::uint64_t value, SignalOp op) {
  kernels::signal(stream_, static_cast<std::uint64_t*>(target(sig, "signal")), value, op);
  pending_ = true;
  wait("signal");
}

void CudaIpcTransport::atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand,
                              const void* cond, void* result) {
  std::uint64_t a = 0, c = 0;
  if (operand) std::memcpy(&a, operand, width);
  if (cond) std::memcpy(&c, cond, width);
  kernels::atomic(stream_, op, static_cast<int>(width), target(dst, "atomic"), a, c, result ? scratch_ : nullptr);
  pending_ = true;
  wait("atomic");
  if (result) std::memcpy(result, scratch_, width);
}

// Work on one stream runs in order, so a later signal already follows earlier puts; the host
// must wait only where it acts itself next (a signal in host memory, a host load).
void CudaIpcTransport::fence() {
  if (pending_) wait("fence");
}

void CudaIpcTransport::quiet() {
  if (pending_) wait("quiet");
}

}  // namespace axon::gpu
