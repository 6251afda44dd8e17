// The transport to PEs on other nodes (UCX, src/transport/ucx/). Besides moving data it must be
// told where each PE's heaps are registered: a heap's growth is registered here and described in
// a registration that travels with the allocation exchange; each PE accepts its peers' once.
// It also needs polling (core/progress_engine.hpp): over TCP and shared memory UCX serves gets and
// atomics in software, on the target.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/progress_engine.hpp"
#include "memory/heap_space.hpp"
#include "transport/transport.hpp"

namespace axon {

class Bootstrap;
namespace p2p {
class Channel;
}

class NetworkTransport : public Transport, public ProgressClient {
 public:
  // Stream-ordered calls to another node's GPU heap go through the device proxy: a one-thread
  // kernel posts the request, the proxy carries it out with this transport's host call. Another
  // node's host heap is out of the kernels' reach (they address symmetric GPU memory): refused,
  // naming the PE.
  void putOnStream(const RemoteRef& dst, const void* src, std::size_t bytes, void* stream, GpuBackend& gpu) override;
  void getOnStream(void* dst, const RemoteRef& src, std::size_t bytes, void* stream, GpuBackend& gpu) override;
  void signalOnStream(const RemoteRef& sig, std::uint64_t value, SignalOp op, void* stream, GpuBackend& gpu) override;

  // What this PE tells every other at set-up: library version, worker address. The version alone
  // is also given apart, so that PEs can refuse a mix of versions before anything else.
  virtual std::string version() const = 0;
  virtual std::string address() const = 0;
  // Creates the endpoint to a PE on another node from the address it published.
  virtual void connect(int pe, const std::string& address, const std::string& nodeName) = 0;
  // Waits until every endpoint made is connected (bounded); peers' keys are unpacked after it.
  virtual void finishConnecting() = 0;

  // Registers `heap` up to its mapped size (what is not yet registered) and returns a registration
  // of the ranges that reach past `from`, for the peers; empty when there is none.
  virtual std::string registration(const HeapSpace& heap, std::size_t from) = 0;
  // Keeps (and unpacks once) a peer's registration; `origin` names it in errors.
  virtual void acceptRegistration(int pe, const std::string& registration, const std::string& origin) = 0;

  // Regions outside the heaps that peers on other nodes write into (a team's collective inbox).
  // exposeRegion allocates `bytes` of zeroed host memory, registers it and returns its
  // registration, which peers take through acceptRegistration like a heap's; `id` and `base` get
  // its number and address. The memory lives until withdrawRegion, or until the transport goes.
  // forgetRegion drops a peer's region (its key) once nobody here writes to it any more.
  virtual std::string exposeRegion(std::size_t bytes, std::uint32_t& id, void*& base) = 0;
  virtual void withdrawRegion(std::uint32_t id) = 0;
  virtual void forgetRegion(int pe, std::uint32_t id) = 0;

  // How this PE reaches `pe`: "ucx:tcp", "ucx:rc_mlx5/mlx5_0:1", ...
  virtual std::string pathTo(int pe) const = 0;
  // "UCX 1.22.0 (/path/libucp.so.0)"
  virtual std::string describe() const = 0;
  // A PE whose endpoint failed (peer gone, link down), or -1; `why` gets the reason.
  virtual int failedPeer(std::string* why) const = 0;

  // Two-sided messages to PEs on other nodes (transport/message_channel.hpp).
  virtual p2p::Channel& messageChannel() = 0;
};

// What a network transport needs from the runtime, without depending on it.
struct NetworkSetup {
  int myPe;
  int nPes;
  double timeoutSec;
  // Called while an operation waits (every 50 ms): throws when a peer is known dead.
  std::function<void()> checkPeers;
  // Whether a local buffer is device memory (the memory-type hint of every operation).
  std::function<bool(const void*)> isDeviceMemory;
  RemoteAtomics atomics = RemoteAtomics::Auto;  // AXON_UCX_ATOMICS
  // Applies an atomic (or a signal: Set/Add) to `word` in this PE's GPU heap, as atomic() does
  // (result may be null); empty without the GPU backend. How a target applies what arrives by
  // active message for its GPU heap: the host cannot update device memory atomically itself.
  std::function<void(AtomicOp op, void* word, std::size_t width, const void* operand, const void* cond, void* result)>
      gpuAtomic;
  // Copies `bytes` between local buffers, either in GPU memory (waited for); empty without the
  // GPU backend.
  std::function<void(void* dst, const void* src, std::size_t bytes)> gpuCopy;
  // Two-sided messages up to this many bytes travel eagerly (AXON_P2P_EAGER).
  std::uint64_t messageEagerMax = 8192;
};

// networkLibrary(), the report of the network library this build uses: axon/runtime.hpp.

// Makes the network transport of this build (UCX), or throws Unsupported naming what is missing.
std::unique_ptr<NetworkTransport> makeNetworkTransport(const NetworkSetup& setup);

}  // namespace axon
