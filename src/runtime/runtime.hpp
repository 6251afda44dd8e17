// The composition root: what init() builds and finalize() tears down. The runtime builds and owns
// every subsystem (the store, the heaps, the GPU backend, the transports, two-sided messages,
// teams and their collectives) and hands each the narrow PeContext (core/pe_context.hpp). Only
// src/runtime/ includes this header.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "axon/team.hpp"
#include "bootstrap/bootstrap.hpp"
#include "core/control_block.hpp"
#include "core/env.hpp"
#include "core/liveness.hpp"
#include "core/pe_context.hpp"
#include "core/progress_engine.hpp"
#include "gpu/gpu_backend.hpp"
#include "memory/symmetric_heap.hpp"
#include "transport/router.hpp"
#include "transport/transport.hpp"

namespace axon {
namespace p2p {
class Engine;
}

class Runtime final : public PeContext {
 public:
  explicit Runtime(Env env);  // joins the job: store, heap, peers, teams
  ~Runtime() override;

  void finalize();

  // PeContext (core/pe_context.hpp).
  int myPe() const override { return boot_->rank(); }
  int nPes() const override { return boot_->size(); }
  const Env& env() const override { return env_; }
  const std::vector<bool>& nodeLocal() const override { return nodeLocal_; }
  const std::string& nodeName(int pe) const override { return nodeNames_[pe]; }
  pid_t pidOf(int pe) const override { return liveness_.pidOf(pe); }
  void checkPe(int pe, const char* api) const override;
  RemoteRef resolve(const void* addr, std::size_t bytes, int pe, const char* api, const char* role) const override;
  std::string describe(const void* addr) const override;
  HeapSpace* heapContaining(const void* addr) const override;
  HeapSpace& heapOf(HeapKind kind) override { return kind == HeapKind::Gpu && gpu_ ? gpu_->heap() : *heap_; }
  ControlBlock& control(int pe) const override;
  RemoteRef controlRef(int pe, const std::uint64_t* localWord) const override;
  Transport& transportFor(const RemoteRef& ref, const void* local, const char* api) const override;
  Transport& streamTransportFor(const RemoteRef& ref, const char* api) const override {
    return router_->streamTransportFor(ref, api);
  }
  void fenceAll() override { router_->fenceAll(); }
  void quietAll() override { router_->quietAll(); }
  void quietOnStream(void* stream) override { router_->quietOnStream(stream); }
  bool progress() override { return progress_.progress(); }
  ProgressEngine& progressEngine() override { return progress_; }
  int findDeadPe() const override;
  std::string deathOf(int pe) const override;
  Bootstrap& bootstrap() override { return *boot_; }
  GpuBackend* gpu() const override { return gpu_.get(); }
  const std::string& gpuUnavailableReason() const override { return gpuWhyNot_; }
  p2p::Engine& messages() override { return *p2p_; }

  // What only the composition root uses: the heaps as objects, the router, the teams.
  SymmetricHeap& hostHeap() { return *heap_; }
  // The heap axon::malloc allocates on: the GPU heap when the GPU backend is on.
  HeapSpace& defaultHeap() { return gpu_ ? gpu_->heap() : *heap_; }
  // Shared ownership of a heap's mappings, for language bindings whose arrays may outlive
  // finalize(): the memory stays mapped (and private to this process) until the last holder
  // lets go.
  std::shared_ptr<HeapSpace> heapOwner(HeapKind kind) const;
  // After the host heap grew (here or on peers): pins the new ranges for the GPU.
  void pinHostHeap();
  // Whether any PE runs on another node (the network transport is then up).
  bool spansNodes() const { return router_->network() != nullptr; }
  Router& router() { return *router_; }

  // Gives the team its collectives (coll::makeTeamCollectives chooses the path). Collective over
  // the team's members.
  void attachCollectives(const detail::TeamState& team);

  Team world() const { return world_; }
  Team node() const { return node_; }
  std::uint64_t& teamSlotsInUse() { return teamSlots_; }
  // How many teams Team::ofWorldPes made of each list so far: with the list, names the next one
  // alike on its members (a counter of the world team's would differ on PEs outside the list).
  std::map<std::vector<int>, int>& teamsOfPes() { return teamsOfPes_; }

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
  std::map<std::vector<int>, int> teamsOfPes_;
  Team world_, node_;
};

// The runtime, for the API entry points of the composition root (memory, teams, init): throws
// NotInitialized naming `api` before init or after finalize. Other layers use peContext(api).
Runtime& runtime(const char* api);

}  // namespace axon
