// The host ranges this process has registered with the CUDA driver (cuMemHostRegister), and the
// split of a copy at their edges.
//
// Why: the host heap grows chunk by chunk, and each growth is registered on its own. The driver
// rejects one cuMemcpy whose host side starts in one registration and runs past its end
// (CUDA_ERROR_INVALID_VALUE), so a buffer that straddles two growths must be copied piece by piece.
// Registrations are per process, hence one registry per process. Plain C++: tested on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>

namespace axon::gpu {

class PinnedRanges {
 public:
  void add(const void* start, std::size_t bytes) {
    if (bytes == 0) return;
    std::lock_guard lock(mu_);
    ranges_[address(start)] = address(start) + bytes;
  }

  void remove(const void* start) {
    std::lock_guard lock(mu_);
    ranges_.erase(address(start));
  }

  // How many bytes from `p` (at most `bytes`) one copy may cover: up to the first edge of a
  // registered range inside [p, p + bytes).
  std::size_t pieceBytes(const void* p, std::size_t bytes) const {
    const std::uintptr_t a = address(p), end = a + bytes;
    std::lock_guard lock(mu_);
    auto next = ranges_.upper_bound(a);  // first range starting after a
    std::uintptr_t edge = end;
    if (next != ranges_.begin()) {
      auto inside = std::prev(next);  // the range starting at or before a
      if (a < inside->second && inside->second < edge) edge = inside->second;
    }
    if (next != ranges_.end() && next->first < edge) edge = next->first;
    return edge - a;
  }

  // Calls copy(dst, src, n) for consecutive pieces of [0, bytes), none crossing an edge on
  // either side.
  template <class Copy>
  void forEachPiece(void* dst, const void* src, std::size_t bytes, Copy&& copy) const {
    auto* d = static_cast<char*>(dst);
    auto* s = static_cast<const char*>(src);
    while (bytes > 0) {
      std::size_t n = pieceBytes(d, bytes);
      const std::size_t m = pieceBytes(s, n);
      n = m < n ? m : n;
      copy(static_cast<void*>(d), static_cast<const void*>(s), n);
      d += n;
      s += n;
      bytes -= n;
    }
  }

 private:
  static std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

  mutable std::mutex mu_;
  std::map<std::uintptr_t, std::uintptr_t> ranges_;  // start -> end, disjoint
};

// The registry of this process (registrations are per process). Never destroyed: a runtime torn
// down during static destruction (after a device trap, at exit) still unregisters through it.
inline PinnedRanges& processPinnedRanges() {
  static auto* ranges = new PinnedRanges;
  return *ranges;
}

}  // namespace axon::gpu
