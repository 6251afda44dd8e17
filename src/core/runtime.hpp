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
#include "memory/symmetric_heap.hpp"
#include "transport/transport.hpp"

namespace axon {

class Runtime {
 public:
  explicit Runtime(Env env);  // joins the job: store, heap, peers, teams
  ~Runtime();

  void finalize();

  int myPe() const { return boot_->rank(); }
  int nPes() const { return boot_->size(); }
  const Env& env() const { return env_; }
  Bootstrap& bootstrap() { return *boot_; }
  SymmetricHeap& heap() { return *heap_; }
  // Shared ownership of the mappings, for language bindings whose arrays may outlive finalize():
  // the memory stays mapped (and private to this process) until the last holder lets go.
  std::shared_ptr<SymmetricHeap> heapOwner() const { return heap_; }
  const Liveness& liveness() const { return liveness_; }
  // A node-local PE whose process is gone without having finalized, or -1.
  int findDeadPe() const;
  const std::vector<bool>& nodeLocal() const { return nodeLocal_; }

  // Checks `pe`; names `api` in the error.
  void checkPe(int pe, const char* api) const;
  // Resolves the symmetric range [addr, addr+bytes) on PE `pe`: the PE must exist, the range must
  // lie inside one live allocation. `role` says which argument it is ("dest", "src", "sig").
  RemoteRef resolve(const void* addr, std::size_t bytes, int pe, const char* api, const char* role) const;
  // Describes a local address for messages: "0x7f.. (heap offset 4160)".
  std::string describe(const void* addr) const;
  // The transport that reaches `pe`, which resolve() has already checked; throws Unsupported
  // naming the PE when none reaches it.
  Transport& transportTo(int pe, const char* api) const;

  ControlBlock& control(int pe) const;
  // fence / quiet on every transport this PE uses.
  void fenceAll();
  void quietAll();

  Team world() const { return world_; }
  Team node() const { return node_; }
  std::uint64_t& teamSlotsInUse() { return teamSlots_; }

 private:
  void exchangePeers();

  Env env_;
  std::unique_ptr<Bootstrap> boot_;
  std::shared_ptr<SymmetricHeap> heap_;
  std::vector<bool> nodeLocal_;
  Liveness liveness_;
  std::unique_ptr<Transport> shm_;
  std::vector<Transport*> route_;  // [pe] -> transport that reaches it, or nullptr
  std::size_t controlOffset_ = 0;
  std::uint64_t teamSlots_ = 0;  // bit i: team slot i is taken on this PE
  Team world_, node_;
};

// The runtime, for API entry points: throws NotInitialized naming `api` before init or after
// finalize.
Runtime& runtime(const char* api);

}  // namespace axon
