// A build without CUDA has no GPU backend, so nothing asks for GPU transports.
#include "axon/error.hpp"
#include "transport/gpu_transports.hpp"

namespace axon {

GpuTransports makeGpuTransports(const GpuTransportSetup&) {
  throw Error(ErrorCode::Unsupported, "axon: the GPU transports need a build with CUDA");
}

}  // namespace axon
