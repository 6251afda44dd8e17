// The symmetric heap of this PE and the mappings of the heaps of its node-local peers.
// Offsets come from the allocator; growth is driven collectively by memory.cpp.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "memory/shm_segment.hpp"
#include "memory/symmetric_allocator.hpp"

namespace axon {

class SymmetricHeap {
 public:
  // Creates this PE's segment under a fresh name, with `capacity` bytes of address space.
  SymmetricHeap(int myPe, int nPes, std::size_t capacity, std::size_t chunk);

  const std::string& localName() const { return segments_[myPe_]->name(); }
  // Maps a node-local peer's segment (opened by name while the name exists).
  void attachPeer(int pe, const std::string& name);
  void unlinkLocalName() { segments_[myPe_]->unlinkName(); }

  char* base() const { return segments_[myPe_]->base(); }
  std::size_t mapped() const { return segments_[myPe_]->mapped(); }
  std::size_t capacity() const { return capacity_; }
  bool contains(const void* p) const {
    auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(base());
    return a >= b && a - b < capacity_;
  }
  std::size_t offsetOf(const void* p) const {
    return static_cast<std::size_t>(static_cast<const char*>(p) - base());
  }
  bool mapsPe(int pe) const { return segments_[pe].has_value(); }
  // Where this process sees `offset` of PE `pe`, or nullptr when that heap is not mapped here.
  void* peerAddress(int pe, std::size_t offset) const {
    return segments_[pe] ? segments_[pe]->base() + offset : nullptr;
  }
  std::size_t peerMapped(int pe) const { return segments_[pe] ? segments_[pe]->mapped() : 0; }

  // Grows this PE's segment to cover [0, end), rounded up to the chunk; returns the new size.
  std::size_t growLocal(std::size_t end);
  // Maps [0, bytes) of a peer that has grown its segment that far.
  void mapPeer(int pe, std::size_t bytes);

  SymmetricAllocator& allocator() { return allocator_; }
  const SymmetricAllocator& allocator() const { return allocator_; }

 private:
  int myPe_;
  std::size_t capacity_;
  std::size_t chunk_;
  std::vector<std::optional<ShmSegment>> segments_;  // [pe]: mapped heaps (own + local peers)
  SymmetricAllocator allocator_;
};

}  // namespace axon
