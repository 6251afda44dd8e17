// The GPU modes of halo_conv: each layer is one convolution kernel on this PE's GPU, and the halos
// move
//   device    from inside the kernel: at its start two blocks put_signal this PE's R edge input
//             rows into the neighbours' ghost rows, the blocks of the first and last output rows
//             wait (signal_wait_until) for the neighbours' rows; two layers form a CUDA graph that
//             is replayed;
//   twosided  by isend/irecv of the GPU rows before each layer's kernel (CUDA-aware MPI style, as
//             LBANN's spatially parallel convolution does it): the baseline.
//
//   axon run -n 4 build/examples/halo_conv --height 8192 --width 8192 --mode device --check
#include <axon/axon.hpp>
#include <axon/device/device.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/cuda_helpers.hpp"
#include "conv_modes.hpp"

namespace axon::examples::conv {
namespace {

namespace ad = axon::device;
using Clock = std::chrono::steady_clock;


// One task of the kernel: kBand output rows by kTileW columns, one thread a column. The task's
// input rows and columns (kBand + 2R by kTileW + 2R) are staged in shared memory, where each
// input pixel is read by up to K x K threads.
constexpr int kThreads = 256;
constexpr int kTileW = kThreads;
// At least this many blocks of a kernel fit on an SM: the convolution needs about 32 registers
// a thread, but put_signal's copy (8 vectors in flight a thread) and its proxy path would take
// the device mode's kernel to about 115 and 2 blocks an SM. Bounded to 64 registers it spills
// in the put, which two blocks run once a layer; on one H100 PE (no puts) the bounded kernel ran
// 8192 x 8192, 5x5 at 294 us a layer against 311 for the exchange-free kernel of twosided.
constexpr int kMinBlocksPerSm = 4;
constexpr int kBand = 16;  // >= the largest radius (7), so only the first band reads top ghost rows
static_assert(kBand >= kMaxFilter / 2, "the first band must hold every row that reads the top halo");

// The filter of this run, read by every thread of a warp at once (a constant-cache broadcast).
__constant__ float cWeights[kMaxTaps];

struct Geometry {
  long width, cols, rows;  // as in Layout
  long bands, tiles;       // tasks: bands x tiles
  __host__ __device__ long tasks() const { return bands * tiles; }
};

Geometry geometryOf(const Layout& l) {
  return {l.width, l.cols(), l.rows, (l.rows + kBand - 1) / kBand, (l.width + kTileW - 1) / kTileW};
}

// Where the device mode's kernel sends its edge rows and whose rows it waits for. Offsets are in
// floats from the start of a field (the same in every PE's field of the same parity).
//
// Ghost rows and signal words are per parity: field p is the input of the layers l with
// l % 2 == p, and its ghost rows are filled by the neighbours' puts of those layers. Why two are
// enough, with no acknowledgement:
//  * Ghost rows. A neighbour puts into field p's ghost rows again at layer l + 2. Its kernel
//    l + 2 starts after its kernel l + 1 ended, which waited for this PE's rows of layer l + 1,
//    put at the start of this PE's kernel l + 1, which starts after this PE's kernel l, the last
//    reader of field p's ghost rows, ended.
//  * Signals. fromAbove[p] (fromBelow[p]) is raised to 1 by the upper (lower) neighbour's kernel
//    l and waited for (>= 1) by any number of this PE's blocks in kernel l, so no waiter may reset
//    it. The block that puts upwards (downwards) in kernel l + 1 resets it, before its put: every
//    wait of kernel l is over, and the neighbour raises it again only in kernel l + 2, which
//    needs that put. So every kernel of one parity has the same arguments and a CUDA graph of two
//    layers replays unchanged.
struct Exchange {
  int up, down;                   // -1 at the image's edge
  long upperGhosts;               // the upper neighbour's bottom ghost rows (its at(rows, -R))
  unsigned long long* fromAbove;  // [2]: the upper neighbour's rows are in field p's top ghost rows
  unsigned long long* fromBelow;  // [2]: the lower neighbour's rows are in field p's bottom ones
};

// One layer: `in` (field `parity`) convolved into `out`. With kExchange the kernel moves the
// halos itself (device mode): block 0 puts the first R input rows up, block 1 (block 0 in a
// one-block grid) the last R rows down, before either waits for anything, so no block's wait can
// hold up a put; interior bands come first in the task order, and the tasks of the edge bands
// wait for the neighbours' rows. Without kExchange the ghost rows are in place at launch.
//
// `in` is not __restrict__: its ghost rows are written by other GPUs while the kernel runs, so its
// loads must not go through the non-coherent read-only path.
template <int K, bool kExchange>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    convKernel(ad::Context ctx, const float* in, float* out, Geometry g, Exchange x, int parity) {
  constexpr int R = K / 2;
  constexpr int kStride = kTileW + 2 * R;
  __shared__ float tile[(kBand + 2 * R) * kStride];

  if constexpr (kExchange && R > 0) {
    const ad::SizeT bytes = static_cast<ad::SizeT>(R) * g.cols * sizeof(float);
    float* field = const_cast<float*>(in);  // the symmetric address of field `parity`
    if (blockIdx.x == 0 && x.up >= 0) {
      if (threadIdx.x == 0) ad::signalOp(ctx, &x.fromAbove[1 - parity], 0ull, ad::SignalOp::Set, ctx.myPe);
      // Owned rows 0 .. R-1 (padded rows R .. 2R-1) to the upper neighbour's bottom ghost rows.
      ad::putSignal<ad::Block>(ctx, field + x.upperGhosts, in + R * g.cols, bytes, &x.fromBelow[parity], 1ull,
                               ad::SignalOp::Add, x.up);
    }
    if (blockIdx.x == (gridDim.x > 1 ? 1u : 0u) && x.down >= 0) {
      if (threadIdx.x == 0) ad::signalOp(ctx, &x.fromBelow[1 - parity], 0ull, ad::SignalOp::Set, ctx.myPe);
      // Owned rows rows-R .. rows-1 (padded rows rows .. rows+R-1) to the lower neighbour's top
      // ghost rows (padded rows 0 .. R-1).
      ad::putSignal<ad::Block>(ctx, field, in + g.rows * g.cols, bytes, &x.fromAbove[parity], 1ull,
                               ad::SignalOp::Add, x.down);
    }
  }

  for (long t = blockIdx.x; t < g.tasks(); t += gridDim.x) {
    const long o0 = bandAtStep(t / g.tiles, g.bands) * kBand;
    const long o1 = o0 + kBand < g.rows ? o0 + kBand : g.rows;
    const long c0 = (t % g.tiles) * kTileW;
    if constexpr (kExchange && R > 0) {
      // The whole block waits (the wait ends with __syncthreads), so every thread's loads below
      // see the neighbour's rows.
      if (x.up >= 0 && o0 < R) ad::signalWaitUntil<ad::Block>(ctx, &x.fromAbove[parity], ad::Cmp::Ge, 1ull);
      if (x.down >= 0 && o1 > g.rows - R)
        ad::signalWaitUntil<ad::Block>(ctx, &x.fromBelow[parity], ad::Cmp::Ge, 1ull);
    }
    // Input rows o0-R .. o1+R-1 and columns c0-R .. c0+kTileW+R-1 are padded rows o0 .. and
    // padded columns c0 ..; the columns past the image's padding are not loaded (nor read).
    const int tileRows = static_cast<int>(o1 - o0) + 2 * R;
    const int tileCols = static_cast<int>(g.width - c0 < kTileW ? g.width - c0 : kTileW) + 2 * R;
    const float* src = in + o0 * g.cols + c0;
    for (int i = threadIdx.x; i < tileRows * kStride; i += kThreads) {
      const int r = i / kStride, c = i - r * kStride;
      if (c < tileCols) tile[i] = src[r * g.cols + c];
    }
    __syncthreads();
    if (c0 + threadIdx.x < g.width) {
      float* dst = out + (o0 + R) * g.cols + c0 + R + threadIdx.x;
      for (int o = 0; o < tileRows - 2 * R; ++o)
        dst[o * g.cols] = convolvePixel<K>(&tile[o * kStride + threadIdx.x], kStride, cWeights, K);
    }
    __syncthreads();  // the tile is read before the next task overwrites it
  }
}

using KernelFn = void (*)(ad::Context, const float*, float*, Geometry, Exchange, int);

// The kernel for a K x K filter: one instantiation per odd K, so that the taps unroll.
template <bool kExchange>
KernelFn kernelFor(int k) {
  switch (k) {
    case 1: return convKernel<1, kExchange>;
    case 3: return convKernel<3, kExchange>;
    case 5: return convKernel<5, kExchange>;
    case 7: return convKernel<7, kExchange>;
    case 9: return convKernel<9, kExchange>;
    case 11: return convKernel<11, kExchange>;
    case 13: return convKernel<13, kExchange>;
    case 15: return convKernel<15, kExchange>;
  }
  throw std::invalid_argument("no convolution kernel for a " + std::to_string(k) + "x" + std::to_string(k) + " filter");
}

// No more blocks than fit on the GPU at once: device mode's edge tasks wait for a neighbour inside
// the kernel, and a grid that is resident in full cannot have them wait on a block that is not
// yet running. (Asking for the occupancy also loads the kernel before the timing starts.)
int gridFor(KernelFn kernel, long tasks) {
  int device = 0, sms = 0, perSm = 0;
  EXAMPLES_CUDA(cudaGetDevice(&device));
  EXAMPLES_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  EXAMPLES_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, kThreads, 0));
  return static_cast<int>(std::min<long>(tasks, static_cast<long>(std::max(perSm, 1)) * sms));
}

