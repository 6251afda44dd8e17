// The transport interface: how bytes and atomics reach another PE's symmetric memory, from the host
// and in stream order. The one-sided layer validates every argument and the router
// (transport/router.hpp) picks the transport; a transport only moves. Each transport lives in its
// own folder; reaches(pe) says which PEs it can move data to.
#pragma once

#include <cstddef>
#include <cstdint>

#include "axon/onesided.hpp"
#include "memory/heap_space.hpp"

namespace axon {

class GpuBackend;

// A location in a PE's symmetric heap, resolved by the one-sided layer.
struct RemoteRef {
  int pe;
  std::size_t offset;  // from the start of the heap
  void* mapped;        // where this process sees it, for load/store transports; else nullptr
  HeapKind heap = HeapKind::Host;
  // 0: the heap `heap`. Else a region the network transport exposed on that PE outside the heaps
  // (NetworkTransport::exposeRegion: a team's inbox for collectives across nodes); `offset` is
  // from the region's start.
  std::uint32_t region = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // "shm", "cuda_ipc", "staged", "ucx": for messages.
  virtual const char* name() const noexcept = 0;
  virtual bool reaches(int pe) const noexcept = 0;

  virtual void put(const RemoteRef& dst, const void* src, std::size_t bytes) = 0;
  virtual void get(void* dst, const RemoteRef& src, std::size_t bytes) = 0;
  virtual void putNbi(const RemoteRef& dst, const void* src, std::size_t bytes) { put(dst, src, bytes); }
  virtual void getNbi(void* dst, const RemoteRef& src, std::size_t bytes) { get(dst, src, bytes); }
  // A 64-bit signal update with release semantics: everything put before it to the same PE is
  // visible to whoever observes the new value.
  virtual void signal(const RemoteRef& sig, std::uint64_t value, SignalOp op) = 0;
  // put (putNbi when `nbi`) of the data to `dst`, then the signal `sig` on the same PE, seen only
  // after the data. A transport may carry both at once (UCX: one active message for small data).
  virtual void putSignal(const RemoteRef& dst, const void* src, std::size_t bytes, const RemoteRef& sig,
                         std::uint64_t value, SignalOp op, bool nbi) {
    if (bytes > 0) {
      if (nbi) putNbi(dst, src, bytes);
      else put(dst, src, bytes);
    }
    fence();
    signal(sig, value, op);
  }
  // `width` is 4 or 8; operand/cond/result as in axon::detail::atomic.
  virtual void atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand,
                      const void* cond, void* result) = 0;
  virtual void fence() = 0;
  virtual void quiet() = 0;

  // Stream-ordered forms (`stream` is a CUstream; the GPU backend is on): they return at once,
  // and the operation happens when the stream gets there, done before the stream's later work
  // starts. The default runs the host call above on the GPU backend's stream host worker, a kernel
  // that holds the stream until the host has done it (graph-capturable); transports with a device
  // path override them.
  virtual void putOnStream(const RemoteRef& dst, const void* src, std::size_t bytes, void* stream, GpuBackend& gpu);
  virtual void getOnStream(void* dst, const RemoteRef& src, std::size_t bytes, void* stream, GpuBackend& gpu);
  virtual void signalOnStream(const RemoteRef& sig, std::uint64_t value, SignalOp op, void* stream, GpuBackend& gpu);
  // quiet_on_stream: later work on `stream` starts once what this transport has outstanding from
  // the host (put_nbi) is complete. Nothing to do for transports whose calls complete on return.
  virtual void quietOnStream(void* /*stream*/) {}
};

}  // namespace axon
