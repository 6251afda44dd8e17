#include "transport/router.hpp"

#include "axon/error.hpp"
#include "gpu/gpu_backend.hpp"
#include "transport/route.hpp"

namespace axon {

Router::Router(int myPe, std::vector<bool> nodeLocal) : myPe_(myPe), nodeLocal_(nodeLocal), shm_(std::move(nodeLocal)) {}

void Router::setGpu(GpuBackend* gpu, GpuTransports transports) {
  gpuBackend_ = gpu;
  gpuPaths_ = std::move(transports);
}

Transport& Router::route(const RemoteRef& ref, const void* local, bool streamOrdered, const char* api) {
  RouteQuery q;
  q.nodeLocal = nodeLocal_[ref.pe];
  q.networkReaches = !q.nodeLocal && net_ && net_->reaches(ref.pe);
  q.gpuOn = gpuBackend_ != nullptr;
  q.stagedOn = gpuPaths_.staged != nullptr;
  q.heap = ref.heap;
  q.mapped = ref.mapped != nullptr;
  q.streamOrdered = streamOrdered;
  // A driver call: asked only where the answer decides.
  q.localOnDevice = q.nodeLocal && q.gpuOn && !streamOrdered && ref.heap != HeapKind::Gpu && local &&
                    gpuBackend_->isDeviceMemory(local);
  switch (chooseRoute(q)) {
    case Route::Network: return *net_;
    case Route::Shm: return shm_;
    case Route::Staged: return *gpuPaths_.staged;
    case Route::CudaIpc: return *gpuPaths_.peer;
    case Route::Unreachable: break;
  }
  throw Error(ErrorCode::Unsupported, "PE " + std::to_string(myPe_) + ": " + api + ": no transport reaches PE " +
                                          std::to_string(ref.pe) + ", which runs on another node");
}

Transport& Router::transportFor(const RemoteRef& ref, const void* local, const char* api) {
  Transport& t = route(ref, local, false, api);
  if (&t == gpuPaths_.peer.get() || &t == gpuPaths_.staged.get()) {
    // The GPU transports' calls need this PE's context, and report a stream-ordered failure first.
    gpuBackend_->makeCurrent();
    gpuBackend_->throwStreamError();
  }
  return t;
}

Transport& Router::streamTransportFor(const RemoteRef& ref, const char* api) {
  gpuBackend_->makeCurrent();
  gpuBackend_->throwStreamError();
  return route(ref, nullptr, true, api);
}

std::string Router::pathTo(int pe, HeapKind kind) const {
  if (pe == myPe_) return "self";
  if (!nodeLocal_[pe]) return net_ ? net_->pathTo(pe) : routeName(Route::Unreachable);
  if (kind == HeapKind::Gpu && gpuBackend_) return routeName(gpuBackend_->peerReachable(pe) ? Route::CudaIpc : Route::Staged);
  return routeName(Route::Shm);
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
