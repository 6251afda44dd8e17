// The reduction kernels of Half and BFloat16 (coll_kernel_bodies.cuh says why a file per family).
#include "kernels/coll_kernel_bodies.cuh"

namespace axon::kernels::detail {
template CollKernelFn reduceKernelFor<ad::Half>(ad::ReduceOp);
template CollKernelFn reduceKernelFor<ad::BFloat16>(ad::ReduceOp);
}  // namespace axon::kernels::detail
