// The staging space's box arithmetic and host copies (src/space/box.hpp), checked against
// brute force (cell by cell, element by element) on random cases with fixed seeds; and a get's
// reassembly plan built on them (src/space/assembly.hpp).
#include "space/box.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "expect_error.hpp"
#include "space/assembly.hpp"
#include "space/space_kernels.hpp"

namespace axon::space {
namespace {

using i64 = std::int64_t;
using axon::test::contains;
using axon::test::errorMessageOf;

constexpr i64 kMax = std::numeric_limits<i64>::max();

TEST(SpaceBox, BuildsBoxesAndCountsElementsAndBytes) {
  const Box a = Box::of({0, 2}, {4, 8});
  EXPECT_EQ(a.ndim, 2);
  EXPECT_EQ(a.extent(0), 4);
  EXPECT_EQ(a.extent(1), 6);
  EXPECT_EQ(a.lo[2], 0);  // entries past ndim are 0
  EXPECT_EQ(a.hi[2], 0);
  EXPECT_EQ(volume(a), 24);
  EXPECT_EQ(byteSize(a, 8), 192);
  EXPECT_FALSE(a.empty());

  EXPECT_EQ(Box::whole({3, 5, 7}), Box::of({0, 0, 0}, {3, 5, 7}));
  EXPECT_EQ(Box::at({1, 2}, {3, 4}), Box::of({1, 2}, {4, 6}));
  EXPECT_NE(Box::of({0}, {4}), Box::of({0, 0}, {4, 1}));

  // Empty boxes hold nothing; so does the default box of no dimensions.
  EXPECT_TRUE(Box::of({0, 3}, {4, 3}).empty());
  EXPECT_EQ(volume(Box::of({0, 3}, {4, 3})), 0);
  EXPECT_EQ(volume(Box::of({5}, {2})), 0);
  EXPECT_TRUE(Box{}.empty());
  EXPECT_EQ(volume(Box{}), 0);

  // Negative coordinates are fine: only extents matter.
  EXPECT_EQ(volume(Box::of({-5, -1}, {5, 1})), 20);
  // Eight dimensions, the most.
  EXPECT_EQ(volume(Box::whole({2, 2, 2, 2, 2, 2, 2, 2})), 256);
}

TEST(SpaceBox, VolumeOverflowIsAnError) {
  const Box big = Box::whole({i64{1} << 32, i64{1} << 32});
  std::string m = errorMessageOf([&] { volume(big); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "volume overflows 64 bits"));
  // 2^62 elements fit, 2^62 * 2 bytes do not.
  const Box fits = Box::whole({i64{1} << 31, i64{1} << 31});
  EXPECT_EQ(volume(fits), i64{1} << 62);
  EXPECT_EQ(byteSize(fits, 1), i64{1} << 62);
  m = errorMessageOf([&] { byteSize(fits, 2); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "overflows 64 bits"));
  // hi - lo itself overflowing.
  m = errorMessageOf([] { volume(Box::of({-kMax}, {kMax})); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "volume overflows 64 bits"));
  // offset + count overflowing.
  m = errorMessageOf([] { Box::at({kMax - 1}, {2}); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "dimension 0"));
}

TEST(SpaceBox, OverlapsIntersectsAndContains) {
  const Box a = Box::of({0, 0}, {4, 4});
  const Box b = Box::of({2, 3}, {6, 8});
  const Box c = Box::of({4, 0}, {6, 4});  // touches a's face: no overlap (half-open)
  EXPECT_TRUE(overlaps(a, b));
  EXPECT_FALSE(overlaps(a, c));
  EXPECT_EQ(intersect(a, b), Box::of({2, 3}, {4, 4}));
  EXPECT_EQ(intersect(a, c), std::nullopt);
  EXPECT_EQ(intersect(a, a), a);
  // Different dimensions never overlap; an empty box overlaps nothing.
  EXPECT_FALSE(overlaps(Box::of({0}, {4}), Box::of({0, 0}, {4, 4})));
  EXPECT_FALSE(overlaps(a, Box::of({1, 1}, {1, 3})));

  EXPECT_TRUE(contains(a, a));
  EXPECT_TRUE(contains(a, Box::of({1, 0}, {3, 4})));
  EXPECT_FALSE(contains(a, b));
  EXPECT_FALSE(contains(a, Box::of({-1, 0}, {3, 4})));
  EXPECT_FALSE(contains(a, Box::of({0}, {4})));
  EXPECT_TRUE(contains(a, Box::of({9, 9}, {9, 10})));  // empty: nothing outside
}

TEST(SpaceBox, DescribesBoxesAndStrides) {
  EXPECT_EQ(describe(Box::of({0, 2}, {4, 8})), "[0:4, 2:8)");
  EXPECT_EQ(describe(Box::of({-3}, {7})), "[-3:7)");
  const Extents s = rowMajorByteStrides(Box::of({1, 0, 5}, {3, 4, 10}), 8);
  EXPECT_EQ(s[0], 4 * 5 * 8);
  EXPECT_EQ(s[1], 5 * 8);
  EXPECT_EQ(s[2], 8);
  EXPECT_EQ(s[3], 0);
}

TEST(SpaceBox, CheckBoxInShapeNamesWhatDimensionAndValues) {
  const Box shape = Box::whole({10, 20, 30});
  EXPECT_NO_THROW(checkBoxInShape(Box::of({0, 5, 29}, {10, 6, 30}), shape, "get of 'temp'"));

  std::string m = errorMessageOf([&] { checkBoxInShape(Box::of({0, 5, 0}, {10, 5, 30}), shape, "get of 'temp'"); },
                                 ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "get of 'temp': dimension 1: lo 5 >= hi 5"));
  m = errorMessageOf([&] { checkBoxInShape(Box::of({3, 0, 0}, {2, 1, 1}), shape, "put of 'p'"); },
                     ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "put of 'p': dimension 0: lo 3 >= hi 2"));

