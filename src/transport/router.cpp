#include "transport/router.hpp"

#include "axon/error.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon {

Router::Router(int myPe, std::vector<bool> nodeLocal) : myPe_(myPe), nodeLocal_(nodeLocal), shm_(std::move(nodeLocal)) {}

void Router::setGpu(GpuBackend* gpu, GpuTransports transports) {
  gpuBackend_ = gpu;
  gpuPaths_ = std::move(transports);
}

Transport& Router::gpuTransportFor(const RemoteRef& ref) {
  gpuBackend_->makeCurrent();
  if (ref.heap == HeapKind::Gpu && !ref.mapped && gpuPaths_.staged) return *gpuPaths_.staged;
  return *gpuPaths_.peer;
}

Transport& Router::transportFor(const RemoteRef& ref, const void* local, const char* api) {
  const int pe = ref.pe;
  if (!nodeLocal_[pe]) {
    if (net_ && net_->reaches(pe)) return *net_;
    throw Error(ErrorCode::Unsupported, "PE " + std::to_string(myPe_) + ": " + api + ": no transport reaches PE " +
                                            std::to_string(pe) + ", which runs on another node");
  }
  if (gpuBackend_ && (ref.heap == HeapKind::Gpu || (local && gpuBackend_->isDeviceMemory(local)))) {
    Transport& t = gpuTransportFor(ref);
    gpuBackend_->throwStreamError();
    return t;
  }
  return shm_;
}

Transport& Router::streamTransportFor(const RemoteRef& ref, const char* api) {
  gpuBackend_->makeCurrent();
  gpuBackend_->throwStreamError();
  if (!nodeLocal_[ref.pe]) {
    if (net_ && net_->reaches(ref.pe)) return *net_;
    throw Error(ErrorCode::Unsupported, "PE " + std::to_string(myPe_) + ": " + api + ": no transport reaches PE " +
                                            std::to_string(ref.pe) + ", which runs on another node");
  }
  // Every stream-ordered call on this node goes to the GPU: a copy engine reaches the pinned host
  // heap too.
  return gpuTransportFor(ref);
}

std::string Router::pathTo(int pe, HeapKind kind) const {
  if (pe == myPe_) return "self";
  if (!nodeLocal_[pe]) return net_ ? net_->pathTo(pe) : "none";
  if (kind == HeapKind::Gpu && gpuBackend_) return gpuBackend_->peerReachable(pe) ? "cuda_ipc" : "staged";
  return "shm";
}

void Router::fenceAll() {
  if (gpuPaths_.peer) {
    gpuBackend_->makeCurrent();
    gpuPaths_.peer->fence();
  }
  shm_.fence();
  if (net_) net_->fence();
}

void Router::quietAll() {
  if (gpuPaths_.peer) {
    gpuBackend_->makeCurrent();
    gpuPaths_.peer->quiet();
  }
  shm_.quiet();
  if (net_) net_->quiet();
}

void Router::quietOnStream(void* stream) {
  gpuBackend_->quietProxyOnStream(stream);
  gpuPaths_.peer->quietOnStream(stream);
}

std::string Router::registration(const HeapSpace& heap, std::size_t from) {
  return net_ ? net_->registration(heap, from) : std::string();
}

void Router::acceptRegistrations(const std::vector<std::string>& registrations,
                                 const std::function<std::string(int)>& origin) {
  if (!net_) return;
  for (int pe = 0; pe < static_cast<int>(registrations.size()); ++pe) {
    if (pe != myPe_ && !nodeLocal_[pe] && !registrations[pe].empty()) {
      net_->acceptRegistration(pe, registrations[pe], origin(pe));
    }
  }
}

}  // namespace axon
