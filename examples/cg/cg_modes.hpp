// The ways the CG example reduces its dot products and moves its halos (--mode), each a function
// that runs CG on this PE's rows and returns its part of x, the iterations done and the time.
//
//   axon run -n 2 build/examples/cg --n 64 --mode host --check
#pragma once

#include <string>
#include <vector>

#include "cg_problem.hpp"

namespace axon::examples::cg {

enum class Mode {
  Device,  // GPU: dot products allreduced inside the kernels (device-callable allreduce), halos by
           // stream-ordered put_signal; no host synchronization within an iteration
  Host,    // GPU: the same kernels, each dot product's partial reduced by the blocking host
           // allreduce, halos by isend/irecv of the GPU planes (the MPI way): the baseline
  Cpu,     // CPU: host allreduce and isend/irecv of host planes (any backend)
};

const char* modeName(Mode m);
// Throws std::invalid_argument listing the modes for an unknown name.
Mode parseMode(const std::string& name);
bool modeNeedsGpu(Mode m);

struct Options {
  long n = 64;
  long iters = 500;    // at most this many iterations
  double tol = 1e-8;   // stop once ||r|| / ||b|| < tol
  Mode mode = Mode::Cpu;
  std::string out;     // --out FILE.npy: PE 0 writes x, shape (n, n, n), z-major
  bool check = false;  // --check: true residual, and (n <= kSerialCheckMaxN) the serial solve
  bool json = false;   // --json: PE 0 prints one JSON line
  bool graph = true;   // --no-graph: device mode launches its calls one by one
};

// The largest grid --check gathers and solves serially on PE 0 (64^3 cells: about a second).
constexpr long kSerialCheckMaxN = 64;
// Device mode reads the iteration count and the convergence flag back every this many iterations
// (one CUDA graph of them): the iterations in between never wait on the host. The kernels stop
// updating on the iteration that converged, so the result and the count are those of a check every
// iteration; only up to kCheckEvery - 1 empty iterations (halos of an unchanged p) are spent.
constexpr long kCheckEvery = 10;

struct RunResult {
  long iterations = 0;
  double rr = 0, bb = 0;       // recursive r.r and b.b at the end (allreduced)
  std::vector<double> x;       // this PE's rows of x
  double seconds = 0;          // the iterations on this PE, halos and reductions included
  double haloSeconds = -1;     // of which halo exchanges (-1: not measured separately)
  double reduceSeconds = -1;   // of which allreduce calls (-1: not measured separately)
  std::string detail;          // how the mode ran
  double relResidual() const { return bb > 0 ? std::sqrt(rr / bb) : 0.0; }
};

// Cpu mode: cg_cpu.cpp.
RunResult runOnCpu(const Options& o, const Decomposition& d, const Csr& a);
// GPU modes: cg_gpu.cu. Throws std::runtime_error in a build without CUDA.
RunResult runOnGpu(const Options& o, const Decomposition& d, const Csr& a);

// Fills the ghost planes of a local vector with isend/irecv (GPU or host memory): this PE's first
// own plane goes to the PE below and its last to the PE above, theirs arrive in the ghost planes.
void exchangePlanes(const Decomposition& d, double* v);

// The sum of v over every PE (the blocking host allreduce): the host-side dot products.
double allSum(double v);

// ||b - A x|| / ||b|| from this PE's rows of x, with its own halo exchange, product on the CPU and
// host allreduce: collective, and independent of the mode's kernels (--check). Also ||x|| and
// ||b||, which the tolerance on the gap to the recursive residual needs.
struct TrueResidual {
  double relative = 0;
  double xNorm = 0, bNorm = 0;
};
TrueResidual trueResidual(const Decomposition& d, const Csr& a, const std::vector<double>& x);

}  // namespace axon::examples::cg
