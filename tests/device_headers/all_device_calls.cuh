// Kernels that call every function of the device API with every scope and every atomic type. It
// includes nothing but the umbrella header, so compiling it checks that the device headers stand
// alone: nvcc compiles it in nvcc_compile_check.cu, NVRTC in device_headers_nvrtc_test.cpp.
// Nothing launches these kernels; they exist to be compiled.
#pragma once

#include "axon/device/device.hpp"

namespace axon_device_header_check {

namespace ad = axon::device;

template <class Scope>
__device__ void callScoped(const ad::Context& ctx, char* buf, unsigned long long* sig,
                           unsigned long* sig64, ad::SizeT n, int pe,
                           unsigned long long* out) {
  ad::put<Scope>(ctx, buf, buf + n, n, pe);
  ad::get<Scope>(ctx, buf + n, buf, n, pe);
  ad::putSignal<Scope>(ctx, buf, buf + n, n, sig, 1, ad::SignalOp::Add, pe);
  ad::putSignal<Scope>(ctx, buf, buf + n, n, sig, 2, ad::SignalOp::Set, pe);
  ad::putSignal<Scope>(ctx, buf, buf + n, n, sig64, 3ul, ad::SignalOp::Add, pe);
  unsigned long long seen = ad::signalWaitUntil<Scope>(ctx, sig, ad::Cmp::Ge, 1);
  seen += ad::signalWaitUntil<Scope>(ctx, sig64, ad::Cmp::Ne, 0ul);
  ad::barrier<Scope>(ctx, ctx.world);
  ad::barrierAll<Scope>(ctx);
  out[threadIdx.x] = seen;
}

template <class T>
__device__ T callAtomics(const ad::Context& ctx, T* word, int pe) {
  T r = ad::atomicFetch(ctx, word, pe);
  ad::atomicSet(ctx, word, static_cast<T>(1), pe);
  r += ad::atomicSwap(ctx, word, static_cast<T>(2), pe);
  r += ad::atomicCompareSwap(ctx, word, static_cast<T>(2), static_cast<T>(3), pe);
  r += ad::atomicFetchAdd(ctx, word, static_cast<T>(4), pe);
  ad::atomicAdd(ctx, word, static_cast<T>(5), pe);
  r += ad::atomicFetchAnd(ctx, word, static_cast<T>(6), pe);
  r += ad::atomicFetchOr(ctx, word, static_cast<T>(7), pe);
  r += ad::atomicFetchXor(ctx, word, static_cast<T>(8), pe);
  return r;
}

}  // namespace axon_device_header_check

extern "C" __global__ void axonCheckThreadScope(axon::device::Context ctx, char* buf,
                                                unsigned long long* sig, unsigned long* sig64,
                                                axon::device::SizeT n, int pe,
                                                unsigned long long* out) {
  axon_device_header_check::callScoped<axon::device::Thread>(ctx, buf, sig, sig64, n, pe, out);
}

extern "C" __global__ void axonCheckWarpScope(axon::device::Context ctx, char* buf,
                                              unsigned long long* sig, unsigned long* sig64,
                                              axon::device::SizeT n, int pe,
                                              unsigned long long* out) {
  axon_device_header_check::callScoped<axon::device::Warp>(ctx, buf, sig, sig64, n, pe, out);
}

extern "C" __global__ void axonCheckBlockScope(axon::device::Context ctx, char* buf,
                                               unsigned long long* sig, unsigned long* sig64,
                                               axon::device::SizeT n, int pe,
                                               unsigned long long* out) {
  axon_device_header_check::callScoped<axon::device::Block>(ctx, buf, sig, sig64, n, pe, out);
}

// The default scope (Thread) and the calls that have no scope.
extern "C" __global__ void axonCheckUnscoped(axon::device::Context ctx, char* buf,
                                             unsigned long long* sig, unsigned long* sig64,
                                             double* d, axon::device::SizeT n, int pe,
                                             unsigned long long* out) {
  namespace ad = axon::device;
  ad::put(ctx, buf, buf + n, n, pe);
  ad::get(ctx, buf + n, buf, n, pe);
  ad::putSignal(ctx, buf, buf + n, n, sig, 1, ad::SignalOp::Add, pe);
  ad::p(ctx, d, 1.5, pe);
  double x = ad::g(ctx, static_cast<const double*>(d), pe);
  ad::signalOp(ctx, sig, 1, ad::SignalOp::Add, pe);
  ad::signalOp(ctx, sig, 7, ad::SignalOp::Set, pe);
  ad::signalOp(ctx, sig64, 1ul, ad::SignalOp::Add, pe);
  unsigned long long seen = ad::signalFetch(ctx, sig) + ad::signalFetch(ctx, sig64);
  seen += ad::signalWaitUntil(ctx, sig, ad::Cmp::Eq, 7);
  seen += ad::signalWaitUntil(ctx, sig, ad::Cmp::Gt, 6);
  seen += ad::signalWaitUntil(ctx, sig, ad::Cmp::Lt, 8);
  seen += ad::signalWaitUntil(ctx, sig, ad::Cmp::Le, 7);
  ad::fence(ctx);
  ad::quiet(ctx);
  ad::barrier(ctx, ctx.world);
  ad::barrierAll(ctx);
  const char* peer = ad::remote(ctx, static_cast<const char*>(buf), pe);
  out[0] = seen + static_cast<unsigned long long>(x) + (ad::isReachable(ctx, pe) ? 1 : 0) +
           static_cast<unsigned long long>(peer - buf);
}

