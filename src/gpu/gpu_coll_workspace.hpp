// A team's GPU collective workspace: one piece of device memory per member (CUDA VMM, exported
// as a file descriptor), every member's mapped into one address reservation of this process,
// member i's at i * stride, so that a kernel finds a member's workspace by arithmetic
// (device::CollHandle). The layout inside is device::collLayout().
#pragma once

#include <memory>
#include <string>

#include "gpu/driver.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon::gpu {

struct CollWorkspaceConfig {
  int channels;
  std::size_t chunkBytes;    // Simple protocol, per channel, half and sender
  std::size_t llChunkBytes;  // LL protocol, data bytes per channel, half and sender
  std::size_t llMaxBytes;    // device-callable calls up to this block size take LL
  unsigned long long timeoutNs;
  char* heapBase;            // this PE's GPU heap; node-local peer p's is (p - me) / heapPeStride *
  long long heapStride;      // heapStride from it (device::Context)
  int heapPeStride;
};

// Collective over the team's members. nullptr with `whyNot` set, on every member alike, when some
// member could not create or map the memory (no peer access between two of the GPUs, ...).
std::shared_ptr<GpuTeamWorkspace> createCollWorkspace(const DriverApi& cu, CUdevice device, CUcontext ctx, PeContext& rt,
                                                      const detail::TeamState& team,
                                                      const CollWorkspaceConfig& config, std::string& whyNot);

}  // namespace axon::gpu
