#include "memory/symmetric_heap.hpp"

#include <unistd.h>


namespace axon {

SymmetricHeap::SymmetricHeap(int myPe, int nPes, std::size_t capacity, std::size_t chunk)
    : HeapSpace(capacity), myPe_(myPe), capacity_(capacity), chunk_(chunk), segments_(nPes) {
  segments_[myPe_].emplace(ShmSegment::create(freshShmName(myPe), capacity));
}

void SymmetricHeap::attachPeer(int pe, const std::string& name) {
  segments_[pe].emplace(ShmSegment::open(name, capacity_));
}

std::size_t SymmetricHeap::growLocal(std::size_t end) {
  std::size_t target = (end + chunk_ - 1) / chunk_ * chunk_;
  if (target > capacity_) target = capacity_;
  if (end > target) target = end;  // ShmSegment reports the cap overflow with the numbers
  segments_[myPe_]->growTo(target);
  return segments_[myPe_]->mapped();
}

void SymmetricHeap::mapPeers(const std::vector<std::size_t>& peerMapped, const std::function<void()>&) {
  for (std::size_t pe = 0; pe < peerMapped.size(); ++pe) mapPeer(static_cast<int>(pe), peerMapped[pe]);
}

void SymmetricHeap::mapPeer(int pe, std::size_t bytes) {
  if (pe != myPe_ && segments_[pe]) segments_[pe]->growTo(bytes);
}

}  // namespace axon
