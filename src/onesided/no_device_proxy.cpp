// A build without CUDA has no GPU backend, so nothing asks for a device proxy.
#include "onesided/make_device_proxy.hpp"

namespace axon {

std::unique_ptr<DeviceRequests> makeDeviceProxy(GpuBackend&, int, std::vector<bool>) {
  throw Error(ErrorCode::Unsupported, "axon: the device proxy needs a build with CUDA");
}

}  // namespace axon
