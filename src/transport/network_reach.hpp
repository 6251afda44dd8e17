// Which operations the network transport (UCX) carries: everything to a PE on another node that it
// reaches, whatever the memory kinds.
#pragma once

#include "transport/route_query.hpp"

namespace axon {

constexpr bool networkReaches(const RouteQuery& q) { return !q.nodeLocal && q.networkReaches; }

}  // namespace axon
