// The host arithmetic of the applications in examples/: Jacobi's row decomposition and visiting
// order, the in-situ workflow's statistics, the streaming broadcast's frame checks, the .npy header
// the examples write results with, and their argument parsing.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "../../examples/common/args.hpp"
#include "../../examples/common/npy.hpp"
#include "../../examples/frame_broadcast/frames.hpp"
#include "../../examples/insitu/insitu_model.hpp"
#include "../../examples/jacobi/jacobi_problem.hpp"

namespace jac = axon::examples::jacobi;

TEST(JacobiSlabs, CoverEveryRowOnceAndDifferByAtMostOne) {
  for (long n = 1; n <= 70; ++n)
    for (int pes = 1; pes <= std::min<long>(n, 9); ++pes) {
      long next = 0, smallest = n, largest = 0;
      for (int pe = 0; pe < pes; ++pe) {
        const jac::Slab s = jac::slabOf(n, pes, pe);
        EXPECT_EQ(s.first, next) << "n " << n << " pes " << pes << " pe " << pe;
        next = s.first + s.rows;
        smallest = std::min(smallest, s.rows);
        largest = std::max(largest, s.rows);
      }
      EXPECT_EQ(next, n);
      EXPECT_LE(largest - smallest, 1);
      EXPECT_GE(smallest, 1);
      EXPECT_EQ(jac::decompose(n, pes, 0).layout.maxRows, largest);  // the symmetric size fits all
    }
}

TEST(JacobiSlabs, NeighboursAndRefusals) {
  const jac::Decomposition mid = jac::decompose(10, 3, 1);
  EXPECT_EQ(mid.up, 0);
  EXPECT_EQ(mid.down, 2);
  EXPECT_EQ(mid.slab.first, 4);
  EXPECT_EQ(mid.slab.rows, 3);
  EXPECT_EQ(mid.rowsOf(0), 4);
  EXPECT_EQ(jac::decompose(10, 3, 0).up, -1);
  EXPECT_EQ(jac::decompose(10, 3, 2).down, -1);
  EXPECT_THROW(jac::decompose(2, 3, 0), std::invalid_argument);
  EXPECT_THROW(jac::decompose(0, 1, 0), std::invalid_argument);
}

TEST(JacobiSlabs, KernelsVisitEveryRowOnceBoundaryRowsFirst) {
  for (long rows = 1; rows <= 40; ++rows) {
    std::set<long> seen;
    for (long step = 0; step < rows; ++step) seen.insert(jac::rowAtStep(step, rows));
    EXPECT_EQ(static_cast<long>(seen.size()), rows);
    EXPECT_EQ(*seen.begin(), 1);
    EXPECT_EQ(*seen.rbegin(), rows);
    EXPECT_EQ(jac::rowAtStep(0, rows), 1);
    if (rows > 1) {
      EXPECT_EQ(jac::rowAtStep(1, rows), rows);
    }
  }
}

TEST(JacobiSerial, ConservesTheBoundaryAndStaysBetweenZeroAndOne) {
  const std::vector<double> u = jac::solveSerial(9, 50);
  ASSERT_EQ(u.size(), 81u);
  for (double v : u) {
    EXPECT_GE(v, 0.0);
    EXPECT_LT(v, 1.0);
  }
  // Left-right symmetry of the problem holds exactly: the stencil adds left and right last.
  for (long r = 0; r < 9; ++r)
    for (long c = 0; c < 9; ++c) EXPECT_NEAR(u[r * 9 + c], u[r * 9 + (8 - c)], 1e-15);
  // One sweep from zero: only the row under the hot boundary warms, by 0.25.
  const std::vector<double> one = jac::solveSerial(3, 1);
  EXPECT_EQ(one[0], 0.25);
  EXPECT_EQ(one[3], 0.0);
}

TEST(Npy, HeaderIsPaddedToSixtyFourBytesAndNamesTheShape) {
  for (const auto& shape : std::vector<std::vector<std::size_t>>{{5}, {1024, 1024}, {2, 3, 4}, {}}) {
    const std::string h = axon::examples::npyHeader("<f8", shape);
    EXPECT_EQ(h.size() % 64, 0u);
    EXPECT_EQ(h.substr(0, 6), "\x93NUMPY");
    const std::size_t dictLen = static_cast<unsigned char>(h[8]) | static_cast<unsigned char>(h[9]) << 8;
    EXPECT_EQ(dictLen + 10, h.size());
    EXPECT_EQ(h.back(), '\n');
  }
  EXPECT_NE(axon::examples::npyHeader("<f8", {5}).find("'shape': (5,)"), std::string::npos);
  EXPECT_NE(axon::examples::npyHeader("<f4", {2, 3}).find("'shape': (2, 3)"), std::string::npos);
}

namespace is = axon::examples::insitu;

TEST(InsituStatistics, BinsClampAndSplitTheRangeEvenly) {
  const is::Range r{0.0, 1.0};
  EXPECT_EQ(is::binOf(-5.0, r, 16), 0);
  EXPECT_EQ(is::binOf(0.0, r, 16), 0);
  EXPECT_EQ(is::binOf(0.0625, r, 16), 1);
  EXPECT_EQ(is::binOf(0.999, r, 16), 15);
  EXPECT_EQ(is::binOf(1.0, r, 16), 15);
  EXPECT_EQ(is::binOf(7.0, r, 16), 15);
  EXPECT_EQ(is::binOf(0.0, is::rangeOf(1), 4), 2);  // change: [-0.25, 0.25)
}

