// Signals and atomics that the target's CPU carries out, asked for by UCX active message: the way
// to PEs whose endpoint has no atomics in its hardware (TCP, anything but InfiniBand/RoCE RC and
// DC). UCX can emulate atomics on such transports itself, but there a signal's set is a swap, a
// round trip whose reply the sender must take in; here a set or an add is one message, and only a
// fetching atomic waits for a reply (docs/performance.md has the put_signal latency both ways).
//
// Order: a signal after puts to the same PE follows the transport's fence of that PE
// (ucx_fence_ledger.hpp); eager messages to a PE take one lane and arrive in the order sent, and
// the target applies a message when its worker is polled (its waits and its progress engine), in
// the order they arrived.
//
// Puts into and gets from a peer's GPU heap over the same endpoints go by active message too
// (gpuPut, gpuGet): there UCX reaches device memory only through its RMA emulation, one
// synchronous CUDA copy per 8 KiB fragment (0.03 GB/s measured between two PEs on one H100); an
// active message's rendezvous moves the data with UCX's pipelined staging instead, received
// straight into the heap (put) or the caller's buffer (get).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "axon/onesided.hpp"
#include "transport/transport.hpp"
#include "transport/ucx/ucx_registry.hpp"
#include "transport/ucx/ucx_worker.hpp"

namespace axon::ucx {

class UcxAmAtomics {
 public:
  // Registers the handlers of both message kinds on the worker.
  UcxAmAtomics(UcxWorker& worker, const UcxRegistry& registry, RemoteAtomics path);
  ~UcxAmAtomics();
  UcxAmAtomics(const UcxAmAtomics&) = delete;
  UcxAmAtomics& operator=(const UcxAmAtomics&) = delete;

  // The messages (ucx_am_atomics.cpp).
  struct Request;
  struct Reply;
  struct PutSignal;

  // Once every endpoint is wired up: which PEs get active messages (their transports known).
  void choosePaths();
  // Whether an atomic or signal on `ref` goes by active message. On a GPU heap it does wherever
  // the endpoint has no atomics in hardware, whatever AXON_UCX_ATOMICS says: UCX's emulation
  // would update device memory from the host CPU, which cannot; the target applies it with a
  // one-thread kernel (NetworkSetup::gpuAtomic).
  bool handles(const RemoteRef& ref) const {
    if (ref.pe < 0 || static_cast<std::size_t>(ref.pe) >= useAm_.size()) return false;
    return ref.heap == HeapKind::Gpu ? gpuAm_[ref.pe] : useAm_[ref.pe];
  }
  // "active messages" or "native": for pathTo().
  const char* pathName(int pe) const;

  // Data and signal in one message, which the target applies in that order: for data in host
  // memory up to kPutSignalMax bytes. A put, a fence and a signal cost 2 to 4 times more for small
  // data (measured over TCP: docs/performance.md), and UCX's own fence, used then, is strong over
  // TCP: a flush that spun inside UCX until every peer had acknowledged: on 3 emulated
  // nodes sharing 2 cores an allgather of 256 KiB took 22-26 ms that way (the leaders' rounds were
  // over the old 64 KiB bound), 0.42 ms as one message each; between 2 nodes the two ways measured
  // alike from 128 KiB to 8 MiB (latency and bandwidth). The bound keeps what the target's UCX
  // gathers for one message (an eager message arrives whole before the handler runs) small.
  static constexpr std::size_t kPutSignalMax = 4u << 20;
  bool carriesPutSignal(const RemoteRef& dst, std::size_t bytes, const RemoteRef& sig) const {
    return bytes <= kPutSignalMax && dst.heap != HeapKind::Gpu && handles(sig);
  }
  void putSignal(const RemoteRef& dst, const void* src, std::size_t bytes, const RemoteRef& sig, std::uint64_t value,
                 SignalOp op);
  void signal(const RemoteRef& sig, std::uint64_t value, SignalOp op);
  // Returns once every message sent so far has been applied by its target: a message applied in
  // order after them comes back from each PE that was sent one since the last quiet (UCX's flush
  // completes an active message when it is sent, not when the target has run its handler).
  void quiet();
  void atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand, const void* cond,
              void* result);
  // Whether a put to or get from `ref` goes by gpuPut/gpuGet: a GPU heap behind an endpoint
  // without hardware RDMA.
  bool carriesGpuData(const RemoteRef& ref) const { return ref.heap == HeapKind::Gpu && ref.region == 0 && handles(ref); }
  // Up to this many bytes the data travels with the message (eager) and the receiver copies it
  // into GPU memory itself: a rendezvous would add its handshake to every small transfer.
  static constexpr std::size_t kGpuEagerMax = 16384;
  // Returns once the data has landed in the target's GPU heap (its answer, sent when UCX has
  // received it there). `srcOnDevice` is the memory type of `src`.
  void gpuPut(const RemoteRef& dst, const void* src, std::size_t bytes, bool srcOnDevice);
  // Returns once `bytes` of the target's GPU heap at `src` have landed in `dst` (the target sends
  // them back as a rendezvous). `dstOnDevice` is the memory type of `dst`.
  void gpuGet(void* dst, const RemoteRef& src, std::size_t bytes, bool dstOnDevice);

