// The collective kernels' launcher, the copy kernel (barrier, broadcast, allgather, alltoall move
// bytes) and the error report; the reductions are instantiated per element type family in
// coll_reduce_kernels_*.cu (coll_kernel_bodies.cuh).
#include <cuda_runtime.h>

#include <atomic>
#include <string>

#include "axon/error.hpp"
#include "kernels/coll_kernel_bodies.cuh"
#include "kernels/coll_kernels.hpp"

namespace axon::kernels {
namespace {

using namespace axon::kernels::detail;

__global__ void __launch_bounds__(kMaxCollThreads) copyKernel(ad::CollHandle h, CollLaunch l) {
  enterStream();
  dd::collRunCopy(h, channelJob(l, 16));
}

// A report the host found (kernels::raiseCollError): no line printed, the host throws it itself.
__global__ void raiseKernel(ad::CollHandle h, ad::CollError e) {
  dd::collPublish(h.error, e);
  for (int m = 0; m < h.size; ++m) dd::collPublish(dd::collAbortArea(h, m), e);
}

using KernelFn = CollKernelFn;

KernelFn reduceKernelOf(ad::DataType t, ad::ReduceOp op) {
  switch (t) {
    case ad::DataType::Int8: return reduceKernelFor<signed char>(op);
    case ad::DataType::Uint8: return reduceKernelFor<unsigned char>(op);
    case ad::DataType::Int32: return reduceKernelFor<int>(op);
    case ad::DataType::Uint32: return reduceKernelFor<unsigned int>(op);
    case ad::DataType::Int64: return reduceKernelFor<long long>(op);
    case ad::DataType::Uint64: return reduceKernelFor<unsigned long long>(op);
    case ad::DataType::Float16: return reduceKernelFor<ad::Half>(op);
    case ad::DataType::BFloat16: return reduceKernelFor<ad::BFloat16>(op);
    case ad::DataType::Float32: return reduceKernelFor<float>(op);
    case ad::DataType::Float64: return reduceKernelFor<double>(op);
  }
  return nullptr;
}

bool reduces(unsigned collective) {
  return collective == dd::kCollReduce || collective == dd::kCollAllreduce ||
         collective == dd::kCollReduceScatter;
}

KernelFn kernelFor(const CollLaunch& l) {
  if (!reduces(l.record.collective)) return copyKernel;
  return reduceKernelOf(static_cast<ad::DataType>(l.record.dtype), static_cast<ad::ReduceOp>(l.record.op));
}

// Programmatic dependent launch, only where the kernels this device runs were compiled for
// compute_90 or later: their griddepcontrol.wait exists only there (ptx.hpp), and a kernel
// launched with the attribute but without the wait could read what the stream's previous kernel
// has not written yet (a build for sm_80 alone, running on an H100, must launch plainly).
bool overlapSupported() {
  static std::atomic<int> ptxVersion[64];  // per device ordinal; 0 = not asked yet
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return false;
  int v = ptxVersion[device].load(std::memory_order_relaxed);
  if (v == 0) {
    cudaFuncAttributes attr{};
    v = cudaFuncGetAttributes(&attr, copyKernel) == cudaSuccess && attr.ptxVersion > 0 ? attr.ptxVersion : -1;
    ptxVersion[device].store(v, std::memory_order_relaxed);
  }
  return v >= 90;
}

}  // namespace

void collective(void* stream, const device::CollHandle& h, const CollLaunch& launch) {
  KernelFn fn = kernelFor(launch);
  if (!fn) throw Error(ErrorCode::Internal, "no collective kernel for this type and op");
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(launch.record.channels);
  config.blockDim = dim3(static_cast<unsigned>(launch.threads));
  config.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  if (launch.overlapLaunch && overlapSupported()) {
    config.attrs = &overlap;
    config.numAttrs = 1;
  }
  cudaError_t e = cudaLaunchKernelEx(&config, fn, h, launch);
  if (e != cudaSuccess) {
    throw Error(ErrorCode::Cuda, std::string("launching a collective kernel: ") + cudaGetErrorName(e) + " (" +
                                     cudaGetErrorString(e) + ")");
  }
}

void raiseCollError(void* stream, const device::CollHandle& h, const device::CollError& e) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(1);
  config.stream = static_cast<cudaStream_t>(stream);
  const cudaError_t r = cudaLaunchKernelEx(&config, raiseKernel, h, e);
  if (r != cudaSuccess) {
    throw Error(ErrorCode::Cuda, std::string("launching a collective error report: ") + cudaGetErrorName(r) + " (" +
                                     cudaGetErrorString(r) + ")");
  }
}

CollOccupancy collOccupancy(const CollLaunch& launch) {
  KernelFn fn = kernelFor(launch);
  if (!fn) throw Error(ErrorCode::Internal, "no collective kernel for this type and op");
  auto check = [](cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
      throw Error(ErrorCode::Cuda, std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
    }
  };
  CollOccupancy o{};
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&o.deviceSms, cudaDevAttrMultiProcessorCount, device), "reading the GPU's SM count");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o.blocksPerSm, fn, launch.threads, 0),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor (a collective kernel)");
  return o;
}

void warmUpCollectives() {
  cudaFuncAttributes attr;
  cudaFuncGetAttributes(&attr, copyKernel);
  for (int t = 0; t <= static_cast<int>(ad::DataType::Float64); ++t) {
    for (int op = 0; op <= static_cast<int>(ad::ReduceOp::Max); ++op) {
      cudaFuncGetAttributes(&attr, reduceKernelOf(static_cast<ad::DataType>(t), static_cast<ad::ReduceOp>(op)));
    }
  }
}

}  // namespace axon::kernels
