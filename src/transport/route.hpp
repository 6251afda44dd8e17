// Which transport an operation takes: the router's one decision (transport/router.cpp), as a pure
// function of what it knows about the operation, so that every case, the GPU ones included, is
// tested on the host (tests/unit/route_test.cpp).
#pragma once

#include "transport/registry.hpp"
#include "transport/route_query.hpp"

namespace axon {

// The first registered transport, by priority, that reaches the operation. So: a PE on another
// node, the network, whatever the memory kinds; on this node, the GPU transports for GPU memory on
// either side and every stream-ordered call (the staged path for a GPU heap this GPU does not map
// when that path is on, else cuda_ipc); the rest, shared memory.
constexpr Route chooseRoute(const RouteQuery& q) {
  for (const TransportEntry& entry : kTransports)
    if (entry.reaches(q)) return entry.route;
  return Route::Unreachable;
}

// The registered name of a route ("shm", "cuda_ipc", ...; "none" for Unreachable).
constexpr const char* routeName(Route route) {
  for (const TransportEntry& entry : kTransports)
    if (entry.route == route) return entry.name;
  return "none";
}

}  // namespace axon
