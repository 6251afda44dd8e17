// cuMemcpyAsync, split where the host side of the copy crosses the edge of a host registration
// (see pinned_ranges.hpp). Every copy that may touch host-heap memory goes through here.
#pragma once

#include "gpu/driver.hpp"
#include "gpu/pinned_ranges.hpp"

namespace axon::gpu {

inline CUresult copyAsync(const DriverApi& cu, void* dst, const void* src, std::size_t bytes, CUstream stream) {
  CUresult result = CUDA_SUCCESS;
  processPinnedRanges().forEachPiece(dst, src, bytes, [&](void* d, const void* s, std::size_t n) {
    if (result == CUDA_SUCCESS) {
      result = cu.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(d), reinterpret_cast<CUdeviceptr>(s), n, stream);
    }
  });
  return result;
}

}  // namespace axon::gpu
