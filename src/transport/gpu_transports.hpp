// The transports for GPU memory on this node, built beside the GPU backend once it has mapped the
// peers' GPU heaps: cuda_ipc (peers' heaps mapped here: copy engines, signal kernels) and, when any
// GPU cannot map some node-local peer's heap, the staged path (pinned host channels, and a proxy
// serving this PE's). The router (transport/router.hpp) picks among them. CUDA-free, so that the
// runtime, which builds them, includes no CUDA header.
#pragma once

#include <functional>
#include <memory>

#include "core/progress_engine.hpp"
#include "transport/transport.hpp"

namespace axon {

class GpuBackend;
class PeContext;
class SymmetricHeap;

struct GpuTransports {
  std::unique_ptr<Transport> peer;             // cuda_ipc
  std::unique_ptr<Transport> staged;           // null when every GPU maps every node-local peer's heap
  std::unique_ptr<ProgressClient> stageProxy;  // with `staged`: serves the requests sent to this PE
};

struct GpuTransportSetup {
  PeContext& pe;
  GpuBackend& gpu;
  SymmetricHeap& hostHeap;            // the staged path's channels live in it
  std::function<void()> pinHostHeap;  // after it grew: pins the new ranges for the GPU
};

// Collective over the world: every PE learns whether any needs the staged path, and all set it up.
// Throws Unsupported in a build without CUDA (transport/no_gpu_transports.cpp).
GpuTransports makeGpuTransports(const GpuTransportSetup& setup);

}  // namespace axon
