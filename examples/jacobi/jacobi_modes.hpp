// The ways the Jacobi example exchanges halos (--mode), each a function that runs the sweeps on
// this PE's slab and returns its interior rows and the time the sweeps took.
#pragma once

#include <string>
#include <vector>

#include "jacobi_problem.hpp"

namespace axon::examples::jacobi {

enum class Mode {
  Device,    // GPU: the sweep kernel puts its boundary rows with put_signal and waits for halos
  Stream,    // GPU: stream-ordered put_signal and waits after each sweep kernel, in a CUDA graph
  TwoSided,  // isend/irecv of the halo rows between sweeps (GPU buffers where there is a GPU)
  Staged,    // GPU: halo rows copied to host memory, sent and received there, copied back
  Host,      // CPU: host put_signal into the neighbours' symmetric host memory
};

const char* modeName(Mode m);
// Throws std::invalid_argument listing the modes for an unknown name.
Mode parseMode(const std::string& name);
bool modeNeedsGpu(Mode m);

struct Options {
  long n = 1024;
  long iters = 1000;
  Mode mode = Mode::Host;
  std::string out;     // --out FILE.npy: PE 0 writes the N x N interior
  bool check = false;  // --check: PE 0 compares with the serial solve
  bool json = false;   // --json: PE 0 prints one JSON line
  bool graph = true;   // --no-graph: stream mode launches its calls one by one
};

struct RunResult {
  double seconds = 0;           // the K sweeps on this PE, halo exchanges included
  std::vector<double> interior;  // this PE's rows x n interior cells after the last sweep
  std::string detail;           // how the mode ran ("CUDA graph of 2 sweeps", ...)
};

// CPU modes (Host, and TwoSided where the backend has no GPU): jacobi_cpu.cpp.
RunResult runOnCpu(const Options& o, const Decomposition& d);
// GPU modes: jacobi_gpu.cu. Throws std::runtime_error in a build without CUDA.
RunResult runOnGpu(const Options& o, const Decomposition& d);

// Posts the halo exchange of one field with isend/irecv and waits for it: the rows at sendFirst and
// sendLast go to the neighbours, and theirs arrive at recvTop and recvBottom (GPU or host memory).
void exchangeHalos(const Decomposition& d, std::size_t rowBytes, const double* sendFirst, const double* sendLast,
                   double* recvTop, double* recvBottom);

// Copies the owned rows' interior cells out of a host field.
std::vector<double> interiorOf(const double* field, const Layout& l);

}  // namespace axon::examples::jacobi
