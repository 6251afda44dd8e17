// The conjugate-gradient problem of reference 001 (Kokkos CGSolve), fixed so that every run can be
// checked: the 7-point Laplacian of an n x n x n interior grid (6 on the diagonal, -1 for each of
// the six neighbours inside the grid, so zero Dirichlet values outside), b = 1 everywhere, x0 = 0,
// and unpreconditioned CG. The cells (the matrix's rows) are split over the PEs in z-slabs of
// whole planes. Everything here is host arithmetic shared by every mode (the GPU kernels share the
// convergence test) and tested on the host (tests/unit/example_cg_math_test.cpp).
//
//   axon run -n 4 build/examples/cg --n 128 --mode device --check
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/split.hpp"

#if defined(__CUDACC__)
#define CG_HOST_DEVICE __host__ __device__
#else
#define CG_HOST_DEVICE
#endif

namespace axon::examples::cg {

// This PE's planes of the global grid: z in [first, first + planes).
struct Slab {
  long first = 0;
  long planes = 0;
};

// Balanced contiguous slabs: the first n % pes PEs take one plane more.
inline Slab slabOf(long n, int pes, int pe) {
  const auto [first, planes] = balancedPart(n, pes, pe);
  return {first, planes};
}

// A PE's local vector (the one the matrix-vector product reads):
//   [ghost plane below | own planes 0 .. planes-1 | ghost plane above]
// each plane n * n cells, y-major then x. Own cell (z, y, x) of the slab is matrix row
// (z * n + y) * n + x and sits at vector index plane() + that row, so vectors that need no ghosts
// (x, r, Ap) are stored as the own rows alone and share the row numbering. Every PE allocates
// maxPlanes + 2 planes, so that a symmetric allocation has one size everywhere; the ghost plane
// above is at planes + 1, which is why a neighbour needs this PE's plane count to put into it.
struct Layout {
  long n = 0;          // grid edge
  long planes = 0;     // planes this PE owns
  long maxPlanes = 0;  // the largest slab of any PE
  std::size_t plane() const { return static_cast<std::size_t>(n * n); }
  std::size_t rows() const { return static_cast<std::size_t>(planes) * plane(); }
  std::size_t cells() const { return static_cast<std::size_t>(maxPlanes + 2) * plane(); }
  std::size_t bytes() const { return cells() * sizeof(double); }
  std::size_t planeBytes() const { return plane() * sizeof(double); }
  // Local plane zl in [-1, planes]: -1 is the ghost plane below, planes the ghost plane above.
  std::size_t at(long zl, long y, long x) const { return static_cast<std::size_t>(((zl + 1) * n + y) * n + x); }
  std::size_t ghostBelow() const { return 0; }
  std::size_t firstOwn() const { return plane(); }
  std::size_t lastOwn() const { return static_cast<std::size_t>(planes) * plane(); }
  std::size_t ghostAbove() const { return static_cast<std::size_t>(planes + 1) * plane(); }
};

// Who this PE is in the decomposition and who its neighbours are (-1: the domain's edge).
struct Decomposition {
  int me = 0, pes = 1;
  int below = -1, above = -1;  // the PEs owning the planes just below and just above this slab
  Slab slab;
  Layout layout;
  long planesOf(int pe) const { return slabOf(layout.n, pes, pe).planes; }
};

inline Decomposition decompose(long n, int pes, int me) {
  if (n < 1) throw std::invalid_argument("--n must be at least 1");
  // Column indices are 32-bit, so a plane must fit in them: test before n * n can overflow.
  constexpr long kMaxEdge = 46340;  // the largest n with n * n <= INT32_MAX
  if (n > kMaxEdge)
    throw std::invalid_argument("--n " + std::to_string(n) + " is too large: a plane of n x n cells must fit in "
                                "32-bit column indices (n <= " + std::to_string(kMaxEdge) + ")");
  if (pes > n)
    throw std::invalid_argument("a grid of " + std::to_string(n) + " planes cannot be split over " +
                                std::to_string(pes) + " PEs: every PE needs at least one plane");
  Decomposition d;
  d.me = me;
  d.pes = pes;
  d.below = me > 0 ? me - 1 : -1;
  d.above = me + 1 < pes ? me + 1 : -1;
  d.slab = slabOf(n, pes, me);
  d.layout = {n, d.slab.planes, slabOf(n, pes, 0).planes};
  // Column indices are 32-bit (half the index traffic of the product on the GPU).
  if (d.layout.cells() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::invalid_argument("a slab of " + std::to_string(d.layout.maxPlanes) + " planes of " +
                                std::to_string(n) + " x " + std::to_string(n) +
                                " cells is too large for 32-bit column indices: use more PEs");
  return d;
}

// The local rows of the matrix in CSR. Columns are indices into the local vector (Layout), in
// ascending order within a row: below, y - 1, x - 1, the diagonal, x + 1, y + 1, above. Every mode
// multiplies in this order.
struct Csr {
  std::vector<std::int64_t> rowPtr;  // rows + 1
  std::vector<std::int32_t> col;
  std::vector<double> val;
  std::size_t rows() const { return rowPtr.empty() ? 0 : rowPtr.size() - 1; }
  std::size_t nonzeros() const { return val.size(); }
};

// The rows of this PE's slab. A neighbour outside the grid has no entry (zero Dirichlet); one in
// the plane of another PE is a column into a ghost plane.
inline Csr buildCsr(const Decomposition& d) {
  const Layout& l = d.layout;
  const long n = l.n, zGlobal0 = d.slab.first;
  Csr a;
  a.rowPtr.reserve(l.rows() + 1);
  a.col.reserve(l.rows() * 7);
  a.val.reserve(l.rows() * 7);
  a.rowPtr.push_back(0);
  auto add = [&](std::size_t col, double v) {
    a.col.push_back(static_cast<std::int32_t>(col));
    a.val.push_back(v);
  };
  for (long z = 0; z < l.planes; ++z)
    for (long y = 0; y < n; ++y)
      for (long x = 0; x < n; ++x) {
        const long zg = zGlobal0 + z;
        if (zg > 0) add(l.at(z - 1, y, x), -1.0);
        if (y > 0) add(l.at(z, y - 1, x), -1.0);
        if (x > 0) add(l.at(z, y, x - 1), -1.0);
        add(l.at(z, y, x), 6.0);
        if (x + 1 < n) add(l.at(z, y, x + 1), -1.0);
        if (y + 1 < n) add(l.at(z, y + 1, x), -1.0);
        if (zg + 1 < n) add(l.at(z + 1, y, x), -1.0);
        a.rowPtr.push_back(static_cast<std::int64_t>(a.val.size()));
      }
  return a;
}

// A bound on the matrix's 2-norm (its largest row sum of magnitudes; it is symmetric), used by
// the residual check's tolerance.
constexpr double kNormBoundA = 12.0;

// y (own rows) = A v, v a local vector with its ghost planes filled.
inline void spmv(const Csr& a, const double* v, double* y) {
  const std::size_t rows = a.rows();
  for (std::size_t i = 0; i < rows; ++i) {
    double sum = 0;
    for (std::int64_t j = a.rowPtr[i]; j < a.rowPtr[i + 1]; ++j) sum += a.val[j] * v[a.col[j]];
    y[i] = sum;
  }
}

inline double dot(const double* a, const double* b, std::size_t n) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// The stopping test of every mode (and of the GPU kernels): ||r|| / ||b|| < tol, or r = 0 exactly
// (which also ends a run with tol = 0 before 0 / 0). Given allreduced r.r and b.b, which are
// bit-identical on every PE, every PE takes the same decision.
CG_HOST_DEVICE inline bool converged(double rr, double bb, double tol) {
  return rr == 0.0 || sqrt(rr) < tol * sqrt(bb);
}

struct CgResult {
  long iterations = 0;     // iterations done
  double rr = 0, bb = 0;   // the recursive r.r and b.b at the end (allreduced)
  std::vector<double> x;   // own rows
  double relResidual() const { return bb > 0 ? std::sqrt(rr / bb) : 0.0; }
};

// Unpreconditioned CG on the local rows, two dot products an iteration (p.Ap and r.r), on the CPU.
// The communication comes in as callables:
//   exchange(p)  fills p's ghost planes from the neighbours' own planes;
//   allSum(v)    returns the sum of v over the PEs (the same value on every PE).
// The CPU mode runs it with axon calls (and times the iterations alone), the serial reference
// with none.
class CgSolver {
 public:
  // x0 = 0, so r0 = b = 1 and p0 = r0; b.b (exact: a sum of ones) is the starting r.r.
  template <class AllSum>
  CgSolver(const Csr& a, const Layout& l, AllSum&& allSum)
      : a_(a), l_(l), r_(l.rows(), 1.0), ap_(l.rows()), p_(l.cells(), 0.0) {
    res_.x.assign(l.rows(), 0.0);
    std::copy(r_.begin(), r_.end(), pOwn());
    res_.rr = allSum(dot(r_.data(), r_.data(), r_.size()));
    res_.bb = res_.rr;
  }

  bool converged(double tol) const { return cg::converged(res_.rr, res_.bb, tol); }

  template <class Exchange, class AllSum>
  void iterate(Exchange&& exchange, AllSum&& allSum) {
    const std::size_t rows = l_.rows();
    double* p = pOwn();
    exchange(p_.data());
    spmv(a_, p_.data(), ap_.data());
    const double alpha = res_.rr / allSum(dot(p, ap_.data(), rows));
    for (std::size_t i = 0; i < rows; ++i) {
      res_.x[i] += alpha * p[i];
      r_[i] -= alpha * ap_[i];
    }
    const double rrNew = allSum(dot(r_.data(), r_.data(), rows));
    const double beta = rrNew / res_.rr;
    res_.rr = rrNew;
    for (std::size_t i = 0; i < rows; ++i) p[i] = r_[i] + beta * p[i];
    ++res_.iterations;
  }

  // Runs until maxIters iterations are done or the residual is below tol.
  template <class Exchange, class AllSum>
  void run(long maxIters, double tol, Exchange&& exchange, AllSum&& allSum) {
    while (res_.iterations < maxIters && !converged(tol)) iterate(exchange, allSum);
  }

  const CgResult& result() const { return res_; }
  CgResult take() { return std::move(res_); }

 private:
  double* pOwn() { return p_.data() + l_.firstOwn(); }
  const Csr& a_;
  Layout l_;
  std::vector<double> r_, ap_, p_;  // p_ is a local vector with ghost planes
  CgResult res_;
};

// The whole grid on one CPU thread, `iters` iterations (tol 0: no early stop unless r = 0): the
// reference --check compares the gathered x with. x is z-major, n^3 values.
inline CgResult solveSerial(long n, long iters) {
  const Decomposition d = decompose(n, 1, 0);
  const Csr a = buildCsr(d);
  auto alone = [](double v) { return v; };
  CgSolver cg(a, d.layout, alone);
  cg.run(iters, 0.0, [](double*) {}, alone);
  return cg.take();
}

// The tolerance on |true residual - recursive residual| (both relative to ||b||) after k
// iterations. In floating point the recursively updated r drifts from b - A x by rounding errors
// of the updates of x and r, and the standard bound (Greenbaum 1997; van der Vorst and Ye 2000)
// grows with the iterations: ||b - A x_k - r_k|| <= c * eps * sum_j (||A|| ||x_j|| + ||r_j||),
// with c a small multiple of the nonzeros per row. With x0 = 0, ||x_j|| grows monotonically in CG
// (Steihaug 1983) and ||r_j|| stays within a small factor of ||b|| for this problem, so
// c = 10 (more than the 7 products of a row) and k + 1 terms of (||A|| ||x_k|| + ||b||) bound it
// soundly; evaluating b - A x adds one more such term. Far above what runs show (the gap is
// usually near eps * ||A|| ||x|| / ||b||), far below a residual of 1e-8.
inline double residualGapBound(long k, double xNorm, double bNorm) {
  const double eps = std::numeric_limits<double>::epsilon();
  return 10.0 * eps * static_cast<double>(k + 2) * (kNormBoundA * xNorm + bNorm) / bNorm;
}

// Relative difference max |x - ref| / max |ref| (0 for an all-zero ref equal to x).
inline double maxRelativeDifference(const std::vector<double>& x, const std::vector<double>& ref) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(x[i] - ref[i]);
    if (std::isnan(d)) return d;  // std::max would drop it: a NaN is the largest difference
    diff = std::max(diff, d);
    scale = std::max(scale, std::fabs(ref[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace axon::examples::cg
