// The GPU backend behind an interface the CUDA-free parts of the runtime can hold: device choice,
// the GPU heap, the transport that moves GPU memory, and the stream-ordered operations.
// cuda_backend.cpp implements it; no_gpu_backend.cpp stands in for builds without CUDA.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "axon/device/coll_types.hpp"
#include "axon/device/types.hpp"
#include "axon/onesided.hpp"
#include "axon/team.hpp"
#include "memory/heap_space.hpp"
#include "kernels/coll_kernels.hpp"

namespace axon {

class DeviceRequests;
class GpuBackend;
class PeContext;
namespace detail {
struct TeamState;
}

// What the GPU backend's set-up takes from the runtime that builds it (as NetworkSetup does for
// the network): the PE, and how to make the device proxy (onesided/make_device_proxy.hpp), which
// kernels reach PEs on other nodes through.
struct GpuSetup {
  PeContext& pe;
  std::function<std::unique_ptr<DeviceRequests>(GpuBackend&)> makeDeviceProxy;
};

// A team's GPU collective workspace: every member's, mapped for this GPU's loads and stores
// (gpu/gpu_coll_workspace.cpp). Freed with the team.
class GpuTeamWorkspace {
 public:
  virtual ~GpuTeamWorkspace() = default;
  virtual const device::CollHandle& handle() const = 0;
  // Enqueues a collective on `stream` (a CUstream).
  virtual void enqueue(const kernels::CollLaunch& launch, void* stream) = 0;
  // Runs a collective on the workspace's own stream and waits for it.
  virtual void run(const kernels::CollLaunch& launch) = 0;
  // What an SM holds of `launch`'s kernel, and the GPU's SMs (explain()).
  virtual kernels::CollOccupancy occupancy(const kernels::CollLaunch& launch) const = 0;
  // The bound of the kernels' waits from the next launch on (the team's timeout, in ns).
  virtual void setTimeoutNs(unsigned long long ns) = 0;
  // Device memory for blocking calls on host buffers: buffer `which` (0 or 1), grown on demand.
  virtual void* scratch(int which, std::size_t bytes) = 0;
  // Copies between host and device memory on the workspace's stream; returns when done.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // The error the team's kernels reported on this PE (complete reports only), or nullptr.
  virtual const device::CollError* error() const = 0;
  // Reports `e`, found by this PE's host, as a kernel reports what it meets: into this PE's report
  // and every member's workspace, so that the members' kernels stop and report it too (the first
  // report wins everywhere). Returns when it is written.
  virtual void raise(const device::CollError& e) = 0;
};

// A plain device allocation as a node-local peer opens it by CUDA IPC (gpu/ipc_buffers.hpp).
struct IpcBuffer {
  unsigned char handle[64];    // CUipcMemHandle
  std::uint64_t base = 0;      // the allocation's start in the exporter
  std::uint64_t bufferId = 0;  // the driver's id of the allocation, never reused
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;

  // Second phase of init, collective over the world: exchange memory handles, map the peers,
  // start the stream host worker and (across nodes) the device proxy.
  virtual void connect(const GpuSetup& setup) = 0;
  // Last phase, once the GPU transports are built (transport/gpu_transports.hpp; `stagedPath`: the
  // staged path is on): the device context for kernels, then a world barrier, after which peers
  // may signal this PE's control words.
  virtual void finishConnect(bool stagedPath) = 0;
  // At the runtime's end, once the progress engine's thread has stopped: the stream host worker
  // (it serves what is left, bounded) and the device proxy go, before the transports they call.
  virtual void stopHostWork() = 0;
  // Makes this PE's CUDA context current on the calling thread (transports' calls need it).
  virtual void makeCurrent() const = 0;
  // Throws the failure a stream-ordered operation met on the host since the last call (its stream
  // was released, not left hanging): the next call into the GPU paths reports it.
  virtual void throwStreamError() = 0;
  // Before the heaps go, or a team's slot is reused: waits for the GPU to finish this PE's work
  // on every stream. `api` names the call in the error.
  virtual void synchronize(const char* api) = 0;

