// axon::malloc / free: collective allocation on the symmetric heap.
//
// Every PE computes the allocation locally (the allocators run in lockstep), grows its own
// segment if needed, then all PEs exchange what they asked for and what happened. That one
// exchange is the barrier OpenSHMEM requires, detects mismatched calls and failures on every PE
// alike, and tells each PE how far to map its peers' segments.
#include <cstring>
#include <limits>
#include <string>

#include "axon/error.hpp"
#include "axon/memory.hpp"
#include "axon/onesided.hpp"
#include "axon/runtime.hpp"
#include "core/runtime.hpp"

namespace axon {
namespace {

enum class HeapOp : std::uint32_t { Malloc = 1, Free = 2 };

// What each PE contributes to the exchange. Plain data, compared field by field.
struct HeapCall {
  HeapOp op;
  HeapKind heap;
  std::int32_t failed;        // 0, or the ErrorCode this PE failed with (message follows)
  std::uint64_t bytes;        // malloc: size asked; free: heap offset freed (or max for nullptr)
  std::uint64_t alignment;
  std::uint64_t offset;       // malloc: offset chosen
  std::uint64_t mapped;       // this PE's segment size after the call
};

std::string describeCall(const HeapCall& c) {
  const char* where = c.heap == HeapKind::Gpu ? "GPU heap" : "host heap";
  if (c.op == HeapOp::Malloc) {
    return std::string("malloc(") + std::to_string(c.bytes) + " bytes, alignment " +
           std::to_string(c.alignment) + ", " + where + ")";
  }
  if (c.bytes == std::numeric_limits<std::uint64_t>::max()) return "free(nullptr)";
  return std::string("free(") + where + " offset " + std::to_string(c.bytes) + ")";
}

// Exchanges `mine` (+ a failure message) with every PE; throws the same error on every PE when
// calls differ or one failed. Returns everyone's call.
std::vector<HeapCall> exchange(Runtime& rt, const HeapCall& mine, const std::string& failure) {
  std::string blob(reinterpret_cast<const char*>(&mine), sizeof(mine));
  blob += failure;
  auto all = rt.bootstrap().allgatherWorld("heap", blob);
  std::vector<HeapCall> calls(all.size());
  for (std::size_t pe = 0; pe < all.size(); ++pe) std::memcpy(&calls[pe], all[pe].data(), sizeof(HeapCall));
  for (std::size_t pe = 0; pe < calls.size(); ++pe) {
    if (calls[pe].failed) {
      throw Error(static_cast<ErrorCode>(calls[pe].failed), "PE " + std::to_string(rt.myPe()) + ": " + describeCall(mine) +
                            " failed on PE " + std::to_string(pe) + ": " + all[pe].substr(sizeof(HeapCall)));
    }
  }
  for (std::size_t pe = 0; pe < calls.size(); ++pe) {
    const auto& c = calls[pe];
    if (c.op != mine.op || c.heap != mine.heap || c.bytes != mine.bytes || c.alignment != mine.alignment) {
      throw Error(ErrorCode::CollectiveMismatch,
                  "PE " + std::to_string(rt.myPe()) + ": collective heap call mismatch: this PE called " +
                      describeCall(mine) + " but PE " + std::to_string(pe) + " called " +
                      describeCall(c) + " (every PE must make the same allocation calls in the same order)");
    }
  }
  return calls;
}

void* allocate(std::size_t bytes, std::size_t alignment, HeapKind kind, const char* api) {
  Runtime& rt = runtime(api);
  HeapSpace& heap = rt.heapOf(kind);
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    // Still join the exchange so that the other PEs do not wait for this one.
    alignment = 0;
  }
  HeapCall mine{HeapOp::Malloc, heap.kind(), 0, bytes, alignment, 0, 0};
  std::string failure;
  ErrorCode code = ErrorCode::OutOfMemory;
  std::optional<std::size_t> offset;
  if (alignment == 0) {
    failure = "the alignment is not a power of two";
    code = ErrorCode::InvalidArgument;
  } else if (bytes > 0) {
    offset = heap.allocator().allocate(bytes, alignment);
    if (!offset) {
      failure = std::to_string(bytes) + " bytes do not fit in the symmetric " + heapKindName(heap.kind()) +
                " (cap " + std::to_string(heap.capacity()) + " bytes, " +
                (heap.kind() == HeapKind::Gpu ? "AXON_GPU_HEAP_MAX; " : "AXON_HEAP_MAX; ") +
                std::to_string(heap.allocator().bytesInUse()) + " in use)";
    } else {
      try {
        heap.growLocal(*offset + bytes);
      } catch (const Error& e) {
        failure = e.what();
        code = e.code();
      }
    }
  }
  mine.failed = failure.empty() ? 0 : static_cast<std::int32_t>(code);
  mine.offset = offset.value_or(0);
  mine.mapped = heap.mapped();
  std::vector<HeapCall> calls;
  try {
    calls = exchange(rt, mine, failure);
  } catch (...) {
    if (offset) heap.allocator().release(*offset);
    throw;
  }
  if (bytes == 0) return nullptr;
  std::vector<std::size_t> peerMapped(rt.nPes());
  for (int pe = 0; pe < rt.nPes(); ++pe) {
    if (calls[pe].offset != *offset) {
      throw Error(ErrorCode::Internal, "symmetric allocators diverged: PE " + std::to_string(rt.myPe()) +
                                           " chose offset " + std::to_string(*offset) + ", PE " +
                                           std::to_string(pe) + " " + std::to_string(calls[pe].offset));
    }
    peerMapped[pe] = calls[pe].mapped;
  }
  heap.mapPeers(peerMapped);
  if (heap.kind() == HeapKind::Host) rt.pinHostHeap();
  return heap.base() + *offset;
}

HeapKind defaultKind(const char* api) { return runtime(api).defaultHeap().kind(); }

}  // namespace

