// Which operations the shared-memory transport carries: host memory on both sides, on this node.
#pragma once

#include "transport/route_query.hpp"

namespace axon {

constexpr bool shmReaches(const RouteQuery& q) { return q.nodeLocal && !takesGpuPath(q); }

}  // namespace axon
