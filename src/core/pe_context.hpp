// What a subsystem needs of the PE it runs in, and nothing more: who this PE is and where its peers
// run, where a symmetric address lives and which transport reaches a PE, how to wait (progress,
// the dead-PE lookup), and the few services every layer stands on (the store, the GPU backend,
// the two-sided engine). The runtime (src/runtime/, the composition root) builds every subsystem
// and implements this interface; nothing below it includes the runtime, so each layer can be read,
// and tested, for what it takes.
//
// The types it names live in the layers that own them; this header only declares them, so core
// stays the ground floor (docs/architecture.md, "Layers").
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "axon/memory.hpp"

namespace axon {

class Bootstrap;
class GpuBackend;
class HeapSpace;
class ProgressEngine;
class Transport;
struct ControlBlock;
struct Env;
struct RemoteRef;
namespace p2p {
class Engine;
}

class PeContext {
 public:
  virtual ~PeContext() = default;

  // Who: this PE, the world, and where each PE runs.
  virtual int myPe() const = 0;
  virtual int nPes() const = 0;
  virtual const Env& env() const = 0;
  // [pe]: whether PE `pe` shares this node (and its memory).
  virtual const std::vector<bool>& nodeLocal() const = 0;
  // The name of PE `pe`'s node (its host name, or AXON_NODE), for messages and paths.
  virtual const std::string& nodeName(int pe) const = 0;
  // PE `pe`'s pid when it runs on this node in this PID namespace, else 0.
  virtual pid_t pidOf(int pe) const = 0;

  // Where: checks of PEs and symmetric addresses.
  // Checks `pe`; names `api` in the error.
  virtual void checkPe(int pe, const char* api) const = 0;
  // Resolves the symmetric range [addr, addr+bytes) on PE `pe`: the PE must exist, the range must
  // lie inside one live allocation of either heap. `role` says which argument it is ("dest",
  // "src", "sig").
  virtual RemoteRef resolve(const void* addr, std::size_t bytes, int pe, const char* api,
                            const char* role) const = 0;
  // Describes a local address for messages: "0x7f.. (heap offset 4160)".
  virtual std::string describe(const void* addr) const = 0;
  // The heap holding `addr`, or nullptr; the heap of kind `kind` (the host heap on the host backend).
  virtual HeapSpace* heapContaining(const void* addr) const = 0;
  virtual HeapSpace& heapOf(HeapKind kind) = 0;
  // A word of PE `pe`'s control block (barrier counters), and that word resolved for a transport.
  virtual ControlBlock& control(int pe) const = 0;
  virtual RemoteRef controlRef(int pe, const std::uint64_t* localWord) const = 0;

  // How: the transport for an operation between `ref` (resolved) and the local buffer `local`
  // (the router decides). Throws Unsupported naming the PE when none reaches it.
  virtual Transport& transportFor(const RemoteRef& ref, const void* local, const char* api) const = 0;
  // The same for a stream-ordered call (the GPU backend is on).
  virtual Transport& streamTransportFor(const RemoteRef& ref, const char* api) const = 0;
  // fence / quiet on every transport this PE uses; quiet ordered on a stream (a CUstream).
  virtual void fenceAll() = 0;
  virtual void quietAll() = 0;
  virtual void quietOnStream(void* stream) = 0;

  // Waiting: every wait polls progress and checks for dead PEs (onesided/wait.hpp).
  // Polls what advances only when polled (the network transport); true when anything happened.
  virtual bool progress() = 0;
  virtual ProgressEngine& progressEngine() = 0;
  // A PE that is gone without having finalized, or -1 (core/liveness.hpp).
  virtual int findDeadPe() const = 0;
  // "PE 3 (pid 1234) exited", or how the store saw it go: for messages about findDeadPe's answer.
  virtual std::string deathOf(int pe) const = 0;

  // The services every subsystem stands on.
  // The job's key-value store and its rendezvous (set-up steps).
  virtual Bootstrap& bootstrap() = 0;
  // The GPU backend, or nullptr on the host backend; then gpuUnavailableReason() says why.
  virtual GpuBackend* gpu() const = 0;
  virtual const std::string& gpuUnavailableReason() const = 0;
  // Two-sided messages (p2p/engine.hpp).
  virtual p2p::Engine& messages() = 0;
};

// This PE's context, for API entry points: throws NotInitialized naming `api` before init or after
// finalize.
PeContext& peContext(const char* api);

}  // namespace axon
