// Splitting copies at the edges of host registrations (src/gpu/pinned_ranges.hpp).
#include "gpu/pinned_ranges.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace {

using axon::gpu::PinnedRanges;

const char* at(std::uintptr_t a) { return reinterpret_cast<const char*>(a); }

TEST(PinnedRanges, PieceStopsAtTheEndOfTheRangeItStartsIn) {
  PinnedRanges r;
  r.add(at(0x10000), 0x1000);
  r.add(at(0x11000), 0x3000);  // adjacent: a separate registration
  EXPECT_EQ(r.pieceBytes(at(0x10000), 0x800), 0x800u);
  EXPECT_EQ(r.pieceBytes(at(0x10800), 0x2000), 0x800u);
  EXPECT_EQ(r.pieceBytes(at(0x11000), 0x3000), 0x3000u);
  EXPECT_EQ(r.pieceBytes(at(0x11000), 0x5000), 0x3000u);
}

TEST(PinnedRanges, PieceStopsWhereAPinnedRangeBeginsAndOutsideIsWhole) {
  PinnedRanges r;
  r.add(at(0x20000), 0x1000);
  EXPECT_EQ(r.pieceBytes(at(0x1F000), 0x4000), 0x1000u);  // pageable, then pinned
  EXPECT_EQ(r.pieceBytes(at(0x30000), 0x4000), 0x4000u);  // past every range
  EXPECT_EQ(r.pieceBytes(at(0x1000), 0x1000), 0x1000u);   // before every range
  r.remove(at(0x20000));
  EXPECT_EQ(r.pieceBytes(at(0x1F000), 0x4000), 0x4000u);
}

TEST(PinnedRanges, ForEachPieceCoversTheCopyAndSplitsOnBothSides) {
  PinnedRanges r;
  r.add(at(0x100000), 0x3000);
  r.add(at(0x103000), 0x5000);   // source side edge at 0x103000
  r.add(at(0x200000), 0x1800);
  r.add(at(0x201800), 0x10000);  // destination side edge at 0x201800
  std::vector<std::pair<std::uintptr_t, std::size_t>> pieces;
  std::uintptr_t nextDst = 0x200000, nextSrc = 0x102000;
  r.forEachPiece(reinterpret_cast<void*>(0x200000), at(0x102000), 0x4000,
                 [&](void* d, const void* s, std::size_t n) {
                   EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d), nextDst);
                   EXPECT_EQ(reinterpret_cast<std::uintptr_t>(s), nextSrc);
                   nextDst += n;
                   nextSrc += n;
                   pieces.emplace_back(reinterpret_cast<std::uintptr_t>(d), n);
                 });
  // Source edge after 0x1000 bytes, destination edge after 0x1800.
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].second, 0x1000u);
  EXPECT_EQ(pieces[1].second, 0x800u);
  EXPECT_EQ(pieces[2].second, 0x2800u);
  EXPECT_EQ(nextDst, 0x204000u);
}

TEST(PinnedRanges, NothingRegisteredIsOneCopyAndZeroBytesNone) {
  PinnedRanges r;
  int calls = 0;
  r.forEachPiece(reinterpret_cast<void*>(0x5000), at(0x9000), 1 << 20, [&](void*, const void*, std::size_t n) {
    ++calls;
    EXPECT_EQ(n, std::size_t{1} << 20);
  });
  EXPECT_EQ(calls, 1);
  r.forEachPiece(reinterpret_cast<void*>(0x5000), at(0x9000), 0, [&](void*, const void*, std::size_t) { ++calls; });
  EXPECT_EQ(calls, 1);
}

}  // namespace