  virtual int deviceOrdinal() const = 0;
  virtual std::string description() const = 0;  // "GPU 1 (NVIDIA H200, PCI 0000:19:00.0)"
  virtual HeapSpace& heap() = 0;
  virtual std::shared_ptr<HeapSpace> heapOwner() = 0;
  virtual bool peerReachable(int pe) const = 0;
  // Whether kernels reach `pe`: by load/store, or through the device proxy.
  virtual bool deviceReaches(int pe) const = 0;
  virtual std::string unreachableReason(int pe) const = 0;
  // Is this local pointer device memory (GPU heap, cudaMalloc, ...)?
  virtual bool isDeviceMemory(const void* p) const = 0;
  // Bytes from p to the end of the plain device allocation (cudaMalloc, cuMemAlloc) that holds
  // it; 0 when there is none (host memory) or the driver's range may be only part of the buffer
  // (VMM mappings, pool memory).
  virtual std::size_t deviceBytesFrom(const void* p) const = 0;
  // The allocation holding `p`, for a node-local peer to open by CUDA IPC; false for memory that
  // legacy IPC cannot share (VMM mappings, pool memory, host memory).
  virtual bool exportBuffer(const void* p, IpcBuffer& out) = 0;
  // Where this process sees the base of PE `pe`'s exported allocation (opened once, cached), or
  // nullptr where CUDA will not map it here (then the data moves another way).
  virtual void* importBuffer(int pe, const IpcBuffer& b) = 0;
  // The GPU heap offset of [p, p + bytes) when every PE in `pes` has that range of its heap mapped
  // for this GPU's loads and stores; device::kCollNoOffset otherwise.
  virtual unsigned long long symmetricOffset(const void* p, std::size_t bytes,
                                             const std::vector<int>& pes) const = 0;
  // An acquire read of a word of this PE's GPU heap, from the host.
  virtual std::uint64_t readWord(const std::uint64_t* p) = 0;
  // Pins a range of host memory (the host heap and its peers' mappings) for the GPU.
  virtual void pinHost(void* p, std::size_t bytes) = 0;
  virtual void unpinHost(void* p) = 0;
  virtual void memsetLocal(void* p, int value, std::size_t bytes) = 0;
  // Copies between any two local addresses (GPU, pinned or pageable host); returns when done.
  virtual void copyLocal(void* dst, const void* src, std::size_t bytes) = 0;
  // The same, enqueued on `stream` (a CUstream).
  virtual void copyLocalOnStream(void* dst, const void* src, std::size_t bytes, void* stream) = 0;

  // Fixed once connect() has mapped the peers; the world team is PEs 0..n-1 in slot 0.
  virtual const device::Context& deviceContext() const = 0;

  // Stream-ordered work; `stream` is a CUstream. Arguments are already validated. (Puts, gets
  // and signals on a stream are the transports', which the router picks.)
  virtual void waitOnStream(std::uint64_t* sig, Cmp cmp, std::uint64_t value, void* stream) = 0;
  // Stream-ordered requests to the device proxy, for PE `pe` on another node (its GPU heap at
  // `offset`): a one-thread kernel posts each, the proxy carries it out with the host call.
  virtual void proxyPutOnStream(int pe, std::size_t offset, const void* src, std::size_t bytes, void* stream) = 0;
  virtual void proxyGetOnStream(void* dst, int pe, std::size_t offset, std::size_t bytes, void* stream) = 0;
  virtual void proxySignalOnStream(int pe, std::size_t offset, std::uint64_t value, SignalOp op, void* stream) = 0;
  // quiet_on_stream's device part: what kernels and stream calls posted to the device proxy before
  // completes before later work on `stream` (nothing to do without a proxy).
  virtual void quietProxyOnStream(void* stream) = 0;
  virtual void synchronizeStream(void* stream) = 0;
  virtual void barrierOnStream(const device::Team& team, void* stream) = 0;
  // Runs `work` on the host when `stream` reaches this point, and holds the stream's later work
  // until it returns (graph-capturable): how stream-ordered calls take host paths (collectives
  // across nodes). A failure is reported by the next call into the backend. `what` names it.
  virtual void enqueueHostWork(void* stream, std::function<void()> work, std::string what) = 0;
  // The same for work that may end after it starts (stream-ordered messages): `start` runs when
  // `stream` gets here and returns the check (true once ended; throws its failure) the host worker
  // polls meanwhile, serving other streams' work; empty when it ended at once. The stream's later
  // work waits until it has ended.
  using HostCompletion = std::function<bool()>;
  virtual void enqueueHostOp(void* stream, std::function<HostCompletion()> start, std::string what) = 0;
  // Collective over the team's members: their GPU collective workspaces, mapped here. nullptr,
  // with `whyNot` set, on every member alike when some member cannot map some other's memory.
  virtual std::shared_ptr<GpuTeamWorkspace> createTeamWorkspace(PeContext& rt, const detail::TeamState& team,
                                                                std::string& whyNot) = 0;
  // After a team is destroyed: zero its device barrier row for the next team in the slot, and
  // stop serving its device collectives.
  virtual void resetTeamSlot(int slot) = 0;
  // A team whose members span nodes: the device proxy runs the device collectives kernels call on
  // it (as the host's blocking collectives), and `h` gets what kernels need for that. False when
  // this PE has no device proxy.
  virtual bool serveTeamCollectives(const Team& team, int slot, device::CollHandle& h) = 0;
};

// The GPU backend for this process, or nullptr with `whyNot` set (no driver, no GPU, a build
// without CUDA). Throws when a GPU exists but cannot be set up.
std::unique_ptr<GpuBackend> makeGpuBackend(PeContext& rt, std::string& whyNot);

}  // namespace axon
