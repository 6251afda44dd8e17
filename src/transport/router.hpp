// The one place that picks a transport per operation, host calls and stream-ordered ones alike
// (the decision itself is chooseRoute, transport/route.hpp, host-tested):
//   a PE on another node      -> the network transport (UCX), whatever the memory kinds; on a
//                                stream, its calls go through the device proxy;
//   GPU memory on either side -> the GPU transports: the staged path for a node-local GPU heap
//     (or any stream-ordered    this GPU cannot map when the staged path is on, else cuda_ipc;
//     call to this node)
//   otherwise                 -> shared memory.
// It holds the transports (shared memory from the start, the GPU transports and the network one as
// the runtime builds them), sends fence and quiet to every one in use, and carries heap
// registrations between the allocation exchange and the transports that need them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/gpu_transports.hpp"
#include "transport/network_transport.hpp"
#include "transport/shm/shm_transport.hpp"

namespace axon {

class GpuBackend;

class Router {
 public:
  Router(int myPe, std::vector<bool> nodeLocal);

  // The GPU backend and its transports (transport/gpu_transports.hpp).
  void setGpu(GpuBackend* gpu, GpuTransports transports);
  void setNetwork(std::unique_ptr<NetworkTransport> net) { net_ = std::move(net); }
  NetworkTransport* network() const { return net_.get(); }
  // The peer transport over GPU memory (cuda_ipc), or null without the GPU backend.
  Transport* gpuPeer() const { return gpuPaths_.peer.get(); }
  // The staged path's proxy, which the progress engine polls; null when the path is off.
  ProgressClient* stageProxy() const { return gpuPaths_.stageProxy.get(); }
  bool nodeLocal(int pe) const { return nodeLocal_[pe]; }

  // The transport for a host call between `ref` (resolved) and the local buffer `local`. Throws
  // Unsupported naming the PE when none reaches it.
  Transport& transportFor(const RemoteRef& ref, const void* local, const char* api);
  // The transport for a stream-ordered call on `ref` (the GPU backend is on); it first reports a
  // stream-ordered failure the host met since the last call.
  Transport& streamTransportFor(const RemoteRef& ref, const char* api);
  // How this PE reaches `pe`'s heap `kind`: "self", "shm", "cuda_ipc", "staged", "ucx:tcp", ...
  std::string pathTo(int pe, HeapKind kind) const;

  void fenceAll();
  void quietAll();
  // quiet_on_stream: later work on `stream` starts once what the GPU paths have outstanding is
  // complete (the device proxy's requests, the host's put_nbi on GPU memory).
  void quietOnStream(void* stream);

  // This PE's registration of `heap` past `from` for the peers (empty without a network transport).
  std::string registration(const HeapSpace& heap, std::size_t from);
  // Hands each peer's registration (registrations[pe], "" for none) to the network transport;
  // origin(pe) names it in errors.
  void acceptRegistrations(const std::vector<std::string>& registrations,
                           const std::function<std::string(int)>& origin);

 private:
  // The transport chooseRoute (transport/route.hpp) picks; throws Unsupported for a PE none reaches.
  Transport& route(const RemoteRef& ref, const void* local, bool streamOrdered, const char* api);

  int myPe_;
  std::vector<bool> nodeLocal_;
  ShmTransport shm_;
  GpuBackend* gpuBackend_ = nullptr;
  GpuTransports gpuPaths_;
  std::unique_ptr<NetworkTransport> net_;
};

}  // namespace axon
