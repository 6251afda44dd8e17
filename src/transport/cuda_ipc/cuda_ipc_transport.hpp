// The GPU peer transport: peers' GPU heaps are mapped into this process (CUDA VMM + IPC), so
// copies go peer to peer through the copy engines over NVLink or PCIe, and signals and atomics
// run as one-thread kernels with system-scope semantics.
//
// The host API is blocking (each call waits for its copy), except the _nbi calls, which only
// enqueue and complete at fence/quiet. The stream-ordered calls are copies and signal kernels on
// the caller's stream.
#pragma once

#include <atomic>
#include <mutex>

#include "gpu/driver.hpp"
#include "gpu/gpu_heap.hpp"
#include "transport/route.hpp"
#include "transport/transport.hpp"

namespace axon::gpu {

class CudaIpcTransport final : public Transport {
 public:
  // `stream` carries the host API's work; `scratch` is 8+ bytes of pinned host memory.
  CudaIpcTransport(const DriverApi& cu, GpuHeap& heap, CUstream stream, void* scratch);
  ~CudaIpcTransport() override;
  CudaIpcTransport(const CudaIpcTransport&) = delete;
  CudaIpcTransport& operator=(const CudaIpcTransport&) = delete;

  const char* name() const noexcept override { return routeName(Route::CudaIpc); }
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

  void putOnStream(const RemoteRef& dst, const void* src, std::size_t bytes, void* stream, GpuBackend& gpu) override;
  void getOnStream(void* dst, const RemoteRef& src, std::size_t bytes, void* stream, GpuBackend& gpu) override;
  void signalOnStream(const RemoteRef& sig, std::uint64_t value, SignalOp op, void* stream, GpuBackend& gpu) override;
  // Host put_nbi work still outstanding on this transport's stream: `stream` waits for it.
  void quietOnStream(void* stream) override;

  // True when enqueued work has not been waited for yet.
  bool pending() const { return completed_.load(std::memory_order_acquire) < enqueued_.load(std::memory_order_acquire); }

 private:
  void* target(const RemoteRef& ref, const char* api) const;
  // The same for a stream-ordered call, whose message says it needs peer access.
  void* streamTarget(const RemoteRef& ref, const char* api) const;
  void enqueueCopy(void* dst, const void* src, std::size_t bytes, const char* api);
  void wait(const char* api);

  const DriverApi& cu_;
  GpuHeap& heap_;
  CUstream stream_;
  CUevent quietEvent_ = nullptr;  // quiet_on_stream: the point of stream_ another stream waits for
  // Threads: every call may come from several threads at once. Work goes in order onto one
  // stream; enqueued_ counts it and completed_ says how much of it a wait has seen finish (a wait
  // covers only what was enqueued before it began). Atomic results land in the pinned scratch
  // word, so one atomic at a time.
  void* scratch_;
  std::atomic<std::uint64_t> enqueued_{0};
  std::atomic<std::uint64_t> completed_{0};
  std::mutex atomicMutex_;
};

}  // namespace axon::gpu