  m = errorMessageOf([&] { checkBoxInShape(Box::of({0, 0, 25}, {10, 20, 31}), shape, "get of 'temp'"); },
                     ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "get of 'temp': dimension 2"));
  EXPECT_TRUE(contains(m, "25:31"));
  EXPECT_TRUE(contains(m, "0:30"));
  m = errorMessageOf([&] { checkBoxInShape(Box::of({-1, 0, 0}, {1, 1, 1}), shape, "get of 'temp'"); },
                     ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "dimension 0"));
  EXPECT_TRUE(contains(m, "-1:1"));

  m = errorMessageOf([&] { checkBoxInShape(Box::of({0, 0}, {1, 1}), shape, "get of 'temp'"); },
                     ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "get of 'temp'"));
  EXPECT_TRUE(contains(m, "2 dimensions, the array has 3"));

  m = errorMessageOf([] { Box::of(std::vector<i64>(9, 0), std::vector<i64>(9, 1)); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "9 dimensions"));
  m = errorMessageOf([] { Box::of({}, {}); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "0 dimensions"));
  m = errorMessageOf([] { Box::of({0, 0}, {1}); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "lo has 2 dimensions, hi has 1"));

  const Box huge = Box::whole({kMax, kMax});
  m = errorMessageOf([&] { checkBoxInShape(Box::of({0, 0}, {i64{1} << 40, i64{1} << 40}), huge, "get of 'big'"); },
                     ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "get of 'big'"));
  EXPECT_TRUE(contains(m, "volume overflows 64 bits"));
}

// ---- subtract ---------------------------------------------------------------------------------

Box randomBox(std::mt19937_64& rng, int ndim, i64 lo, i64 hi) {
  std::uniform_int_distribution<i64> coord(lo, hi - 1);
  std::vector<i64> l(ndim), h(ndim);
  for (int d = 0; d < ndim; ++d) {
    l[d] = coord(rng);
    h[d] = l[d] + 1 + static_cast<i64>(rng() % static_cast<std::uint64_t>(hi - l[d]));
  }
  return Box::of(l, h);
}

