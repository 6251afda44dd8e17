// Where each node-local PE's GPU heap sits in this process's reservation. Only node-local PEs get
// address space (PEs on other nodes are reached through the network, never mapped), one slot
// each, evenly spaced in world ranks so that a kernel finds a slot by arithmetic
// (device::Context::peStride): slot = (pe - first) / peStride. Launchers place PEs in blocks
// (peStride 1) or round robin (peStride = the node count); any other placement still works, with
// the slots between node-local PEs left unused.
#pragma once

#include <numeric>
#include <vector>

namespace axon::gpu {

struct HeapSlots {
  int first = 0;     // the lowest node-local world rank
  int peStride = 1;  // world ranks from one slot to the next
  int count = 1;     // slots reserved

  int slotOf(int pe) const { return (pe - first) / peStride; }

  // The slots for `nodeLocal` ([pe]: shares this node; this PE's own entry must be true).
  static HeapSlots forNode(const std::vector<bool>& nodeLocal) {
    HeapSlots s;
    int last = -1;
    s.first = -1;
    int spacing = 0;
    for (int pe = 0; pe < static_cast<int>(nodeLocal.size()); ++pe) {
      if (!nodeLocal[pe]) continue;
      if (s.first < 0) s.first = pe;
      spacing = std::gcd(spacing, pe - s.first);
      last = pe;
    }
    if (s.first < 0) return HeapSlots{};
    s.peStride = spacing > 0 ? spacing : 1;
    s.count = (last - s.first) / s.peStride + 1;
    return s;
  }
};

}  // namespace axon::gpu