 private:
  // A reply waited for: registered under its token while it lives, so that a reply arriving after
  // the wait ended (timed out, failed) finds nothing.
  struct Awaited {
    explicit Awaited(UcxAmAtomics& owner);
    ~Awaited();
    Awaited(const Awaited&) = delete;
    Awaited& operator=(const Awaited&) = delete;
    // Polls until the reply came, bounded by AXON_TIMEOUT; `what` names the operation.
    void wait(int pe, const std::function<std::string()>& what);

    UcxAmAtomics& owner;
    std::uint64_t token = 0;
    std::atomic<bool> done{false};
    std::uint64_t value = 0;
    std::int32_t status = 0;  // 0, or what the target found wrong (Reply::kBadAddress)
    // gpuGet: where the data lands, how much is expected, and its memory type.
    void* landing = nullptr;
    std::size_t landingBytes = 0;
    bool landingOnDevice = false;
  };
  static ucs_status_t onRequest(void* arg, const void* header, std::size_t headerLength, void* data,
                                std::size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t onPutSignal(void* arg, const void* header, std::size_t headerLength, void* data,
                                  std::size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t onGpuPut(void* arg, const void* header, std::size_t headerLength, void* data,
                               std::size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t onGpuGet(void* arg, const void* header, std::size_t headerLength, void* data,
                               std::size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t onGpuGetData(void* arg, const void* header, std::size_t headerLength, void* data,
                                   std::size_t length, const ucp_am_recv_param_t* param);
  // Ends the wait of `token` (if it still waits) with `status` and `value`.
  void finish(std::uint64_t token, std::int32_t status, std::uint64_t value = 0);
  // Whom data arriving for a gpuPut or gpuGet is reported to once it has landed: the sender by
  // reply (answerPe), or this PE's own wait (answerPe -1).
  struct Landing {
    UcxAmAtomics* self;
    int answerPe;
    std::uint64_t token;
  };
  // Puts `length` bytes of an arriving message's data at `dest` (copied when UCX sent them along,
  // received when they come as a rendezvous), then completes `to`. `what` names it in the log.
  void land(Landing to, void* data, std::size_t length, const ucp_am_recv_param_t* param, void* dest, bool onDevice,
            const char* what);
  void complete(const Landing& to, std::int32_t status);
  // Throws for a gpuPut's or gpuGet's failed status.
  void checkGpuData(std::int32_t status, const std::function<std::string()>& what) const;
  static ucs_status_t onReply(void* arg, const void* header, std::size_t headerLength, void* data,
                              std::size_t length, const ucp_am_recv_param_t* param);
  void apply(const Request& r);
  // Sends `bytes` at `message` (and `dataBytes` at `data`) to `pe` as active message `id`, waiting
  // only while UCX still needs the buffers (it copies a short message at once).
  void send(int pe, unsigned id, const void* message, std::size_t bytes, const std::function<std::string()>& what,
            const void* data = nullptr, std::size_t dataBytes = 0);
  // From a handler, which must not wait: the message is copied into a box freed on completion.
  // `data` (GPU memory when `dataOnDevice`), if any, goes as a rendezvous and must stay valid.
  void sendFromHandler(int pe, unsigned id, const void* message, std::size_t bytes, const void* data = nullptr,
                       std::size_t dataBytes = 0, bool dataOnDevice = false);
  std::string describe(const char* what, const RemoteRef& ref) const;

  UcxWorker& worker_;
  const UcxRegistry& registry_;
  RemoteAtomics path_;
  std::vector<bool> useAm_;  // [pe], set by choosePaths
  std::vector<bool> gpuAm_;  // [pe]: GPU heaps, which UCX cannot emulate atomics on
  std::unique_ptr<std::atomic<bool>[]> unapplied_;  // [pe]: sent a message quiet has not seen applied
  std::mutex pendingMutex_;
  std::unordered_map<std::uint64_t, Awaited*> pending_;  // replies waited for, by token
  std::uint64_t nextToken_ = 1;
};

// Whether UCX transports named "a,b,c" (ucp_ep_query) do atomics in hardware: InfiniBand/RoCE RC
// and DC do; TCP, UD and the rest do not.
bool hardwareAtomics(const std::string& transports);

}  // namespace axon::ucx