bool holds(const Box& b, const std::vector<i64>& cell) {
  for (int d = 0; d < b.ndim; ++d) {
    if (cell[d] < b.lo[d] || cell[d] >= b.hi[d]) return false;
  }
  return true;
}

TEST(SpaceBox, SubtractLeavesExactlyTheUncoveredCellsOnce) {
  std::mt19937_64 rng(20240611);
  constexpr i64 kLo = -2, kHi = 7;  // covered boxes reach outside `from`
  int cases = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    const int ndim = 1 + static_cast<int>(rng() % 4);
    const Box from = randomBox(rng, ndim, 0, 5);
    std::vector<Box> covered;
    const int nc = static_cast<int>(rng() % 6);
    for (int k = 0; k < nc; ++k) covered.push_back(randomBox(rng, ndim, kLo, kHi));
    const std::vector<Box> parts = subtract(from, covered);
    for (const Box& p : parts) {
      ASSERT_FALSE(p.empty());
      ASSERT_TRUE(space::contains(from, p)) << describe(p) << " outside " << describe(from);
    }
    // Every cell of the grid: in exactly one part when in `from` and in no covered box, else in none.
    std::vector<i64> cell(ndim, kLo);
    for (bool more = true; more;) {
      bool expect = holds(from, cell);
      for (const Box& c : covered) expect = expect && !holds(c, cell);
      int n = 0;
      for (const Box& p : parts) n += holds(p, cell) ? 1 : 0;
      ASSERT_EQ(n, expect ? 1 : 0) << "case " << iter << ", from " << describe(from);
      more = false;
      for (int d = ndim - 1; d >= 0; --d) {
        if (++cell[d] < kHi) {
          more = true;
          break;
        }
        cell[d] = kLo;
      }
    }
    ++cases;
  }
  EXPECT_EQ(cases, 4000);
  // Edge cases: nothing covered, everything covered, an empty `from`.
  const Box f = Box::of({0, 0}, {3, 3});
  EXPECT_EQ(subtract(f, {}), std::vector<Box>{f});
  EXPECT_TRUE(subtract(f, {Box::of({-1, -1}, {5, 5})}).empty());
  EXPECT_TRUE(subtract(Box::of({0, 2}, {3, 2}), {}).empty());
  errorMessageOf([&] { subtract(f, {Box::of({0}, {1})}); }, ErrorCode::InvalidArgument);
}

// ---- planCopy / copyRegion --------------------------------------------------------------------

// Byte offset of element `cell` in a dense row-major array stored as box `b`.
i64 offsetIn(const Box& b, const std::vector<i64>& cell, i64 eb) {
  i64 off = 0;
  for (int d = 0; d < b.ndim; ++d) off = off * b.extent(d) + (cell[d] - b.lo[d]);
  return off * eb;
}

void bruteForceCopy(const Box& src, const Box& dst, const Box& region, i64 eb, const std::uint8_t* s, std::uint8_t* t) {
  if (region.empty()) return;
  std::vector<i64> cell(region.lo.begin(), region.lo.begin() + region.ndim);
  for (bool more = true; more;) {
    std::memcpy(t + offsetIn(dst, cell, eb), s + offsetIn(src, cell, eb), static_cast<std::size_t>(eb));
    more = false;
    for (int d = region.ndim - 1; d >= 0; --d) {
      if (++cell[d] < region.hi[d]) {
        more = true;
        break;
      }
      cell[d] = region.lo[d];
    }
  }
}

// A box around `region`, reaching 0..2 further on each side.
Box around(std::mt19937_64& rng, const Box& region) {
  Box b = region;
  for (int d = 0; d < region.ndim; ++d) {
    b.lo[d] -= static_cast<i64>(rng() % 3);
    b.hi[d] += static_cast<i64>(rng() % 3);
  }
  return b;
}

std::vector<std::uint8_t> randomBytes(std::mt19937_64& rng, i64 n) {
  std::vector<std::uint8_t> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<std::uint8_t>(rng());
  return v;
}

