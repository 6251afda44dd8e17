// Which transport an operation takes: the router's one decision (transport/router.cpp), as a pure
// function of what it knows about the operation, so that every case, the GPU ones included, is
// tested on the host (tests/unit/route_test.cpp).
#pragma once

#include "axon/memory.hpp"

namespace axon {

enum class Route { Shm, CudaIpc, Staged, Network, Unreachable };

struct RouteQuery {
  bool nodeLocal = true;        // the target PE shares this node
  bool networkReaches = false;  // the network transport reaches it (PEs on other nodes)
  bool gpuOn = false;           // the GPU backend is on, with its transports
  bool stagedOn = false;        // the staged path is on (some GPU cannot map a node-local peer's heap)
  HeapKind heap = HeapKind::Host;  // the heap of the target address
  bool mapped = false;          // this process maps the target address
  bool localOnDevice = false;   // the local buffer is device memory (asked only where it matters)
  bool streamOrdered = false;   // a stream-ordered call (the GPU backend is on)
};

// A PE on another node: the network, whatever the memory kinds. On this node, GPU memory on
// either side, and every stream-ordered call (a copy engine reaches the pinned host heap too), go
// to the GPU transports: the staged path for a GPU heap this GPU does not map when that path is on,
// else cuda_ipc. The rest: shared memory.
constexpr Route chooseRoute(const RouteQuery& q) {
  if (!q.nodeLocal) return q.networkReaches ? Route::Network : Route::Unreachable;
  const bool gpu = q.gpuOn && (q.streamOrdered || q.heap == HeapKind::Gpu || q.localOnDevice);
  if (!gpu) return Route::Shm;
  if (q.heap == HeapKind::Gpu && !q.mapped && q.stagedOn) return Route::Staged;
  return Route::CudaIpc;
}

}  // namespace axon
