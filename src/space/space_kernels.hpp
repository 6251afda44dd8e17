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

// What the launch needs to know of a table, worked out on the host (region_runs.cpp).
struct RunSummary {
  std::int64_t runs = 0;         // contiguous runs of all the copies
  std::int64_t maxRunBytes = 0;  // the longest run
  // The widest unit (16, 8, 4, 2 or 1 bytes) that every run's source and destination address and
  // length are multiples of: the kernel sizes its thread groups by units of this width, so that
  // runs misaligned for 16-byte accesses (a box starting 24 bytes into a piece's row) still take
  // the straight-line path.
  int unitBytes = 16;
};

// Fills firstRun of each copy; returns the table's summary.
RunSummary numberRuns(RegionCopy* copies, int count);

// Enqueues the one kernel on `stream`. `table` is device memory holding `count` copies (firstRun
// filled, as numberRuns leaves them) and `runs` is what numberRuns returned for them.
// Throws axon::Error(Cuda) when the launch fails.
void fusedRegionCopy(void* stream, const RegionCopy* table, int count, const RunSummary& runs);

}  // namespace axon::kernels
