// The memory operations the device API needs that CUDA C++ does not spell directly: loads and
// stores with acquire/release or relaxed semantics at system scope, a release reduction, the
// system-scope fence and the global nanosecond timer, as inline PTX.
//
// All of them take generic pointers (what C++ code holds) and convert them to the global state
// space explicitly: the `.global` forms are specified on global addresses, which on current GPUs
// happen to equal the generic ones, but the conversion costs nothing and keeps the PTX honest.
#pragma once

#include "axon/device/types.hpp"

namespace axon {
namespace device {
namespace detail {

AXON_DEVICE_INLINE unsigned long long globalAddress(const volatile void* p) {
  return static_cast<unsigned long long>(__cvta_generic_to_global(const_cast<const void*>(p)));
}

// Acquire load at system scope: loads and stores of this thread that follow it in program order
// happen after it, and it observes every store that a release (or a fence) of any GPU or CPU made
// visible before the value it reads.
AXON_DEVICE_INLINE unsigned long long loadAcquireSys(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(globalAddress(p)) : "memory");
  return v;
}

// fence.acquire needs sm_90 and PTX ISA 8.6 (CUDA 12.8 and later; NVRTC defines the same version
// macros as nvcc).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDACC_VER_MAJOR__) && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8))
#define AXON_DEVICE_HAS_ACQUIRE_FENCE 1
#else
#define AXON_DEVICE_HAS_ACQUIRE_FENCE 0
#endif

#if AXON_DEVICE_HAS_ACQUIRE_FENCE
// Acquire fence at system scope: after a relaxed (strong) load at system scope, the pair is an
// acquire of the value that load read (the PTX memory model's acquire pattern). On Hopper it costs
// an L1 invalidation, not a second trip to memory as an acquire load of the same word does.
AXON_DEVICE_INLINE void fenceAcquireSys() { asm volatile("fence.acquire.sys;" ::: "memory"); }
#endif

// Makes a relaxed load of *p at system scope that just read a value an acquire of it, for words
// that only grow (round counters): the acquire fence where there is one, otherwise an acquire load
// of the same word, which reads that value or a later one.
AXON_DEVICE_INLINE void acquireAfterRelaxedLoad(const unsigned long long* p) {
#if AXON_DEVICE_HAS_ACQUIRE_FENCE
  (void)p;
  fenceAcquireSys();
#else
  (void)loadAcquireSys(p);
#endif
}

// Release store at system scope: whoever observes the value with an acquire (at system scope) also
// observes every store this thread made before it, and every store it has observed (cumulativity).
AXON_DEVICE_INLINE void storeReleaseSys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(globalAddress(p)), "l"(v) : "memory");
}

// Atomic add with release semantics at system scope, without fetching the old value (`red`).
AXON_DEVICE_INLINE void addReleaseSys(unsigned long long* p, unsigned long long v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;" ::"l"(globalAddress(p)), "l"(v)
               : "memory");
}

// Relaxed (atomic, unordered) loads and stores at system scope, for atomicFetch/atomicSet: never
// torn, never served from a stale L1 line.
AXON_DEVICE_INLINE unsigned int loadRelaxedSys(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.relaxed.sys.global.b32 %0, [%1];" : "=r"(v) : "l"(globalAddress(p)) : "memory");
  return v;
}
AXON_DEVICE_INLINE unsigned long long loadRelaxedSys(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.sys.global.b64 %0, [%1];" : "=l"(v) : "l"(globalAddress(p)) : "memory");
  return v;
}
AXON_DEVICE_INLINE void storeRelaxedSys(unsigned int* p, unsigned int v) {
  asm volatile("st.relaxed.sys.global.b32 [%0], %1;" ::"l"(globalAddress(p)), "r"(v) : "memory");
}
AXON_DEVICE_INLINE void storeRelaxedSys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.sys.global.b64 [%0], %1;" ::"l"(globalAddress(p)), "l"(v) : "memory");
}

// Full fence at system scope (fence.sc.sys): every memory operation of this thread before it is
// ordered before every one after it, as seen by any GPU or CPU thread.
AXON_DEVICE_INLINE void fenceSys() { __threadfence_system(); }

// Nanoseconds of the GPU's global timer (advances in steps of about a microsecond).
AXON_DEVICE_INLINE unsigned long long globalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Programmatic dependent launch (sm_90 and later; no-ops before, and in a grid launched without
// the attribute). gridDependencyWait: returns once the grids this one depends on in its stream
// have completed and their memory is visible; nothing the stream's earlier work wrote may be
// touched before it. launchDependents: lets the stream's next grid be scheduled now, so that its
// launch overlaps this grid's run (it waits in its own gridDependencyWait).
AXON_DEVICE_INLINE void gridDependencyWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
AXON_DEVICE_INLINE void launchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

}  // namespace detail
}  // namespace device
}  // namespace axon
