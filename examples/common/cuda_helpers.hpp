// CUDA runtime conveniences the examples' GPU code shares: errors as exceptions, a stream that
// frees itself, and work captured once into a CUDA graph. Included by .cu files only.
#pragma once

#include <axon/gpu.hpp>
#include <cuda_runtime.h>

#include <axon/axon.hpp>

#include <cstdint>
#include <initializer_list>
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

// The device API reaches a node-local PE only by load/store: say so before a kernel would trap.
// Collective, so that every PE stops with the message, not only those next to the gap. PEs on
// other nodes pass (the device proxy carries them); -1 stands for no neighbour.
inline void requireLoadStore(std::initializer_list<int> neighbours, int me, const std::string& otherModes) {
  std::string problem;
  for (int pe : neighbours) {
    if (pe < 0 || axon::gpuPeerReachable(pe)) continue;
    const std::string path = axon::pathTo(pe);
    if (path.rfind("ucx", 0) == 0) continue;
    problem = "--mode device needs PE " + std::to_string(pe) + "'s GPU heap mapped (peer access), but PE " +
              std::to_string(me) + " reaches it by " + path + "; use " + otherModes + " there";
  }
  const std::int32_t ok = problem.empty() ? 1 : 0;
  std::int32_t allOk = 0;
  axon::allreduce(axon::Team::world(), &ok, &allOk, 1, axon::ReduceOp::Min);
  if (!problem.empty()) throw std::runtime_error(problem);
  if (!allOk) throw std::runtime_error("--mode device: another PE lacks peer access to its neighbour (it says which)");
}

// Two fields of `cells` elements and four signal words (two per neighbour, one per parity) in
// the symmetric GPU heap, the fields filled by upload(buf[0], buf[1]); every PE's are in place
// before the constructor returns, so that no PE puts into a neighbour that is not ready.
template <class T>
struct SymmetricFields {
  template <class Upload>
  SymmetricFields(std::size_t cells, Upload&& upload) {
    field = static_cast<T*>(axon::malloc(2 * cells * sizeof(T)));
    signals = static_cast<unsigned long long*>(axon::calloc(4, sizeof(unsigned long long)));  // [2] + [2]
    buf[0] = field;
    buf[1] = field + cells;
    upload(buf[0], buf[1]);
    EXAMPLES_CUDA(cudaDeviceSynchronize());
    axon::barrierAll();
  }
  ~SymmetricFields() {
    axon::free(signals);
    axon::free(field);
  }
  SymmetricFields(const SymmetricFields&) = delete;
  SymmetricFields& operator=(const SymmetricFields&) = delete;
  T* field;
  unsigned long long* signals;
  T* buf[2];
};

}  // namespace axon::examples
