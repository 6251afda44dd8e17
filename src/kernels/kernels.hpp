// Launchers of the runtime's own small kernels (signal_kernels.cu). Plain C++ signatures, so that
// host files need no CUDA headers; `stream` is a CUstream / cudaStream_t. Each throws
// axon::Error(Cuda) when the launch fails.
#pragma once

#include <cstddef>
#include <cstdint>

#include "axon/device/types.hpp"
#include "axon/onesided.hpp"

namespace axon::kernels {

struct StreamOpRing;  // kernels/stream_op_ring.hpp

// Updates a 64-bit signal (already translated to this process's view) with release semantics
// at system scope, after all earlier work on the stream.
void signal(void* stream, std::uint64_t* target, std::uint64_t value, SignalOp op);
// One atomic at system scope on a 4- or 8-byte word; the old value goes to `result` (pinned
// host memory) when the operation returns one.
void atomic(void* stream, AtomicOp op, int width, void* target, std::uint64_t operand,
            std::uint64_t cond, void* result);
// Holds the stream until the local signal compares true (bounded by ctx.timeoutNs, then traps).
void waitUntil(void* stream, const device::Context& ctx, std::uint64_t* sig, Cmp cmp, std::uint64_t value);
// One stream-ordered operation of the staged path (gpu/stream_host_work.cpp): takes
// a ticket from `tickets` (device memory), posts `request` in `ring` (pinned host memory) and holds
// the stream until the worker thread has completed it. Past `timeoutNs` it prints the PE, the word
// it polls, the expected and the seen value, and traps. A kernel and not cuStreamWaitValue, which
// stalls the whole hardware queue its stream maps to (the staged path's own copies included).
void stagedStreamOp(void* stream, StreamOpRing* ring, std::uint64_t* tickets, std::uint64_t request,
                    unsigned long long timeoutNs, int myPe);
// A device barrier over `team` on the stream.
void barrier(void* stream, const device::Context& ctx, const device::Team& team);
// The device API's put, get and signal_op on the stream, one thread: how stream-ordered calls
// reach a PE whose GPU heap is not mapped here (the call goes through the device proxy). The
// symmetric address is in this PE's GPU heap. put and get hold the stream until they are done.
void devicePut(void* stream, const device::Context& ctx, void* dest, const void* src, std::size_t bytes, int pe);
void deviceGet(void* stream, const device::Context& ctx, void* dest, const void* src, std::size_t bytes, int pe);
void deviceSignal(void* stream, const device::Context& ctx, std::uint64_t* sig, std::uint64_t value, SignalOp op,
                  int pe);
// The device API's quiet on the stream: what the proxy carries for this PE is complete.
void quiet(void* stream, const device::Context& ctx);
// Loads the kernels now: a first launch may not happen inside a CUDA graph capture.
void warmUp();

}  // namespace axon::kernels
