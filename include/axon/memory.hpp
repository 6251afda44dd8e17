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
// Collective, on the host heap whatever the backend: symmetric host memory, pinned for the GPU
// (page-locked and mapped, so copy engines and kernels reach it) when the GPU backend is on.
void* mallocHost(std::size_t bytes);
// Collective; every PE must free the same allocation (from either heap). nullptr is allowed.
void free(void* ptr);

// A pointer through which this process (host heap) or its GPU (GPU heap) can load and store
// `addr` of PE `pe`, or nullptr when that PE is not reachable by load/store. Throws
// InvalidPe/OutOfBounds.
void* ptr(const void* addr, int pe);

// Is `addr` inside one of this PE's symmetric heaps?
bool isSymmetric(const void* addr) noexcept;

// Statistics of the heap malloc allocates on (the GPU heap when the GPU backend is on), and of
// the host heap, for tools and tests.
struct HeapStats {
  std::size_t mappedBytes;     // backed by memory now
  std::size_t capacityBytes;   // AXON_HEAP_MAX or AXON_GPU_HEAP_MAX
  std::size_t inUseBytes;      // allocated by the user (rounded)
  std::size_t allocations;
};
HeapStats heapStats();
HeapStats hostHeapStats();

}  // namespace axon