extern "C" __global__ void axonCheckAtomics(axon::device::Context ctx, int* i32, unsigned int* u32,
                                            long* l64, unsigned long* ul64, long long* i64,
                                            unsigned long long* u64, int pe,
                                            unsigned long long* out) {
  using axon_device_header_check::callAtomics;
  out[0] = static_cast<unsigned long long>(callAtomics(ctx, i32, pe)) +
           callAtomics(ctx, u32, pe) + static_cast<unsigned long long>(callAtomics(ctx, l64, pe)) +
           callAtomics(ctx, ul64, pe) + static_cast<unsigned long long>(callAtomics(ctx, i64, pe)) +
           callAtomics(ctx, u64, pe);
}

// Every device collective with one element type; the reducing ones with every type. One kernel
// per call: ptxas takes time that grows faster than a kernel's size, and these calls inline
// everything (every protocol), so one kernel holding them all took it four times as long.
extern "C" __global__ void axonCheckCollBarrier(axon::device::CollHandle h, int* out) {
  namespace ad = axon::device;
  out[0] = ad::barrier<ad::Block>(h) ? 1 : 0;
}

extern "C" __global__ void axonCheckCollBroadcast(axon::device::CollHandle h, char* bytes,
                                                  axon::device::SizeT n, int* out) {
  namespace ad = axon::device;
  out[0] = ad::broadcast<ad::Block>(h, bytes, bytes + n, n, 0) ? 1 : 0;
}

extern "C" __global__ void axonCheckCollAllgather(axon::device::CollHandle h, float* f,
                                                  axon::device::SizeT n, int* out) {
  namespace ad = axon::device;
  out[0] = ad::allgather<ad::Block>(h, f, f + n, n) ? 1 : 0;
}

extern "C" __global__ void axonCheckCollAlltoall(axon::device::CollHandle h, double* d,
                                                 axon::device::SizeT n, int* out) {
  namespace ad = axon::device;
  out[0] = ad::alltoall<ad::Block>(h, d, d + n, n, 2) ? 1 : 0;
}

template <class T>
__global__ void axonCheckCollAllreduce(axon::device::CollHandle h, T* buf, axon::device::SizeT n,
                                       int* out) {
  namespace ad = axon::device;
  out[0] = ad::allreduce<ad::Block>(h, buf, buf, n, ad::ReduceOp::Sum) ? 1 : 0;
}

template <class T>
__global__ void axonCheckCollReduce(axon::device::CollHandle h, T* buf, axon::device::SizeT n,
                                    int* out) {
  namespace ad = axon::device;
  out[0] = ad::reduce<ad::Block>(h, buf, buf + n, n, ad::ReduceOp::Max, 0, 1) ? 1 : 0;
}

template <class T>
__global__ void axonCheckCollReduceScatter(axon::device::CollHandle h, T* buf,
                                           axon::device::SizeT n, int* out) {
  namespace ad = axon::device;
  out[0] = ad::reduceScatter<ad::Block>(h, buf, buf + n, n, ad::ReduceOp::Min) ? 1 : 0;
}

// The reducing collectives' kernels for one element type (explicit instantiations: their PTX
// names are mangled, and contain the template's name).
#define AXON_CHECK_REDUCING_COLLECTIVES(T)                                                        \
  template __global__ void axonCheckCollAllreduce<T>(axon::device::CollHandle, T*,                \
                                                     axon::device::SizeT, int*);                  \
  template __global__ void axonCheckCollReduce<T>(axon::device::CollHandle, T*,                   \
                                                  axon::device::SizeT, int*);                     \
  template __global__ void axonCheckCollReduceScatter<T>(axon::device::CollHandle, T*,            \
                                                         axon::device::SizeT, int*);

AXON_CHECK_REDUCING_COLLECTIVES(float)
AXON_CHECK_REDUCING_COLLECTIVES(double)
AXON_CHECK_REDUCING_COLLECTIVES(int)
AXON_CHECK_REDUCING_COLLECTIVES(axon::device::Half)
AXON_CHECK_REDUCING_COLLECTIVES(axon::device::BFloat16)
AXON_CHECK_REDUCING_COLLECTIVES(long)
#undef AXON_CHECK_REDUCING_COLLECTIVES
