// The host heap: this PE's symmetric heap in POSIX shared memory, and the mappings of the heaps
// of its node-local peers. Growth is driven collectively by memory_api.cpp.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "memory/heap_space.hpp"
#include "memory/shm_segment.hpp"

namespace axon {

class SymmetricHeap final : public HeapSpace {
 public:
  // Creates this PE's segment under a fresh name, with `capacity` bytes of address space.
  SymmetricHeap(int myPe, int nPes, std::size_t capacity, std::size_t chunk);

  const std::string& localName() const { return segments_[myPe_]->name(); }
  // Maps a node-local peer's segment (opened by name while the name exists).
  void attachPeer(int pe, const std::string& name);
  void unlinkLocalName() { segments_[myPe_]->unlinkName(); }

  HeapKind kind() const override { return HeapKind::Host; }
  char* base() const override { return segments_[myPe_]->base(); }
  std::size_t mapped() const override { return segments_[myPe_]->mapped(); }
  std::size_t capacity() const override { return capacity_; }
  void* peerAddress(int pe, std::size_t offset) const override {
    return segments_[pe] ? segments_[pe]->base() + offset : nullptr;
  }
  std::size_t mappedOf(int pe) const override { return segments_[pe] ? segments_[pe]->mapped() : 0; }

  std::size_t growLocal(std::size_t end) override;
  void mapPeers(const std::vector<std::size_t>& peerMapped, const std::function<void()>& checkPeers = {}) override;
  // Maps [0, bytes) of a peer that has grown its segment that far.
  void mapPeer(int pe, std::size_t bytes);

 private:
  int myPe_;
  std::size_t capacity_;
  std::size_t chunk_;
  std::vector<std::optional<ShmSegment>> segments_;  // [pe]: mapped heaps (own + local peers)
};

}  // namespace axon