TEST(InsituStatistics, SummariesOfSplitDataMergeToTheWholeAndDifferencesAreNamed) {
  std::vector<double> v;
  for (int i = 0; i < 1000; ++i) v.push_back(is::initialTemperature(i, 3 * i, 7));
  const is::Summary whole = is::summarise(v.data(), v.size(), 0, 8);
  const is::Summary a = is::summarise(v.data(), 400, 0, 8), b = is::summarise(v.data() + 400, 600, 0, 8);
  is::Summary merged{std::min(a.min, b.min), std::max(a.max, b.max), a.sum + b.sum, a.cells + b.cells, a.hist};
  for (std::size_t i = 0; i < merged.hist.size(); ++i) merged.hist[i] += b.hist[i];
  EXPECT_EQ(is::difference(whole, merged), "");
  std::uint64_t counted = 0;
  for (auto h : whole.hist) counted += h;
  EXPECT_EQ(counted, 1000u);
  is::Summary off = merged;
  ++off.hist[3];
  EXPECT_NE(is::difference(whole, off).find("histogram bin 3"), std::string::npos);
  off = merged;
  off.max = 2;
  EXPECT_NE(is::difference(whole, off).find("max"), std::string::npos);
  off = merged;
  off.sum += 1e-6;
  EXPECT_NE(is::difference(whole, off).find("sum"), std::string::npos);
}

TEST(InsituShares, CoverTheAxis) {
  for (long n = 1; n < 50; ++n)
    for (int parts = 1; parts <= std::min<long>(n, 7); ++parts) {
      long next = 0;
      for (int i = 0; i < parts; ++i) {
        const is::Share s = is::shareOf(n, parts, i);
        EXPECT_EQ(s.first, next);
        EXPECT_GE(s.count, 1);
        next += s.count;
      }
      EXPECT_EQ(next, n);
    }
}

namespace fr = axon::examples::frames;

TEST(FrameChecks, FindEveryWrongWordStalePatternAndHeader) {
  const std::size_t bytes = 4096;
  std::vector<std::uint32_t> frame(bytes / 4);
  for (std::uint64_t k = 0; k < 2 * fr::kPatterns; ++k) {
    fr::fillFrame(frame.data(), bytes, k, 1000 + k);
    fr::FrameCheck c = fr::checkFrame(frame.data(), bytes, k);
    EXPECT_EQ(c.index, k);
    EXPECT_EQ(c.stampNs, 1000 + k);
    EXPECT_EQ(c.wrongWords, 0u);
    // The previous frame's words (a frame that did not arrive): every word differs here.
    c = fr::checkFrame(frame.data(), bytes, k + 1);
    EXPECT_EQ(c.wrongWords, fr::wordsIn(bytes)) << "frame " << k;
  }
  // One bit flipped in the first, a middle and the last word: three wrong words, and the header is
  // the frame's own.
  fr::fillFrame(frame.data(), bytes, 5, 7);
  for (std::size_t w : {std::size_t(4), bytes / 8, bytes / 4 - 1}) frame[w] ^= 1u << 9;
  const fr::FrameCheck c = fr::checkFrame(frame.data(), bytes, 5);
  EXPECT_EQ(c.wrongWords, 3u);
  EXPECT_EQ(c.index, 5u);
  // A frame torn between two: half its words stale.
  std::vector<std::uint32_t> older(bytes / 4);
  fr::fillFrame(older.data(), bytes, 4, 0);
  fr::fillFrame(frame.data(), bytes, 5, 0);
  std::copy(older.begin() + bytes / 8, older.end(), frame.begin() + bytes / 8);
  EXPECT_EQ(fr::checkFrame(frame.data(), bytes, 5).wrongWords, fr::wordsIn(bytes) - (bytes / 8 - 4));
}

TEST(FrameChecks, SizesAndPercentiles) {
  EXPECT_TRUE(fr::frameSizeProblem(64).empty());
  EXPECT_TRUE(fr::frameSizeProblem(16L << 20).empty());
  EXPECT_NE(fr::frameSizeProblem(48).find("at least 64"), std::string::npos);
  EXPECT_NE(fr::frameSizeProblem(1000).find("multiple of 16"), std::string::npos);
  std::vector<double> v;
  EXPECT_EQ(fr::percentile(v, 0.5), 0);
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(fr::percentile(v, 0.5), 50);   // nearest rank: the 50th of 100
  EXPECT_EQ(fr::percentile(v, 0.99), 99);
  EXPECT_EQ(fr::percentile(v, 1.0), 100);
  std::vector<double> one = {7};
  EXPECT_EQ(fr::percentile(one, 0.99), 7);
}

TEST(ExampleArgs, ByteSizesTakeBinarySuffixesAndRefuseTheRest) {
  using axon::examples::byteSizeArg;
  EXPECT_EQ(byteSizeArg("--b", "4096"), 4096);
  EXPECT_EQ(byteSizeArg("--b", "64K"), 64L << 10);
  EXPECT_EQ(byteSizeArg("--b", "16M"), 16L << 20);
  EXPECT_EQ(byteSizeArg("--b", "1g"), 1L << 30);
  for (const char* bad : {"", "0", "-1", "1.5M", "1MB", "M", "12Q", "99999999999G"})
    EXPECT_THROW(byteSizeArg("--b", bad), std::invalid_argument) << bad;
  try {
    byteSizeArg("--frame-bytes", "huge");
    ADD_FAILURE() << "'huge' was taken as a size";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--frame-bytes"), std::string::npos);
  }
}
