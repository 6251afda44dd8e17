// Plain device allocations (cudaMalloc, cuMemAlloc) shared with node-local peers by CUDA IPC, for
// two-sided messages that move once, straight from the send buffer (p2p/local_channel.cpp).
//
// The exporter describes the allocation holding a buffer (its IPC handle, base and the driver's
// unique buffer id); the importer opens it once and keeps the mapping, keyed by (PE, buffer id).
// Buffer ids are never reused, so a buffer freed and allocated again at the same address is a new
// entry; its old mapping (same PE and base) is closed then. At most kMaxOpen mappings stay open;
// the least recently used goes first. Mappings that cannot be closed are reported once per peer,
// and not at all when the driver has already shut down (gpu/close_failures.hpp).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "gpu/driver.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon::gpu {

class CloseFailures;

class IpcBuffers {
 public:
  static constexpr std::size_t kMaxOpen = 128;

  IpcBuffers(const DriverApi& cu, int myPe) : cu_(cu), myPe_(myPe) {}
  ~IpcBuffers();  // closes every mapping (the context must be current)
  IpcBuffers(const IpcBuffers&) = delete;
  IpcBuffers& operator=(const IpcBuffers&) = delete;

  // False for memory legacy IPC cannot share (VMM mappings, pool memory, host memory).
  bool describe(const void* p, IpcBuffer& out) const;
  // This process's view of the base of PE `pe`'s allocation `b`, or nullptr where CUDA will not
  // map it here (the caller moves the data another way).
  void* open(int pe, const IpcBuffer& b);

 private:
  struct Entry {
    int pe;
    std::uint64_t bufferId;
    std::uint64_t base;
    CUdeviceptr mapped;
    std::uint64_t lastUse;
  };
  // Closes one mapping; a failure is gathered into `failures`, reported once per peer.
  void close(const Entry& e, CloseFailures& failures);

  const DriverApi& cu_;
  int myPe_;
  std::mutex mutex_;
  std::vector<Entry> open_;
  std::uint64_t uses_ = 0;
};

}  // namespace axon::gpu
