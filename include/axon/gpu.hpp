// The GPU backend as a host program sees it: which GPU this PE drives, the handle its kernels
// take, and one-sided calls ordered on a CUDA stream.
//
// One PE per GPU: init() picks AXON_DEVICE, else the device the program made current before
// init(), else the node-local rank modulo the GPUs visible. With the GPU backend on, axon::malloc
// allocates on the GPU heap and axon::mallocHost on the host heap (pinned).
#pragma once

#include <cstddef>
#include <cstdint>

#include "axon/device/types.hpp"
#include "axon/onesided.hpp"
#include "axon/team.hpp"

struct CUstream_st;

namespace axon {

// A cudaStream_t or CUstream (the same type); nullptr is the legacy default stream.
using Stream = CUstream_st*;

// Is the GPU backend on (a GPU was found and AXON_BACKEND is not host)?
bool gpuEnabled();
// The CUDA ordinal of this PE's GPU. Throws Unsupported on the host backend.
int gpuDevice();
// Why the GPU backend is off ("AXON_BACKEND=host", "the CUDA driver sees no GPU", ...), or "".
const char* gpuUnavailableReason();

// What kernels need to call the device API (axon/device/device.hpp). Valid until finalize().
device::Context deviceContext();
// A team for the device API (barrier over a team from a kernel).
device::Team deviceTeam(const Team& team);
// Is PE pe's GPU heap reachable by load/store from this PE's GPU (peer access)? When not, host
// calls and stream puts, gets and signals take the staged path (pinned host memory); stream
// barriers over it report Unsupported and device calls to that PE trap.
bool gpuPeerReachable(int pe);

// Stream-ordered one-sided calls: each enqueues its work on `stream` and returns at once. They
// can be captured into a CUDA graph. Symmetric arguments and checks are those of the blocking
// calls; signals used on streams must be in the GPU heap.
void putOnStream(void* dest, const void* src, std::size_t bytes, int pe, Stream stream);
void getOnStream(void* dest, const void* src, std::size_t bytes, int pe, Stream stream);
// The signal update follows the data in stream order, with release semantics.
void putSignalOnStream(void* dest, const void* src, std::size_t bytes, std::uint64_t* sig,
                       std::uint64_t value, SignalOp op, int pe, Stream stream);
void signalOpOnStream(std::uint64_t* sig, std::uint64_t value, SignalOp op, int pe, Stream stream);
// Work enqueued after it starts once the local signal compares true. The wait runs on the GPU and
// is bounded by AXON_TIMEOUT: past it the kernel prints the PE, address, expected and seen value
// and traps (the CUDA context is lost, as with any trap).
void signalWaitUntilOnStream(std::uint64_t* sig, Cmp cmp, std::uint64_t value, Stream stream);
// Work enqueued after it starts once every put this PE issued on `stream` or without a stream
// (put_nbi) is complete at its target.
void quietOnStream(Stream stream);
// A barrier over the team, on the GPU: work after it starts once every member reached it (and
// quiet has held on each). One stream barrier per team in flight on a PE at a time.
void barrierOnStream(const Team& team, Stream stream);
void barrierAllOnStream(Stream stream);
// Waits on the host until the work enqueued on `stream` is complete (axon's own kernels bound
// their waits by AXON_TIMEOUT, so this returns); throws Error(Cuda) if that work failed.
void streamSynchronize(Stream stream);

}  // namespace axon
