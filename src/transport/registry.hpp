// The transports, registered in one place: each folder says which operations it reaches (its
// *_reach.hpp), and this table gives each its name and priority. The router alone decides
// (chooseRoute in transport/route.hpp: the first transport by priority that reaches). A new
// transport adds its folder, its reach function and one row here, then a case in Router::route
// for the object that carries it (docs/architecture.md, "Transports").
#pragma once

#include <array>

#include "transport/cuda_ipc/cuda_ipc_reach.hpp"
#include "transport/network_reach.hpp"
#include "transport/route_query.hpp"
#include "transport/shm/shm_reach.hpp"
#include "transport/staged/staged_reach.hpp"

namespace axon {

struct TransportEntry {
  Route route;
  const char* name;  // as Transport::name(), explain and path_to say it
  int priority;      // where several reach an operation, the highest wins
  bool (*reaches)(const RouteQuery&);
};

inline constexpr std::array<TransportEntry, 4> kTransports{{
    {Route::Network, "ucx", 40, networkReaches},
    {Route::Staged, "staged", 30, stagedReaches},
    {Route::CudaIpc, "cuda_ipc", 20, cudaIpcReaches},
    {Route::Shm, "shm", 10, shmReaches},
}};

// The table is kept in priority order, so the first that reaches is the choice.
constexpr bool registryInPriorityOrder() {
  for (std::size_t i = 1; i < kTransports.size(); ++i)
    if (kTransports[i - 1].priority <= kTransports[i].priority) return false;
  return true;
}
static_assert(registryInPriorityOrder(), "kTransports must be listed from the highest priority down");

}  // namespace axon
