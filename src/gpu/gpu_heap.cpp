#include "gpu/gpu_heap.hpp"

#include <unistd.h>

#include <chrono>
#include <cstring>

#include "core/log.hpp"

namespace axon::gpu {
namespace {

// What travels with each file descriptor: whose chunk it is and where it goes.
struct ChunkNote {
  std::int32_t fromPe;
  std::uint64_t offset;
  std::uint64_t size;
};

std::string gib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

}  // namespace

GpuHeap::GpuHeap(const DriverApi& cu, CUdevice device, int myPe, const std::vector<bool>& nodeLocal,
                 std::size_t capacity, std::size_t chunk)
    : HeapSpace(capacity),
      cu_(cu),
      device_(device),
      myPe_(myPe),
      nPes_(static_cast<int>(nodeLocal.size())),
      slots_(HeapSlots::forNode(nodeLocal)),
      peerChunks_(nPes_),
      peerMapped_(nPes_, 0),
      sentUpTo_(nPes_, 0),
      reachable_(nPes_, false),
      whyUnreachable_(nPes_) {
  prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop_.location.id = device;
  prop_.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  int rdma = 0;
  cu_.cuDeviceGetAttribute(&rdma, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, device);
  prop_.allocFlags.gpuDirectRDMACapable = rdma ? 1 : 0;  // lets a NIC reach it later (UCX)
  int fdOk = 0;
  cu_.cuDeviceGetAttribute(&fdOk, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, device);
  if (!fdOk) {
    throw Error(ErrorCode::Unsupported, "PE " + std::to_string(myPe) + ": GPU " + std::to_string(device) +
                                            " cannot export memory as file descriptors "
                                            "(CUDA VMM IPC); axon's GPU heap needs it");
  }
  cuCheck(cu_.cuMemGetAllocationGranularity(&granularity_, &prop_, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
          "cuMemGetAllocationGranularity");
  capacity_ = roundUp(capacity, granularity_);
  chunk_ = roundUp(chunk, granularity_);
  // One reservation holds every node-local PE's heap: a cap times the slot count that overflows
  // would reserve a wrapped, far smaller range and put the heaps on top of each other.
  std::size_t total = 0;
  if (__builtin_mul_overflow(capacity_, static_cast<std::size_t>(slots_.count), &total)) {
    throw Error(ErrorCode::InvalidArgument, "PE " + std::to_string(myPe) + ": GPU heaps of " + std::to_string(capacity_) +
                                                " bytes (AXON_GPU_HEAP_MAX) for " + std::to_string(slots_.count) +
                                                " PEs on this node overflow the address space; lower AXON_GPU_HEAP_MAX");
  }
  CUresult r = cu_.cuMemAddressReserve(&reservation_, total, granularity_, 0, 0);
  if (r != CUDA_SUCCESS) {
    throw CudaError("PE " + std::to_string(myPe) + ": cannot reserve " + gib(total) +
                        " of GPU address space for " + std::to_string(slots_.count) + " heaps of " +
                        gib(capacity_) + " on this node (lower AXON_GPU_HEAP_MAX)",
                    r);
  }
  reachable_[myPe_] = true;
}

GpuHeap::~GpuHeap() { release(); }

void GpuHeap::release() noexcept {
  for (int pe = 0; pe < nPes_; ++pe) {
    for (auto& c : peerChunks_[pe]) {
      cu_.cuMemUnmap(reinterpret_cast<CUdeviceptr>(peerBase(pe)) + c.offset, c.size);
      cu_.cuMemRelease(c.handle);
    }
    peerChunks_[pe].clear();
  }
  for (auto& c : own_) {
    cu_.cuMemUnmap(reinterpret_cast<CUdeviceptr>(base()) + c.offset, c.size);
    cu_.cuMemRelease(c.handle);
  }
  own_.clear();
  if (reservation_) cu_.cuMemAddressFree(reservation_, capacity_ * static_cast<std::size_t>(slots_.count));
  reservation_ = 0;
}

std::size_t GpuHeap::growLocal(std::size_t end) {
  if (end <= mappedOwn_) return mappedOwn_;
  if (end > capacity_) {
    throw Error(ErrorCode::OutOfMemory, "the GPU heap would need " + std::to_string(end) +
                                            " bytes, past its cap of " + std::to_string(capacity_) +
                                            " bytes (AXON_GPU_HEAP_MAX)");
  }
  // One chunk covers the whole growth: at least AXON_GPU_HEAP_CHUNK, more for a large allocation.
  std::size_t size = std::max(chunk_, roundUp(end - mappedOwn_, granularity_));
  size = std::min(size, capacity_ - mappedOwn_);
  CUmemGenericAllocationHandle h{};
  CUresult r = cu_.cuMemCreate(&h, size, &prop_, 0);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    throw Error(ErrorCode::OutOfMemory, "GPU " + std::to_string(device_) + " has no room for " +
                                            std::to_string(size) + " more bytes of GPU heap (" +
                                            std::to_string(mappedOwn_) + " mapped so far)");
  }
  cuCheck(r, "cuMemCreate of " + std::to_string(size) + " bytes for the GPU heap");
  CUdeviceptr at = reinterpret_cast<CUdeviceptr>(base()) + mappedOwn_;
  r = cu_.cuMemMap(at, size, 0, h, 0);
  if (r != CUDA_SUCCESS) {
    cu_.cuMemRelease(h);
    cuCheck(r, "cuMemMap of the GPU heap");
  }
  CUmemAccessDesc access{};
  access.location = prop_.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = cu_.cuMemSetAccess(at, size, &access, 1);
  if (r != CUDA_SUCCESS) {
    cu_.cuMemUnmap(at, size);
    cu_.cuMemRelease(h);
    cuCheck(r, "cuMemSetAccess on the GPU heap");
  }
  own_.push_back(Chunk{h, mappedOwn_, size});
  mappedOwn_ += size;
  return mappedOwn_;
}

void GpuHeap::sendNewChunks(const std::function<void()>& checkPeers) {
  for (int pe = 0; pe < nPes_; ++pe) {
    if (pe == myPe_ || peers_.channelAddress.empty() || peers_.channelAddress[pe].empty()) continue;
    for (const auto& c : own_) {
      if (c.offset < sentUpTo_[pe]) continue;
      int fd = -1;
      cuCheck(cu_.cuMemExportToShareableHandle(&fd, c.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              "cuMemExportToShareableHandle (GPU heap chunk for PE " + std::to_string(pe) + ")");
      UniqueFd owned(fd);
      ChunkNote note{myPe_, c.offset, c.size};
      // While that peer's queue is full, take in what others send us, so that PEs sending to
      // each other at once (every PE does, after an allocation) cannot block one another.
      // A peer that failed and posted it no longer receives: its full queue must not hold this
      // PE for AXON_TIMEOUT (checked every 50 ms, one store round trip each).
      auto lastCheck = std::chrono::steady_clock::now();
      channel_.send(peers_.channelAddress[pe], std::string(reinterpret_cast<char*>(&note), sizeof(note)), fd,
                    peers_.timeoutSec, [&] {
                      while (auto m = channel_.receive(0)) inbox_.push_back(std::move(*m));
                      if (checkPeers && std::chrono::steady_clock::now() - lastCheck > std::chrono::milliseconds(50)) {
                        lastCheck = std::chrono::steady_clock::now();
                        checkPeers();
                      }
                    });
      sentUpTo_[pe] = c.offset + c.size;
    }
  }
}

void GpuHeap::mapPeerChunk(int pe, std::size_t offset, std::size_t size, int fd) {
  // The first chunk decides whether this PE's GPU can reach the peer's memory at all (no peer
  // access between the two GPUs makes cuMemSetAccess fail); later chunks must then work too.
  const bool first = offset == 0;
  if (!first && !reachable_[pe]) return;
  if (first && !peers_.tryMap[pe]) {
    whyUnreachable_[pe] = "peer mapping is off (AXON_P2P=0)";
    return;
  }
  CUmemGenericAllocationHandle h{};
  CUresult r = cu_.cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
                                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr at = reinterpret_cast<CUdeviceptr>(peerBase(pe)) + offset;
  bool mapped = false;
  if (r == CUDA_SUCCESS) {
    r = cu_.cuMemMap(at, size, 0, h, 0);
    mapped = r == CUDA_SUCCESS;
  }
  if (r == CUDA_SUCCESS) {
    CUmemAccessDesc access{};
    access.location = prop_.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = cu_.cuMemSetAccess(at, size, &access, 1);
  }
  if (r != CUDA_SUCCESS) {
    if (mapped) cu_.cuMemUnmap(at, size);
    if (h) cu_.cuMemRelease(h);
    if (first) {
      whyUnreachable_[pe] = "this GPU cannot map PE " + std::to_string(pe) + "'s memory: " + cuResultText(r);
      log(LogLevel::Info, myPe_, "GPU heap of PE " + std::to_string(pe) + " is not reachable by load/store: " +
                                     cuResultText(r));
      return;
    }
    throw CudaError("PE " + std::to_string(myPe_) + ": mapping a chunk of PE " + std::to_string(pe) +
                        "'s GPU heap (offset " + std::to_string(offset) + ", " + std::to_string(size) + " bytes)",
                    r);
  }
  peerChunks_[pe].push_back(Chunk{h, offset, size});
  if (first) reachable_[pe] = true;
}

void GpuHeap::mapPeers(const std::vector<std::size_t>& peerMapped, const std::function<void()>& checkPeers) {
  sendNewChunks(checkPeers);
  auto missing = [&] {
    for (int pe = 0; pe < nPes_; ++pe) {
      if (pe != myPe_ && !peers_.channelAddress.empty() && !peers_.channelAddress[pe].empty() &&
          peerMapped_[pe] < peerMapped[pe]) {
        return pe;
      }
    }
    return -1;
  };
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(peers_.timeoutSec);
  for (int waitingOn = missing(); waitingOn >= 0; waitingOn = missing()) {
    std::optional<FdChannel::Message> msg;
    if (!inbox_.empty()) {
      msg = std::move(inbox_.front());
      inbox_.pop_front();
    } else {
      msg = channel_.receive(0.05);
    }
    if (!msg) {
      if (checkPeers) checkPeers();
      int dead = peers_.findDeadPe ? peers_.findDeadPe() : -1;
      if (dead >= 0) {
        throw Error(ErrorCode::PeerDead, "PE " + std::to_string(myPe_) + ": PE " + std::to_string(dead) +
                                             " exited while the GPU heap handles were exchanged");
      }
      if (Clock::now() > deadline) {
        throw Error(ErrorCode::Timeout,
                    "PE " + std::to_string(myPe_) + ": waited " + secondsText(peers_.timeoutSec) +
                        " (AXON_TIMEOUT) for PE " + std::to_string(waitingOn) + "'s GPU heap handles (" +
                        std::to_string(peerMapped_[waitingOn]) + " of " +
                        std::to_string(peerMapped[waitingOn]) + " bytes received)");
      }
      continue;
    }
    ChunkNote note{};
    if (msg->header.size() != sizeof(note) || !msg->fd) {
      throw Error(ErrorCode::Internal, "PE " + std::to_string(myPe_) + ": a malformed GPU heap handle message");
    }
    std::memcpy(&note, msg->header.data(), sizeof(note));
    if (note.fromPe < 0 || note.fromPe >= nPes_ || note.size > capacity_ || note.offset > capacity_ - note.size) {
      throw Error(ErrorCode::Internal, "PE " + std::to_string(myPe_) + ": a GPU heap handle message out of range");
    }
    mapPeerChunk(note.fromPe, note.offset, note.size, msg->fd.get());
    peerMapped_[note.fromPe] += note.size;
  }
}

}  // namespace axon::gpu
