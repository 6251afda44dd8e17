// The process-wide runtime: what init() builds and finalize() tears down.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "axon/team.hpp"
#include "bootstrap/bootstrap.hpp"
#include "core/control_block.hpp"
#include "core/env.hpp"
#include "core/liveness.hpp"
#include "core/progress_engine.hpp"
#include "gpu/gpu_backend.hpp"
#include "memory/symmetric_heap.hpp"
#include "transport/router.hpp"
#include "transport/transport.hpp"

namespace axon {
namespace p2p {
class Engine;
}

class Runtime {
 public:
  explicit Runtime(Env env);  // joins the job: store, heap, peers, teams
  ~Runtime();

  void finalize();

  int myPe() const { return boot_->rank(); }
  int nPes() const { return boot_->size(); }
  const Env& env() const { return env_; }
  Bootstrap& bootstrap() { return *boot_; }
  SymmetricHeap& hostHeap() { return *heap_; }
  // The GPU backend, or nullptr on the host backend.
  GpuBackend* gpu() const { return gpu_.get(); }
  const std::string& gpuUnavailableReason() const { return gpuWhyNot_; }
  // The heap axon::malloc allocates on: the GPU heap when the GPU backend is on.
  HeapSpace& defaultHeap() { return gpu_ ? gpu_->heap() : *heap_; }
  HeapSpace& heapOf(HeapKind kind) { return kind == HeapKind::Gpu && gpu_ ? gpu_->heap() : *heap_; }
  // The heap holding `addr`, or nullptr.
  HeapSpace* heapContaining(const void* addr) const;
  // Shared ownership of a heap's mappings, for language bindings whose arrays may outlive
  // finalize(): the memory stays mapped (and private to this process) until the last holder
  // lets go.
  std::shared_ptr<HeapSpace> heapOwner(HeapKind kind) const;
  // After the host heap grew (here or on peers): pins the new ranges for the GPU.
  void pinHostHeap();
  // A PE that is gone without having finalized, or -1: a node-local PE in our PID namespace whose
  // process exited, or any PE whose store connection closed (core/liveness.hpp).
  int findDeadPe() const;
  // "PE 3 (pid 1234) exited", or how the store saw it go: for messages about findDeadPe's answer.
  std::string deathOf(int pe) const;
  const std::vector<bool>& nodeLocal() const { return nodeLocal_; }
  // The name of PE `pe`'s node (its host name, or AXON_NODE), for messages and paths.
  const std::string& nodeName(int pe) const { return nodeNames_[pe]; }
  // Whether any PE runs on another node (the network transport is then up).
  bool spansNodes() const { return router_->network() != nullptr; }
  Router& router() { return *router_; }
  // Two-sided messages (p2p/engine.hpp).
  p2p::Engine& messages() { return *p2p_; }
  // PE `pe`'s pid when it runs on this node in this PID namespace, else 0.
  pid_t pidOf(int pe) const { return liveness_.pidOf(pe); }
  // Polls what advances only when polled (the network transport); every wait calls it.
  bool progress() { return progress_.progress(); }
  ProgressEngine& progressEngine() { return progress_; }

  // Checks `pe`; names `api` in the error.
  void checkPe(int pe, const char* api) const;
  // Resolves the symmetric range [addr, addr+bytes) on PE `pe`: the PE must exist, the range must
  // lie inside one live allocation of either heap. `role` says which argument it is ("dest",
  // "src", "sig").
  RemoteRef resolve(const void* addr, std::size_t bytes, int pe, const char* api, const char* role) const;
  // Describes a local address for messages: "0x7f.. (heap offset 4160)".
  std::string describe(const void* addr) const;
  // The transport for an operation between `ref` (resolved) and the local buffer `local`: the GPU
  // backend's when GPU memory is on either side, else the host path to the PE. Throws
  // Unsupported naming the PE when none reaches it.
  Transport& transportFor(const RemoteRef& ref, const void* local, const char* api) const;

  ControlBlock& control(int pe) const;
  // A word of PE `pe`'s control block, resolved for a transport (any PE, on any node).
  RemoteRef controlRef(int pe, const std::uint64_t* localWord) const;
  // fence / quiet on every transport this PE uses.
  void fenceAll() { router_->fenceAll(); }
  void quietAll() { router_->quietAll(); }

  // Creates the team's collective workspace when its members share memory. Collective over the
  // team's members.
  void attachCollectiveWorkspace(const detail::TeamState& team);

  Team world() const { return world_; }
  Team node() const { return node_; }
  std::uint64_t& teamSlotsInUse() { return teamSlots_; }

 private:
  void exchangePeers();
  void startGpu();
  void connectNodes();
  void startMessages();

  Env env_;
  std::unique_ptr<Bootstrap> boot_;
  std::shared_ptr<SymmetricHeap> heap_;
  std::unique_ptr<GpuBackend> gpu_;  // declared after heap_: destroyed before it
  std::string gpuWhyNot_;
  std::vector<std::size_t> pinned_;  // [pe] bytes of its host heap pinned for the GPU here
  std::vector<void*> pinnedRanges_;  // start of each pinned range
  std::vector<bool> nodeLocal_;
  std::vector<std::string> nodeNames_;
  Liveness liveness_;
  // Declared after the heaps: the transports (and their registrations of the heaps) go first, and
  // the progress engine's thread stops before them.
  std::unique_ptr<Router> router_;
  // Between the two: it uses the transports, and the progress engine's thread stops before it goes.
  std::unique_ptr<p2p::Engine> p2p_;
  ProgressEngine progress_;
  std::size_t controlOffset_ = 0;
  std::uint64_t teamSlots_ = 0;  // bit i: team slot i is taken on this PE
  Team world_, node_;
};

// The runtime, for API entry points: throws NotInitialized naming `api` before init or after
// finalize.
Runtime& runtime(const char* api);

}  // namespace axon
