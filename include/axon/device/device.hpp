// The device API of axon: everything a kernel includes to communicate from the GPU.
//
//   #include <axon/device/device.hpp>
//   __global__ void ring(axon::device::Context ctx, float* buf, unsigned long long* sig, size_t n)
//   {
//     namespace ad = axon::device;
//     const int next = (ctx.myPe + 1) % ctx.nPes;
//     ad::putSignal<ad::Block>(ctx, buf, buf + n, n * sizeof(float), sig, 1, ad::SignalOp::Add,
//     next); ad::signalWaitUntil<ad::Block>(ctx, sig, ad::Cmp::Ge, 1);
//   }
//
// Compiles alone under nvcc and NVRTC (it includes no system header); a host compiler sees the
// types, the declarations and the host-callable arithmetic (remote(), isReachable()).
#pragma once

#include "axon/device/collectives.hpp"
#include "axon/device/onesided.hpp"
#include "axon/device/types.hpp"
