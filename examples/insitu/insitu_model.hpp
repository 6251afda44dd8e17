// The in-situ workflow of reference 004, as host arithmetic shared by the CPU and GPU code: a 3-D
// heat equation whose three variables per step (temperature, its change, its square) go to the
// staging space, and the statistics (min, max, mean, histogram) an analysis computes from them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define INSITU_HOST_DEVICE __host__ __device__
#else
#define INSITU_HOST_DEVICE
#endif

namespace axon::examples::insitu {

constexpr int kVariables = 3;
inline const char* variableName(int v) {
  static const char* const names[kVariables] = {"temperature", "change", "square"};
  return names[v];
}
// The histogram's range per variable (values outside fall into the end bins).
struct Range {
  double lo, hi;
};
INSITU_HOST_DEVICE inline Range rangeOf(int v) {
  return v == 0 ? Range{0.0, 1.0} : v == 1 ? Range{-0.25, 0.25} : Range{0.0, 1.0};
}
INSITU_HOST_DEVICE inline int binOf(double value, Range r, int bins) {
  const double t = (value - r.lo) / (r.hi - r.lo) * bins;
  return t < 0 ? 0 : t >= bins ? bins - 1 : static_cast<int>(t);
}

// The starting temperature: a deterministic rough field in [0, 1] that diffuses as it steps.
INSITU_HOST_DEVICE inline double initialTemperature(long x, long y, long z) {
  return static_cast<double>((x * 7 + y * 13 + z * 3) % 101) / 100.0;
}

// Explicit heat step with zero boundaries: alpha <= 1/6 keeps it stable in 3-D.
constexpr double kAlpha = 0.125;
INSITU_HOST_DEVICE inline double heatStep(double c, double xm, double xp, double ym, double yp, double zm,
                                          double zp) {
  return c + kAlpha * ((((((xm + xp) + ym) + yp) + zm) + zp) - 6.0 * c);
}

// A contiguous share [first, first + count) of `n` cells for member `i` of `parts`.
struct Share {
  long first = 0, count = 0;
};
inline Share shareOf(long n, int parts, int i) {
  const long base = n / parts, extra = n % parts;
  return {i * base + std::min<long>(i, extra), base + (i < extra ? 1 : 0)};
}

// The statistics of one variable over some cells: what the analysis computes and the simulation
// computes in situ to check it. Min, max and the histogram do not depend on the order the cells
// are visited in; the sum does (in its last bits), so means are compared with a tolerance.
struct Summary {
  double min = 0, max = 0, sum = 0;
  std::uint64_t cells = 0;
  std::vector<std::uint64_t> hist;
};

// The summary of `count` values (host memory).
inline Summary summarise(const double* values, std::size_t count, int variable, int bins) {
  Summary s;
  s.hist.assign(static_cast<std::size_t>(bins), 0);
  s.min = count ? values[0] : 0;
  s.max = count ? values[0] : 0;
  const Range r = rangeOf(variable);
  for (std::size_t i = 0; i < count; ++i) {
    s.min = std::min(s.min, values[i]);
    s.max = std::max(s.max, values[i]);
    s.sum += values[i];
    ++s.hist[static_cast<std::size_t>(binOf(values[i], r, bins))];
  }
  s.cells = count;
  return s;
}

// Where two summaries of the same cells disagree, in words ("" when they agree: min, max, cell
// count and histogram exactly, the sum to the rounding two orders of addition can differ by).
inline std::string difference(const Summary& a, const Summary& b) {
  auto num = [](double v) { return std::to_string(v); };
  if (a.cells != b.cells) return "cells " + std::to_string(a.cells) + " against " + std::to_string(b.cells);
  if (a.min != b.min) return "min " + num(a.min) + " against " + num(b.min);
  if (a.max != b.max) return "max " + num(a.max) + " against " + num(b.max);
  // Sums of the same values in two orders differ by at most about cells * eps * max|value|.
  const double largest = std::max(std::abs(a.min), std::abs(a.max));
  const double bound = std::max(1e-12 * std::max({1.0, std::abs(a.sum), std::abs(b.sum)}),
                                4.0 * static_cast<double>(a.cells) * 2.2e-16 * largest);
  if (std::abs(a.sum - b.sum) > bound) return "sum " + num(a.sum) + " against " + num(b.sum);
  for (std::size_t i = 0; i < a.hist.size() && i < b.hist.size(); ++i)
    if (a.hist[i] != b.hist[i])
      return "histogram bin " + std::to_string(i) + ": " + std::to_string(a.hist[i]) + " against " +
             std::to_string(b.hist[i]);
  return a.hist.size() == b.hist.size() ? "" : "histogram sizes differ";
}

}  // namespace axon::examples::insitu