void* malloc(std::size_t bytes) {
  return allocate(bytes, SymmetricAllocator::kGranule, defaultKind("malloc"), "malloc");
}

void* mallocHost(std::size_t bytes) {
  return allocate(bytes, SymmetricAllocator::kGranule, HeapKind::Host, "malloc_host");
}

void* alignedAlloc(std::size_t alignment, std::size_t bytes) {
  return allocate(bytes, alignment, defaultKind("aligned_alloc"), "aligned_alloc");
}

void* calloc(std::size_t count, std::size_t elemBytes) {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, elemBytes, &bytes)) {
    // Join the exchange with an impossible size so every PE fails alike.
    bytes = std::numeric_limits<std::size_t>::max();
  }
  Runtime& rt = runtime("calloc");
  void* p = allocate(bytes, SymmetricAllocator::kGranule, rt.defaultHeap().kind(), "calloc");
  if (p && rt.gpu()) rt.gpu()->memsetLocal(p, 0, bytes);
  else if (p) std::memset(p, 0, bytes);
  // No PE may write into a peer's block before that peer has zeroed it.
  syncAll();
  return p;
}

void free(void* ptr) {
  Runtime& rt = runtime("free");
  HeapSpace* heap = ptr ? rt.heapContaining(ptr) : nullptr;
  HeapCall mine{HeapOp::Free, heap ? heap->kind() : rt.defaultHeap().kind(), 0,
                std::numeric_limits<std::uint64_t>::max(), 0, 0, heap ? heap->mapped() : 0};
  std::string failure;
  if (ptr) {
    if (!heap) {
      failure = rt.describe(ptr) + " is not in the symmetric heap";
    } else {
      mine.bytes = heap->offsetOf(ptr);
      auto block = heap->allocator().find(mine.bytes);
      if (!block || block->offset != mine.bytes || mine.bytes == 0) {
        failure = rt.describe(ptr) + " is not the start of a live allocation";
      }
    }
  }
  mine.failed = failure.empty() ? 0 : static_cast<std::int32_t>(ErrorCode::InvalidArgument);
  exchange(rt, mine, failure);
  if (ptr) heap->allocator().release(mine.bytes);
}

void* ptr(const void* addr, int pe) {
  Runtime& rt = runtime("ptr");
  RemoteRef ref = rt.resolve(addr, 0, pe, "ptr", "addr");
  return ref.mapped;
}

bool isSymmetric(const void* addr) noexcept {
  return isInitialized() && runtime("is_symmetric").heapContaining(addr) != nullptr;
}

namespace {
HeapStats statsOf(const HeapSpace& heap) {
  return HeapStats{heap.mapped(), heap.capacity(), heap.allocator().bytesInUse(),
                   heap.allocator().liveAllocations()};
}
}  // namespace

HeapStats heapStats() { return statsOf(runtime("heap_stats").defaultHeap()); }
HeapStats hostHeapStats() { return statsOf(runtime("host_heap_stats").hostHeap()); }

}  // namespace axon
