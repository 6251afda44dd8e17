// The GPU peer transport: peers' GPU heaps are mapped into this process (CUDA VMM + IPC), so
// copies go peer to peer through the copy engines over NVLink or PCIe, and signals and atomics
// run as one-thread kernels with system-scope semantics.
//
// The host API is blocking (each call waits for its copy), except the _nbi calls, which only
// enqueue and complete at fence/quiet.
#pragma once

#include "gpu/driver.hpp"
#include "gpu/gpu_heap.hpp"
#include "transport/transport.hpp"

namespace axon::gpu {

class CudaIpcTransport final : public Transport {
 public:
  // `stream` carries the host API's work; `scratch` is 8+ bytes of pinned host memory.
  CudaIpcTransport(const DriverApi& cu, GpuHeap& heap, CUstream stream, void* scratch)
      : cu_(cu), heap_(heap), stream_(stream), scratch_(scratch) {}

  const char* name() const noexcept override { return "cuda_ipc"; }
  TransportCaps caps() const noexcept override;
  bool reaches(int pe) const noexcept override { return heap_.reachable(pe); }

  void put(const RemoteRef& dst, const void* src, std::size_t bytes) override;
  void get(void* dst, const RemoteRef& src, std::size_t bytes) override;
  void putNbi(const RemoteRef& dst, const void* src, std::size_t bytes) override;
  void getNbi(void* dst, const RemoteRef& src, std::size_t bytes) override;
  void signal(const RemoteRef& sig, std::uint64_t value, SignalOp op) override;
  void atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand,
              const void* cond, void* result) override;
  void fence() override;
  void quiet() override;

  // True when enqueued work has not been waited for yet.
  bool pending() const { return pending_; }

 private:
  void* target(const RemoteRef& ref, const char* api) const;
  void enqueueCopy(void* dst, const void* src, std::size_t bytes, const char* api);
  void wait(const char* api);

  const DriverApi& cu_;
  GpuHeap& heap_;
  CUstream stream_;
  void* scratch_;
  bool pending_ = false;
};

}  // namespace axon::gpu
