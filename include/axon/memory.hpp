// The symmetric heap: collective allocation; every allocation has the same offset on every PE.
#pragma once

#include <cstddef>

namespace axon {

// Collective over the world (and an implicit barrier, as in OpenSHMEM). Every PE must pass the same
// size; a mismatch throws CollectiveMismatch on every PE and allocates nothing. Returns nullptr
// for 0 bytes. Throws OutOfMemory (on every PE) past AXON_HEAP_MAX or when memory runs out.
void* malloc(std::size_t bytes);
void* alignedAlloc(std::size_t alignment, std::size_t bytes);
// As malloc, zero-filled on every PE before any PE returns.
void* calloc(std::size_t count, std::size_t elemBytes);
// Collective; every PE must free the same allocation. nullptr is allowed (on every PE).
void free(void* ptr);

// A pointer through which this process can load and store `addr` of PE `pe` (shared memory
// mapping), or nullptr when that PE is not reachable by load/store. Throws InvalidPe/OutOfBounds.
void* ptr(const void* addr, int pe);

// Is `addr` inside this PE's symmetric heap?
bool isSymmetric(const void* addr) noexcept;

// Statistics of the local heap, for tools and tests.
struct HeapStats {
  std::size_t mappedBytes;     // backed by memory now
  std::size_t capacityBytes;   // AXON_HEAP_MAX
  std::size_t inUseBytes;      // allocated by the user (rounded)
  std::size_t allocations;
};
HeapStats heapStats();

}  // namespace axon
