// axon::malloc / free: collective allocation on the symmetric heap.
//
// Every PE computes the allocation locally (the allocators run in lockstep), grows its own
// segment if needed, then all PEs exchange what they asked for and what happened. That one
// exchange is the barrier OpenSHMEM requires, detects mismatched calls and failures on every PE
// alike, and tells each PE how far to map its peers' segments.
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "axon/error.hpp"
#include "axon/memory.hpp"
#include "axon/onesided.hpp"
#include "axon/runtime.hpp"
#include "bootstrap/blob.hpp"
#include "bootstrap/setup_step.hpp"
#include "runtime/runtime.hpp"
#include "memory/peer_growth.hpp"

namespace axon {
namespace {

enum class HeapOp : std::uint8_t { Malloc = 1, Free = 2 };

// What each PE contributes to the exchange, compared field by field.
struct HeapCall {
  HeapOp op;
  HeapKind heap;
  std::uint64_t bytes;      // malloc: size asked; free: heap offset freed (or max for nullptr)
  std::uint64_t alignment;
  std::uint64_t offset;     // malloc: offset chosen
  std::uint64_t mapped;     // this PE's segment size after the call
  // Where the network transport reaches what this PE's heap grew since the last exchange (for
  // PEs on other nodes); empty when nothing grew or the job runs on one node.
  std::string registration;

