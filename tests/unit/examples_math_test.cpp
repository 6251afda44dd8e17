// The host arithmetic of the applications in examples/: Jacobi's row decomposition and visiting
// order, and the .npy header the examples write their results with.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "../../examples/common/npy.hpp"
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
