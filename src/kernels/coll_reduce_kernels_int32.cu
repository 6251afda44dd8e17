// The reduction kernels of int and unsigned int (coll_kernel_bodies.cuh says why a file per family).
#include "kernels/coll_kernel_bodies.cuh"

namespace axon::kernels::detail {
template CollKernelFn reduceKernelFor<int>(ad::ReduceOp);
template CollKernelFn reduceKernelFor<unsigned int>(ad::ReduceOp);
}  // namespace axon::kernels::detail
