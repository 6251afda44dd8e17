#include "transport/region_map.hpp"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

namespace axon {
namespace {

using Piece = std::tuple<std::size_t, std::uint64_t, std::uint64_t>;

std::vector<Piece> pieces(const RegionMap& m, std::uint64_t offset, std::uint64_t bytes, std::uint64_t* uncovered) {
  std::vector<Piece> out;
  *uncovered = m.forEachPiece(offset, bytes, [&](std::size_t i, std::uint64_t o, std::uint64_t b) {
    out.emplace_back(i, o, b);
  });
  return out;
}

TEST(RegionMap, OneAccessIsCutAtEveryRangeBoundary) {
  RegionMap m;
  // Added out of order: indices follow the order added, pieces follow offsets.
  EXPECT_TRUE(m.add(1 << 20, 1 << 20));
  EXPECT_TRUE(m.add(0, 1 << 20));
  EXPECT_TRUE(m.add(2 << 20, 4 << 20));
  std::uint64_t uncovered = 0;
  auto p = pieces(m, (1 << 20) - 100, (1 << 20) + 200, &uncovered);
  EXPECT_EQ(uncovered, RegionMap::kCovered);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0], Piece(1, (1 << 20) - 100, 100));
  EXPECT_EQ(p[1], Piece(0, 1 << 20, 1 << 20));
  EXPECT_EQ(p[2], Piece(2, 2 << 20, 100));
}

TEST(RegionMap, AnAccessInsideOneRangeIsOnePiece) {
  RegionMap m;
  m.add(4096, 8192);
  std::uint64_t uncovered = 0;
  auto p = pieces(m, 4096 + 8, 8, &uncovered);
  EXPECT_EQ(uncovered, RegionMap::kCovered);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], Piece(0, 4104, 8));
  // The last byte of the range, and an empty access (no pieces at all).
  p = pieces(m, 4096 + 8191, 1, &uncovered);
  EXPECT_EQ(uncovered, RegionMap::kCovered);
  EXPECT_EQ(p.size(), 1u);
  p = pieces(m, 0, 0, &uncovered);
  EXPECT_EQ(uncovered, RegionMap::kCovered);
  EXPECT_TRUE(p.empty());
}

TEST(RegionMap, UncoveredBytesAreReportedWhereTheyStart) {
  RegionMap m;
  m.add(0, 100);
  m.add(200, 100);
  std::uint64_t uncovered = 0;
  // Before every range, in the gap, and past the end.
  EXPECT_TRUE(pieces(m, 50, 100, &uncovered).size() == 1u);
  EXPECT_EQ(uncovered, 100u);
  pieces(m, 150, 10, &uncovered);
  EXPECT_EQ(uncovered, 150u);
  pieces(m, 250, 100, &uncovered);
  EXPECT_EQ(uncovered, 300u);
  RegionMap empty;
  pieces(empty, 8, 8, &uncovered);
  EXPECT_EQ(uncovered, 8u);
}

TEST(RegionMap, TheSameRangeTwiceIsKeptOnceAndOverlapsAreRefused) {
  RegionMap m;
  EXPECT_TRUE(m.add(0, 100));
  EXPECT_FALSE(m.add(0, 100));
  EXPECT_EQ(m.size(), 1u);
  EXPECT_THROW(m.add(50, 100), std::invalid_argument);
  EXPECT_THROW(m.add(0, 50), std::invalid_argument);
  EXPECT_THROW(m.add(100, 0), std::invalid_argument);
  EXPECT_THROW(m.add(~std::uint64_t{0} - 10, 100), std::invalid_argument);
  EXPECT_TRUE(m.add(100, 1));
  EXPECT_EQ(m[1].offset, 100u);
  EXPECT_EQ(m[1].end(), 101u);
}

}  // namespace
}  // namespace axon
