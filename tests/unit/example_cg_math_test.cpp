// The host arithmetic of the CG example (examples/cg/cg_problem.hpp): the z-slab split, the local
// vector's ghost-plane layout, the CSR rows of the 7-point Laplacian, and the serial CG that --check
// compares with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "../../examples/cg/cg_problem.hpp"

namespace cg = axon::examples::cg;

namespace {

// The 7-point Laplacian applied to a whole grid (z-major), zero outside: the operator every PE's
// CSR rows must reproduce.
std::vector<double> applyStencil(const std::vector<double>& v, long n) {
  auto at = [&](long z, long y, long x) -> double {
    if (z < 0 || y < 0 || x < 0 || z >= n || y >= n || x >= n) return 0.0;
    return v[static_cast<std::size_t>((z * n + y) * n + x)];
  };
  std::vector<double> out(v.size());
  for (long z = 0; z < n; ++z)
    for (long y = 0; y < n; ++y)
      for (long x = 0; x < n; ++x)
        out[static_cast<std::size_t>((z * n + y) * n + x)] =
            6 * at(z, y, x) - at(z - 1, y, x) - at(z + 1, y, x) - at(z, y - 1, x) - at(z, y + 1, x) -
            at(z, y, x - 1) - at(z, y, x + 1);
  return out;
}

}  // namespace

TEST(CgMath, SlabsCoverEveryPlaneOnceAndDifferByAtMostOne) {
  for (long n = 1; n <= 40; ++n)
    for (int pes = 1; pes <= std::min<long>(n, 9); ++pes) {
      long next = 0, smallest = n, largest = 0;
      for (int pe = 0; pe < pes; ++pe) {
        const cg::Slab s = cg::slabOf(n, pes, pe);
        EXPECT_EQ(s.first, next) << "n " << n << " pes " << pes << " pe " << pe;
        next = s.first + s.planes;
        smallest = std::min(smallest, s.planes);
        largest = std::max(largest, s.planes);
      }
      EXPECT_EQ(next, n);
      EXPECT_LE(largest - smallest, 1);
      EXPECT_GE(smallest, 1);
      EXPECT_EQ(cg::decompose(n, pes, pes - 1).layout.maxPlanes, largest);  // one symmetric size fits all
    }
}

TEST(CgMath, NeighboursAndRefusals) {
  const cg::Decomposition mid = cg::decompose(10, 3, 1);
  EXPECT_EQ(mid.below, 0);
  EXPECT_EQ(mid.above, 2);
  EXPECT_EQ(mid.slab.first, 4);
  EXPECT_EQ(mid.slab.planes, 3);
  EXPECT_EQ(mid.planesOf(0), 4);
  EXPECT_EQ(cg::decompose(10, 3, 0).below, -1);
  EXPECT_EQ(cg::decompose(10, 3, 2).above, -1);
  EXPECT_THROW(cg::decompose(2, 3, 0), std::invalid_argument);
  EXPECT_THROW(cg::decompose(0, 1, 0), std::invalid_argument);
  EXPECT_THROW(cg::decompose(2000, 1, 0), std::invalid_argument);  // past 32-bit column indices
}

TEST(CgMath, GhostPlanesFrameTheOwnPlanes) {
  const cg::Decomposition d = cg::decompose(5, 2, 1);  // planes 3 and 4: 2 planes, maxPlanes 3
  const cg::Layout& l = d.layout;
  EXPECT_EQ(l.plane(), 25u);
  EXPECT_EQ(l.rows(), 50u);
  EXPECT_EQ(l.cells(), 125u);  // maxPlanes + 2 planes, the same on both PEs
  EXPECT_EQ(cg::decompose(5, 2, 0).layout.cells(), l.cells());
  EXPECT_EQ(l.at(-1, 0, 0), l.ghostBelow());
  EXPECT_EQ(l.at(0, 0, 0), l.firstOwn());
  EXPECT_EQ(l.at(l.planes - 1, 0, 0), l.lastOwn());
  EXPECT_EQ(l.at(l.planes, 0, 0), l.ghostAbove());
  EXPECT_EQ(l.ghostAbove(), 75u);
  EXPECT_EQ(l.at(0, 2, 3), 25u + 2 * 5 + 3);
  // The lower neighbour's ghost plane above, where PE 1 puts its first plane: after PE 0's 3 planes.
  EXPECT_EQ(static_cast<std::size_t>(d.planesOf(d.below) + 1) * l.plane(), cg::decompose(5, 2, 0).layout.ghostAbove());
}

