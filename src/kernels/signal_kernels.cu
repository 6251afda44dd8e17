// The runtime's small kernels: signals, atomics, waits and barriers ordered on CUDA streams.
// Each runs on one thread; they exist because a copy engine cannot do a release store, an atomic
// or a wait.
#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "axon/device/device.hpp"
#include "axon/error.hpp"
#include "kernels/kernels.hpp"
#include "kernels/stream_op_ring.hpp"

namespace axon::kernels {
namespace {

using u64 = unsigned long long;

__global__ void signalKernel(u64* target, u64 value, int add) {
  // Release at system scope: everything earlier on the stream (the data copies, complete before
  // this kernel starts) is visible to whoever acquires the new value.
  __threadfence_system();
  if (add) atomicAdd_system(target, value);
  else atomicExch_system(target, value);
}

template <class T>
__device__ T applyAtomic(AtomicOp op, T* t, T operand, T cond) {
  switch (op) {
    case AtomicOp::Fetch: return atomicAdd_system(t, T(0));
    case AtomicOp::Set: atomicExch_system(t, operand); return T(0);
    case AtomicOp::Swap: return atomicExch_system(t, operand);
    case AtomicOp::CompareSwap: return atomicCAS_system(t, cond, operand);
    case AtomicOp::FetchAdd: return atomicAdd_system(t, operand);
    case AtomicOp::Add: atomicAdd_system(t, operand); return T(0);
    case AtomicOp::FetchAnd: return atomicAnd_system(t, operand);
    case AtomicOp::FetchOr: return atomicOr_system(t, operand);
    case AtomicOp::FetchXor: return atomicXor_system(t, operand);
  }
  return T(0);
}

__global__ void atomicKernel(AtomicOp op, int width, void* target, u64 operand, u64 cond, void* result) {
  __threadfence_system();
  if (width == 4) {
    unsigned r = applyAtomic<unsigned>(op, static_cast<unsigned*>(target), static_cast<unsigned>(operand),
                                       static_cast<unsigned>(cond));
    if (result) *static_cast<unsigned*>(result) = r;
  } else {
    u64 r = applyAtomic<u64>(op, static_cast<u64*>(target), operand, cond);
    if (result) *static_cast<u64*>(result) = r;
  }
  __threadfence_system();
}

__global__ void waitKernel(device::Context ctx, u64* sig, device::Cmp cmp, u64 value) {
  device::signalWaitUntil<device::Thread>(ctx, sig, cmp, value);
}

// Polls `*word` (written by the worker thread in pinned memory) until it reaches `atLeast`, with
// a growing nap between polls; past `timeoutNs` prints what it waited for and traps.
__device__ void awaitWorker(const u64* word, u64 atLeast, unsigned long long timeoutNs, int myPe, u64 ticket,
                            const char* what) {
  const unsigned long long start = device::detail::globalTimerNs();
  unsigned sleepNs = 64;
  for (unsigned polls = 1;; ++polls) {
    const u64 seen = device::detail::loadAcquireSys(word);
    if (seen >= atLeast) return;
    __nanosleep(sleepNs);
    if (sleepNs < 2048) sleepNs *= 2;
    if (timeoutNs != 0 && polls % 64 == 0 && device::detail::globalTimerNs() - start > timeoutNs) {
      printf("axon: PE %d: stream-ordered staged operation (ticket %llu): %s did not happen within "
             "AXON_TIMEOUT: the word at %p is %llu, expected >= %llu; see the host log for the "
             "operation's error\n",
             myPe, ticket, what, word, seen, atLeast);
      __trap();
    }
  }
}

__global__ void stagedStreamOpKernel(StreamOpRing* ring, u64* tickets, u64 request,
                                     unsigned long long timeoutNs, int myPe) {
  using kernels::kStreamOpRingSlots;
  // The ring's words are std::uint64_t (unsigned long here); the PTX helpers take unsigned long long.
  auto word = [](std::uint64_t& w) { return reinterpret_cast<u64*>(&w); };
  const u64 ticket = ::atomicAdd(tickets, 1ull);
  const u64 slot = ticket % kStreamOpRingSlots;
  if (ticket >= kStreamOpRingSlots) {
    awaitWorker(word(ring->taken), ticket - kStreamOpRingSlots + 1, timeoutNs, myPe, ticket,
                "the worker reading the ring slot's previous request");
  }
  device::detail::storeRelaxedSys(word(ring->entries[slot].request), request);
  // Release: the worker that reads the ticket reads this request number.
  device::detail::storeReleaseSys(word(ring->entries[slot].ticket), ticket + 1);
  // Acquire: what the worker's operation wrote is visible to the work after this kernel.
  awaitWorker(word(ring->done[slot]), ticket + 1, timeoutNs, myPe, ticket, "the worker completing it");
}

__global__ void barrierKernel(device::Context ctx, device::Team team) {
  device::barrier<device::Thread>(ctx, team);
}

__global__ void putKernel(device::Context ctx, void* dest, const void* src, std::size_t bytes, int pe) {
  device::put<device::Thread>(ctx, dest, src, bytes, pe);
}

__global__ void getKernel(device::Context ctx, void* dest, const void* src, std::size_t bytes, int pe) {
  device::get<device::Thread>(ctx, dest, src, bytes, pe);
}

__global__ void signalOpKernel(device::Context ctx, u64* sig, u64 value, device::SignalOp op, int pe) {
  device::signalOp(ctx, sig, value, op, pe);
}

__global__ void quietKernel(device::Context ctx) { device::quiet(ctx); }

void fail(const char* what, cudaError_t e) {
  throw Error(ErrorCode::Cuda, std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// One block of one thread on `stream`. The launch's own status is checked, not cudaGetLastError:
// that would also report an error some earlier call of the program left behind, and a kernel that
// did launch would be taken for one that did not.
template <class... Params, class... Args>
void launchOneThread(const char* what, void* stream, void (*kernel)(Params...), Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(1);
  config.stream = static_cast<cudaStream_t>(stream);
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
  if (e != cudaSuccess) fail((std::string("launching the ") + what + " kernel").c_str(), e);
}

}  // namespace

void signal(void* stream, std::uint64_t* target, std::uint64_t value, SignalOp op) {
  launchOneThread("signal", stream, signalKernel, reinterpret_cast<u64*>(target), static_cast<u64>(value),
                  op == SignalOp::Add ? 1 : 0);
}

void atomic(void* stream, AtomicOp op, int width, void* target, std::uint64_t operand, std::uint64_t cond,
            void* result) {
  launchOneThread("atomic", stream, atomicKernel, op, width, target, static_cast<u64>(operand), static_cast<u64>(cond),
                  result);
}

void waitUntil(void* stream, const device::Context& ctx, std::uint64_t* sig, Cmp cmp, std::uint64_t value) {
  launchOneThread("signal_wait_until", stream, waitKernel, ctx, reinterpret_cast<u64*>(sig),
                  static_cast<device::Cmp>(cmp), static_cast<u64>(value));
}

void stagedStreamOp(void* stream, StreamOpRing* ring, std::uint64_t* tickets, std::uint64_t request,
                    unsigned long long timeoutNs, int myPe) {
  launchOneThread("staged stream operation", stream, stagedStreamOpKernel, ring, reinterpret_cast<u64*>(tickets),
                  static_cast<u64>(request), timeoutNs, myPe);
}

void barrier(void* stream, const device::Context& ctx, const device::Team& team) {
  launchOneThread("barrier", stream, barrierKernel, ctx, team);
}

void devicePut(void* stream, const device::Context& ctx, void* dest, const void* src, std::size_t bytes, int pe) {
  launchOneThread("put", stream, putKernel, ctx, dest, src, bytes, pe);
}

void deviceGet(void* stream, const device::Context& ctx, void* dest, const void* src, std::size_t bytes, int pe) {
  launchOneThread("get", stream, getKernel, ctx, dest, src, bytes, pe);
}

void deviceSignal(void* stream, const device::Context& ctx, std::uint64_t* sig, std::uint64_t value, SignalOp op,
                  int pe) {
  launchOneThread("signal_op", stream, signalOpKernel, ctx, reinterpret_cast<u64*>(sig), static_cast<u64>(value),
                  static_cast<device::SignalOp>(op), pe);
}

void quiet(void* stream, const device::Context& ctx) { launchOneThread("quiet", stream, quietKernel, ctx); }

void warmUp() {
  cudaFuncAttributes attr;
  for (const void* kernel : {reinterpret_cast<const void*>(signalKernel), reinterpret_cast<const void*>(atomicKernel),
                             reinterpret_cast<const void*>(waitKernel), reinterpret_cast<const void*>(barrierKernel),
                             reinterpret_cast<const void*>(stagedStreamOpKernel), reinterpret_cast<const void*>(putKernel),
                             reinterpret_cast<const void*>(getKernel), reinterpret_cast<const void*>(signalOpKernel),
                             reinterpret_cast<const void*>(quietKernel)}) {
    const cudaError_t e = cudaFuncGetAttributes(&attr, kernel);
    if (e != cudaSuccess) fail("loading the runtime's stream kernels", e);
  }
}

}  // namespace axon::kernels
