// The piece index of a staging server's version (space/piece_index.hpp): the pieces it returns for
// a box are exactly those a scan of every piece finds, after any inserts and erases; and a row cut
// into many small pieces costs what the pieces touched cost, not a scan of the row per put.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "axon/error.hpp"
#include "space/piece_index.hpp"
#include "space/store.hpp"

namespace axon::space {
namespace {

Box randomBox(std::mt19937_64& rng, int ndim, std::int64_t extent) {
  std::vector<std::int64_t> lo(ndim), hi(ndim);
  for (int d = 0; d < ndim; ++d) {
    // Mostly short extents, some long ones, so that length classes mix.
    const std::int64_t len = rng() % 8 == 0 ? 1 + static_cast<std::int64_t>(rng() % extent)
                                            : 1 + static_cast<std::int64_t>(rng() % 4);
    lo[d] = static_cast<std::int64_t>(rng() % extent);
    hi[d] = std::min(extent, lo[d] + len);
  }
  return Box::of(lo, hi);
}

std::vector<std::uint64_t> scan(const std::vector<std::pair<Box, std::uint64_t>>& all, const Box& q) {
  std::vector<std::uint64_t> out;
  for (const auto& [b, k] : all) {
    if (overlaps(b, q)) out.push_back(k);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SpacePieceIndex, FindsExactlyWhatAScanFindsThroughInsertsAndErases) {
  for (int ndim = 1; ndim <= 4; ++ndim) {
    SCOPED_TRACE(ndim);
    std::mt19937_64 rng(100 + ndim);
    PieceIndex index;
    std::vector<std::pair<Box, std::uint64_t>> all;
    std::uint64_t next = 1;
    for (int round = 0; round < 3000; ++round) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 5 || all.empty()) {
        const Box b = randomBox(rng, ndim, 40);
        index.insert(b, next);
        all.emplace_back(b, next++);
      } else if (op < 7) {
        const std::size_t i = rng() % all.size();
        ASSERT_TRUE(index.erase(all[i].first, all[i].second));
        EXPECT_FALSE(index.erase(all[i].first, all[i].second)) << "erased twice";
        all.erase(all.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        const Box q = randomBox(rng, ndim, 40);
        std::vector<std::uint64_t> got = index.overlapping(q);
        std::sort(got.begin(), got.end());
        const std::vector<std::uint64_t> want = scan(all, q);
        ASSERT_EQ(got, want) << describe(q);
        EXPECT_EQ(index.anyOverlapping(q).has_value(), !want.empty());
      }
      ASSERT_EQ(index.size(), all.size());
    }
    for (const auto& [b, k] : all) ASSERT_TRUE(index.erase(b, k));
    EXPECT_TRUE(index.empty());
    EXPECT_TRUE(index.overlapping(Box::whole(std::vector<std::int64_t>(ndim, 40))).empty());
  }
}

TEST(SpacePieceIndex, FindsPiecesAtTheEdgesOfTheCoordinateRange) {
  PieceIndex index;
  const std::int64_t big = INT64_MAX / 2;
  index.insert(Box::of({0}, {big}), 1);
  index.insert(Box::of({big}, {big + 1}), 2);
  EXPECT_EQ(index.overlapping(Box::of({big - 1}, {big + 1})).size(), 2u);
  EXPECT_EQ(index.overlapping(Box::of({big + 1}, {big + 2})).size(), 0u);
}

// 24,000 pieces of one row (the case that took 56 s of the server's thread with a scan per put),
// then a get of the whole row and one of a single piece.
TEST(SpaceStore, ManySmallPiecesOfOneRowCostWhatTheyTouch) {
  constexpr std::int64_t kPieces = 24000;
  Store s(std::uint64_t{1} << 30, Policy::Reject, 0, 1);
  Variable v;
  v.name = "row";
  v.shape = Box::whole({1, kPieces * 4});
  s.define(v);
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < kPieces; ++i) {
    const Box b = Box::of({0, i * 4}, {1, i * 4 + 4});
    auto r = s.reserve(1, "row", 1, b, 32);
    ASSERT_TRUE(r.has_value());
    s.commit(r->id);
  }
  const Store::Lookup whole = s.lookup("row", 1, {v.shape});
  EXPECT_EQ(whole.fragments.size(), static_cast<std::size_t>(kPieces));
  EXPECT_TRUE(whole.missing.empty());
  const Store::Lookup one = s.lookup("row", 1, {Box::of({0, 401}, {1, 403})});
  ASSERT_EQ(one.fragments.size(), 1u);
  EXPECT_EQ(one.fragments[0].piece, Box::of({0, 400}, {1, 404}));
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(sec, 2.0) << "24,000 puts and two lookups took " << sec << " s";
  // An overlap is still found among them.
  EXPECT_THROW(s.reserve(1, "row", 1, Box::of({0, 7}, {1, 9}), 16), Error);
}

// A 2-D grid of pieces with one hole: the exact missing box when asked for, the whole box when
// only "is anything missing" matters (a waiting get checks that at every commit).
TEST(SpaceStore, MissingPartsAreListedExactlyOrOnlyNoticed) {
  Store s(std::uint64_t{1} << 30, Policy::Reject, 0, 1);
  Variable v;
  v.name = "grid";
  v.shape = Box::whole({200, 200});
  s.define(v);
  for (std::int64_t i = 0; i < 200; i += 2) {
    for (std::int64_t j = 0; j < 200; j += 2) {
      if (i == 100 && j == 50) continue;
      const Box b = Box::of({i, j}, {i + 2, j + 2});
      auto r = s.reserve(1, "grid", 0, b, 32);
      ASSERT_TRUE(r.has_value());
      s.commit(r->id);
    }
  }
  const Store::Lookup exact = s.lookup("grid", 0, {v.shape});
  ASSERT_EQ(exact.missing.size(), 1u);
  EXPECT_EQ(exact.missing[0], Box::of({100, 50}, {102, 52}));
  EXPECT_EQ(exact.fragments.size(), 9999u);
  const Store::Lookup noticed = s.lookup("grid", 0, {v.shape}, false);
  ASSERT_EQ(noticed.missing.size(), 1u);
  EXPECT_EQ(noticed.missing[0], v.shape);
}

}  // namespace
}  // namespace axon::space
