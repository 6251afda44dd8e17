// A build without CUDA: clients move host memory only.
#include "space/gpu_side.hpp"

namespace axon::space {

std::unique_ptr<GpuSide> makeGpuSide(std::string& whyNot) {
  whyNot = "this build of axon has no CUDA";
  return nullptr;
}

}  // namespace axon::space
