// The GPU halves of the slab operations: the heat step with its two derived variables in one
// kernel, and the statistics (min, max, sum per block, the histogram in shared memory).
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../common/cuda_helpers.hpp"
#include "insitu_slab.hpp"

namespace axon::examples::insitu {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBins = 1024;


int gridFor(std::size_t cells) {
  return static_cast<int>(std::min<std::size_t>((cells + kThreads - 1) / kThreads, 4096));
}

__global__ void initialiseKernel(double* cur, long x0, long nx, long ny, long nz) {
  const long plane = ny * nz, total = nx * plane;
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < total; i += long(gridDim.x) * blockDim.x) {
    const long x = i / plane, y = i % plane / nz, z = i % nz;
    cur[plane + i] = initialTemperature(x0 + x, y, z);
  }
}

__global__ void stepKernel(const double* u, double* next, double* change, double* square, long nx, long ny,
                           long nz) {
  const long plane = ny * nz, total = nx * plane;
  for (long k = blockIdx.x * long(blockDim.x) + threadIdx.x; k < total; k += long(gridDim.x) * blockDim.x) {
    const long y = k % plane / nz, z = k % nz, i = k + plane;
    const double v = heatStep(u[i], u[i - plane], u[i + plane], y > 0 ? u[i - nz] : 0.0,
                              y + 1 < ny ? u[i + nz] : 0.0, z > 0 ? u[i - 1] : 0.0, z + 1 < nz ? u[i + 1] : 0.0);
    next[i] = v;
    change[k] = v - u[i];
    square[k] = v * v;
  }
}

// Each block writes its min, max and sum to partial[3 * block] and adds its histogram to hist.
__global__ void __launch_bounds__(kThreads) summariseKernel(const double* values, long count, int variable, int bins,
                                                            double* partial, unsigned long long* hist) {
  __shared__ unsigned long long blockHist[kMaxBins];
  __shared__ double mins[kThreads], maxs[kThreads], sums[kThreads];
  for (int b = threadIdx.x; b < bins; b += blockDim.x) blockHist[b] = 0;
  __syncthreads();
  const Range r = rangeOf(variable);
  double lo = values[0], hi = values[0], sum = 0;
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < count; i += long(gridDim.x) * blockDim.x) {
    const double v = values[i];
    lo = fmin(lo, v);
    hi = fmax(hi, v);
    sum += v;
    ::atomicAdd(&blockHist[binOf(v, r, bins)], 1ull);
  }
  mins[threadIdx.x] = lo;
  maxs[threadIdx.x] = hi;
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      mins[threadIdx.x] = fmin(mins[threadIdx.x], mins[threadIdx.x + half]);
      maxs[threadIdx.x] = fmax(maxs[threadIdx.x], maxs[threadIdx.x + half]);
      sums[threadIdx.x] += sums[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[3 * blockIdx.x] = mins[0];
    partial[3 * blockIdx.x + 1] = maxs[0];
    partial[3 * blockIdx.x + 2] = sums[0];
  }
  for (int b = threadIdx.x; b < bins; b += blockDim.x)
    if (blockHist[b]) ::atomicAdd(&hist[b], blockHist[b]);
}

}  // namespace

double* gpuAllocate(std::size_t count) {
  void* p = nullptr;
  EXAMPLES_CUDA(cudaMalloc(&p, count * sizeof(double)));
  EXAMPLES_CUDA(cudaMemset(p, 0, count * sizeof(double)));
  return static_cast<double*>(p);
}

void gpuFree(double* p) { cudaFree(p); }

void gpuInitialise(Slab& s) {
  initialiseKernel<<<gridFor(s.cells()), kThreads>>>(s.cur, s.x0, s.nx, s.ny, s.nz);
  EXAMPLES_CUDA(cudaGetLastError());
  EXAMPLES_CUDA(cudaDeviceSynchronize());
}

void gpuStep(Slab& s) {
  stepKernel<<<gridFor(s.cells()), kThreads>>>(s.cur, s.next, s.change, s.square, s.nx, s.ny, s.nz);
  EXAMPLES_CUDA(cudaGetLastError());
  EXAMPLES_CUDA(cudaDeviceSynchronize());  // the puts that follow read the variables from the host
  std::swap(s.cur, s.next);
}

Summary gpuSummarise(const double* values, std::size_t count, int variable, int bins) {
  if (bins < 1 || bins > kMaxBins) throw std::invalid_argument("bins must be 1.." + std::to_string(kMaxBins));
  Summary s;
  s.cells = count;
  s.hist.assign(static_cast<std::size_t>(bins), 0);
  if (count == 0) return s;
  const int blocks = gridFor(count);
  double* partial = nullptr;
  unsigned long long* hist = nullptr;
  EXAMPLES_CUDA(cudaMalloc(&partial, 3 * blocks * sizeof(double)));
  EXAMPLES_CUDA(cudaMalloc(&hist, bins * sizeof(unsigned long long)));
  EXAMPLES_CUDA(cudaMemset(hist, 0, bins * sizeof(unsigned long long)));
  summariseKernel<<<blocks, kThreads>>>(values, static_cast<long>(count), variable, bins, partial, hist);
  EXAMPLES_CUDA(cudaGetLastError());
  std::vector<double> host(3 * static_cast<std::size_t>(blocks));
  EXAMPLES_CUDA(cudaMemcpy(host.data(), partial, host.size() * sizeof(double), cudaMemcpyDeviceToHost));
  EXAMPLES_CUDA(cudaMemcpy(s.hist.data(), hist, bins * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  cudaFree(partial);
  cudaFree(hist);
  s.min = host[0];
  s.max = host[1];
  for (int b = 0; b < blocks; ++b) {
    s.min = std::min(s.min, host[3 * b]);
    s.max = std::max(s.max, host[3 * b + 1]);
    s.sum += host[3 * b + 2];
  }
  return s;
}

}  // namespace axon::examples::insitu
