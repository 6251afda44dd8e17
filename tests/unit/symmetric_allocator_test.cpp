// SymmetricAllocator: first-fit offsets inside the symmetric heap. Every PE replays the same calls
// on its own instance, so beyond being a correct allocator it must be fully deterministic.
#include <gtest/gtest.h>

#include <cstddef>
#include <optional>

#include "expect_error.hpp"
#include "memory/symmetric_allocator.hpp"

namespace axon {
namespace {

constexpr std::size_t kGranule = SymmetricAllocator::kGranule;
constexpr std::size_t kMiB = 1024 * 1024;

TEST(SymmetricAllocator, GranuleIsACacheLine) { EXPECT_EQ(kGranule, 64u); }

TEST(SymmetricAllocator, ConsecutiveAllocationsAreRoundedToTheGranule) {
  SymmetricAllocator heap(kMiB);
  EXPECT_EQ(heap.allocate(1), 0u);
  EXPECT_EQ(heap.allocate(1), 64u);
  EXPECT_EQ(heap.allocate(100), 128u);  // 100 rounds up to 128
  EXPECT_EQ(heap.allocate(64), 256u);   // exactly one granule: no extra rounding
  EXPECT_EQ(heap.allocate(65), 320u);
  EXPECT_EQ(heap.bytesInUse(), 64u + 64 + 128 + 64 + 128);
  EXPECT_EQ(heap.liveAllocations(), 5u);
  EXPECT_EQ(heap.top(), 448u);
  EXPECT_EQ(heap.capacity(), kMiB);
}

TEST(SymmetricAllocator, ReleasedRangeIsReusedFirstFit) {
  SymmetricAllocator heap(kMiB);
  auto a = heap.allocate(256);
  auto b = heap.allocate(256);
  auto c = heap.allocate(256);
  ASSERT_TRUE(a && b && c);
  heap.release(*b);
  EXPECT_EQ(heap.bytesInUse(), 512u);
  // The hole left by b is the first range that fits, ahead of the free tail after c.
  EXPECT_EQ(heap.allocate(200), b);
  // Nothing below c fits another block: the next one goes after c.
  EXPECT_EQ(heap.allocate(64), *c + 256);
}

TEST(SymmetricAllocator, NeighbouringFreeRangesCoalesce) {
  for (bool releaseAFirst : {true, false}) {
    SCOPED_TRACE(releaseAFirst ? "release A then B" : "release B then A");
    SymmetricAllocator heap(kMiB);
    auto a = heap.allocate(1000);  // 1024 after rounding
    auto b = heap.allocate(2000);  // 2048 after rounding
    auto c = heap.allocate(64);
    ASSERT_TRUE(a && b && c);
    ASSERT_EQ(*b, *a + 1024);
    ASSERT_EQ(*c, *b + 2048);
    heap.release(releaseAFirst ? *a : *b);
    heap.release(releaseAFirst ? *b : *a);
    // Only a single free range of A+B can take this without going past C.
    EXPECT_EQ(heap.allocate(1024 + 2048), a);
  }
}

TEST(SymmetricAllocator, ReleasingEverythingRestoresTheWholeCapacity) {
  SymmetricAllocator heap(64 * 1024);
  auto a = heap.allocate(1000);
  auto b = heap.allocate(3000);
  auto c = heap.allocate(5000);
  ASSERT_TRUE(a && b && c);
  // Middle first, so that both the merge with the next and with the previous range run.
  heap.release(*b);
  heap.release(*c);
  heap.release(*a);
  EXPECT_EQ(heap.bytesInUse(), 0u);
  EXPECT_EQ(heap.top(), 0u);
  EXPECT_EQ(heap.allocate(64 * 1024), 0u);
}

TEST(SymmetricAllocator, AlignmentIsHonoured) {
  SymmetricAllocator heap(kMiB);
  EXPECT_EQ(heap.allocate(100), 0u);
  EXPECT_EQ(heap.allocate(10, 4096), 4096u);
  // The gap [128, 4096) left by the aligned block is still used first-fit.
  EXPECT_EQ(heap.allocate(64), 128u);
  EXPECT_EQ(heap.top(), 4096u + 64);
  auto big = heap.allocate(1, 65536);
  ASSERT_TRUE(big);
  EXPECT_EQ(*big % 65536, 0u);
  EXPECT_EQ(*big, 65536u);
}

TEST(SymmetricAllocator, SmallAlignmentsStillGetAWholeGranule) {
  SymmetricAllocator heap(kMiB);
  for (std::size_t alignment : {1u, 2u, 8u, 32u}) {
    auto at = heap.allocate(1, alignment);
    ASSERT_TRUE(at);
    EXPECT_EQ(*at % kGranule, 0u) << "alignment " << alignment;
  }
}

TEST(SymmetricAllocator, ExhaustedCapacityGivesNullopt) {
  SymmetricAllocator heap(4096);
  EXPECT_EQ(heap.allocate(4096), 0u);
  EXPECT_EQ(heap.allocate(1), std::nullopt);
  heap.release(0);
  EXPECT_EQ(heap.allocate(4097), std::nullopt);
  EXPECT_EQ(heap.allocate(4000), 0u);
  // 4000 rounds to 4032, leaving one granule.
  EXPECT_EQ(heap.allocate(64), 4032u);
  EXPECT_EQ(heap.allocate(1), std::nullopt);
}

TEST(SymmetricAllocator, FragmentedFreeSpaceDoesNotSatisfyALargerRequest) {
  SymmetricAllocator heap(4 * 64);
  auto a = heap.allocate(64);
  auto b = heap.allocate(64);
  auto c = heap.allocate(64);
  auto d = heap.allocate(64);
  ASSERT_TRUE(a && b && c && d);
  heap.release(*a);
  heap.release(*c);
  // 128 bytes are free, but not in one piece.
  EXPECT_EQ(heap.allocate(128), std::nullopt);
}

TEST(SymmetricAllocator, AlignmentThatDoesNotFitGivesNullopt) {
  SymmetricAllocator heap(8192);
  EXPECT_EQ(heap.allocate(64), 0u);
  // The only 4096-aligned start left is 4096, with 4096 bytes after it.
  EXPECT_EQ(heap.allocate(4097, 4096), std::nullopt);
  EXPECT_EQ(heap.allocate(4096, 4096), 4096u);
}

TEST(SymmetricAllocator, ZeroBytesGivesNullopt) {
  SymmetricAllocator heap(kMiB);
  EXPECT_EQ(heap.allocate(0), std::nullopt);
  EXPECT_EQ(heap.liveAllocations(), 0u);
}

TEST(SymmetricAllocator, ZeroCapacityHasRoomForNothing) {
  SymmetricAllocator heap(0);
  EXPECT_EQ(heap.allocate(1), std::nullopt);
}

TEST(SymmetricAllocator, AlignmentMustBeAPowerOfTwo) {
  SymmetricAllocator heap(kMiB);
  for (std::size_t bad : {0u, 3u, 96u, 100u, 4095u}) {
    std::string msg = test::errorMessageOf([&] { heap.allocate(64, bad); }, ErrorCode::InvalidArgument);
    EXPECT_TRUE(test::contains(msg, std::to_string(bad)));
  }
  EXPECT_EQ(heap.liveAllocations(), 0u);
}

TEST(SymmetricAllocator, ReleaseNeedsTheStartOfALiveBlock) {
  SymmetricAllocator heap(kMiB);
  auto a = heap.allocate(256);
  ASSERT_EQ(a, 0u);
  for (std::size_t bad : {1u, 64u, 255u, 4096u}) {
    std::string msg = test::errorMessageOf([&] { heap.release(bad); }, ErrorCode::InvalidArgument);
    EXPECT_TRUE(test::contains(msg, "offset " + std::to_string(bad)));
  }
  heap.release(0);
  // Twice is as wrong as never.
  test::errorMessageOf([&] { heap.release(0); }, ErrorCode::InvalidArgument);
  EXPECT_EQ(heap.bytesInUse(), 0u);
}

TEST(SymmetricAllocator, FindReturnsTheContainingBlock) {
  SymmetricAllocator heap(kMiB);
  ASSERT_EQ(heap.allocate(100), 0u);   // [0, 100) asked, [0, 128) reserved
  ASSERT_EQ(heap.allocate(64), 128u);  // [128, 192)
  ASSERT_EQ(heap.allocate(10, 4096), 4096u);

  for (std::size_t inside : {0u, 1u, 99u}) {
    auto block = heap.find(inside);
    ASSERT_TRUE(block) << inside;
    EXPECT_EQ(block->offset, 0u);
    EXPECT_EQ(block->size, 100u);
    EXPECT_EQ(block->end(), 100u);
  }
  // The rounding padding belongs to no one: a range check must stop at the size asked for.
  EXPECT_EQ(heap.find(100), std::nullopt);
  EXPECT_EQ(heap.find(127), std::nullopt);
  auto second = heap.find(191);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->offset, 128u);
  // The gap before the aligned block, and everything past the top.
  EXPECT_EQ(heap.find(192), std::nullopt);
  EXPECT_EQ(heap.find(4095), std::nullopt);
  EXPECT_EQ(heap.find(4096)->size, 10u);
  EXPECT_EQ(heap.find(4106), std::nullopt);
  EXPECT_EQ(heap.find(kMiB + 5), std::nullopt);
}

TEST(SymmetricAllocator, FindForgetsReleasedBlocks) {
  SymmetricAllocator heap(kMiB);
  auto a = heap.allocate(100);
  ASSERT_TRUE(a);
  heap.release(*a);
  EXPECT_EQ(heap.find(*a), std::nullopt);
}

TEST(SymmetricAllocator, TopIsTheEndOfTheHighestLiveBlock) {
  SymmetricAllocator heap(kMiB);
  EXPECT_EQ(heap.top(), 0u);
  auto a = heap.allocate(100);
  auto b = heap.allocate(1000);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(heap.top(), 128u + 1024);  // rounded: the heap must be mapped through the padding
  heap.release(*b);
  EXPECT_EQ(heap.top(), 128u);
  heap.release(*a);
  EXPECT_EQ(heap.top(), 0u);
}

}  // namespace
}  // namespace axon
