// Errors on the device: a kernel cannot throw, so a device call that meets an error prints one
// line naming this PE, the call and what was wrong, then stops the kernel with __trap(); the host
// then sees the launch fail (cudaErrorLaunchFailure or similar) and the line in its output.
//
// Only the first failing thread of the module prints: a bad argument to a Block call fails in
// every thread of every block, and thousands of identical lines would hide the one that matters.
// The others wait (bounded) until that line is written before trapping themselves, because a trap
// ends every thread of the kernel, and one that came first would lose the line.
#pragma once

#include "axon/device/impl/address.hpp"
#include "axon/device/impl/ptx.hpp"
#include "axon/device/types.hpp"

// nvcc declares the device printf only for the device pass and leaves the host pass to <cstdio>,
// which these headers may not include; the host pass parses device bodies but never compiles them,
// so the C library's own signature is enough there. NVRTC has printf built in.
#if defined(__CUDACC__) && !defined(__CUDA_ARCH__) && !defined(__CUDACC_RTC__)
extern "C" int printf(const char*, ...);
#endif

namespace axon {
namespace device {
namespace detail {

// 0: no error yet; 1: a thread is printing its report; 2: the report is written.
inline AXON_DEVICE_NOINLINE unsigned int* fatalState() {
  static unsigned int state = 0;
  return &state;
}

// True for the one thread that gets to print.
AXON_DEVICE_INLINE bool beginFatalReport() { return ::atomicCAS(fatalState(), 0u, 1u) == 0u; }

// Ends the kernel. The reporter marks its line written; every other thread waits for that mark,
// at most 100 ms in case the reporter itself cannot run on, then traps.
[[noreturn]] inline AXON_DEVICE_NOINLINE void endFatalReport(bool reporter) {
  volatile unsigned int* state = fatalState();
  if (reporter) {
    __threadfence_system();
    *state = 2u;
  } else {
    const unsigned long long start = globalTimerNs();
    while (*state != 2u && globalTimerNs() - start < 100000000ull) __nanosleep(1000);
  }
  __trap();
}

inline AXON_DEVICE_NOINLINE const char* cmpName(Cmp cmp) {
  switch (cmp) {
    case Cmp::Eq:
      return "==";
    case Cmp::Ne:
      return "!=";
    case Cmp::Gt:
      return ">";
    case Cmp::Ge:
      return ">=";
    case Cmp::Lt:
      return "<";
    case Cmp::Le:
      return "<=";
  }
  return "?";
}

// `op` names the call as the host API's messages do ("put", "atomic_fetch_add", ...).
[[noreturn]] inline AXON_DEVICE_NOINLINE void failUnreachable(const char* op, int myPe, int nPes,
                                                              int pe) {
  const bool reporter = beginFatalReport();
  if (reporter) {
    if (pe < 0 || pe >= nPes) {
      printf(
          "axon: PE %d: device %s: PE %d is not reachable by load/store from this GPU (no such PE: "
          "the world has PEs 0..%d)\n",
          myPe, op, pe, nPes - 1);
    } else if (pe >= kMaxPeers) {
      printf(
          "axon: PE %d: device %s: PE %d is not reachable by load/store from this GPU (the device "
          "API addresses PEs 0..%d only)\n",
          myPe, op, pe, kMaxPeers - 1);
    } else {
      printf(
          "axon: PE %d: device %s: PE %d is not reachable by load/store from this GPU (its GPU "
          "heap is not mapped here: the PE is on another node, the GPUs have no peer access, or "
          "AXON_P2P=0)\n",
          myPe, op, pe);
    }
  }
  endFatalReport(reporter);
}


[[noreturn]] inline AXON_DEVICE_NOINLINE void failBadTeam(const char* op, int myPe, int start,
                                                          int stride, int size, int slot,
                                                          int myIndex) {
  const bool reporter = beginFatalReport();
  if (reporter) {
    if (myIndex < 0) {
      printf(
          "axon: PE %d: device %s: this PE is not a member of the team (start %d, stride %d, size "
          "%d, slot %d)\n",
          myPe, op, start, stride, size, slot);
    } else {
      printf(
          "axon: PE %d: device %s: invalid team (start %d, stride %d, size %d, slot %d, my index "
          "%d): pass a Team from the host API unchanged\n",
          myPe, op, start, stride, size, slot, myIndex);
    }
  }
  endFatalReport(reporter);
}

}  // namespace detail
}  // namespace device
}  // namespace axon
