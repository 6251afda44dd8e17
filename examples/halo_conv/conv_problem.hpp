// The convolution problem of the halo_conv example (reference 001, LBANN's spatially parallel
// convolution), fixed so that every run can be checked:
//
//   axon run -n 4 build/examples/halo_conv --height 8192 --width 8192 --filter 5 --layers 100
//
// A float32 H x W image whose pixels are a hash of (row, column) in [0, 1), and L layers of one
// K x K binomial filter (weights summing to 1) with zero padding outside the image: out = conv(in),
// then the two swap. Rows are split over the PEs in contiguous slabs; each PE keeps R = K / 2 ghost
// rows above and below its slab. Everything here is arithmetic shared by every mode, the
// per-pixel convolution by the CPU and the GPU alike (and tested on the host).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/split.hpp"

// The per-pixel arithmetic is shared with the GPU kernels (conv_gpu.cu), so that every mode adds
// in one order.
#if defined(__CUDACC__)
#define CONV_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define CONV_HOST_DEVICE inline
#endif

namespace axon::examples::conv {

constexpr int kMaxFilter = 15;  // the largest K: 225 taps, which the GPU keeps in constant memory
constexpr int kMaxTaps = kMaxFilter * kMaxFilter;

// This PE's rows of the image: rows [first, first + rows).
struct Slab {
  long first = 0;
  long rows = 0;
};

// Balanced contiguous slabs: the first h % pes PEs take one row more.
inline Slab slabOf(long height, int pes, int pe) {
  const auto [first, rows] = balancedPart(height, pes, pe);
  return {first, rows};
}

// A PE's local image: R ghost rows, the `rows` owned rows, R ghost rows; every row padded with R
// zero columns on each side, so that the convolution needs no bounds tests (the zero padding of
// the image's edges is the padding columns and, on the first and last PE, ghost rows that stay
// zero). Every PE allocates maxRows owned rows so that the symmetric allocation has one size.
struct Layout {
  long height = 0, width = 0;
  int k = 1;         // filter size (odd)
  long rows = 0;     // rows this PE owns
  long maxRows = 0;  // the largest slab of any PE
  int radius() const { return k / 2; }
  long cols() const { return width + 2 * radius(); }
  std::size_t cells() const { return static_cast<std::size_t>((maxRows + 2 * radius()) * cols()); }
  std::size_t bytes() const { return cells() * sizeof(float); }
  // Owned row o (-R .. rows + R - 1: negative and >= rows are the ghost rows) and image column c
  // (-R .. width + R - 1: outside 0 .. width - 1 are the padding columns).
  std::size_t at(long o, long c) const { return static_cast<std::size_t>((o + radius()) * cols() + c + radius()); }
  // R whole padded rows: what one halo exchange moves in each direction.
  std::size_t haloBytes() const { return static_cast<std::size_t>(radius() * cols()) * sizeof(float); }
};

// Who this PE is in the decomposition and who its neighbours are (-1: the image's edge).
struct Decomposition {
  int me = 0, pes = 1;
  int up = -1, down = -1;  // the PEs owning the rows just above and just below this slab
  Slab slab;
  Layout layout;
  long rowsOf(int pe) const { return slabOf(layout.height, pes, pe).rows; }
};

// Throws std::invalid_argument for a filter that is not odd and 1 .. kMaxFilter.
inline void checkFilterSize(long k) {
  if (k < 1 || k > kMaxFilter || k % 2 == 0)
    throw std::invalid_argument("--filter takes an odd size from 1 to " + std::to_string(kMaxFilter) + ", not " +
                                std::to_string(k));
}

// Throws std::invalid_argument when the image cannot be split so that every PE's halo comes from
// its direct neighbours alone: every slab must hold at least R rows.
inline Decomposition decompose(long height, long width, int k, int pes, int me) {
  if (height < 1 || width < 1) throw std::invalid_argument("the image needs at least one row and one column");
  checkFilterSize(k);
  // Two float fields of (rows + 2R) x (width + 2R) on one PE: refuse sizes whose byte count
  // would overflow (at most 2^30 rows and columns keeps every product below 2^63).
  constexpr long kMaxSide = 1L << 30;
  if (height > kMaxSide || width > kMaxSide)
    throw std::invalid_argument("a " + std::to_string(height) + " x " + std::to_string(width) +
                                " image is too large: at most " + std::to_string(kMaxSide) + " rows and columns");
  if (pes > height)
    throw std::invalid_argument("a " + std::to_string(height) + "-row image cannot be split over " +
                                std::to_string(pes) + " PEs: every PE needs at least one row");
  const long thinnest = height / pes;
  if (pes > 1 && thinnest < k / 2)
    throw std::invalid_argument("a " + std::to_string(height) + "-row image over " + std::to_string(pes) +
                                " PEs gives slabs of " + std::to_string(thinnest) + " rows, thinner than the " +
                                std::to_string(k / 2) + " halo rows a " + std::to_string(k) + "x" + std::to_string(k) +
                                " filter needs from each neighbour: use fewer PEs or a taller image");
  Decomposition d;
  d.me = me;
  d.pes = pes;
  d.up = me > 0 ? me - 1 : -1;
  d.down = me + 1 < pes ? me + 1 : -1;
  d.slab = slabOf(height, pes, me);
  d.layout = {height, width, k, d.slab.rows, slabOf(height, pes, 0).rows};
  return d;
}

// The starting pixel at (row, col): an integer hash (cheap, not smooth, the same in NumPy with
// uint32 arithmetic) whose top 24 bits become a float in [0, 1) exactly.
inline float initialPixel(long row, long col) {
  std::uint32_t h = (static_cast<std::uint32_t>(row) * 0x9E3779B1u) ^ (static_cast<std::uint32_t>(col) * 0x85EBCA77u);
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  h *= 0x297A2D39u;
  h ^= h >> 15;
  return static_cast<float>(h >> 8) * (1.0f / 16777216.0f);
}

// Sets a local image to the starting state: the owned pixels from initialPixel, every ghost and
// padding cell zero.
inline void initialise(float* image, const Decomposition& d) {
  const Layout& l = d.layout;
  std::fill(image, image + l.cells(), 0.0f);
  for (long o = 0; o < l.rows; ++o)
    for (long c = 0; c < l.width; ++c) image[l.at(o, c)] = initialPixel(d.slab.first + o, c);
}

// A K x K filter, row-major.
struct Filter {
  int k = 1;
  std::array<float, kMaxTaps> w{};
};

// The binomial filter: w[i][j] = C(K-1, i) C(K-1, j) / 4^(K-1). Positive, symmetric, summing to
// 1, so that values stay in [0, 1) over any number of layers; for K <= 15 every weight is a
// product below 2^24 times a power of two, so it is exact in float32.
inline Filter binomialFilter(int k) {
  checkFilterSize(k);
  std::array<double, kMaxFilter> b{};
  b[0] = 1;
  for (int i = 1; i < k; ++i) b[i] = b[i - 1] * (k - i) / i;  // C(k-1, i), exact in double
  const double scale = std::ldexp(1.0, -2 * (k - 1));
  Filter f;
  f.k = k;
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j) f.w[i * k + j] = static_cast<float>(b[i] * b[j] * scale);
  return f;
}

