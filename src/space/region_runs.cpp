// The host side of the reassembly kernel's table (space_kernels.hpp): numbering the runs and the
// facts the launch is sized by. Plain C++, built with or without CUDA, so that it is tested on the
// host (tests/unit/space_box_test.cpp).
#include <algorithm>
#include <cstdint>

#include "space/space_kernels.hpp"

namespace axon::kernels {

RunSummary numberRuns(RegionCopy* copies, int count) {
  RunSummary out;
  std::uint64_t bits = 16;  // the OR of every address, stride and length that a unit must divide
  for (int i = 0; i < count; ++i) {
    RegionCopy& c = copies[i];
    const space::CopyRegion& g = c.region;
    c.firstRun = out.runs;
    const std::int64_t runs = g.runs();
    out.runs += runs;
    if (runs == 0 || g.ndim <= 0) continue;
    const std::int64_t runBytes = g.extent[g.ndim - 1];
    out.maxRunBytes = std::max(out.maxRunBytes, runBytes);
    bits |= (c.src + static_cast<std::uint64_t>(g.srcOffset)) | (c.dst + static_cast<std::uint64_t>(g.dstOffset)) |
            static_cast<std::uint64_t>(runBytes);
    for (int d = 0; d + 1 < g.ndim; ++d) {
      if (g.extent[d] > 1) bits |= static_cast<std::uint64_t>(g.srcStride[d]) | static_cast<std::uint64_t>(g.dstStride[d]);
    }
  }
  out.unitBytes = static_cast<int>(bits & (~bits + 1));  // the lowest set bit: 1..16
  return out;
}

}  // namespace axon::kernels
