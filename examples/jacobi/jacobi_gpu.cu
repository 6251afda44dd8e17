// The GPU modes: the sweeps run as kernels on this PE's GPU, and the halos move
//   device    from inside the sweep kernel (put_signal by the blocks computing the boundary rows,
//             signal_wait_until by the blocks that need the halos),
//   stream    by stream-ordered put_signal and waits after each sweep kernel, captured into a
//             CUDA graph of two sweeps that is replayed,
//   twosided  by isend/irecv of the GPU rows between sweeps (CUDA-aware MPI style),
//   staged    by copies to pinned host memory, isend/irecv there, and copies back (the baseline).
#include <axon/axon.hpp>
#include <axon/device/device.hpp>

#include <cuda_runtime.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/cuda_helpers.hpp"
#include "jacobi_modes.hpp"

namespace axon::examples::jacobi {
namespace {

namespace ad = axon::device;
using Clock = std::chrono::steady_clock;
constexpr int kThreads = 256;


// One row r of the sweep, by one block: threads across the columns.
__device__ void sweepRow(const double* in, double* out, long cols, long n, long r) {
  for (long c = 1 + threadIdx.x; c <= n; c += blockDim.x) {
    const long i = r * cols + c;
    out[i] = stencil(in[i - cols], in[i + cols], in[i - 1], in[i + 1]);
  }
}

__global__ void __launch_bounds__(kThreads) sweepKernel(const double* in, double* out, long cols, long n,
                                                        long rows) {
  for (long step = blockIdx.x; step < rows; step += gridDim.x) sweepRow(in, out, cols, n, rowAtStep(step, rows));
}

// Where the device mode's kernel sends its boundary rows and whose halos it waits for. The signal
// words are per parity of the sweep (the parity of the field they announce) and are reset by the
// block that consumed them, so that every sweep of one parity has the same arguments and a CUDA
// graph of two sweeps replays unchanged: a neighbour adds to parity p again only for the field
// after next, which needs a row that the consuming block sends after its reset.
struct Exchange {
  int up, down;                   // -1 at the domain's edge
  long upGhostRow;                // the upper neighbour's bottom ghost row (its rows + 1)
  unsigned long long* fromAbove;  // [2]: a row is in ghost row 0 of field p (symmetric)
  unsigned long long* fromBelow;  // [2]: a row is in ghost row rows + 1 of field p (symmetric)
};

// Sweep k with the halo exchange inside: the block computing row 1 first waits until the upper
// neighbour's row is in ghost row 0 of the field it reads (not for the first sweep, whose ghost
// rows hold the starting state), computes, and puts row 1 into the upper neighbour's ghost row
// with a signal; the block of the last row does the same downwards. Every other block computes
// without waiting. The ghost row a neighbour overwrites was read two sweeps before by the same
// block, before that block sent the row the neighbour needed to get this far.
__global__ void __launch_bounds__(kThreads) sweepExchangeKernel(ad::Context ctx, const double* in, double* out,
                                                                long cols, long n, long rows, Exchange x,
                                                                int parity, bool waitForHalos) {
  const ad::SizeT rowBytes = static_cast<ad::SizeT>(cols) * sizeof(double);
  for (long step = blockIdx.x; step < rows; step += gridDim.x) {
    const long r = rowAtStep(step, rows);
    const bool sendUp = r == 1 && x.up >= 0, sendDown = r == rows && x.down >= 0;
    if (waitForHalos && sendUp) {
      ad::signalWaitUntil<ad::Block>(ctx, &x.fromAbove[parity], ad::Cmp::Ge, 1ull);
      if (threadIdx.x == 0) ad::signalOp(ctx, &x.fromAbove[parity], 0ull, ad::SignalOp::Set, ctx.myPe);
    }
    if (waitForHalos && sendDown) {
      ad::signalWaitUntil<ad::Block>(ctx, &x.fromBelow[parity], ad::Cmp::Ge, 1ull);
      if (threadIdx.x == 0) ad::signalOp(ctx, &x.fromBelow[parity], 0ull, ad::SignalOp::Set, ctx.myPe);
    }
    sweepRow(in, out, cols, n, r);
    if (sendUp || sendDown) __syncthreads();  // the row is complete before it is sent
    if (sendUp)
      ad::putSignal<ad::Block>(ctx, out + x.upGhostRow * cols, out + cols, rowBytes, &x.fromBelow[1 - parity], 1ull,
                               ad::SignalOp::Add, x.up);
    if (sendDown)
      ad::putSignal<ad::Block>(ctx, out, out + rows * cols, rowBytes, &x.fromAbove[1 - parity], 1ull,
                               ad::SignalOp::Add, x.down);
  }
}

int sweepBlocks(long rows) {
  int device = 0, sms = 0;
  EXAMPLES_CUDA(cudaGetDevice(&device));
  EXAMPLES_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return static_cast<int>(std::min<long>(rows, 8L * sms));
}

// Both fields of this PE on the GPU, set to the starting state.
void uploadStart(double* a, double* b, const Decomposition& d) {
  std::vector<double> start(d.layout.cells());
  initialise(start.data(), d);
  EXAMPLES_CUDA(cudaMemcpy(a, start.data(), d.layout.bytes(), cudaMemcpyHostToDevice));
  EXAMPLES_CUDA(cudaMemcpy(b, start.data(), d.layout.bytes(), cudaMemcpyHostToDevice));
}

std::vector<double> downloadInterior(const double* field, const Layout& l) {
  std::vector<double> host(l.cells());
  EXAMPLES_CUDA(cudaMemcpy(host.data(), field, l.bytes(), cudaMemcpyDeviceToHost));
  return interiorOf(host.data(), l);
}


using Stream = axon::examples::CudaStream;
using axon::examples::CapturedGraph;


// Both fields of this PE and its signal words in the symmetric GPU heap, at the starting state.
struct SymmetricFields : axon::examples::SymmetricFields<double> {
  explicit SymmetricFields(const Decomposition& d)
      : axon::examples::SymmetricFields<double>(d.layout.cells(), [&](double* a, double* b) { uploadStart(a, b, d); }) {}
};

RunResult runDevice(const Options& o, const Decomposition& d) {
  axon::examples::requireLoadStore({d.up, d.down}, d.me, "--mode stream or twosided");
  const Layout& l = d.layout;
  SymmetricFields f(d);
  Stream s;
  const Exchange x{d.up, d.down, d.up >= 0 ? d.rowsOf(d.up) + 1 : 0, &f.signals[0], &f.signals[2]};
  const ad::Context ctx = axon::deviceContext();
  const int blocks = sweepBlocks(l.rows);
  auto launch = [&](long k) {
    const int p = static_cast<int>(k % 2);
    sweepExchangeKernel<<<blocks, kThreads, 0, s.get()>>>(ctx, f.buf[p], f.buf[1 - p], l.cols(), l.n, l.rows, x, p,
                                                          k > 0);
    EXAMPLES_CUDA(cudaGetLastError());
  };
  // Sweeps 1 and 2 as a graph, replayed for 3 and 4, 5 and 6, ...
  CapturedGraph graph(o.graph && o.iters >= 3, s.get(), [&] { launch(1); launch(2); });

  const auto start = Clock::now();
  launch(0);
  long k = 1;
  if (graph.ready())
    for (; k + 2 <= o.iters; k += 2) graph.launch(s.get());
  for (; k < o.iters; ++k) launch(k);
  axon::streamSynchronize(s.get());
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  RunResult r{seconds, downloadInterior(f.buf[o.iters % 2], l),
              std::string("put_signal and signal_wait_until inside the sweep kernel (") + std::to_string(blocks) +
                  " blocks), " + (graph.ready() ? "a CUDA graph of 2 sweeps replayed" : "launched one by one")};
  axon::barrierAll();  // no PE frees its heap while a neighbour's last puts may be landing
  return r;
}

// Stream mode's signals are per parity and reset once consumed, so that two sweeps form a CUDA
// graph that replays unchanged: the neighbour adds to parity p again only for the sweep after
// next, which needs a row this PE sends after the reset in stream order.
void enqueueStreamSweep(const Decomposition& d, const SymmetricFields& f, long k, cudaStream_t s, int blocks) {
  const Layout& l = d.layout;
  const double* in = f.buf[k % 2];
  double* out = f.buf[(k + 1) % 2];
  const int p = static_cast<int>((k + 1) % 2);
  std::uint64_t* fromAbove = reinterpret_cast<std::uint64_t*>(&f.signals[p]);
  std::uint64_t* fromBelow = reinterpret_cast<std::uint64_t*>(&f.signals[2 + p]);
  sweepKernel<<<blocks, kThreads, 0, s>>>(in, out, l.cols(), l.n, l.rows);
  EXAMPLES_CUDA(cudaGetLastError());
  if (d.up >= 0)
    axon::putSignalOnStream(out + l.at(d.rowsOf(d.up) + 1, 0), out + l.at(1, 0), l.rowBytes(), fromBelow, 1,
                            axon::SignalOp::Add, d.up, s);
  if (d.down >= 0)
    axon::putSignalOnStream(out + l.at(0, 0), out + l.at(l.rows, 0), l.rowBytes(), fromAbove, 1,
                            axon::SignalOp::Add, d.down, s);
  if (d.up >= 0) {
    axon::signalWaitUntilOnStream(fromAbove, axon::Cmp::Ge, 1, s);
    axon::signalOpOnStream(fromAbove, 0, axon::SignalOp::Set, d.me, s);
  }
  if (d.down >= 0) {
    axon::signalWaitUntilOnStream(fromBelow, axon::Cmp::Ge, 1, s);
    axon::signalOpOnStream(fromBelow, 0, axon::SignalOp::Set, d.me, s);
  }
}

RunResult runStream(const Options& o, const Decomposition& d) {
  const Layout& l = d.layout;
  SymmetricFields f(d);
  Stream s;
  const int blocks = sweepBlocks(l.rows);
  CapturedGraph graph(o.graph && o.iters >= 2, s.get(), [&] {
    enqueueStreamSweep(d, f, 0, s.get(), blocks);
    enqueueStreamSweep(d, f, 1, s.get(), blocks);
  });

  const auto start = Clock::now();
  long k = 0;
  if (graph.ready())
    for (; k + 2 <= o.iters; k += 2) graph.launch(s.get());
  for (; k < o.iters; ++k) enqueueStreamSweep(d, f, k, s.get(), blocks);
  axon::streamSynchronize(s.get());
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  RunResult r{seconds, downloadInterior(f.buf[o.iters % 2], l),
              graph.ready() ? "stream-ordered put_signal and waits, a CUDA graph of 2 sweeps replayed"
                            : "stream-ordered put_signal and waits, launched one by one"};
  axon::barrierAll();
  return r;
}

// A field in ordinary device memory (cudaMalloc), as an MPI code would have it.
struct DeviceFields {
  explicit DeviceFields(const Decomposition& d) {
    EXAMPLES_CUDA(cudaMalloc(&buf[0], d.layout.bytes()));
    EXAMPLES_CUDA(cudaMalloc(&buf[1], d.layout.bytes()));
    uploadStart(buf[0], buf[1], d);
  }
  ~DeviceFields() {
    cudaFree(buf[0]);
    cudaFree(buf[1]);
  }
  DeviceFields(const DeviceFields&) = delete;
  DeviceFields& operator=(const DeviceFields&) = delete;
  double* buf[2]{};
};

RunResult runTwoSided(const Options& o, const Decomposition& d) {
  const Layout& l = d.layout;
  DeviceFields f(d);
  Stream s;
  const int blocks = sweepBlocks(l.rows);
  axon::barrierAll();

  const auto start = Clock::now();
  for (long k = 0; k < o.iters; ++k) {
    double* in = f.buf[k % 2];
    exchangeHalos(d, l.rowBytes(), in + l.at(1, 0), in + l.at(l.rows, 0), in, in + l.at(l.rows + 1, 0));
    sweepKernel<<<blocks, kThreads, 0, s.get()>>>(in, f.buf[(k + 1) % 2], l.cols(), l.n, l.rows);
    EXAMPLES_CUDA(cudaGetLastError());
    EXAMPLES_CUDA(cudaStreamSynchronize(s.get()));  // the next exchange sends what this sweep wrote
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {seconds, downloadInterior(f.buf[o.iters % 2], l), "isend/irecv of GPU rows between sweep kernels"};
}

RunResult runStaged(const Options& o, const Decomposition& d) {
  const Layout& l = d.layout;
  DeviceFields f(d);
  Stream s;
  const int blocks = sweepBlocks(l.rows);
  // send[0], send[1]: this PE's first and last rows; recv[0], recv[1]: the ghost rows.
  double* pinned = nullptr;
  EXAMPLES_CUDA(cudaMallocHost(&pinned, 4 * l.rowBytes()));
  const long w = l.cols();
  double *sendFirst = pinned, *sendLast = pinned + w, *recvTop = pinned + 2 * w, *recvBottom = pinned + 3 * w;
  axon::barrierAll();

  const auto start = Clock::now();
  for (long k = 0; k < o.iters; ++k) {
    double* in = f.buf[k % 2];
    EXAMPLES_CUDA(cudaMemcpyAsync(sendFirst, in + l.at(1, 0), l.rowBytes(), cudaMemcpyDeviceToHost, s.get()));
    EXAMPLES_CUDA(cudaMemcpyAsync(sendLast, in + l.at(l.rows, 0), l.rowBytes(), cudaMemcpyDeviceToHost, s.get()));
    EXAMPLES_CUDA(cudaStreamSynchronize(s.get()));
    exchangeHalos(d, l.rowBytes(), sendFirst, sendLast, recvTop, recvBottom);
    if (d.up >= 0)
      EXAMPLES_CUDA(cudaMemcpyAsync(in, recvTop, l.rowBytes(), cudaMemcpyHostToDevice, s.get()));
    if (d.down >= 0)
      EXAMPLES_CUDA(cudaMemcpyAsync(in + l.at(l.rows + 1, 0), recvBottom, l.rowBytes(), cudaMemcpyHostToDevice,
                                  s.get()));
    sweepKernel<<<blocks, kThreads, 0, s.get()>>>(in, f.buf[(k + 1) % 2], l.cols(), l.n, l.rows);
    EXAMPLES_CUDA(cudaGetLastError());
  }
  EXAMPLES_CUDA(cudaStreamSynchronize(s.get()));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  cudaFreeHost(pinned);
  return {seconds, downloadInterior(f.buf[o.iters % 2], l),
          "rows copied to pinned host memory, isend/irecv there, copied back"};
}

}  // namespace

RunResult runOnGpu(const Options& o, const Decomposition& d) {
  EXAMPLES_CUDA(cudaSetDevice(axon::gpuDevice()));
  switch (o.mode) {
    case Mode::Device: return runDevice(o, d);
    case Mode::Stream: return runStream(o, d);
    case Mode::TwoSided: return runTwoSided(o, d);
    case Mode::Staged: return runStaged(o, d);
    case Mode::Host: break;
  }
  throw std::logic_error("runOnGpu: mode host runs on the CPU");
}

}  // namespace axon::examples::jacobi
