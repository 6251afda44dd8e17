// Offsets inside the symmetric heap. Every PE runs the same sequence of allocate/release calls
// on its own instance, so every allocation gets the same offset on every PE. Pure arithmetic:
// unit-tested on the host.
#pragma once

#include <cstddef>
#include <map>
#include <optional>

#include "axon/memory.hpp"

namespace axon {

class SymmetricAllocator {
 public:
  // Allocations are rounded up to this so that two allocations never share a cache line.
  static constexpr std::size_t kGranule = kHostHeapGranule;

  explicit SymmetricAllocator(std::size_t capacity);

  struct Block {
    std::size_t offset;
    std::size_t size;  // as asked for, before rounding
    std::size_t end() const { return offset + size; }
  };

  // First fit at `alignment` (a power of two, at least kGranule is used). nullopt when no free
  // range of the capacity fits; throws InvalidArgument on a bad alignment.
  std::optional<std::size_t> allocate(std::size_t bytes, std::size_t alignment = kGranule);
  // Throws InvalidArgument when `offset` is not the start of a live allocation.
  void release(std::size_t offset);
  // The live allocation that contains `offset`, if any.
  std::optional<Block> find(std::size_t offset) const;
  // End of the highest live allocation (the heap must be mapped at least this far).
  std::size_t top() const;
  std::size_t bytesInUse() const { return inUse_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t liveAllocations() const { return used_.size(); }

 private:
  std::size_t capacity_;
  std::size_t inUse_ = 0;
  std::map<std::size_t, std::size_t> free_;  // offset -> length (rounded)
  struct Used {
    std::size_t asked;
    std::size_t rounded;
  };
  std::map<std::size_t, Used> used_;  // offset -> sizes
};

}  // namespace axon
