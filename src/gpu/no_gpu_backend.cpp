// A build without CUDA: the GPU backend is never on.
#include "gpu/gpu_backend.hpp"

namespace axon {

std::unique_ptr<GpuBackend> makeGpuBackend(PeContext&, std::string& whyNot) {
  whyNot = "this build of axon has no CUDA support (it was built without nvcc or with AXON_CUDA=OFF)";
  return nullptr;
}

}  // namespace axon
