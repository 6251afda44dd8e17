#include "transport/router.hpp"

#include "axon/error.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon {

Router::Router(int myPe, std::vector<bool> nodeLocal) : myPe_(myPe), nodeLocal_(nodeLocal), shm_(std::move(nodeLocal)) {}

Transport& Router::transportFor(const RemoteRef& ref, const void* local, const char* api) {
  const int pe = ref.pe;
  if (!nodeLocal_[pe]) {
    if (net_ && net_->reaches(pe)) return *net_;
    throw Error(ErrorCode::Unsupported, "PE " + std::to_string(myPe_) + ": " + api + ": no transport reaches PE " +
                                            std::to_string(pe) + ", which runs on another node");
  }
  if (gpu_ && (ref.heap == HeapKind::Gpu || (local && gpu_->isDeviceMemory(local)))) return gpu_->transportFor(ref);
  return shm_;
}

std::string Router::pathTo(int pe, HeapKind kind) const {
  if (pe == myPe_) return "self";
  if (!nodeLocal_[pe]) return net_ ? net_->pathTo(pe) : "none";
  if (kind == HeapKind::Gpu && gpu_) return gpu_->peerReachable(pe) ? "cuda_ipc" : "staged";
  return "shm";
}

void Router::fenceAll() {
  if (gpu_) gpu_->fence();
  shm_.fence();
  if (net_) net_->fence();
}

void Router::quietAll() {
  if (gpu_) gpu_->quiet();
  shm_.quiet();
  if (net_) net_->quiet();
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
