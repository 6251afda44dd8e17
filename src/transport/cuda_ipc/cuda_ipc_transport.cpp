#include "transport/cuda_ipc/cuda_ipc_transport.hpp"

#include <cstring>

#include "gpu/copy_async.hpp"
#include "kernels/kernels.hpp"

namespace axon::gpu {

CudaIpcTransport::CudaIpcTransport(const DriverApi& cu, GpuHeap& heap, CUstream stream, void* scratch)
    : cu_(cu), heap_(heap), stream_(stream), scratch_(scratch) {
  cuCheck(cu_.cuEventCreate(&quietEvent_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
}

CudaIpcTransport::~CudaIpcTransport() {
  if (quietEvent_) cu_.cuEventDestroy(quietEvent_);
}

void* CudaIpcTransport::target(const RemoteRef& ref, const char* api) const {
  if (ref.mapped) return ref.mapped;
  throw Error(ErrorCode::Unsupported,
              std::string("axon: ") + api + ": PE " + std::to_string(ref.pe) + "'s " + heapKindName(ref.heap) +
                  " is not mapped here (" + heap_.unreachableReason(ref.pe) + ")");
}

void* CudaIpcTransport::streamTarget(const RemoteRef& ref, const char* api) const {
  if (ref.mapped) return ref.mapped;
  throw Error(ErrorCode::Unsupported, std::string("axon: ") + api + ": PE " + std::to_string(ref.pe) +
                                          "'s GPU heap is not mapped here (" + heap_.unreachableReason(ref.pe) +
                                          "); stream-ordered calls need peer access");
}

void CudaIpcTransport::putOnStream(const RemoteRef& dst, const void* src, std::size_t bytes, void* stream,
                                   GpuBackend&) {
  cuCheck(copyAsync(cu_, streamTarget(dst, "put_on_stream"), src, bytes, static_cast<CUstream>(stream)),
          "put_on_stream: cuMemcpyAsync");
}

void CudaIpcTransport::getOnStream(void* dst, const RemoteRef& src, std::size_t bytes, void* stream, GpuBackend&) {
  cuCheck(copyAsync(cu_, dst, streamTarget(src, "get_on_stream"), bytes, static_cast<CUstream>(stream)),
          "get_on_stream: cuMemcpyAsync");
}

void CudaIpcTransport::signalOnStream(const RemoteRef& sig, std::uint64_t value, SignalOp op, void* stream,
                                      GpuBackend&) {
  kernels::signal(stream, static_cast<std::uint64_t*>(streamTarget(sig, "signal_op_on_stream")), value, op);
}

void CudaIpcTransport::quietOnStream(void* stream) {
  // Puts on `stream` itself complete before later work on it starts. The host's put_nbi work is
  // on this transport's stream: make `stream` wait for it (not possible inside a graph capture,
  // where only the stream's own order counts).
  if (!pending()) return;
  auto s = static_cast<CUstream>(stream);
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  cuCheck(cu_.cuStreamIsCapturing(s, &capture), "quiet_on_stream: cuStreamIsCapturing");
  if (capture != CU_STREAM_CAPTURE_STATUS_NONE) {
    throw Error(ErrorCode::Unsupported,
                "quiet_on_stream: put_nbi calls from the host are still outstanding and a stream being "
                "captured into a graph cannot wait for them; call quiet() before the capture");
  }
  cuCheck(cu_.cuEventRecord(quietEvent_, stream_), "quiet_on_stream: cuEventRecord");
  cuCheck(cu_.cuStreamWaitEvent(s, quietEvent_, 0), "quiet_on_stream: cuStreamWaitEvent");
}

void CudaIpcTransport::enqueueCopy(void* dst, const void* src, std::size_t bytes, const char* api) {
  cuCheck(copyAsync(cu_, dst, src, bytes, stream_),
          std::string("axon: ") + api + ": cuMemcpyAsync of " + std::to_string(bytes) + " bytes");
  enqueued_.fetch_add(1, std::memory_order_acq_rel);
}

void CudaIpcTransport::wait(const char* api) {
  // Only what was enqueued before the wait began is known to be done after it.
  const std::uint64_t upTo = enqueued_.load(std::memory_order_acquire);
  cuCheck(cu_.cuStreamSynchronize(stream_), std::string("axon: ") + api + ": waiting for the GPU");
  std::uint64_t seen = completed_.load(std::memory_order_acquire);
  while (seen < upTo && !completed_.compare_exchange_weak(seen, upTo, std::memory_order_acq_rel)) {
  }
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
  enqueued_.fetch_add(1, std::memory_order_acq_rel);
  wait("signal");
}

void CudaIpcTransport::atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand,
                              const void* cond, void* result) {
  std::uint64_t a = 0, c = 0;
  if (operand) std::memcpy(&a, operand, width);
  if (cond) std::memcpy(&c, cond, width);
  void* at = target(dst, "atomic");
  std::lock_guard lock(atomicMutex_);
  kernels::atomic(stream_, op, static_cast<int>(width), at, a, c, result ? scratch_ : nullptr);
  enqueued_.fetch_add(1, std::memory_order_acq_rel);
  wait("atomic");
  if (result) std::memcpy(result, scratch_, width);
}

// Work on one stream runs in order, so a later signal already follows earlier puts; the host
// must wait only where it acts itself next (a signal in host memory, a host load).
void CudaIpcTransport::fence() {
  if (pending()) wait("fence");
}

void CudaIpcTransport::quiet() {
  if (pending()) wait("quiet");
}

}  // namespace axon::gpu