// a * b + c rounded once, on either side: nvcc would contract a * b + c into an FMA on its own
// and g++ would not, so every mode writes the FMA out to add in one order with one rounding.
CONV_HOST_DEVICE float fmaRn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// One output pixel: `window` is the top-left input cell of its K x K neighbourhood in an image of
// `stride` floats a row. Rows, then columns within a row, each tap one fused multiply-add from
// zero: the order every mode (CPU and GPU, any PE count) uses, hence bit-identical results. K > 0
// fixes the size at compile time (the GPU's unrolled kernels); K == 0 takes it from k.
template <int K = 0>
CONV_HOST_DEVICE float convolvePixel(const float* window, long stride, const float* w, int k) {
  const int n = K > 0 ? K : k;
  float acc = 0.0f;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < n; ++i) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < n; ++j) acc = fmaRn(w[i * n + j], window[i * stride + j], acc);
  }
  return acc;
}

// Output rows [o0, o1) of this PE's slab, every column: in's halos must be in place for the rows
// within R of the slab's edges.
inline void convolveRows(const float* in, float* out, const Layout& l, const Filter& f, long o0, long o1) {
  const int r = l.radius();
  for (long o = o0; o < o1; ++o)
    for (long c = 0; c < l.width; ++c) out[l.at(o, c)] = convolvePixel(in + l.at(o - r, c - r), l.cols(), f.w.data(), f.k);
}

// The GPU kernel computes its output rows in bands of `band` rows and visits them in this order:
// the interior bands first, then the first and the last band, which need the halos, so that the
// halos put at the kernel's start have the longest time to arrive.
CONV_HOST_DEVICE long bandAtStep(long step, long bands) {
  if (bands <= 2) return step;
  return step < bands - 2 ? step + 1 : step == bands - 2 ? 0 : bands - 1;
}

// Copies the owned pixels (rows x width) out of a local image.
inline std::vector<float> ownedPixels(const float* image, const Layout& l) {
  std::vector<float> pixels(static_cast<std::size_t>(l.rows * l.width));
  for (long o = 0; o < l.rows; ++o) std::copy_n(image + l.at(o, 0), l.width, pixels.data() + o * l.width);
  return pixels;
}

// The whole image through every layer on one CPU thread: the reference every mode is compared
// with (--check). Returns the H x W result.
inline std::vector<float> convolveSerial(long height, long width, int k, long layers) {
  const Decomposition d = decompose(height, width, k, 1, 0);
  const Filter f = binomialFilter(k);
  std::vector<float> a(d.layout.cells()), b(d.layout.cells());
  initialise(a.data(), d);
  initialise(b.data(), d);
  for (long l = 0; l < layers; ++l)
    convolveRows(l % 2 ? b.data() : a.data(), l % 2 ? a.data() : b.data(), d.layout, f, 0, height);
  return ownedPixels(layers % 2 ? b.data() : a.data(), d.layout);
}

}  // namespace axon::examples::conv
