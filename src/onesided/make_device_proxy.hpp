// The device proxy (onesided/device_proxy.hpp) made for the GPU backend without a CUDA header, so
// that the runtime, which builds both, stays CUDA-free: kernels reach PEs on other nodes through
// it. Throws Unsupported in a build without CUDA (onesided/no_device_proxy.cpp).
#pragma once

#include <memory>
#include <vector>

#include "gpu/device_requests.hpp"

namespace axon {

class GpuBackend;

// `nodeLocal[pe]`: PE pe shares this node (kernels reach those by load/store only).
std::unique_ptr<DeviceRequests> makeDeviceProxy(GpuBackend& gpu, int myPe, std::vector<bool> nodeLocal);

}  // namespace axon
