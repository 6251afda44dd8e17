// The symmetric heap: collective allocation; every allocation has the same offset on every PE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace axon {

// A PE's symmetric heaps: the host heap (every backend) and the GPU heap (the GPU backend).
enum class HeapKind : std::uint8_t { Host = 0, Gpu = 1 };

// The host heap's granule: every allocation there is aligned to it, and alignedAlloc promises no
// more on the host heap.
constexpr std::size_t kHostHeapGranule = 64;

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
// Which of this PE's heaps holds `addr`, if either.
std::optional<HeapKind> heapKindOf(const void* addr);

// Sets `bytes` bytes of this PE's symmetric memory at `addr` (either heap) to `value` (0..255);
// returns when done (the GPU fills GPU heap memory, which the host cannot store to). Throws
// OutOfBounds unless the range lies in one live allocation, InvalidArgument for a value that is
// not a byte.
void memsetSymmetric(void* addr, int value, std::size_t bytes);

// Shared ownership of this process's mappings of heap `kind`, for language bindings whose arrays
// may outlive finalize(): the memory stays mapped (and private to this process) until the last
// owner lets go. Throws Unsupported for the GPU heap when the GPU backend is off.
std::shared_ptr<const void> heapMappings(HeapKind kind);

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