TEST(SpaceBox, PlannedCopiesMatchElementByElementCopies) {
  std::mt19937_64 rng(7);
  const std::size_t sizes[] = {1, 2, 4, 8};
  for (int iter = 0; iter < 3000; ++iter) {
    const int ndim = 1 + static_cast<int>(rng() % 5);
    const i64 eb = static_cast<i64>(sizes[rng() % 4]);
    const Box region = randomBox(rng, ndim, -3, 4);
    const Box src = around(rng, region);
    const Box dst = around(rng, region);
    const CopyRegion c = planCopy(src, dst, region, static_cast<std::size_t>(eb));
    ASSERT_GE(c.ndim, 1);
    ASSERT_LE(c.ndim, ndim);
    ASSERT_EQ(c.bytes(), volume(region) * eb);

    const std::vector<std::uint8_t> s = randomBytes(rng, byteSize(src, eb));
    std::vector<std::uint8_t> got = randomBytes(rng, byteSize(dst, eb));
    std::vector<std::uint8_t> want = got;
    copyRegion(c, s.data(), got.data());
    bruteForceCopy(src, dst, region, eb, s.data(), want.data());
    ASSERT_EQ(got, want) << "case " << iter << ": " << describe(region) << " from " << describe(src) << " to "
                         << describe(dst) << ", " << eb << "-byte elements, planned ndim " << c.ndim;
  }
}

TEST(SpaceBox, PlanCopyMergesContiguousDimensions) {
  const Box a = Box::whole({4, 8});
  // Whole rows: one run.
  CopyRegion c = planCopy(a, a, Box::of({1, 0}, {3, 8}), 4);
  EXPECT_EQ(c.ndim, 1);
  EXPECT_EQ(c.extent[0], 2 * 8 * 4);
  EXPECT_EQ(c.srcOffset, 8 * 4);
  EXPECT_EQ(c.runs(), 1);
  // The whole box, in 5 dimensions: one run too.
  const Box five = Box::whole({2, 3, 4, 5, 6});
  c = planCopy(five, five, five, 8);
  EXPECT_EQ(c.ndim, 1);
  EXPECT_EQ(c.extent[0], volume(five) * 8);
  // Part of each row: runs of 3 elements, one per row.
  c = planCopy(a, a, Box::of({0, 2}, {4, 5}), 4);
  EXPECT_EQ(c.ndim, 2);
  EXPECT_EQ(c.extent[0], 4);
  EXPECT_EQ(c.extent[1], 12);
  EXPECT_EQ(c.srcStride[0], 32);
  EXPECT_EQ(c.srcOffset, 8);
  // Into a dense destination of the region's own shape: strides differ per side.
  c = planCopy(a, Box::of({0, 2}, {4, 5}), Box::of({0, 2}, {4, 5}), 4);
  EXPECT_EQ(c.ndim, 2);
  EXPECT_EQ(c.srcStride[0], 32);
  EXPECT_EQ(c.dstStride[0], 12);
  EXPECT_EQ(c.dstOffset, 0);
  // Full in dimension 1, not in 2: dimensions 0 and 1 fold into one outer dimension.
  const Box b = Box::whole({2, 3, 4});
  c = planCopy(b, b, Box::of({0, 0, 1}, {2, 3, 3}), 2);
  EXPECT_EQ(c.ndim, 2);
  EXPECT_EQ(c.extent[0], 6);
  EXPECT_EQ(c.extent[1], 4);
  EXPECT_EQ(c.srcStride[0], 8);
  // Dimensions of extent 1 drop out: a slab of one element per row.
  c = planCopy(b, b, Box::of({1, 0, 2}, {2, 3, 3}), 8);
  EXPECT_EQ(c.ndim, 2);
  EXPECT_EQ(c.extent[0], 3);
  EXPECT_EQ(c.extent[1], 8);
  EXPECT_EQ(c.srcOffset, (12 + 2) * 8);
  // An empty region: nothing to copy.
  c = planCopy(a, a, Box::of({1, 1}, {1, 4}), 4);
  EXPECT_EQ(c.bytes(), 0);
  // A region outside either side, or of other dimensions, is an error.
  std::string m = errorMessageOf([&] { planCopy(a, Box::whole({2, 8}), Box::of({1, 0}, {3, 8}), 4); },
                                 ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "destination"));
  m = errorMessageOf([&] { planCopy(Box::whole({2, 8}), a, Box::of({1, 0}, {3, 8}), 4); },
                     ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(m, "source"));
  errorMessageOf([&] { planCopy(a, a, Box::of({0}, {1}), 4); }, ErrorCode::InvalidArgument);
  errorMessageOf([&] { planCopy(a, a, a, 0); }, ErrorCode::InvalidArgument);
}

