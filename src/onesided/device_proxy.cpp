#include "onesided/device_proxy.hpp"
#include "onesided/make_device_proxy.hpp"

#include <atomic>
#include <cstring>

#include "axon/collectives.hpp"
#include "axon/onesided.hpp"
#include "core/log.hpp"
#include "core/pe_context.hpp"
#include "gpu/cuda_resources.hpp"
#include "memory/heap_space.hpp"
#include "transport/transport.hpp"

namespace axon::onesided {

using gpu::cuCheck;

namespace {

using device::ProxyOp;

ProxyOp opOf(const device::ProxyRequest& r) { return static_cast<ProxyOp>(r.op & ~device::kProxyWaited); }
// Whether the caller waits for this request (its slot is then freed by the caller, not here).
bool waitedFor(const device::ProxyRequest& r) { return (r.op & device::kProxyWaited) != 0; }

template <class T>
std::atomic_ref<T> word(T& w) {
  return std::atomic_ref<T>(w);
}

// Set while this thread carries out a request: its host calls must not take the proxy's own
// earlier failure (takeError) for theirs.
thread_local bool servingRequest = false;

const char* opName(const device::ProxyRequest& r) {
  switch (opOf(r)) {
    case ProxyOp::Put: return "put";
    case ProxyOp::Get: return "get";
    case ProxyOp::PutSignal: return "put_signal";
    case ProxyOp::Signal: return "signal_op";
    case ProxyOp::Atomic: return "atomic";
    case ProxyOp::Inline: return "p";
    case ProxyOp::GetInline: return "g";
    case ProxyOp::Fence: return "fence";
    case ProxyOp::Quiet: return "quiet";
    case ProxyOp::Collective: return "collective";
  }
  return "unknown request";
}

void* address(unsigned long long a) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(a)); }

}  // namespace

