// Where the heaps are registered with UCX. Locally: one ucp_mem_map per growth of a heap (its
// memory type given), packed once. For each peer on another node: its registered ranges, their
// keys unpacked once, when its registration arrives (at set-up and with each allocation exchange
// that grew its heap), and kept until finalize.
#pragma once

#include <array>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <vector>

#include "memory/heap_space.hpp"
#include "transport/region_map.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace axon::ucx {

class UcxRegistry {
 public:
  explicit UcxRegistry(UcxWorker& worker) : worker_(worker), peers_(worker.setup().nPes) {}
  ~UcxRegistry();
  UcxRegistry(const UcxRegistry&) = delete;
  UcxRegistry& operator=(const UcxRegistry&) = delete;

  // Registers what `heap` has mapped beyond what is registered; returns the registration of every
  // range reaching past `from` (empty when none does).
  std::string registration(const HeapSpace& heap, std::size_t from);
  void accept(int pe, const std::string& registration, const std::string& origin);

  // Calls piece(rkey, remoteAddress, offsetInAccess, bytes) for each registered piece of
  // [offset, offset + bytes) of PE pe's heap `kind`. Throws naming `what` when part of it was never
  // registered there (a PE that did not publish its heap, or a registration lost).
  template <class Piece>
  void forEachPiece(int pe, HeapKind kind, std::uint64_t offset, std::uint64_t bytes, const char* what,
                    Piece&& piece) const {
    std::shared_lock lock(mutex_);
    const Remote& r = peers_[pe][index(kind)];
    const std::uint64_t missing = r.ranges.forEachPiece(offset, bytes, [&](std::size_t i, std::uint64_t off, std::uint64_t n) {
      if (!r.rkeys[i]) unregistered(pe, kind, off, what);  // its key failed to unpack
      piece(r.rkeys[i], r.base + off, off - offset, n);
    });
    if (missing != RegionMap::kCovered) unregistered(pe, kind, missing, what);
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
  static std::size_t index(HeapKind kind) { return kind == HeapKind::Gpu ? 1 : 0; }
  [[noreturn]] void unregistered(int pe, HeapKind kind, std::uint64_t offset, const char* what) const;

  UcxWorker& worker_;
  mutable std::shared_mutex mutex_;
  std::array<Local, 2> local_;
  std::vector<std::array<Remote, 2>> peers_;  // [pe][heap kind]
};

}  // namespace axon::ucx
