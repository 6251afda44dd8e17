// The CPU halves of the slab operations, and the dispatch between CPU and GPU.
#include <cstring>
#include <stdexcept>
#include <utility>

#include "insitu_slab.hpp"

namespace axon::examples::insitu {

namespace {

void cpuInitialise(Slab& s) {
  const std::size_t plane = s.planeCells();
  std::memset(s.cur, 0, (s.nx + 2) * plane * sizeof(double));
  std::memset(s.next, 0, (s.nx + 2) * plane * sizeof(double));
  for (long x = 0; x < s.nx; ++x)
    for (long y = 0; y < s.ny; ++y)
      for (long z = 0; z < s.nz; ++z)
        s.cur[(x + 1) * plane + y * s.nz + z] = initialTemperature(s.x0 + x, y, z);
}

void cpuStep(Slab& s) {
  const long plane = static_cast<long>(s.planeCells());
  for (long x = 1; x <= s.nx; ++x)
    for (long y = 0; y < s.ny; ++y)
      for (long z = 0; z < s.nz; ++z) {
        const long i = x * plane + y * s.nz + z;
        const double* u = s.cur;
        const double next = heatStep(u[i], u[i - plane], u[i + plane], y > 0 ? u[i - s.nz] : 0.0,
                                     y + 1 < s.ny ? u[i + s.nz] : 0.0, z > 0 ? u[i - 1] : 0.0,
                                     z + 1 < s.nz ? u[i + 1] : 0.0);
        s.next[i] = next;
        s.change[i - plane] = next - u[i];
        s.square[i - plane] = next * next;
      }
  std::swap(s.cur, s.next);
}

}  // namespace

double* allocateValues(std::size_t count, bool onGpu) {
  return onGpu ? gpuAllocate(count) : new double[count]();
}

void freeValues(double* p, bool onGpu) {
  if (onGpu) gpuFree(p);
  else delete[] p;
}

Slab makeSlab(long x0, long nx, long ny, long nz, bool onGpu) {
  Slab s{x0, nx, ny, nz, onGpu};
  const std::size_t withGhosts = static_cast<std::size_t>(nx + 2) * s.planeCells();
  s.cur = allocateValues(withGhosts, onGpu);
  s.next = allocateValues(withGhosts, onGpu);
  s.change = allocateValues(s.cells(), onGpu);
  s.square = allocateValues(s.cells(), onGpu);
  if (onGpu) gpuInitialise(s);
  else cpuInitialise(s);
  return s;
}

void freeSlab(Slab& s) {
  for (double* p : {s.cur, s.next, s.change, s.square}) freeValues(p, s.onGpu);
  s = Slab{};
}

void stepSlab(Slab& s) {
  if (s.onGpu) gpuStep(s);
  else cpuStep(s);
}

Summary summariseValues(const double* values, std::size_t count, int variable, int bins, bool onGpu) {
  return onGpu ? gpuSummarise(values, count, variable, bins) : summarise(values, count, variable, bins);
}

#ifndef INSITU_HAVE_CUDA
// A build without CUDA runs the workflow on the CPU only; these are never reached there (the
// program asks for the GPU only where the GPU backend is on, which needs CUDA).
namespace {
[[noreturn]] void noCuda() { throw std::runtime_error("this insitu was built without CUDA"); }
}  // namespace
void gpuInitialise(Slab&) { noCuda(); }
void gpuStep(Slab&) { noCuda(); }
Summary gpuSummarise(const double*, std::size_t, int, int) { noCuda(); }
double* gpuAllocate(std::size_t) { noCuda(); }
void gpuFree(double*) { noCuda(); }
#endif

}  // namespace axon::examples::insitu
