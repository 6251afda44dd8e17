// What the router knows about an operation when it picks a transport (transport/route.hpp), and
// the one rule several transports share: which operations belong to the GPU transports.
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

// On this node, GPU memory on either side, and every stream-ordered call (a copy engine reaches
// the pinned host heap too), belong to the GPU transports.
constexpr bool takesGpuPath(const RouteQuery& q) {
  return q.nodeLocal && q.gpuOn && (q.streamOrdered || q.heap == HeapKind::Gpu || q.localOnDevice);
}

}  // namespace axon
