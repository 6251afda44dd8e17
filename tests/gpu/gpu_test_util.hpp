// Helpers of the GPU tests: checked CUDA runtime calls and host copies of device buffers.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#define CUDA_OK(call)                                                                  \
  do {                                                                                 \
    cudaError_t e_ = (call);                                                           \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_);             \
  } while (0)

template <class T>
std::vector<T> toHost(const T* device, std::size_t count) {
  std::vector<T> h(count);
  cudaMemcpy(h.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

// cudaMemcpy from pageable memory may return before the data reaches the GPU, and axon's host
// calls do not order with the legacy stream: wait for the copy before handing the buffer to axon.
template <class T>
void fromHost(T* device, const std::vector<T>& h) {
  cudaMemcpy(device, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  cudaDeviceSynchronize();
}