TEST(CgMath, CsrOfATinyGridHasTheRightRows) {
  const long n = 3;
  const cg::Decomposition d = cg::decompose(n, 1, 0);
  const cg::Csr a = cg::buildCsr(d);
  ASSERT_EQ(a.rows(), 27u);
  // Corners have 3 neighbours, edges 4, faces 5, the centre 6: 8*4 + 12*5 + 6*6 + 1*7 entries.
  EXPECT_EQ(a.nonzeros(), 8u * 4 + 12 * 5 + 6 * 6 + 7);
  auto rowLength = [&](std::size_t i) { return a.rowPtr[i + 1] - a.rowPtr[i]; };
  EXPECT_EQ(rowLength(0), 4);   // corner (0, 0, 0)
  EXPECT_EQ(rowLength(1), 5);   // edge (0, 0, 1)
  EXPECT_EQ(rowLength(4), 6);   // face centre (0, 1, 1)
  EXPECT_EQ(rowLength(13), 7);  // the centre (1, 1, 1)
  for (std::size_t i = 0; i < a.rows(); ++i) {
    double sum = 0;
    int diagonals = 0;
    for (std::int64_t j = a.rowPtr[i]; j < a.rowPtr[i + 1]; ++j) {
      if (j > a.rowPtr[i]) {
        EXPECT_LT(a.col[j - 1], a.col[j]) << "row " << i << ": columns ascend";
      }
      if (static_cast<std::size_t>(a.col[j]) == d.layout.firstOwn() + i) {
        ++diagonals;
        EXPECT_EQ(a.val[j], 6.0);
      } else {
        EXPECT_EQ(a.val[j], -1.0);
      }
      sum += a.val[j];
    }
    EXPECT_EQ(diagonals, 1);
    EXPECT_EQ(sum, 6.0 - static_cast<double>(rowLength(i) - 1));
  }
  // The centre's neighbours, in ascending order: below, y - 1, x - 1, itself, x + 1, y + 1, above.
  const std::vector<std::int32_t> centre(a.col.begin() + a.rowPtr[13], a.col.begin() + a.rowPtr[14]);
  const std::vector<std::int32_t> want = {9 + 4, 9 + 10, 9 + 12, 9 + 13, 9 + 14, 9 + 16, 9 + 22};
  EXPECT_EQ(centre, want);
}

