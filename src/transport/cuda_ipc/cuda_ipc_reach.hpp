// Which operations cuda_ipc carries: every GPU operation on this node (peer memory mapped through
// CUDA IPC, copy engines and signal kernels for stream-ordered calls).
#pragma once

#include "transport/route_query.hpp"

namespace axon {

constexpr bool cudaIpcReaches(const RouteQuery& q) { return takesGpuPath(q); }

}  // namespace axon
