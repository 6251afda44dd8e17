// The GPU heap's slots: node-local PEs only, evenly spaced in world ranks (src/gpu/heap_slots.hpp),
// and the device arithmetic that finds them (device::remote with Context::peStride).
#include "gpu/heap_slots.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "axon/device/device.hpp"

namespace {

using axon::gpu::HeapSlots;

std::vector<bool> localOf(int nPes, std::vector<int> pes) {
  std::vector<bool> local(nPes, false);
  for (int p : pes) local[p] = true;
  return local;
}

TEST(HeapSlots, BlocksTakeOneSlotPerNodeLocalPe) {
  // 8 PEs on 2 nodes in blocks: the second node reserves 4 heaps, not 8.
  const HeapSlots s = HeapSlots::forNode(localOf(8, {4, 5, 6, 7}));
  EXPECT_EQ(s.first, 4);
  EXPECT_EQ(s.peStride, 1);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.slotOf(4), 0);
  EXPECT_EQ(s.slotOf(7), 3);
}

TEST(HeapSlots, RoundRobinStridesByTheNodeCount) {
  // 9 PEs round robin over 3 nodes: node 1 holds PEs 1, 4, 7.
  const HeapSlots s = HeapSlots::forNode(localOf(9, {1, 4, 7}));
  EXPECT_EQ(s.first, 1);
  EXPECT_EQ(s.peStride, 3);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.slotOf(1), 0);
  EXPECT_EQ(s.slotOf(4), 1);
  EXPECT_EQ(s.slotOf(7), 2);
}

TEST(HeapSlots, AnyPlacementGetsDistinctSlotsInOrder) {
  // 0, 2 and 6 share a node: spacing 2, slots 0, 1 and 3 (slot 2 unused).
  const std::vector<int> pes{0, 2, 6};
  const HeapSlots s = HeapSlots::forNode(localOf(8, pes));
  EXPECT_EQ(s.peStride, 2);
  EXPECT_EQ(s.count, 4);
  int previous = -1;
  for (int p : pes) {
    EXPECT_GT(s.slotOf(p), previous);
    EXPECT_LT(s.slotOf(p), s.count);
    previous = s.slotOf(p);
  }
}

TEST(HeapSlots, OnePeAloneOnItsNode) {
  const HeapSlots s = HeapSlots::forNode(localOf(3, {2}));
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.slotOf(2), 0);
}

TEST(HeapSlots, DeviceArithmeticFindsEveryNodeLocalPeSlot) {
  // The heaps as GpuHeap lays them out, and device::remote from every node-local PE to every other.
  const long long capacity = 1ll << 34;
  for (const auto& pes : {std::vector<int>{4, 5, 6, 7}, std::vector<int>{1, 4, 7}, std::vector<int>{0, 2, 6}}) {
    const HeapSlots s = HeapSlots::forNode(localOf(9, pes));
    const unsigned long long reservation = 0x7f0000000000ull;
    for (int me : pes) {
      axon::device::Context ctx{};
      ctx.myPe = me;
      ctx.nPes = 9;
      ctx.heapStride = capacity;
      ctx.peStride = s.peStride;
      ctx.heapBase = reinterpret_cast<char*>(reservation + s.slotOf(me) * capacity);
      for (int pe : pes) {
        char* at = axon::device::remote(ctx, ctx.heapBase + 128, pe);
        EXPECT_EQ(at, reinterpret_cast<char*>(reservation + s.slotOf(pe) * capacity + 128)) << me << " -> " << pe;
      }
    }
  }
}

TEST(HeapSlots, TeamPeReadsTheMemberTableWhenThereIsOne) {
  axon::device::Team strided{2, 3, 4, 0, 0, nullptr};
  EXPECT_EQ(axon::device::teamPe(strided, 0), 2);
  EXPECT_EQ(axon::device::teamPe(strided, 3), 11);
  const int table[] = {5, 1, 8};
  axon::device::Team grouped{5, -4, 3, 0, 0, table};
  EXPECT_EQ(axon::device::teamPe(grouped, 1), 1);
  EXPECT_EQ(axon::device::teamPe(grouped, 2), 8);
}

}  // namespace
