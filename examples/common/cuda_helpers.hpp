// CUDA runtime conveniences the examples' GPU code shares: errors as exceptions, a stream that
// frees itself, and work captured once into a CUDA graph. Included by .cu files only.
#pragma once

#include <axon/gpu.hpp>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace axon::examples {

inline void cudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(e));
}
// Throws std::runtime_error naming the call and CUDA's reason.
#define EXAMPLES_CUDA(call) ::axon::examples::cudaCheck((call), #call)

// A non-blocking stream (it does not wait for the legacy default stream).
class CudaStream {
 public:
  CudaStream() { EXAMPLES_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~CudaStream() { cudaStreamDestroy(s_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_{};
};

// Work captured from `enqueue` into a CUDA graph (when `wanted`), instantiated and uploaded before
// the timing starts; replayed with launch().
class CapturedGraph {
 public:
  template <class Enqueue>
  CapturedGraph(bool wanted, cudaStream_t s, Enqueue&& enqueue) {
    if (!wanted) return;
    cudaGraph_t graph = nullptr;
    EXAMPLES_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    enqueue();
    EXAMPLES_CUDA(cudaStreamEndCapture(s, &graph));
    const cudaError_t made = cudaGraphInstantiate(&exec_, graph, 0);
    cudaGraphDestroy(graph);
    cudaCheck(made, "cudaGraphInstantiate");
    EXAMPLES_CUDA(cudaGraphUpload(exec_, s));
    axon::streamSynchronize(s);
  }
  ~CapturedGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  bool ready() const { return exec_ != nullptr; }
  void launch(cudaStream_t s) { EXAMPLES_CUDA(cudaGraphLaunch(exec_, s)); }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace axon::examples
