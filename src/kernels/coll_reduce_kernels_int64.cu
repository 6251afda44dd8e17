// The reduction kernels of long long and unsigned long long (why a file per family:
// coll_kernel_bodies.cuh).
#include "kernels/coll_kernel_bodies.cuh"

namespace axon::kernels::detail {
template CollKernelFn reduceKernelFor<long long>(ad::ReduceOp);
template CollKernelFn reduceKernelFor<unsigned long long>(ad::ReduceOp);
}  // namespace axon::kernels::detail
