// Launcher of the collective kernels (coll_kernels.cu): plain C++, so that host files need no CUDA
// headers. One block per channel, each running the device engine (axon/device/collectives.hpp)
// on its share of the data.
#pragma once

#include <cstddef>

#include "axon/device/coll_types.hpp"

namespace axon::kernels {

struct CollLaunch {
  device::CollRecord record;  // what members compare; record.channels blocks are launched
  const void* src;
  void* dst;
  std::size_t block;          // one member's block: elements (reductions) or bytes (copies)
  // Direct calls: the heap offsets of src and dst this PE proposes (device::kCollNoOffset: none).
  unsigned long long srcOffset = device::kCollNoOffset, dstOffset = device::kCollNoOffset;
  int threads;                // per block: 1 to kMaxCollThreads, a multiple of 32
  bool overlapLaunch;         // programmatic dependent launch (AXON_COLL_GPU_PDL): the kernel may
                              // be scheduled while the stream's previous kernel still runs
};

constexpr int kMaxCollThreads = 512;

// Enqueues the collective on `stream` (a CUstream). Throws Error(Cuda) if the launch fails.
void collective(void* stream, const device::CollHandle& h, const CollLaunch& launch);
// Enqueues one thread that publishes `e` as the team's kernels publish what they meet: into this
// PE's report (h.error) and every member's abort area, where their kernels' waits look.
void raiseCollError(void* stream, const device::CollHandle& h, const device::CollError& e);
// What one SM holds of the kernel `launch` runs (record.collective, dtype and op pick it; threads
// per block as launched) and the current device's SMs: the CUDA occupancy calculator's answer,
// for explain(). Throws Error(Cuda) if CUDA cannot say.
struct CollOccupancy {
  int blocksPerSm;
  int deviceSms;
};
CollOccupancy collOccupancy(const CollLaunch& launch);
// Loads the collective kernels now: a first launch may not happen inside a CUDA graph capture.
void warmUpCollectives();

}  // namespace axon::kernels
