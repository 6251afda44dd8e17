// The one place that builds the host transports and picks one per operation:
//   a PE on another node      -> the network transport (UCX), whatever the memory kinds;
//   GPU memory on either side -> the GPU backend's (cuda_ipc, or the staged path);
//   otherwise                 -> shared memory.
// fence and quiet go to every transport in use. It also carries heap registrations between the
// allocation exchange and the transports that need them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/network_transport.hpp"
#include "transport/shm/shm_transport.hpp"

namespace axon {

class GpuBackend;

class Router {
 public:
  Router(int myPe, std::vector<bool> nodeLocal);

  void setGpu(GpuBackend* gpu) { gpu_ = gpu; }
  void setNetwork(std::unique_ptr<NetworkTransport> net) { net_ = std::move(net); }
  NetworkTransport* network() const { return net_.get(); }
  bool nodeLocal(int pe) const { return nodeLocal_[pe]; }

  // The transport for an operation between `ref` (resolved) and the local buffer `local`. Throws
  // Unsupported naming the PE when none reaches it.
  Transport& transportFor(const RemoteRef& ref, const void* local, const char* api);
  // How this PE reaches `pe`'s heap `kind`: "self", "shm", "cuda_ipc", "staged", "ucx:tcp", ...
  std::string pathTo(int pe, HeapKind kind) const;

  void fenceAll();
  void quietAll();

  // This PE's registration of `heap` past `from` for the peers (empty without a network transport).
  std::string registration(const HeapSpace& heap, std::size_t from);
  // Hands each peer's registration (registrations[pe], "" for none) to the network transport;
  // origin(pe) names it in errors.
  void acceptRegistrations(const std::vector<std::string>& registrations,
                           const std::function<std::string(int)>& origin);

 private:
  int myPe_;
  std::vector<bool> nodeLocal_;
  ShmTransport shm_;
  GpuBackend* gpu_ = nullptr;
  std::unique_ptr<NetworkTransport> net_;
};

}  // namespace axon
