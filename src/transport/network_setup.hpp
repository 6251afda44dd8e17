// Joins the nodes at init: every PE makes its network transport and publishes its library version,
// worker address and heap registrations; every PE then connects to each PE on another node.
// Collective over the world, in two set-up steps, so a PE that cannot (no UCX there, another UCX
// version, an endpoint that cannot be made) fails init on every PE with the same error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/network_transport.hpp"

namespace axon {

class Bootstrap;

std::unique_ptr<NetworkTransport> connectNetwork(Bootstrap& boot, const NetworkSetup& setup,
                                                 const std::vector<bool>& nodeLocal,
                                                 const std::vector<std::string>& nodeNames,
                                                 const std::vector<const HeapSpace*>& heaps);

}  // namespace axon
