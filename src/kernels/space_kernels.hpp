// Launcher of the staging space's reassembly kernel (space_kernels.cu): every piece of a get's box
// copied into the destination by ONE kernel launch, whatever the number of pieces, dimensions
// (up to 8) or alignment. Plain C++ signature, so that host files need no CUDA headers; `stream`
// is a CUstream / cudaStream_t.
#pragma once

#include <cstdint>

#include "space/box.hpp"

namespace axon::kernels {

// One piece's part of the box: region.* in bytes as space::planCopy gives them, from device
// address src + region.srcOffset to dst + region.dstOffset. firstRun is the number of contiguous
// runs of all the copies before this one in the table (ascending, starting at 0).
struct RegionCopy {
  space::CopyRegion region;
  std::uint64_t src = 0;
  std::uint64_t dst = 0;
  std::int64_t firstRun = 0;
};

// Fills firstRun of each copy; returns the total number of runs.
std::int64_t numberRuns(RegionCopy* copies, int count);

// Enqueues the one kernel on `stream`. `table` is device memory holding `count` copies (firstRun
// filled, as numberRuns leaves them), `totalRuns` their runs and `maxRunBytes` the longest run.
// Throws axon::Error(Cuda) when the launch fails.
void fusedRegionCopy(void* stream, const RegionCopy* table, int count, std::int64_t totalRuns,
                     std::int64_t maxRunBytes);

}  // namespace axon::kernels