DeviceProxy::DeviceProxy(const gpu::DriverApi& cu, CUcontext ctx, int myPe, char* gpuHeapBase, std::vector<bool> nodeLocal)
    : cu_(cu), ctx_(ctx), myPe_(myPe), gpuHeapBase_(gpuHeapBase), nodeLocal_(std::move(nodeLocal)) {
  try {
    void* ring = nullptr;
    cuCheck(cu_.cuMemHostAlloc(&ring, sizeof(device::ProxyRing), CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
            "device proxy: cuMemHostAlloc of the ring");
    ring_ = static_cast<device::ProxyRing*>(ring);
    std::memset(ring_, 0, sizeof(device::ProxyRing));
    CUdeviceptr tickets = 0;
    cuCheck(cu_.cuMemAlloc(&tickets, sizeof(unsigned long long)), "device proxy: cuMemAlloc of the ticket counter");
    tickets_ = reinterpret_cast<unsigned long long*>(tickets);
    cuCheck(cu_.cuMemsetD8Async(tickets, 0, sizeof(unsigned long long), nullptr), "device proxy: cuMemsetD8Async");
    cuCheck(cu_.cuStreamSynchronize(nullptr), "device proxy: zeroing the ticket counter");
  } catch (...) {
    releaseResources();
    throw;
  }
}

DeviceProxy::~DeviceProxy() { releaseResources(); }

void DeviceProxy::releaseResources() noexcept {
  if (tickets_) cu_.cuMemFree(reinterpret_cast<CUdeviceptr>(tickets_));
  if (ring_) cu_.cuMemFreeHost(ring_);
  tickets_ = nullptr;
  ring_ = nullptr;
}

std::string DeviceProxy::describe(const device::ProxyRequest& r) const {
  if (opOf(r) == ProxyOp::Collective) {
    return std::string("device ") + collectiveName(static_cast<Collective>(r.value & 0xff)) + " on the team in slot " +
           std::to_string(r.width) + " through the proxy";
  }
  return "device " + std::string(opName(r)) + " to PE " + std::to_string(r.pe) + " through the proxy";
}

void DeviceProxy::serveTeam(const Team& team, int slot) {
  std::lock_guard lock(teamsMutex_);
  teams_[slot] = team;
}

void DeviceProxy::forgetTeam(int slot) {
  std::lock_guard lock(teamsMutex_);
  teams_.erase(slot);
}

void DeviceProxy::runCollective(const device::ProxyRequest& r) {
  Team team;
  {
    std::lock_guard lock(teamsMutex_);
    auto it = teams_.find(static_cast<int>(r.width));
    if (it == teams_.end()) {
      throw Error(ErrorCode::InvalidArgument, "no team in slot " + std::to_string(r.width) +
                                                  " has a device collective handle here (destroyed?)");
    }
    team = it->second;
  }
  const auto kind = static_cast<unsigned>(r.value & 0xff);
  const auto type = static_cast<DataType>((r.value >> 8) & 0xff);
  const auto op = static_cast<ReduceOp>((r.value >> 16) & 0xff);
  const int root = static_cast<int>(static_cast<unsigned>(r.cond));
  const void* src = address(r.src);
  void* dst = address(r.dest);
  const std::size_t count = r.bytes;
  // The host calls check every argument (type, op, root, buffers) and compare the members' calls.
  switch (static_cast<Collective>(kind)) {
    case Collective::Barrier: axon::barrier(team); return;
    case Collective::Broadcast: axon::broadcast(team, src, dst, count, type, root); return;
    case Collective::Reduce: axon::reduce(team, src, dst, count, type, op, root); return;
    case Collective::Allreduce: axon::allreduce(team, src, dst, count, type, op); return;
    case Collective::Allgather: axon::allgather(team, src, dst, count, type); return;
    case Collective::ReduceScatter: axon::reduceScatter(team, src, dst, count, type, op); return;
    case Collective::Alltoall: axon::alltoall(team, src, dst, count, type); return;
  }
  throw Error(ErrorCode::InvalidArgument, "unknown collective " + std::to_string(kind));
}

void DeviceProxy::addToControlWord(const device::ProxyRequest& r) {
  PeContext& rt = peContext("barrier");
  const std::size_t offset = static_cast<std::size_t>(r.sig - reinterpret_cast<std::uintptr_t>(gpuHeapBase_));
  const RemoteRef counter{r.pe, offset, nullptr, HeapKind::Gpu};
  rt.transportFor(counter, nullptr, "barrier").signal(counter, r.value, static_cast<SignalOp>(r.atomicOp));
}

void DeviceProxy::carryOut(const device::ProxyRequest& r, unsigned long long* result) {
  const auto op = opOf(r);
  if (op != ProxyOp::Fence && op != ProxyOp::Quiet && op != ProxyOp::Collective) {
    if (r.pe < 0 || static_cast<std::size_t>(r.pe) >= nodeLocal_.size()) {
      throw Error(ErrorCode::InvalidPe, "PE " + std::to_string(r.pe) + " does not exist (the world has " +
                                            std::to_string(nodeLocal_.size()) + " PEs)");
    }
    if (nodeLocal_[r.pe]) {
      // The staged path's own waits and copies would then run inside the proxy, beside the
      // kernel that waits for it; kernels reach node-local PEs by load/store only.
      throw Error(ErrorCode::Unsupported, "PE " + std::to_string(r.pe) +
                                              " shares this node, but its GPU heap is not mapped here (no peer "
                                              "access, or AXON_P2P=0): kernels reach node-local PEs by load/store "
                                              "only; use the host or the stream-ordered calls for it");
    }
  }
  // Requests from one thread to one PE keep their order: one whose delivery may still be under
  // way is fenced off from the next (puts return with the source free, not with the data there).
  // A collective starts once every earlier request is complete, as a host call after a quiet.
  if (unordered_ && op == ProxyOp::Collective) axon::quiet();
  else if (unordered_ && op != ProxyOp::Quiet) axon::fence();
  unordered_ = false;
  switch (op) {
    case ProxyOp::Put:
      axon::put(address(r.dest), address(r.src), r.bytes, r.pe);
      unordered_ = true;
      return;
    case ProxyOp::Get:
      axon::get(address(r.dest), address(r.src), r.bytes, r.pe);
      return;
    case ProxyOp::PutSignal:
      axon::putSignal(address(r.dest), address(r.src), r.bytes, static_cast<std::uint64_t*>(address(r.sig)), r.value,
                      static_cast<SignalOp>(r.atomicOp), r.pe);
      unordered_ = true;
      return;
    case ProxyOp::Signal:
      if (r.sig >= reinterpret_cast<std::uintptr_t>(gpuHeapBase_) &&
          r.sig < reinterpret_cast<std::uintptr_t>(gpuHeapBase_) + sizeof(device::ControlWords)) {
        addToControlWord(r);
        unordered_ = true;
        return;
      }
      axon::signalOp(static_cast<std::uint64_t*>(address(r.sig)), r.value, static_cast<SignalOp>(r.atomicOp), r.pe);
      unordered_ = true;
      return;
    case ProxyOp::Atomic: {
      if (r.atomicOp > static_cast<unsigned>(AtomicOp::FetchXor)) {
        throw Error(ErrorCode::InvalidArgument, "unknown atomic operation " + std::to_string(r.atomicOp));
      }
      const unsigned long long operand = r.value, cond = r.cond;
      axon::detail::atomic(static_cast<AtomicOp>(r.atomicOp), address(r.dest), r.width, &operand, &cond, result, r.pe);
      unordered_ = !waitedFor(r);
      return;
    }
    case ProxyOp::Inline: {
      if (r.bytes > 16) throw Error(ErrorCode::InvalidArgument, "p carries at most 16 bytes");
      const unsigned long long data[2] = {r.value, r.cond};
      axon::put(address(r.dest), data, r.bytes, r.pe);
      unordered_ = true;
      return;
    }
    case ProxyOp::GetInline:
      if (r.bytes > 16) throw Error(ErrorCode::InvalidArgument, "g carries at most 16 bytes");
      axon::get(result, address(r.src), r.bytes, r.pe);
      return;
    case ProxyOp::Fence:
      axon::fence();
      return;
    case ProxyOp::Quiet:
      axon::quiet();
      return;
    case ProxyOp::Collective:
      runCollective(r);
      return;
  }
  throw Error(ErrorCode::Internal, "the GPU posted request kind " + std::to_string(static_cast<unsigned>(op)) + ", which this build does not know");
}

bool DeviceProxy::progress() {
  if (!threadReady_) {
    gpu::adoptLibraryThread(cu_, ctx_);  // the engine's thread
    threadReady_ = true;
  }
  device::ProxySlot& slot = ring_->slots[head_ % device::kProxySlots];
  if (word(slot.ticket).load(std::memory_order_acquire) != head_ + 1) return false;
  const device::ProxyRequest request = slot.request;
  const std::uint64_t ticket = head_++;
  word(ring_->head).store(head_, std::memory_order_relaxed);
  const bool waited = waitedFor(request);
  // Copied: a request nobody waits for gives its slot back at once.
  if (!waited) word(slot.released).store(ticket + 1, std::memory_order_release);

  unsigned long long result[2] = {0, 0};
  bool failed = false;
  servingRequest = true;
  try {
    carryOut(request, result);
  } catch (const std::exception& e) {
    failed = true;
    const std::string msg = describe(request) + " (request " + std::to_string(ticket) + ") failed: " + e.what();
    log(LogLevel::Error, myPe_, msg);
    const auto* err = dynamic_cast<const Error*>(&e);
    if (!waited) {
      unsigned long long none = 0;
      word(ring_->failed).compare_exchange_strong(none, (ticket + 1) | device::kProxyFailed, std::memory_order_release);
      std::lock_guard lock(errorMutex_);
      if (!error_) error_.emplace(err ? err->code() : ErrorCode::Internal, msg);
    }
  }
  servingRequest = false;
  if (opOf(request) == ProxyOp::Quiet && !failed) {
    // Every request before this one is complete: device quiets with nothing posted since skip theirs.
    word(ring_->settled).store(ticket + 1, std::memory_order_release);
  }
  if (waited) {
    slot.result[0] = result[0];
    slot.result[1] = result[1];
    word(slot.done).store((ticket + 1) | (failed ? device::kProxyFailed : 0), std::memory_order_release);
  }
  pacer_.markWork();
  return true;
}

std::optional<Error> DeviceProxy::takeError() {
  if (servingRequest) return std::nullopt;
  std::lock_guard lock(errorMutex_);
  std::optional<Error> e;
  e.swap(error_);
  return e;
}

}  // namespace axon::onesided

namespace axon {

std::unique_ptr<DeviceRequests> makeDeviceProxy(GpuBackend& gpu, int myPe, std::vector<bool> nodeLocal) {
  const gpu::CudaResources r = gpu::cudaResourcesOf(gpu);
  return std::make_unique<onesided::DeviceProxy>(*r.cu, r.ctx, myPe, r.heap->base(), std::move(nodeLocal));
}

}  // namespace axon
