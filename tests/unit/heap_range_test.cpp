// HeapSpace::peerRange: an offset that another process wrote (a node peer's offered receive, the
// heap offset of its send) is followed only into memory this process has mapped.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "memory/symmetric_heap.hpp"

namespace axon {
namespace {

TEST(HeapRange, OnlyRangesMappedHereResolve) {
  constexpr std::size_t kChunk = 64 * 1024;
  SymmetricHeap heap(0, 3, 16 * kChunk, kChunk);
  heap.growLocal(kChunk);
  // PE 1 is this PE's own segment opened a second time, mapped one chunk far; PE 2 is not mapped.
  heap.attachPeer(1, heap.localName());
  heap.mapPeer(1, kChunk);
  heap.unlinkLocalName();
  ASSERT_EQ(heap.mappedOf(1), kChunk);
  EXPECT_EQ(heap.peerRange(1, 0, kChunk), heap.peerAddress(1, 0));
  EXPECT_EQ(heap.peerRange(1, kChunk - 8, 8), heap.peerAddress(1, kChunk - 8));
  EXPECT_NE(heap.peerRange(1, kChunk, 0), nullptr);  // an empty range at the end
  EXPECT_EQ(heap.peerRange(1, kChunk - 8, 9), nullptr);
  EXPECT_EQ(heap.peerRange(1, kChunk + 1, 0), nullptr);
  EXPECT_EQ(heap.peerRange(1, 16 * kChunk, 8), nullptr);  // inside the capacity, past the mapping
  const std::size_t huge = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(heap.peerRange(1, huge, 1), nullptr);
  EXPECT_EQ(heap.peerRange(1, 8, huge), nullptr);  // offset + bytes would wrap
  EXPECT_EQ(heap.peerRange(2, 0, 1), nullptr);     // not mapped here at all
  EXPECT_EQ(heap.mappedOf(2), 0u);
  // Grown (by its owner, then mapped here), the same range resolves.
  heap.growLocal(2 * kChunk);
  heap.mapPeer(1, 2 * kChunk);
  EXPECT_NE(heap.peerRange(1, kChunk - 8, 9), nullptr);
  // This PE's own heap, as mapped.
  EXPECT_EQ(heap.peerRange(0, 0, kChunk), heap.base());
  EXPECT_EQ(heap.peerRange(0, 0, 2 * kChunk + 1), nullptr);
}

}  // namespace
}  // namespace axon