void launchLayer(KernelFn kernel, int blocks, cudaStream_t s, const ad::Context& ctx, const float* in, float* out,
                 const Geometry& g, const Exchange& x, int parity) {
  kernel<<<blocks, kThreads, 0, s>>>(ctx, in, out, g, x, parity);
  EXAMPLES_CUDA(cudaGetLastError());
}

// Both fields of this PE on the GPU, set to the starting state (ghost rows and padding zero).
void uploadStart(float* a, float* b, const Decomposition& d) {
  std::vector<float> start(d.layout.cells());
  initialise(start.data(), d);
  EXAMPLES_CUDA(cudaMemcpy(a, start.data(), d.layout.bytes(), cudaMemcpyHostToDevice));
  EXAMPLES_CUDA(cudaMemcpy(b, start.data(), d.layout.bytes(), cudaMemcpyHostToDevice));
}

std::vector<float> downloadPixels(const float* field, const Layout& l) {
  std::vector<float> host(l.cells());
  EXAMPLES_CUDA(cudaMemcpy(host.data(), field, l.bytes(), cudaMemcpyDeviceToHost));
  return ownedPixels(host.data(), l);
}


using Stream = axon::examples::CudaStream;
using axon::examples::CapturedGraph;


// Both fields of this PE and its signal words in the symmetric GPU heap, at the starting state.
struct SymmetricFields : axon::examples::SymmetricFields<float> {
  explicit SymmetricFields(const Decomposition& d)
      : axon::examples::SymmetricFields<float>(d.layout.cells(), [&](float* a, float* b) { uploadStart(a, b, d); }) {}
};

