// The collective kernels: block b runs channel b of the call on its share of every member block,
// through the device engine. Reductions are instantiated per element type and op; the copies
// (barrier, broadcast, allgather, alltoall) move bytes.
#include <cuda_runtime.h>

#include <atomic>
#include <string>

#include "axon/device/collectives.hpp"
#include "axon/error.hpp"
#include "kernels/coll_kernels.hpp"

namespace axon::kernels {
namespace {

namespace ad = axon::device;
namespace dd = axon::device::detail;

constexpr int kThreads = kMaxCollThreads;

AXON_DEVICE_INLINE dd::CollJob channelJob(const ad::CollHandle& h, const CollLaunch& l,
                                          ad::SizeT unit) {
  dd::CollJob job;
  job.record = l.record;
  job.src = static_cast<const char*>(l.src);
  job.dst = static_cast<char*>(l.dst);
  job.block = l.block;
  job.channel = static_cast<int>(blockIdx.x);
  job.srcOffset = l.srcOffset;
  job.dstOffset = l.dstOffset;
  ad::collChannelRange(l.block, static_cast<int>(l.record.channels), job.channel, unit, &job.lo,
                       &job.hi);
  return job;
}

// Every kernel first waits for the stream's earlier work (a no-op unless launched with
// overlapLaunch), then lets the next kernel be scheduled: back-to-back collectives then pay
// their launch while the previous one runs, not after it.
AXON_DEVICE_INLINE void enterStream() {
  dd::gridDependencyWait();
  dd::launchDependents();
}

template <class T, ad::ReduceOp Op>
__global__ void __launch_bounds__(kThreads) reduceKernel(ad::CollHandle h, CollLaunch l) {
  enterStream();
  const ad::SizeT unit = sizeof(T) >= 16 ? 1 : 16 / sizeof(T);
  dd::collRunReduce<T, Op>(h, channelJob(h, l, unit));
}

__global__ void __launch_bounds__(kThreads) copyKernel(ad::CollHandle h, CollLaunch l) {
  enterStream();
  dd::collRunCopy(h, channelJob(h, l, 16));
}

// A report the host found (kernels::raiseCollError): no line printed, the host throws it itself.
__global__ void raiseKernel(ad::CollHandle h, ad::CollError e) {
  dd::collPublish(h.error, e);
  for (int m = 0; m < h.size; ++m) dd::collPublish(dd::collAbortArea(h, m), e);
}

using KernelFn = void (*)(ad::CollHandle, CollLaunch);

template <class T>
KernelFn reduceKernelFor(ad::ReduceOp op) {
  switch (op) {
    case ad::ReduceOp::Sum: return reduceKernel<T, ad::ReduceOp::Sum>;
    case ad::ReduceOp::Prod: return reduceKernel<T, ad::ReduceOp::Prod>;
    case ad::ReduceOp::Min: return reduceKernel<T, ad::ReduceOp::Min>;
    case ad::ReduceOp::Max: return reduceKernel<T, ad::ReduceOp::Max>;
  }
  return nullptr;
}

KernelFn reduceKernelFor(ad::DataType t, ad::ReduceOp op) {
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
  return reduceKernelFor(static_cast<ad::DataType>(l.record.dtype),
                         static_cast<ad::ReduceOp>(l.record.op));
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

void warmUpCollectives() {
  cudaFuncAttributes attr;
  cudaFuncGetAttributes(&attr, copyKernel);
  for (int t = 0; t <= static_cast<int>(ad::DataType::Float64); ++t) {
    for (int op = 0; op <= static_cast<int>(ad::ReduceOp::Max); ++op) {
      cudaFuncGetAttributes(&attr, reduceKernelFor(static_cast<ad::DataType>(t), static_cast<ad::ReduceOp>(op)));
    }
  }
}

}  // namespace axon::kernels
