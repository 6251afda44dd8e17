// Where the heaps are registered with UCX. Locally: one ucp_mem_map per growth of a heap (its
// memory type given), packed once. For each peer on another node: its registered ranges, their
// keys unpacked once, when its registration arrives (at set-up and with each allocation exchange
// that grew its heap), and kept until finalize.
// Also the regions outside the heaps (NetworkTransport::exposeRegion): memory this registry
// allocates and registers as one range, numbered per PE from 1; peers keep their keys by
// (PE, number) until the region is forgotten.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "memory/heap_space.hpp"
#include "transport/region_map.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace axon::ucx {

class UcxRegistry {
 public:
  explicit UcxRegistry(UcxWorker& worker)
      : worker_(worker), peers_(worker.setup().nPes), peerRegions_(worker.setup().nPes) {}
  ~UcxRegistry();
  UcxRegistry(const UcxRegistry&) = delete;
  UcxRegistry& operator=(const UcxRegistry&) = delete;

  // Registers what `heap` has mapped beyond what is registered; returns the registration of every
  // range reaching past `from` (empty when none does).
  std::string registration(const HeapSpace& heap, std::size_t from);
  void accept(int pe, const std::string& registration, const std::string& origin);

  std::string exposeRegion(std::size_t bytes, std::uint32_t& id, void*& base);
  void withdrawRegion(std::uint32_t id);
  void forgetRegion(int pe, std::uint32_t id);

  // Throws as forEachPiece does when part of that range was never registered on PE pe: for an
  // operation that travels without keys (an active message), checked before it leaves.
  void checkRegistered(int pe, HeapKind kind, std::uint32_t region, std::uint64_t offset, std::uint64_t bytes,
                       const char* what) const {
    forEachPiece(pe, kind, region, offset, bytes, what, [](ucp_rkey_h, std::uint64_t, std::uint64_t, std::uint64_t) {});
  }

  // Calls use(address) with where [offset, offset + bytes) of this PE's own heap `kind` (or its
  // region `region`, when not 0) is, while that memory cannot be withdrawn; returns false (without
  // the call) when it is not all registered. For a peer's active message, inside the worker's
  // progress: it takes only localMutex_, which is never held across a UCX call.
  template <class Use>
  bool withLocal(HeapKind kind, std::uint32_t region, std::uint64_t offset, std::uint64_t bytes, Use&& use) const {
    std::lock_guard lock(localMutex_);
    Span span{};
    if (region) {
      auto it = localRegions_.find(region);
      if (it == localRegions_.end()) return false;
      span = it->second;
    } else {
      span = localHeaps_[index(kind)];
    }
    if (!span.base || offset > span.length || bytes > span.length - offset) return false;
    use(span.base + offset);
    return true;
  }

  // Calls piece(rkey, remoteAddress, offsetInAccess, bytes) for each registered piece of
  // [offset, offset + bytes) of PE pe's heap `kind` (or its region `region`, when not 0). Throws
  // naming `what` when part of it was never registered there (a PE that did not publish its heap,
  // or a registration lost).
  template <class Piece>
  void forEachPiece(int pe, HeapKind kind, std::uint32_t region, std::uint64_t offset, std::uint64_t bytes,
                    const char* what, Piece&& piece) const {
    std::shared_lock lock(mutex_);
    const Remote* r = remoteOf(pe, kind, region);
    if (!r) unregistered(pe, kind, region, offset, what);
    const std::uint64_t missing = r->ranges.forEachPiece(offset, bytes, [&](std::size_t i, std::uint64_t off, std::uint64_t n) {
      if (!r->rkeys[i]) unregistered(pe, kind, region, off, what);  // its key failed to unpack
      piece(r->rkeys[i], r->base + off, off - offset, n);
    });
    if (missing != RegionMap::kCovered) unregistered(pe, kind, region, missing, what);
  }

 private:
  struct Local {
    RegionMap ranges;
    std::vector<ucp_mem_h> memh;
    std::vector<std::string> packed;
  };
  struct Remote {
    RegionMap ranges;
    std::vector<ucp_rkey_h> rkeys;  // by range index
    std::uint64_t base = 0;         // address of heap offset 0 in that PE
  };
  struct LocalRegion {
    void* base;
    std::size_t length;
    ucp_mem_h memh;
  };
  static std::size_t index(HeapKind kind) { return kind == HeapKind::Gpu ? 1 : 0; }
  const Remote* remoteOf(int pe, HeapKind kind, std::uint32_t region) const {
    if (!region) return &peers_[pe][index(kind)];
    auto it = peerRegions_[pe].find(region);
    return it == peerRegions_[pe].end() ? nullptr : &it->second;
  }
  // Registers [address, address + length) of memory type `type`; returns its handle and packed key.
  std::pair<ucp_mem_h, std::string> mapAndPack(void* address, std::size_t length, ucs_memory_type_t type,
                                               const std::string& where);
  void destroyKeys(Remote& remote);
  [[noreturn]] void unregistered(int pe, HeapKind kind, std::uint32_t region, std::uint64_t offset,
                                 const char* what) const;

  UcxWorker& worker_;
  mutable std::shared_mutex mutex_;
  std::array<Local, 2> local_;
  std::vector<std::array<Remote, 2>> peers_;  // [pe][heap kind]
  std::map<std::uint32_t, LocalRegion> regions_;
  std::uint32_t nextRegion_ = 1;
  std::vector<std::map<std::uint32_t, Remote>> peerRegions_;  // [pe][region number]

  // What peers' active messages may touch: a copy of the local layout under its own lock, because
  // mutex_ is held across UCX calls (which take UCX's worker lock) and a handler runs with UCX's
  // worker lock held: one lock order, worker lock before localMutex_.
  struct Span {
    char* base;
    std::uint64_t length;  // registered from offset 0
  };
  mutable std::mutex localMutex_;
  std::array<Span, 2> localHeaps_{};
  std::map<std::uint32_t, Span> localRegions_;
};

}  // namespace axon::ucx
