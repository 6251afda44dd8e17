// The reduction kernels of signed char and unsigned char (coll_kernel_bodies.cuh says why a file per family).
#include "kernels/coll_kernel_bodies.cuh"

namespace axon::kernels::detail {
template CollKernelFn reduceKernelFor<signed char>(ad::ReduceOp);
template CollKernelFn reduceKernelFor<unsigned char>(ad::ReduceOp);
}  // namespace axon::kernels::detail
