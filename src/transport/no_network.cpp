// A build without UCX: one node only.
#include "axon/error.hpp"
#include "transport/network_transport.hpp"
#include "transport/rpc.hpp"

namespace axon {

NetworkLibrary networkLibrary() {
  NetworkLibrary lib;
  lib.name = "UCX";
  lib.whyNot = "this build of axon has no UCX (CMake found none: set UCX_HOME, install libucx-dev, or pip install "
               "libucx-cu13, and rebuild)";
  return lib;
}

std::unique_ptr<NetworkTransport> makeNetworkTransport(const NetworkSetup& setup) {
  throw Error(ErrorCode::Unsupported,
              "PE " + std::to_string(setup.myPe) +
                  ": PEs on other nodes are reached through UCX, and this build of axon has none (CMake found no "
                  "UCX: set UCX_HOME, install libucx-dev, or pip install libucx-cu13, and rebuild)");
}

namespace rpc {

std::unique_ptr<Node> makeNode(const std::string& role) {
  throw Error(ErrorCode::Unsupported, role + ": the staging space runs over UCX, and this build of axon has none "
                                             "(CMake found no UCX: set UCX_HOME, install libucx-dev, or pip install "
                                             "libucx-cu13, and rebuild)");
}

}  // namespace rpc
}  // namespace axon