RunResult runDevice(const Options& o, const Decomposition& d) {
  axon::examples::requireLoadStore({d.up, d.down}, d.me, "--mode twosided");
  const Layout& l = d.layout;
  SymmetricFields f(d);
  Stream s;
  const Exchange x{d.up, d.down, d.up >= 0 ? static_cast<long>(l.at(d.rowsOf(d.up), -l.radius())) : 0,
                   &f.signals[0], &f.signals[2]};
  const ad::Context ctx = axon::deviceContext();
  const Geometry g = geometryOf(l);
  const KernelFn kernel = kernelFor<true>(l.k);
  const int blocks = gridFor(kernel, g.tasks());
  auto launch = [&](long k) {
    const int p = static_cast<int>(k % 2);
    launchLayer(kernel, blocks, s.get(), ctx, f.buf[p], f.buf[1 - p], g, x, p);
  };
  // Layers 0 and 1 as a graph, replayed for 2 and 3, 4 and 5, ...; an odd last layer alone.
  CapturedGraph graph(o.graph && o.layers >= 2, s.get(), [&] { launch(0); launch(1); });
  axon::barrierAll();  // start the clocks together

  const auto start = Clock::now();
  long k = 0;
  if (graph.ready())
    for (; k + 2 <= o.layers; k += 2) graph.launch(s.get());
  for (; k < o.layers; ++k) launch(k);
  axon::streamSynchronize(s.get());
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  RunResult r{seconds, downloadPixels(f.buf[o.layers % 2], l),
              std::string("put_signal and signal_wait_until inside the convolution kernel (") + std::to_string(blocks) +
                  " blocks), " + (graph.ready() ? "a CUDA graph of 2 layers replayed" : "launched one by one")};
  axon::barrierAll();  // no PE frees its heap while a neighbour's last puts may be landing
  return r;
}

// Twosided mode: the fields in ordinary device memory (cudaMalloc), as an MPI code has them.
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
  float* buf[2]{};
};

RunResult runTwoSided(const Options& o, const Decomposition& d) {
  const Layout& l = d.layout;
  const int r = l.radius();
  DeviceFields f(d);
  Stream s;
  const Geometry g = geometryOf(l);
  const KernelFn kernel = kernelFor<false>(l.k);
  const int blocks = gridFor(kernel, g.tasks());
  const Exchange none{-1, -1, 0, nullptr, nullptr};
  const ad::Context noContext{};  // the kernel without the exchange makes no device calls
  axon::barrierAll();

  const auto start = Clock::now();
  for (long k = 0; k < o.layers; ++k) {
    float* in = f.buf[k % 2];
    exchangeHalos(d, l.haloBytes(), in + l.at(0, -r), in + l.at(l.rows - r, -r), in + l.at(-r, -r),
                  in + l.at(l.rows, -r));
    launchLayer(kernel, blocks, s.get(), noContext, in, f.buf[(k + 1) % 2], g, none, static_cast<int>(k % 2));
    EXAMPLES_CUDA(cudaStreamSynchronize(s.get()));  // the next exchange sends what this layer wrote
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {seconds, downloadPixels(f.buf[o.layers % 2], l), "isend/irecv of GPU rows before each layer's kernel"};
}

}  // namespace

RunResult runOnGpu(const Options& o, const Decomposition& d) {
  EXAMPLES_CUDA(cudaSetDevice(axon::gpuDevice()));
  const Filter f = binomialFilter(d.layout.k);
  EXAMPLES_CUDA(cudaMemcpyToSymbol(cWeights, f.w.data(), sizeof(float) * f.k * f.k));
  switch (o.mode) {
    case Mode::Device: return runDevice(o, d);
    case Mode::TwoSided: return runTwoSided(o, d);
    case Mode::Host: break;
  }
  throw std::logic_error("runOnGpu: mode host runs on the CPU");
}

}  // namespace axon::examples::conv