// ---- copyRegions ------------------------------------------------------------------------------

struct Pieces {
  std::vector<std::uint8_t> src;
  std::vector<std::vector<std::uint8_t>> dst;
  std::vector<HostRegionCopy> copies;
};

// `count` random regions of one source array, each copied into its own dense buffer (pre-filled
// with random bytes, so that bytes written outside a region would show).
Pieces randomPieces(std::mt19937_64& rng, const Box& array, int count, i64 eb) {
  Pieces p;
  p.src = randomBytes(rng, byteSize(array, eb));
  for (int k = 0; k < count; ++k) {
    Box region = array;
    for (int d = 0; d < array.ndim; ++d) {
      region.lo[d] = array.lo[d] + static_cast<i64>(rng() % static_cast<std::uint64_t>(array.extent(d)));
      region.hi[d] = region.lo[d] + 1 + static_cast<i64>(rng() % static_cast<std::uint64_t>(array.hi[d] - region.lo[d]));
    }
    const Box dst = around(rng, region);
    p.dst.push_back(randomBytes(rng, byteSize(dst, eb)));
    p.copies.push_back({planCopy(array, dst, region, static_cast<std::size_t>(eb)), p.src.data(), nullptr});
  }
  for (std::size_t k = 0; k < p.copies.size(); ++k) p.copies[k].dst = p.dst[k].data();
  return p;
}

TEST(SpaceBox, CopyRegionsOnThreadsMatchesOneThread) {
  std::mt19937_64 rng(99);
  for (int iter = 0; iter < 200; ++iter) {
    const int ndim = 1 + static_cast<int>(rng() % 4);
    const i64 eb = i64{1} << (rng() % 4);
    const Box array = randomBox(rng, ndim, 0, 6);
    Pieces p = randomPieces(rng, array, 1 + static_cast<int>(rng() % 8), eb);
    std::vector<std::vector<std::uint8_t>> want = p.dst;
    for (std::size_t k = 0; k < p.copies.size(); ++k) copyRegion(p.copies[k].region, p.src.data(), want[k].data());
    for (int threads : {1, 2, 4}) {
      Pieces q = p;
      for (std::size_t k = 0; k < q.copies.size(); ++k) {
        q.copies[k].src = q.src.data();
        q.copies[k].dst = q.dst[k].data();
      }
      // Small copies: one thread whatever was asked.
      EXPECT_EQ(copyRegions(q.copies, threads), 1);
      ASSERT_EQ(q.dst, want) << "case " << iter << ", " << threads << " threads";
    }
  }
  errorMessageOf([] { copyRegions({}, -1); }, ErrorCode::InvalidArgument);
  EXPECT_EQ(copyRegions({}, 4), 1);
}

