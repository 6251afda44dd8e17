// The runtime's small kernels: signals, atomics, waits and barriers ordered on CUDA streams.
// Each runs on one thread; they exist because a copy engine cannot do a release store, an atomic
// or a wait.
#include <cuda_runtime.h>

#include <string>

#include "axon/device/device.hpp"
#include "axon/error.hpp"
#include "kernels/kernels.hpp"

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

__global__ void waitFlagKernel(unsigned int* flag, unsigned long long timeoutNs, int myPe) {
  const unsigned long long start = device::detail::globalTimerNs();
  unsigned sleepNs = 64;
  for (unsigned polls = 1;; ++polls) {
    if (*reinterpret_cast<const volatile unsigned int*>(flag) != 0) break;
    __nanosleep(sleepNs);
    if (sleepNs < 2048) sleepNs *= 2;
    if (timeoutNs != 0 && polls % 64 == 0 && device::detail::globalTimerNs() - start > timeoutNs) {
      printf("axon: PE %d: a stream-ordered staged transfer did not complete within AXON_TIMEOUT "
             "(its flag at %p stayed 0); see the host log for the transfer's error\n",
             myPe, flag);
      __trap();
    }
  }
  __threadfence_system();  // what the worker wrote before the flag is visible to later work
  // Let go of the flag (the staged stream ops reuse a run-once request's flag once they see 2).
  *reinterpret_cast<volatile unsigned int*>(flag) = 2;
}

__global__ void barrierKernel(device::Context ctx, device::Team team) {
  device::barrier<device::Thread>(ctx, team);
}

void check(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    throw Error(ErrorCode::Cuda, std::string("launching the ") + what + " kernel: " + cudaGetErrorName(e) +
                                     " (" + cudaGetErrorString(e) + ")");
  }
}

cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

void signal(void* stream, std::uint64_t* target, std::uint64_t value, SignalOp op) {
  signalKernel<<<1, 1, 0, asStream(stream)>>>(reinterpret_cast<u64*>(target), value, op == SignalOp::Add);
  check("signal");
}

void atomic(void* stream, AtomicOp op, int width, void* target, std::uint64_t operand, std::uint64_t cond,
            void* result) {
  atomicKernel<<<1, 1, 0, asStream(stream)>>>(op, width, target, operand, cond, result);
  check("atomic");
}

void waitUntil(void* stream, const device::Context& ctx, std::uint64_t* sig, Cmp cmp, std::uint64_t value) {
  waitKernel<<<1, 1, 0, asStream(stream)>>>(ctx, reinterpret_cast<u64*>(sig), static_cast<device::Cmp>(cmp), value);
  check("signal_wait_until");
}

void waitFlag(void* stream, unsigned int* flag, unsigned long long timeoutNs, int myPe) {
  waitFlagKernel<<<1, 1, 0, asStream(stream)>>>(flag, timeoutNs, myPe);
  check("staged stream wait");
}

void barrier(void* stream, const device::Context& ctx, const device::Team& team) {
  barrierKernel<<<1, 1, 0, asStream(stream)>>>(ctx, team);
  check("barrier");
}

void warmUp() {
  cudaFuncAttributes attr;
  cudaFuncGetAttributes(&attr, signalKernel);
  cudaFuncGetAttributes(&attr, atomicKernel);
  cudaFuncGetAttributes(&attr, waitKernel);
  cudaFuncGetAttributes(&attr, barrierKernel);
  cudaFuncGetAttributes(&attr, waitFlagKernel);
  check("warm-up");
}

}  // namespace axon::kernels
