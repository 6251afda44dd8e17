#include "transport/network_transport.hpp"

#include <string>

#include "axon/error.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon {
namespace {

void requireGpuHeap(const RemoteRef& ref, const char* api) {
  if (ref.heap == HeapKind::Gpu) return;
  throw Error(ErrorCode::Unsupported, std::string("axon: ") + api + ": PE " + std::to_string(ref.pe) +
                                          " runs on another node and the address is in its host heap: "
                                          "stream-ordered calls reach other nodes' GPU heaps (axon::malloc); "
                                          "use the host call for host memory");
}

}  // namespace

void NetworkTransport::putOnStream(const RemoteRef& dst, const void* src, std::size_t bytes, void* stream,
                                   GpuBackend& gpu) {
  requireGpuHeap(dst, "put_on_stream");
  gpu.proxyPutOnStream(dst.pe, dst.offset, src, bytes, stream);
}

void NetworkTransport::getOnStream(void* dst, const RemoteRef& src, std::size_t bytes, void* stream, GpuBackend& gpu) {
  requireGpuHeap(src, "get_on_stream");
  gpu.proxyGetOnStream(dst, src.pe, src.offset, bytes, stream);
}

void NetworkTransport::signalOnStream(const RemoteRef& sig, std::uint64_t value, SignalOp op, void* stream,
                                      GpuBackend& gpu) {
  requireGpuHeap(sig, "signal_op_on_stream");
  gpu.proxySignalOnStream(sig.pe, sig.offset, value, op, stream);
}

}  // namespace axon
