// One symmetric heap as the runtime sees it: the host heap (shared memory) or the GPU heap
// (CUDA VMM). Both hand out offsets from a deterministic allocator, so an allocation has the same
// offset on every PE, and both map the heaps of node-local peers into this process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "axon/memory.hpp"
#include "memory/symmetric_allocator.hpp"

namespace axon {

inline const char* heapKindName(HeapKind k) { return k == HeapKind::Gpu ? "GPU heap" : "host heap"; }

class HeapSpace {
 public:
  explicit HeapSpace(std::size_t capacity) : allocator_(capacity) {}
  virtual ~HeapSpace() = default;
  HeapSpace(const HeapSpace&) = delete;
  HeapSpace& operator=(const HeapSpace&) = delete;

  virtual HeapKind kind() const = 0;
  virtual char* base() const = 0;          // this PE's heap in this process
  virtual std::size_t capacity() const = 0;
  virtual std::size_t mapped() const = 0;  // bytes of this PE's heap backed by memory
  // Where this process sees `offset` of PE `pe`, or nullptr when that heap is not mapped here.
  virtual void* peerAddress(int pe, std::size_t offset) const = 0;
  // Bytes of PE `pe`'s heap mapped here from offset 0 (0: not mapped here).
  virtual std::size_t mappedOf(int pe) const = 0;
  // Where this process sees [offset, offset + bytes) of PE `pe`'s heap, or nullptr unless all of
  // it is mapped here: an offset another process wrote (a node peer's offered receive or send) is
  // followed only into memory this process has mapped, whatever its value.
  void* peerRange(int pe, std::size_t offset, std::size_t bytes) const {
    const std::size_t have = mappedOf(pe);
    if (offset > have || bytes > have - offset) return nullptr;
    return peerAddress(pe, offset);
  }
  // Grows this PE's heap to cover [0, end); returns the new mapped size. Throws OutOfMemory.
  virtual std::size_t growLocal(std::size_t end) = 0;
  // After an allocation's exchange, with every PE's mapped size: maps what the peers have grown.
  // Every PE calls it at the same point (the GPU heap passes memory handles here).
  // `checkPeers` runs at each check while it waits for peers, and may throw to end the wait (a
  // peer posted that its part failed: bootstrap/setup_step.hpp).
  virtual void mapPeers(const std::vector<std::size_t>& peerMapped, const std::function<void()>& checkPeers = {}) = 0;

  bool contains(const void* p) const {
    auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(base());
    return a >= b && a - b < capacity();
  }
  std::size_t offsetOf(const void* p) const {
    return static_cast<std::size_t>(static_cast<const char*>(p) - base());
  }

  SymmetricAllocator& allocator() { return allocator_; }
  const SymmetricAllocator& allocator() const { return allocator_; }

  // Every PE's mapped size as the last allocation exchange reported it: the same on every PE, so
  // every PE decides alike whether there is growth to map (runtime/memory_api.cpp).
  std::vector<std::size_t>& exchangedMapped() { return exchangedMapped_; }

 private:
  SymmetricAllocator allocator_;
  std::vector<std::size_t> exchangedMapped_;
};

}  // namespace axon
