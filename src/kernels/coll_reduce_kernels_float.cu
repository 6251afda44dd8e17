// The reduction kernels of float and double (coll_kernel_bodies.cuh says why a file per family).
#include "kernels/coll_kernel_bodies.cuh"

namespace axon::kernels::detail {
template CollKernelFn reduceKernelFor<float>(ad::ReduceOp);
template CollKernelFn reduceKernelFor<double>(ad::ReduceOp);
}  // namespace axon::kernels::detail
