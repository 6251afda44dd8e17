// The GPU heap: this PE's symmetric heap in device memory, and the heaps of its node-local peers
// mapped for load/store by this PE's GPU.
//
// Memory comes from the CUDA virtual memory API in chunks that are exported as POSIX file
// descriptors and passed to the peers over a Unix socket (FdChannel). One address reservation
// holds every node-local PE's heap, one slot each (heap_slots.hpp), `capacity` bytes apart
// (device::Context relies on that); PEs on other nodes take no address space. The reservation is
// address space only; memory is created chunk by chunk as allocations need it.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "core/fd_channel.hpp"
#include "gpu/driver.hpp"
#include "gpu/heap_slots.hpp"
#include "memory/heap_space.hpp"

namespace axon::gpu {

// How the heap reaches its peers during growth.
struct HeapPeers {
  std::vector<std::string> channelAddress;  // [pe] FdChannel address; empty for PEs on other nodes
  std::vector<bool> tryMap;                 // [pe] attempt to map its heap (false: AXON_P2P=0, ...)
  double timeoutSec = 300;
  std::function<int()> findDeadPe;          // a dead node-local PE, or -1
};

class GpuHeap final : public HeapSpace {
 public:
  // nodeLocal[pe]: PE pe shares this node (it gets a slot of the reservation).
  GpuHeap(const DriverApi& cu, CUdevice device, int myPe, const std::vector<bool>& nodeLocal,
          std::size_t capacity, std::size_t chunk);
  // Where the peers' channels are; called once, after the addresses were exchanged.
  void connect(HeapPeers peers) { peers_ = std::move(peers); }
  ~GpuHeap() override;

  HeapKind kind() const override { return HeapKind::Gpu; }
  char* base() const override { return peerBase(myPe_); }
  std::size_t capacity() const override { return capacity_; }
  std::size_t mapped() const override { return mappedOwn_; }
  void* peerAddress(int pe, std::size_t offset) const override {
    return reachable_[pe] ? peerBase(pe) + offset : nullptr;
  }
  std::size_t growLocal(std::size_t end) override;
  void mapPeers(const std::vector<std::size_t>& peerMapped, const std::function<void()>& checkPeers = {}) override;

  // Whether PE pe's heap is mapped for load/store here (its first chunk could be mapped).
  bool reachable(int pe) const { return reachable_[pe]; }
  // Bytes of PE pe's heap mapped here, from offset 0 (this PE's own: mapped()).
  std::size_t mappedOf(int pe) const override {
    return pe == myPe_ ? mappedOwn_ : reachable_[pe] ? peerMapped_[pe] : 0;
  }
  // Why a PE is not reachable, for messages.
  const std::string& unreachableReason(int pe) const { return whyUnreachable_[pe]; }
  std::size_t granularity() const { return granularity_; }
  const HeapSlots& slots() const { return slots_; }

 private:
  struct Chunk {
    CUmemGenericAllocationHandle handle;
    std::size_t offset;
    std::size_t size;
  };
  char* peerBase(int pe) const {
    return reinterpret_cast<char*>(reservation_) + static_cast<std::size_t>(slots_.slotOf(pe)) * capacity_;
  }
  void sendNewChunks(const std::function<void()>& checkPeers);
  // Maps one chunk of a peer; false (and the peer marked unreachable) if the first chunk fails.
  void mapPeerChunk(int pe, std::size_t offset, std::size_t size, int fd);
  void release() noexcept;

  const DriverApi& cu_;
  CUdevice device_;
  int myPe_;
  int nPes_;
  std::size_t capacity_;
  std::size_t chunk_;
  std::size_t granularity_ = 0;
  CUmemAllocationProp prop_{};
  HeapSlots slots_;
  CUdeviceptr reservation_ = 0;
  std::size_t mappedOwn_ = 0;
  std::vector<Chunk> own_;
  std::vector<std::vector<Chunk>> peerChunks_;  // [pe]
  std::vector<std::size_t> peerMapped_;         // [pe] bytes received (mapped or not)
  std::vector<std::size_t> sentUpTo_;           // [pe] bytes of own heap whose handles went to pe
  std::vector<bool> reachable_;
  std::vector<std::string> whyUnreachable_;
  HeapPeers peers_;
  FdChannel channel_;
  std::deque<FdChannel::Message> inbox_;  // received while our own sends waited for room

 public:
  const FdChannel& channel() const { return channel_; }
};

// Rounds up to a multiple of `g` (a power of two or any positive number).
inline std::size_t roundUp(std::size_t v, std::size_t g) { return (v + g - 1) / g * g; }

}  // namespace axon::gpu
