// The Jacobi problem of reference 001, fixed so that every run can be checked: an N x N interior
// with a one-cell boundary whose top row is 1.0 and whose other sides are 0.0, the interior
// starting at 0.0, and K sweeps of the 5-point stencil. Rows are split over the PEs in contiguous
// slabs. Everything here is host arithmetic shared by every mode (and tested on the host).
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/split.hpp"

// The stencil is shared with the GPU kernels (jacobi_gpu.cu), so that every mode adds in one order.
#if defined(__CUDACC__)
#define JACOBI_HOST_DEVICE __host__ __device__
#else
#define JACOBI_HOST_DEVICE
#endif

namespace axon::examples::jacobi {

// This PE's rows of the global interior: rows [first, first + rows).
struct Slab {
  long first = 0;
  long rows = 0;
};

// Balanced contiguous slabs: the first n % pes PEs take one row more.
inline Slab slabOf(long n, int pes, int pe) {
  const auto [first, rows] = balancedPart(n, pes, pe);
  return {first, rows};
}

// A PE's local field: `rows` owned rows between two ghost rows (0 and rows + 1), each row n + 2
// cells wide (the left and right boundary columns included). Every PE allocates maxRows + 2 rows
// so that the symmetric allocation has one size everywhere.
struct Layout {
  long n = 0;        // interior width (and global height)
  long rows = 0;     // rows this PE owns
  long maxRows = 0;  // the largest slab of any PE
  long cols() const { return n + 2; }
  std::size_t cells() const { return static_cast<std::size_t>((maxRows + 2) * cols()); }
  std::size_t bytes() const { return cells() * sizeof(double); }
  std::size_t at(long r, long c) const { return static_cast<std::size_t>(r * cols() + c); }
  std::size_t rowBytes() const { return static_cast<std::size_t>(cols()) * sizeof(double); }
};

// Who this PE is in the decomposition and who its neighbours are (-1: the domain's edge).
struct Decomposition {
  int me = 0, pes = 1;
  int up = -1, down = -1;  // the PEs owning the rows just above and just below this slab
  Slab slab;
  Layout layout;
  long rowsOf(int pe) const { return slabOf(layout.n, pes, pe).rows; }
};

inline Decomposition decompose(long n, int pes, int me) {
  if (n < 1) throw std::invalid_argument("--n must be at least 1");
  if (pes > n)
    throw std::invalid_argument("a " + std::to_string(n) + "-row domain cannot be split over " +
                                std::to_string(pes) + " PEs: every PE needs at least one row");
  Decomposition d;
  d.me = me;
  d.pes = pes;
  d.up = me > 0 ? me - 1 : -1;
  d.down = me + 1 < pes ? me + 1 : -1;
  d.slab = slabOf(n, pes, me);
  d.layout = {n, d.slab.rows, slabOf(n, pes, 0).rows};
  return d;
}

// Sets a field to the starting state: zero, except the top boundary row (1.0) on the PE that
// owns the domain's first row.
inline void initialise(double* field, const Decomposition& d) {
  std::fill(field, field + d.layout.cells(), 0.0);
  if (d.up < 0) std::fill(field, field + d.layout.cols(), 1.0);
}

// One cell of a sweep. The additions are ordered, and the GPU kernels call this same function (no
// multiply-add can be formed from it), so every mode gives bit-identical results.
JACOBI_HOST_DEVICE inline double stencil(double up, double down, double left, double right) {
  return 0.25 * (((up + down) + left) + right);
}
// The GPU kernels visit the owned rows in this order, so that the two rows the neighbours wait
// for are computed (and sent) first: step 0 is row 1, step 1 the last row, then rows 2 .. rows-1.
JACOBI_HOST_DEVICE inline long rowAtStep(long step, long rows) {
  return step == 0 ? 1 : step == 1 ? rows : step;
}

// One sweep of rows [r0, r1] (local indices, 1-based).
inline void sweepRows(const double* in, double* out, const Layout& l, long r0, long r1) {
  const long w = l.cols();
  for (long r = r0; r <= r1; ++r)
    for (long c = 1; c <= l.n; ++c) {
      const std::size_t i = l.at(r, c);
      out[i] = stencil(in[i - w], in[i + w], in[i - 1], in[i + 1]);
    }
}

// The whole problem on one CPU thread: the reference every mode is compared with (--check).
inline std::vector<double> solveSerial(long n, long iters) {
  const Decomposition d = decompose(n, 1, 0);
  std::vector<double> a(d.layout.cells()), b(d.layout.cells());
  initialise(a.data(), d);
  initialise(b.data(), d);
  for (long k = 0; k < iters; ++k) {
    sweepRows(k % 2 ? b.data() : a.data(), k % 2 ? a.data() : b.data(), d.layout, 1, n);
  }
  const std::vector<double>& last = iters % 2 ? b : a;
  std::vector<double> interior(static_cast<std::size_t>(n * n));
  for (long r = 0; r < n; ++r)
    std::copy_n(last.data() + d.layout.at(r + 1, 1), n, interior.data() + r * n);
  return interior;
}

}  // namespace axon::examples::jacobi
