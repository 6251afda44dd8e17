// The collective kernels' bodies, shared by the translation units that instantiate them: the copy
// kernel and the launcher in coll_kernels.cu, the reductions one element type family per file
// (coll_reduce_kernels_*.cu), so that a build compiles them in parallel (one file of all 40
// reductions took 2.5 minutes, the longest step of a build on any number of cores).
// Block b runs channel b of the call on its share of every member block, through the device
// engine (axon/device/collectives.hpp).
#pragma once

#include <cuda_runtime.h>

#include "axon/device/collectives.hpp"
#include "kernels/coll_kernels.hpp"

namespace axon::kernels::detail {

namespace ad = axon::device;
namespace dd = axon::device::detail;

using CollKernelFn = void (*)(ad::CollHandle, CollLaunch);

AXON_DEVICE_INLINE dd::CollJob channelJob(const CollLaunch& l, ad::SizeT unit) {
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
__global__ void __launch_bounds__(kMaxCollThreads) reduceKernel(ad::CollHandle h, CollLaunch l) {
  enterStream();
  dd::collRunReduce<T, Op>(h, channelJob(l, dd::collUnitOf<T>()));
}

// The reduction kernel of element type T and `op`; instantiated in its family's file only.
template <class T>
CollKernelFn reduceKernelFor(ad::ReduceOp op) {
  switch (op) {
    case ad::ReduceOp::Sum: return reduceKernel<T, ad::ReduceOp::Sum>;
    case ad::ReduceOp::Prod: return reduceKernel<T, ad::ReduceOp::Prod>;
    case ad::ReduceOp::Min: return reduceKernel<T, ad::ReduceOp::Min>;
    case ad::ReduceOp::Max: return reduceKernel<T, ad::ReduceOp::Max>;
  }
  return nullptr;
}

// The families' files (coll_reduce_kernels_*.cu) instantiate these; the others only declare them.
#define AXON_COLL_REDUCE_TYPES(X)                                                        \
  X(signed char) X(unsigned char) X(int) X(unsigned int) X(long long) X(unsigned long long) \
  X(ad::Half) X(ad::BFloat16) X(float) X(double)
#define AXON_COLL_DECLARE_REDUCE(T) extern template CollKernelFn reduceKernelFor<T>(ad::ReduceOp);
AXON_COLL_REDUCE_TYPES(AXON_COLL_DECLARE_REDUCE)
#undef AXON_COLL_DECLARE_REDUCE

}  // namespace axon::kernels::detail
