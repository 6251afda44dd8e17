// What the pieces built beside the CUDA backend (the CUDA transports, the device proxy) take from
// it: the driver, this PE's context and GPU heap, the stream and pinned scratch of the host API's
// GPU work. CUDA-typed: only sources built with CUDA include it.
#pragma once

#include <vector>

#include "gpu/driver.hpp"
#include "gpu/gpu_heap.hpp"

namespace axon {
class GpuBackend;
}

namespace axon::gpu {

struct CudaResources {
  const DriverApi* cu = nullptr;
  CUcontext ctx = nullptr;
  GpuHeap* heap = nullptr;
  CUstream stream = nullptr;  // the host API's own stream: the peer transport's copies
  // Pinned, 64 bytes a user: [0] the peer transport's atomic results, [128] the staging proxy's.
  char* scratch = nullptr;
  unsigned long long timeoutNs = 0;
};

// The CUDA backend's resources; throws Internal for any other backend.
CudaResources cudaResourcesOf(GpuBackend& gpu);

}  // namespace axon::gpu