TEST(SpaceBox, LargeCopiesAreSharedByThreads) {
  std::mt19937_64 rng(5);
  // One long run (a whole 3 MiB array), many short runs (a column of 8-byte elements), and a
  // 3-D region of medium runs: cuts fall inside runs and inside regions.
  const Box flat = Box::whole({3 << 20});
  const Box tall = Box::whole({1 << 16, 4});
  const Box cube = Box::whole({64, 64, 64});
  const std::vector<std::uint8_t> flatSrc = randomBytes(rng, byteSize(flat, 1));
  const std::vector<std::uint8_t> tallSrc = randomBytes(rng, byteSize(tall, 8));
  const std::vector<std::uint8_t> cubeSrc = randomBytes(rng, byteSize(cube, 4));
  const Box column = Box::of({0, 1}, {1 << 16, 2});
  const Box inner = Box::of({3, 5, 7}, {61, 60, 50});

  for (int threads : {1, 2, 4, 0}) {
    std::vector<std::uint8_t> a(flatSrc.size(), 0), b(static_cast<std::size_t>(byteSize(column, 8)), 0),
        c(static_cast<std::size_t>(byteSize(inner, 4)), 0);
    std::vector<HostRegionCopy> copies = {
        {planCopy(flat, flat, flat, 1), flatSrc.data(), a.data()},
        {planCopy(tall, column, column, 8), tallSrc.data(), b.data()},
        {planCopy(cube, inner, inner, 4), cubeSrc.data(), c.data()},
    };
    ASSERT_EQ(copies[0].region.ndim, 1);
    ASSERT_EQ(copies[1].region.extent[1], 8);
    const int used = copyRegions(copies, threads);
    if (threads > 0) {
      EXPECT_EQ(used, threads);
    }
    EXPECT_GE(used, 1);
    EXPECT_LE(used, 16);

    std::vector<std::uint8_t> wantB(b.size(), 0), wantC(c.size(), 0);
    bruteForceCopy(tall, column, column, 8, tallSrc.data(), wantB.data());
    bruteForceCopy(cube, inner, inner, 4, cubeSrc.data(), wantC.data());
    EXPECT_TRUE(a == flatSrc) << threads << " threads";
    EXPECT_TRUE(b == wantB) << threads << " threads";
    EXPECT_TRUE(c == wantC) << threads << " threads";
  }

  // One huge run alone is split by bytes.
  std::vector<std::uint8_t> a(flatSrc.size(), 0);
  EXPECT_EQ(copyRegions({{planCopy(flat, flat, flat, 1), flatSrc.data(), a.data()}}, 4), 4);
  EXPECT_TRUE(a == flatSrc);
}

// The reassembly table's summary (space/region_runs.cpp): runs numbered in order, the longest
// run, and the widest unit dividing every run's source and destination address and its length,
// checked run by run against the planned copies.
TEST(SpaceBox, RunSummaryNumbersRunsAndFindsTheWidestUnit) {
  std::mt19937_64 rng(11);
  const std::size_t sizes[] = {1, 2, 4, 8, 16};
  for (int iter = 0; iter < 500; ++iter) {
    const i64 eb = static_cast<i64>(sizes[rng() % 5]);
    std::vector<kernels::RegionCopy> table;
    const int pieces = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < pieces; ++k) {
      const int ndim = 1 + static_cast<int>(rng() % 4);
      const Box region = randomBox(rng, ndim, -3, 4);
      kernels::RegionCopy rc;
      rc.region = planCopy(around(rng, region), around(rng, region), region, static_cast<std::size_t>(eb));
      rc.src = 4096 * (1 + rng() % 8) + (rng() % 3 == 0 ? rng() % 32 : 0);
      rc.dst = 8192 * (1 + rng() % 8) + (rng() % 3 == 0 ? rng() % 32 : 0);
      table.push_back(rc);
    }
    const kernels::RunSummary s = kernels::numberRuns(table.data(), static_cast<int>(table.size()));
    i64 runs = 0, longest = 0;
    bool widerWorks = s.unitBytes < 16;
    for (const kernels::RegionCopy& rc : table) {
      ASSERT_EQ(rc.firstRun, runs);
      const CopyRegion& g = rc.region;
      runs += g.runs();
      const i64 len = g.extent[g.ndim - 1];
      longest = std::max(longest, len);
      for (i64 r = 0; r < g.runs(); ++r) {  // every run's addresses, the unit and twice the unit
        i64 q = r, so = g.srcOffset, dof = g.dstOffset;
        for (int d = g.ndim - 2; d >= 0; --d) {
          so += (q % g.extent[d]) * g.srcStride[d];
          dof += (q % g.extent[d]) * g.dstStride[d];
          q /= g.extent[d];
        }
        for (const std::uint64_t v : {rc.src + static_cast<std::uint64_t>(so), rc.dst + static_cast<std::uint64_t>(dof),
                                      static_cast<std::uint64_t>(len)}) {
          ASSERT_EQ(v % static_cast<std::uint64_t>(s.unitBytes), 0u) << "case " << iter;
          if (v % (2 * static_cast<std::uint64_t>(s.unitBytes))) widerWorks = false;
        }
      }
    }
    EXPECT_EQ(s.runs, runs) << "case " << iter;
    EXPECT_EQ(s.maxRunBytes, longest) << "case " << iter;
    EXPECT_FALSE(widerWorks) << "case " << iter << ": a unit of " << 2 * s.unitBytes << " bytes divides every run";
  }
  // The 5-D case of the benchmark: a box starting 3 float64 into 8^5 pieces has 8-byte units.
  const Box piece = Box::of({0, 0, 0, 0, 0}, {8, 8, 8, 8, 8});
  kernels::RegionCopy rc;
  rc.region = planCopy(piece, Box::of({3, 3, 3, 3, 3}, {29, 29, 29, 29, 29}),
                       Box::of({3, 3, 3, 3, 3}, {8, 8, 8, 8, 8}), 8);
  rc.src = 1 << 20;
  rc.dst = 2 << 20;
  const kernels::RunSummary s = kernels::numberRuns(&rc, 1);
  EXPECT_EQ(s.unitBytes, 8);
  EXPECT_EQ(s.maxRunBytes, 40);
  EXPECT_EQ(s.runs, 5 * 5 * 5 * 5);
  EXPECT_EQ(kernels::numberRuns(nullptr, 0).runs, 0);
}

