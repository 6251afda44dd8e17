// Which operations the staged path carries: GPU operations on this node whose target is a GPU heap
// this GPU does not map (no peer access), when the path is on. It ranks above cuda_ipc.
#pragma once

#include "transport/route_query.hpp"

namespace axon {

constexpr bool stagedReaches(const RouteQuery& q) {
  return q.stagedOn && takesGpuPath(q) && q.heap == HeapKind::Gpu && !q.mapped;
}

}  // namespace axon