  std::string encode() const {
    wire::BlobWriter w(wire::BlobKind::HeapCall);
    w.u8(static_cast<std::uint8_t>(op)).u8(static_cast<std::uint8_t>(heap)).u64(bytes).u64(alignment).u64(offset).u64(mapped);
    w.str(registration);
    return w.take();
  }
  static HeapCall decode(const std::string& blob, const std::string& origin) {
    return wire::decodeBlob(blob, wire::BlobKind::HeapCall, origin, [](wire::ByteReader& in) {
      HeapCall c{};
      const std::uint8_t op = in.u8(), heap = in.u8();
      if (op != 1 && op != 2) throw wire::Malformed("a heap call of type " + std::to_string(op));
      if (heap > 1) throw wire::Malformed("a heap of kind " + std::to_string(heap));
      c.op = static_cast<HeapOp>(op);
      c.heap = static_cast<HeapKind>(heap);
      c.bytes = in.u64();
      c.alignment = in.u64();
      c.offset = in.u64();
      c.mapped = in.u64();
      c.registration = in.str();
      return c;
    });
  }
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

// Exchanges `mine` with every PE (a failure this PE met travels instead, in `step`); throws the
// same error on every PE when one failed or the calls differ. Returns everyone's call.
std::vector<HeapCall> exchange(Runtime& rt, SetupStep& step, const HeapCall& mine) {
  auto all = step.finish(mine.encode());
  std::vector<HeapCall> calls;
  calls.reserve(all.size());
  for (std::size_t pe = 0; pe < all.size(); ++pe) calls.push_back(HeapCall::decode(all[pe], step.originOf(pe)));
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

// Every PE maps what the others grew, in a second step (a failure there rolls the allocation back
// on every PE). Most calls grow nothing: they skip the step, all PEs alike, since all see the
// same sizes.
void mapGrowth(Runtime& rt, HeapSpace& heap, const std::vector<HeapCall>& calls, const std::string& call) {
  std::vector<std::size_t> peerMapped(calls.size());
  for (std::size_t pe = 0; pe < calls.size(); ++pe) peerMapped[pe] = calls[pe].mapped;
  if (peerMapped == heap.exchangedMapped()) return;
  std::vector<std::string> registrations(calls.size());
  for (std::size_t pe = 0; pe < calls.size(); ++pe) registrations[pe] = calls[pe].registration;
  // The peers' registrations travel in the exchange; a key that cannot be unpacked fails this
  // step on every PE, as a mapping that fails does.
  mapPeerGrowth(rt.bootstrap(), heap, peerMapped, "heap-map", call + " (mapping the PEs' new memory)",
                [&] { rt.router().acceptRegistrations(registrations, [&](int pe) {
                        return "PE " + std::to_string(pe) + "'s registration of " + call; }); });
  if (heap.kind() == HeapKind::Host) rt.pinHostHeap();  // a failure to pin only warns
  // Only after every PE mapped it: a failed step leaves the next call to try again.
  heap.exchangedMapped() = peerMapped;
}

void* allocate(std::size_t bytes, std::size_t alignment, HeapKind kind, const char* api) {
  Runtime& rt = runtime(api);
  HeapSpace& heap = rt.heapOf(kind);
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    // Still join the exchange so that the other PEs do not wait for this one.
    alignment = 0;
  }
  HeapCall mine{HeapOp::Malloc, heap.kind(), bytes, alignment, 0, 0, {}};
  SetupStep step(rt.bootstrap(), "heap", rt.bootstrap().worldRanks(), describeCall(mine));
  std::optional<std::size_t> offset;
  if (alignment == 0) {
    step.fail(ErrorCode::InvalidArgument, "PE " + std::to_string(rt.myPe()) + ": " + api + ": the alignment is not a power of two");
  } else if (bytes > 0) {
    offset = heap.allocator().allocate(bytes, alignment);
    if (!offset) {
      step.fail(ErrorCode::OutOfMemory,
                "PE " + std::to_string(rt.myPe()) + ": " + std::to_string(bytes) + " bytes do not fit in the symmetric " +
                    heapKindName(heap.kind()) + " (cap " + std::to_string(heap.capacity()) + " bytes, " +
                    (heap.kind() == HeapKind::Gpu ? "AXON_GPU_HEAP_MAX; " : "AXON_HEAP_MAX; ") +
                    std::to_string(heap.allocator().bytesInUse()) + " in use)");
    } else {
      try {
        heap.growLocal(*offset + bytes);
      } catch (const Error& e) {
        step.fail(e);
      }
    }
  }
  mine.offset = offset.value_or(0);
  mine.mapped = heap.mapped();
  if (!step.failed() && rt.spansNodes()) {
    // What grew since the last exchange every PE agreed on (all of it, the first time).
    const auto& agreed = heap.exchangedMapped();
    const std::size_t from = agreed.empty() ? 0 : agreed[rt.myPe()];
    try {
      if (mine.mapped > from) mine.registration = rt.router().registration(heap, from);
    } catch (const Error& e) {
      step.fail(e);
    }
  }
  // From here every PE either keeps the block or gives it back, all alike, so that the allocators
  // stay in lockstep and a later free still matches.
  try {
    auto calls = exchange(rt, step, mine);
    if (bytes == 0) return nullptr;
    for (int pe = 0; pe < rt.nPes(); ++pe) {
      // Every PE sees every offset, so every PE finds a divergence alike.
      if (calls[pe].offset != calls[0].offset) {
        throw Error(ErrorCode::Internal, "PE " + std::to_string(rt.myPe()) + ": symmetric allocators diverged in " +
                                             describeCall(mine) + ": PE 0 chose offset " + std::to_string(calls[0].offset) +
                                             ", PE " + std::to_string(pe) + " " + std::to_string(calls[pe].offset));
      }
    }
    mapGrowth(rt, heap, calls, describeCall(mine));
  } catch (...) {
    if (offset) heap.allocator().release(*offset);
    throw;
  }
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
  HeapCall mine{HeapOp::Free, heap ? heap->kind() : rt.defaultHeap().kind(),
                std::numeric_limits<std::uint64_t>::max(), 0, 0, heap ? heap->mapped() : 0, {}};
  SetupStep step(rt.bootstrap(), "heap", rt.bootstrap().worldRanks(), "free");
  if (ptr) {
    if (!heap) {
      step.fail(ErrorCode::InvalidArgument, "PE " + std::to_string(rt.myPe()) + ": free: " + rt.describe(ptr) + " is not in the symmetric heap");
    } else {
      mine.bytes = heap->offsetOf(ptr);
      auto block = heap->allocator().find(mine.bytes);
      if (!block || block->offset != mine.bytes || mine.bytes == 0) {
        step.fail(ErrorCode::InvalidArgument, "PE " + std::to_string(rt.myPe()) + ": free: " + rt.describe(ptr) + " is not the start of a live allocation");
      }
    }
  }
  exchange(rt, step, mine);
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

std::optional<HeapKind> heapKindOf(const void* addr) {
  const HeapSpace* heap = runtime("heap_kind_of").heapContaining(addr);
  if (!heap) return std::nullopt;
  return heap->kind();
}

void memsetSymmetric(void* addr, int value, std::size_t bytes) {
  Runtime& rt = runtime("memset_symmetric");
  if (value < 0 || value > 255) {
    throw Error(ErrorCode::InvalidArgument,
                "axon: memset_symmetric: value " + std::to_string(value) + " is not a byte (0..255)");
  }
  if (bytes == 0) return;
  const RemoteRef ref = rt.resolve(addr, bytes, rt.myPe(), "memset_symmetric", "addr");
  if (ref.heap == HeapKind::Gpu) rt.gpu()->memsetLocal(addr, value, bytes);
  else std::memset(addr, value, bytes);
}

std::shared_ptr<const void> heapMappings(HeapKind kind) {
  Runtime& rt = runtime("heap_mappings");
  if (kind == HeapKind::Gpu && !rt.gpu()) {
    throw Error(ErrorCode::Unsupported, "PE " + std::to_string(rt.myPe()) +
                                            ": axon: heap_mappings: the GPU backend is off (" +
                                            rt.gpuUnavailableReason() + ")");
  }
  return rt.heapOwner(kind);
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