// A get's reassembly plan (space/assembly.hpp): fragments of a mapped server are read in place
// for a host get; every other one lands in staging, at aligned offsets, in order.
TEST(SpaceBox, AssemblyPlanStagesWhatIsNotReadInPlace) {
  const Box box = Box::of({0, 0}, {4, 8});
  auto fragment = [](i64 lo, i64 hi) {
    Fragment f;
    f.piece = Box::of({lo, 0}, {hi, 8});
    f.rangeBytes = static_cast<std::uint64_t>((hi - lo) * 8 * 8);
    return f;
  };
  const std::vector<FragmentSource> sources = {{0, 7, true, {fragment(0, 2)}},
                                               {1, 9, false, {fragment(2, 3), fragment(3, 4)}}};
  const AssemblyPlan host = planAssembly(sources, box, 8, false);
  ASSERT_EQ(host.sources.size(), 2u);
  ASSERT_EQ(host.sources[1].size(), 2u);
  EXPECT_EQ(host.fragments, 3u);
  EXPECT_FALSE(host.sources[0][0].staged) << "a host get reads a mapped server's fragment in place";
  EXPECT_TRUE(host.sources[1][0].staged);
  EXPECT_EQ(host.sources[1][0].at, 0u);
  EXPECT_EQ(host.sources[1][1].at, kStagingAlign) << "64 bytes, then the next aligned offset";
  EXPECT_EQ(host.stagingBytes, kStagingAlign + 64);
  const AssemblyPlan device = planAssembly(sources, box, 8, true);
  EXPECT_TRUE(device.sources[0][0].staged) << "the kernel reads device staging only";
  EXPECT_EQ(device.sources[1][0].at, kStagingAlign);
  EXPECT_EQ(device.sources[1][1].at, 2 * kStagingAlign);
  EXPECT_EQ(device.stagingBytes, 2 * kStagingAlign + 64);
  for (std::size_t s = 0; s < sources.size(); ++s) {
    for (std::size_t i = 0; i < sources[s].fragments.size(); ++i) {
      const Box& piece = sources[s].fragments[i].piece;
      const CopyRegion want = planCopy(piece, box, piece, 8);
      const CopyRegion& got = device.sources[s][i].region;
      EXPECT_EQ(got.srcOffset, want.srcOffset);
      EXPECT_EQ(got.dstOffset, want.dstOffset);
      EXPECT_EQ(got.bytes(), want.bytes());
    }
  }
}

}  // namespace
}  // namespace axon::space
