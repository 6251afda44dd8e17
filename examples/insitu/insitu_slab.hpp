// One simulation PE's share of the grid (planes [x0, x0 + nx) of NX x NY x NZ), in host or GPU
// memory, and the operations the workflow runs on it: on the CPU (insitu_cpu.cpp) or the GPU
// (insitu_gpu.cu), chosen per call by `onGpu`.
#pragma once

#include <cstddef>

#include "insitu_model.hpp"

namespace axon::examples::insitu {

struct Slab {
  long x0 = 0, nx = 0, ny = 0, nz = 0;
  bool onGpu = false;
  double* cur = nullptr;   // nx + 2 planes: ghost plane 0, planes 1..nx, ghost plane nx + 1
  double* next = nullptr;  // the same, written by the step
  double* change = nullptr;  // nx planes: next - cur of the last step
  double* square = nullptr;  // nx planes: next^2
  std::size_t planeCells() const { return static_cast<std::size_t>(ny * nz); }
  std::size_t cells() const { return static_cast<std::size_t>(nx) * planeCells(); }
  // The step's three variables, each nx contiguous planes (temperature is cur's interior).
  const double* variable(int v) const { return v == 0 ? cur + planeCells() : v == 1 ? change : square; }
};

// Allocates and fills with the starting temperature (ghost planes 0).
Slab makeSlab(long x0, long nx, long ny, long nz, bool onGpu);
void freeSlab(Slab& s);
// One heat step from cur (whose ghost planes hold the neighbours' planes or 0) into next, the
// change and the square; then swaps cur and next.
void stepSlab(Slab& s);
// The summary of `count` values at `values` (GPU memory when onGpu).
Summary summariseValues(const double* values, std::size_t count, int variable, int bins, bool onGpu);
// Memory for `count` doubles on the GPU or the host.
double* allocateValues(std::size_t count, bool onGpu);
void freeValues(double* p, bool onGpu);

// The GPU halves (insitu_gpu.cu; a build without CUDA throws).
void gpuInitialise(Slab& s);
void gpuStep(Slab& s);
Summary gpuSummarise(const double* values, std::size_t count, int variable, int bins);
double* gpuAllocate(std::size_t count);
void gpuFree(double* p);

}  // namespace axon::examples::insitu