TEST(CgMath, SlabRowsReadTheirGhostPlanesAndReproduceTheStencil) {
  for (const auto& [n, pes] : {std::pair{5L, 1}, std::pair{5L, 2}, std::pair{7L, 3}, std::pair{4L, 4}}) {
    std::vector<double> v(static_cast<std::size_t>(n * n * n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.7 * static_cast<double>(i)) + 0.01 * i;
    const std::vector<double> want = applyStencil(v, n);
    for (int pe = 0; pe < pes; ++pe) {
      const cg::Decomposition d = cg::decompose(n, pes, pe);
      const cg::Layout& l = d.layout;
      const cg::Csr a = cg::buildCsr(d);
      ASSERT_EQ(a.rows(), l.rows());
      // The local vector as the halo exchange leaves it: planes first-1 .. first+planes of v, with
      // zeros where the grid ends (the CSR must not read those: poison them).
      std::vector<double> local(l.cells(), std::nan(""));
      for (long zl = -1; zl <= l.planes; ++zl) {
        const long z = d.slab.first + zl;
        if (z < 0 || z >= n) continue;
        std::copy_n(v.begin() + z * n * n, n * n, local.begin() + static_cast<std::ptrdiff_t>(l.at(zl, 0, 0)));
      }
      std::vector<double> y(l.rows());
      cg::spmv(a, local.data(), y.data());
      for (std::size_t i = 0; i < l.rows(); ++i)
        ASSERT_NEAR(y[i], want[static_cast<std::size_t>(d.slab.first) * l.plane() + i], 1e-12)
            << "n " << n << " pes " << pes << " pe " << pe << " row " << i;
      // Columns reach the ghost planes only where a neighbour PE exists.
      const auto [lo, hi] = std::minmax_element(a.col.begin(), a.col.end());
      EXPECT_EQ(static_cast<std::size_t>(*lo) < l.firstOwn(), d.below >= 0);
      EXPECT_EQ(static_cast<std::size_t>(*hi) >= l.ghostAbove(), d.above >= 0);
    }
  }
}

TEST(CgMath, SerialCgConvergesAndItsResidualIsTrue) {
  const long n = 10;
  const cg::Decomposition d = cg::decompose(n, 1, 0);
  const cg::Csr a = cg::buildCsr(d);
  auto alone = [](double v) { return v; };
  cg::CgSolver solver(a, d.layout, alone);
  EXPECT_FALSE(solver.converged(1e-10));
  solver.run(500, 1e-10, [](double*) {}, alone);
  const cg::CgResult& r = solver.result();
  EXPECT_TRUE(solver.converged(1e-10));
  EXPECT_LT(r.relResidual(), 1e-10);
  EXPECT_GT(r.iterations, 5);
  EXPECT_LT(r.iterations, 100);  // far fewer than the 1000 unknowns
  EXPECT_EQ(r.bb, 1000.0);
  // The true residual, from x itself.
  std::vector<double> v(d.layout.cells(), 0.0), ax(d.layout.rows());
  std::copy(r.x.begin(), r.x.end(), v.begin() + static_cast<std::ptrdiff_t>(d.layout.firstOwn()));
  cg::spmv(a, v.data(), ax.data());
  double rr = 0, xx = 0, xmin = r.x[0];
  for (std::size_t i = 0; i < ax.size(); ++i) {
    rr += (1.0 - ax[i]) * (1.0 - ax[i]);
    xx += r.x[i] * r.x[i];
    xmin = std::min(xmin, r.x[i]);
  }
  const double trueRel = std::sqrt(rr / r.bb);
  EXPECT_LT(trueRel, 1e-9);
  EXPECT_LE(std::fabs(trueRel - r.relResidual()), cg::residualGapBound(r.iterations, std::sqrt(xx), std::sqrt(r.bb)));
  EXPECT_GT(xmin, 0.0);  // the discrete Poisson solution with a positive source is positive
  // Symmetric in x and z: x(z, y, x) = x(x, y, z).
  EXPECT_NEAR(r.x[static_cast<std::size_t>((1 * n + 2) * n + 3)], r.x[static_cast<std::size_t>((3 * n + 2) * n + 1)],
              1e-9);
  // solveSerial runs exactly the iterations asked for.
  const cg::CgResult fixed = cg::solveSerial(n, r.iterations);
  EXPECT_EQ(fixed.iterations, r.iterations);
  EXPECT_EQ(cg::maxRelativeDifference(fixed.x, r.x), 0.0);  // one order of operations: bit for bit
  EXPECT_EQ(cg::solveSerial(n, 3).iterations, 3);
}

TEST(CgMath, StoppingTestAndTolerances) {
  EXPECT_TRUE(cg::converged(0.0, 8.0, 0.0));  // r = 0 ends even a tol-0 run
  EXPECT_FALSE(cg::converged(1e-300, 8.0, 0.0));
  EXPECT_TRUE(cg::converged(1e-18, 1.0, 1e-8));
  EXPECT_FALSE(cg::converged(1e-16, 1.0, 1e-8));
  const double b1 = cg::residualGapBound(10, 100.0, 10.0), b2 = cg::residualGapBound(100, 100.0, 10.0);
  EXPECT_GT(b1, 0.0);
  EXPECT_GT(b2, b1);
  EXPECT_LT(b2, 1e-10);
  EXPECT_EQ(cg::maxRelativeDifference({1.0, 2.0}, {1.0, 4.0}), 0.5);
}
