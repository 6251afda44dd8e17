#include "transport/transport.hpp"

#include <string>

#include "gpu/gpu_backend.hpp"

namespace axon {
namespace {

std::string onStream(const char* what, const char* to, int pe, const char* name) {
  return std::string(what) + " " + to + " PE " + std::to_string(pe) + " (" + name + ")";
}

}  // namespace

void Transport::putOnStream(const RemoteRef& dst, const void* src, std::size_t bytes, void* stream, GpuBackend& gpu) {
  gpu.enqueueHostWork(stream, [this, dst, src, bytes] { put(dst, src, bytes); },
                      onStream("put_on_stream", "to", dst.pe, name()));
}

void Transport::getOnStream(void* dst, const RemoteRef& src, std::size_t bytes, void* stream, GpuBackend& gpu) {
  gpu.enqueueHostWork(stream, [this, dst, src, bytes] { get(dst, src, bytes); },
                      onStream("get_on_stream", "from", src.pe, name()));
}

void Transport::signalOnStream(const RemoteRef& sig, std::uint64_t value, SignalOp op, void* stream, GpuBackend& gpu) {
  gpu.enqueueHostWork(stream, [this, sig, value, op] { signal(sig, value, op); },
                      onStream("signal_op_on_stream", "to", sig.pe, name()));
}

}  // namespace axon
