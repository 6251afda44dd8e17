// The ways the halo_conv example exchanges halos (--mode), each a function that runs the layers
// on this PE's slab and returns its pixels and the time the layers took.
//
//   axon run -n 4 build/examples/halo_conv --mode device|twosided|host ...
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "conv_problem.hpp"

namespace axon::examples::conv {

enum class Mode {
  Device,    // GPU: the convolution kernel puts its edge rows with put_signal and waits for halos
  TwoSided,  // isend/irecv of the halo rows before each layer's kernel (GPU where there is one)
  Host,      // CPU: host put_signal into the neighbours' symmetric host memory
};

const char* modeName(Mode m);
// Throws std::invalid_argument listing the modes for an unknown name.
Mode parseMode(const std::string& name);
bool modeNeedsGpu(Mode m);

struct Options {
  long height = 8192;
  long width = 8192;
  int filter = 5;
  long layers = 100;
  Mode mode = Mode::Device;
  bool modeGiven = false;  // without --mode: device where the GPU backend is on, else host
  std::string out;         // --out FILE.npy: PE 0 writes the H x W result (float32)
  bool check = false;      // --check: PE 0 compares with the serial convolution
  bool json = false;       // --json: PE 0 prints one JSON line
  bool graph = true;       // --no-graph: device mode launches each layer's kernel
};

struct RunResult {
  double seconds = 0;         // the L layers on this PE, halo exchanges included
  std::vector<float> pixels;  // this PE's rows x width pixels after the last layer
  std::string detail;         // how the mode ran ("CUDA graph of 2 layers", ...)
};

// CPU modes (Host, and TwoSided where the backend has no GPU): conv_cpu.cpp.
RunResult runOnCpu(const Options& o, const Decomposition& d);
// GPU modes: conv_gpu.cu. Throws std::runtime_error in a build without CUDA (conv_cpu.cpp).
RunResult runOnGpu(const Options& o, const Decomposition& d);

// Posts one halo exchange with isend/irecv and waits for it: `bytes` at sendTop go to the upper
// neighbour and at sendBottom to the lower one; theirs arrive at recvTop and recvBottom (GPU or
// host memory). Nothing to do when bytes is 0 (a 1 x 1 filter).
void exchangeHalos(const Decomposition& d, std::size_t bytes, const float* sendTop, const float* sendBottom,
                   float* recvTop, float* recvBottom);

}  // namespace axon::examples::conv
