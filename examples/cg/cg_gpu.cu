// The GPU modes: CG as three kernels an iteration on this PE's GPU (the product with p.Ap, the
// x and r update with r.r, the p update), with
//   device  both dot products allreduced inside their kernels (axon::device::allreduce<Block> by
//           the block that finishes last), alpha and beta left in device memory for the next
//           kernels, and p's ghost planes moved by stream-ordered put_signal and waits: an iteration
//           never waits on the host, which reads the state back every kCheckEvery iterations (one
//           CUDA graph of them, replayed);
//   host    the same kernels, each dot product's partial copied to the host and reduced with the
//           blocking host allreduce, alpha and beta passed as kernel arguments, and the ghost planes
//           moved by isend/irecv of the GPU planes between kernels (as an MPI code does): the
//           baseline.
//
//   axon run -n 2 build/examples/cg --n 128 --mode device --check
#include <axon/axon.hpp>
#include <axon/device/collectives.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/cuda_helpers.hpp"
#include "cg_modes.hpp"

namespace axon::examples::cg {
namespace {

namespace ad = axon::device;
using Clock = std::chrono::steady_clock;
constexpr int kThreads = 256;  // a power of two: blockSum halves it


double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What the kernels of an iteration hand each other, in device memory. In device mode they keep all
// of it; in host mode only localDot and arrived are used (the host holds the rest).
struct Scalars {
  double rr = 0, bb = 0, tol = 0;  // r.r now, b.b, the stopping tolerance
  double alpha = 0, beta = 0;
  alignas(16) double localDot = 0;   // this PE's dot product, from the block that finished last
  alignas(16) double globalDot = 0;  // its allreduced sum
  long long iterations = 0;          // iterations completed (device mode)
  long long failedAt = -1;           // the iteration whose allreduce failed
  int done = 0;    // converged or failed: the kernels of later iterations do nothing
  int failed = 0;  // a device allreduce returned false
  unsigned int arrived = 0;  // blocks of the running dot kernel that are done (last-block detection)
};

// How a dot kernel's last block reduces over the PEs.
struct Reduction {
  bool onDevice;  // device mode: allreduce in the kernel; host mode: leave localDot to the host
  bool solo;      // one PE: the local sum is the sum (a team of one has no collective workspace)
  ad::CollHandle h;
};

struct DeviceCsr {
  const long long* rowPtr;
  const int* col;
  const double* val;
  long long rows;
};

// The sum over the block, the same in every thread. Deterministic: a fixed tree.
__device__ double blockSum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();  // shared is free again
  return total;
}

// Each block adds its threads' `acc` and stores the sum in partials[block]; the block that finishes
// last (a fence and a counter, as in CUDA's threadFenceReduction sample) adds the partials in block
// order, so that the result does not depend on which block came last, and stores it in
// s->localDot. Returns true in every thread of that block only.
__device__ bool finishDot(double acc, double* partials, Scalars* s, double* shared, int* last) {
  const double blockTotal = blockSum(acc, shared);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = blockTotal;
    __threadfence();  // the partial is visible device-wide before the count says it is there
    *last = ::atomicAdd(&s->arrived, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!*last) return false;
  __threadfence();
  double v = 0;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) v += __ldcg(&partials[b]);  // L2, not a stale L1
  const double total = blockSum(v, shared);
  if (threadIdx.x == 0) {
    s->localDot = total;
    s->arrived = 0;  // for the next dot kernel
  }
  __syncthreads();  // localDot is visible to the block's threads, which all call the allreduce
  return true;
}

// The last block's reduction over the PEs (device mode): s->globalDot. False when the
// allreduce failed (axon printed why): the state says so and the later kernels stop.
__device__ bool reduceOverPes(const Reduction& red, Scalars* s) {
  if (!red.onDevice) return true;
  if (red.solo) {
    if (threadIdx.x == 0) s->globalDot = s->localDot;
    __syncthreads();
    return true;
  }
  const bool ok = ad::allreduce<ad::Block>(red.h, &s->localDot, &s->globalDot, 1, ad::ReduceOp::Sum, 0);
  if (!ok && threadIdx.x == 0) {
    s->failed = 1;
    s->done = 1;
    s->failedAt = s->iterations;
  }
  return ok;
}

// Ap = A p (one thread per row, columns in CSR order) and p.Ap; device mode: alpha = r.r / p.Ap.
// The last block reads the partials only after every block has finished reading p's ghost planes,
// and the neighbours overwrite those planes only after this PE's p.Ap has reached them in the
// allreduce: so the next iteration's halo never lands under this product.
__global__ void __launch_bounds__(kThreads) spmvDotKernel(DeviceCsr a, const double* p, long long firstOwn,
                                                          double* ap, double* partials, Scalars* s, Reduction red) {
  __shared__ double shared[kThreads];
  __shared__ int last;
  if (s->done) return;  // the same in every block: written by an earlier kernel
  double acc = 0;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.rows; i += stride) {
    double y = 0;
    for (long long j = a.rowPtr[i]; j < a.rowPtr[i + 1]; ++j) y += a.val[j] * p[a.col[j]];
    ap[i] = y;
    acc += p[firstOwn + i] * y;
  }
  if (!finishDot(acc, partials, s, shared, &last)) return;
  if (!reduceOverPes(red, s)) return;
  if (red.onDevice && threadIdx.x == 0) s->alpha = s->rr / s->globalDot;
}

// x += alpha p, r -= alpha Ap, and r.r; device mode: beta, the new r.r, the iteration count and
// the stopping decision (the same on every PE: the allreduced r.r is bit-identical everywhere).
__global__ void __launch_bounds__(kThreads) updateXrDotKernel(const double* pOwn, const double* ap, double* x,
                                                              double* r, long long rows, double* partials,
                                                              Scalars* s, Reduction red, double alphaArg) {
  __shared__ double shared[kThreads];
  __shared__ int last;
  if (s->done) return;
  const double alpha = red.onDevice ? s->alpha : alphaArg;
  double acc = 0;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows; i += stride) {
    x[i] += alpha * pOwn[i];
    const double ri = r[i] - alpha * ap[i];
    r[i] = ri;
    acc += ri * ri;
  }
  if (!finishDot(acc, partials, s, shared, &last)) return;
  if (!reduceOverPes(red, s)) return;
  if (red.onDevice && threadIdx.x == 0) {
    const double rrNew = s->globalDot;
    s->beta = rrNew / s->rr;
    s->rr = rrNew;
    s->iterations += 1;
    if (converged(rrNew, s->bb, s->tol)) s->done = 1;
  }
}

// p = r + beta p.
__global__ void __launch_bounds__(kThreads) updatePKernel(double* pOwn, const double* r, long long rows,
                                                          const Scalars* s, bool onDevice, double betaArg) {
  if (s->done) return;
  const double beta = onDevice ? s->beta : betaArg;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows; i += stride)
    pOwn[i] = r[i] + beta * pOwn[i];
}

// Enough blocks to fill the GPU (8 of 256 threads per SM), fewer for small slabs. The dot
// products' partials follow the block count, so a run's sums depend on the GPU model only.
int blocksFor(std::size_t rows) {
  int device = 0, sms = 0;
  EXAMPLES_CUDA(cudaGetDevice(&device));
  EXAMPLES_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t needed = (rows + kThreads - 1) / kThreads;
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(needed, 8u * static_cast<unsigned>(sms))));
}

template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) : count_(count) {
    if (count) EXAMPLES_CUDA(cudaMalloc(&ptr_, count * sizeof(T)));
  }
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return ptr_; }
  void upload(const T* host) { EXAMPLES_CUDA(cudaMemcpy(ptr_, host, count_ * sizeof(T), cudaMemcpyHostToDevice)); }

 private:
  T* ptr_ = nullptr;
  std::size_t count_;
};

template <class T>
class PinnedHost {
 public:
  PinnedHost() { EXAMPLES_CUDA(cudaMallocHost(&ptr_, sizeof(T))); *ptr_ = T{}; }
  ~PinnedHost() { cudaFreeHost(ptr_); }
  PinnedHost(const PinnedHost&) = delete;
  PinnedHost& operator=(const PinnedHost&) = delete;
  T* get() const { return ptr_; }
  T* operator->() const { return ptr_; }

 private:
  T* ptr_ = nullptr;
};

using Stream = axon::examples::CudaStream;
using axon::examples::CapturedGraph;


// This PE's part of the problem on the GPU: the matrix, x = 0, r = b = 1, p = r (own planes; ghost
// planes 0), Ap, the partials and the scalars. p is given: the symmetric heap in device mode
// (the neighbours put into its ghost planes), cudaMalloc in host mode.
struct GpuProblem {
  GpuProblem(const Decomposition& d, const Csr& a, double* pMemory)
      : rowPtr(a.rowPtr.size()),
        col(a.col.size()),
        val(a.val.size()),
        x(d.layout.rows()),
        r(d.layout.rows()),
        ap(d.layout.rows()),
        blocks(blocksFor(d.layout.rows())),
        partials(static_cast<std::size_t>(blocks)),
        scalars(1),
        p(pMemory),
        l(d.layout) {
    static_assert(sizeof(long long) == sizeof(std::int64_t) && sizeof(int) == sizeof(std::int32_t));
    rowPtr.upload(reinterpret_cast<const long long*>(a.rowPtr.data()));
    col.upload(reinterpret_cast<const int*>(a.col.data()));
    val.upload(a.val.data());
    const std::vector<double> ones(l.rows(), 1.0);
    r.upload(ones.data());
    EXAMPLES_CUDA(cudaMemset(x.get(), 0, l.rows() * sizeof(double)));
    std::vector<double> p0(l.cells(), 0.0);
    std::fill(p0.begin() + static_cast<std::ptrdiff_t>(l.firstOwn()),
              p0.begin() + static_cast<std::ptrdiff_t>(l.firstOwn() + l.rows()), 1.0);
    EXAMPLES_CUDA(cudaMemcpy(p, p0.data(), l.bytes(), cudaMemcpyHostToDevice));
  }
  DeviceCsr csr() const { return {rowPtr.get(), col.get(), val.get(), static_cast<long long>(l.rows())}; }
  double* pOwn() const { return p + l.firstOwn(); }
  long long rows() const { return static_cast<long long>(l.rows()); }
  std::vector<double> downloadX() const {
    std::vector<double> host(l.rows());
    EXAMPLES_CUDA(cudaMemcpy(host.data(), x.get(), l.rows() * sizeof(double), cudaMemcpyDeviceToHost));
    return host;
  }

  DeviceArray<long long> rowPtr;
  DeviceArray<int> col;
  DeviceArray<double> val, x, r, ap;
  int blocks;
  DeviceArray<double> partials;
  DeviceArray<Scalars> scalars;
  double* p;
  Layout l;
};

// b.b = the number of cells, exact in a double; reduced like every other sum so that every PE holds
// the same value.
double bDotB(const Layout& l) {
  const double mine = static_cast<double>(l.rows());
  double all = 0;
  axon::allreduce(axon::Team::world(), &mine, &all, 1, axon::ReduceOp::Sum);
  return all;
}

ad::CollHandle collHandleOrExplain() {
  try {
    return axon::deviceCollHandle(axon::Team::world());
  } catch (const axon::Error& e) {
    if (e.code() != axon::ErrorCode::Unsupported) throw;
    throw std::runtime_error(std::string("--mode device needs device-callable collectives on the world team: ") +
                             e.what() + "; use --mode host there");
  }
}

// The symmetric memory of device mode: p (a local vector, whose ghost planes the neighbours put
// into) and the signal words, [2] per direction, one per parity of the iteration.
struct SymmetricState {
  explicit SymmetricState(const Layout& l) {
    p = static_cast<double*>(axon::malloc(l.bytes()));
    signals = static_cast<std::uint64_t*>(axon::calloc(4, sizeof(std::uint64_t)));
  }
  ~SymmetricState() {
    axon::free(signals);
    axon::free(p);
  }
  SymmetricState(const SymmetricState&) = delete;
  SymmetricState& operator=(const SymmetricState&) = delete;
  double* p;
  std::uint64_t* signals;  // fromBelow[2], fromAbove[2]
};

// Iteration k's halo of p, stream-ordered: this PE's first own plane into the lower neighbour's
// ghost plane above, its last into the upper neighbour's ghost plane below, each with a signal;
// then the waits for the neighbours' planes. The signal words are per parity of k and reset by the
// consumer once seen, so that every iteration of one parity enqueues the same calls and a graph of
// an even number of iterations replays unchanged: a neighbour adds to parity q again only at
// iteration k + 2, after it has received this PE's plane of iteration k + 1, which is sent after
// the reset in stream order. The ghost planes themselves need no acknowledgement: a neighbour
// overwrites them at k + 1 only after its p.Ap allreduce of iteration k, which this PE's last
// block joins only after every block has read them (spmvDotKernel).
void enqueueHalo(const Decomposition& d, const SymmetricState& m, long k, cudaStream_t s) {
  const Layout& l = d.layout;
  const int q = static_cast<int>(k % 2);
  std::uint64_t* fromBelow = &m.signals[q];
  std::uint64_t* fromAbove = &m.signals[2 + q];
  if (d.below >= 0)  // my first plane becomes the lower neighbour's ghost plane above
    axon::putSignalOnStream(m.p + static_cast<std::size_t>(d.planesOf(d.below) + 1) * l.plane(),
                            m.p + l.firstOwn(), l.planeBytes(), fromAbove, 1, axon::SignalOp::Add, d.below, s);
  if (d.above >= 0)  // my last plane becomes the upper neighbour's ghost plane below
    axon::putSignalOnStream(m.p + l.ghostBelow(), m.p + l.lastOwn(), l.planeBytes(), fromBelow, 1,
                            axon::SignalOp::Add, d.above, s);
  if (d.below >= 0) {
    axon::signalWaitUntilOnStream(fromBelow, axon::Cmp::Ge, 1, s);
    axon::signalOpOnStream(fromBelow, 0, axon::SignalOp::Set, d.me, s);
  }
  if (d.above >= 0) {
    axon::signalWaitUntilOnStream(fromAbove, axon::Cmp::Ge, 1, s);
    axon::signalOpOnStream(fromAbove, 0, axon::SignalOp::Set, d.me, s);
  }
}

RunResult runDevice(const Options& o, const Decomposition& d, const Csr& a) {
  const Layout& l = d.layout;
  const bool solo = d.pes == 1;
  const Reduction red{true, solo, solo ? ad::CollHandle{} : collHandleOrExplain()};
  SymmetricState m(l);
  GpuProblem g(d, a, m.p);
  Stream s;
  PinnedHost<Scalars> seen;  // the state as last read back
  Scalars start;
  start.rr = start.bb = bDotB(l);  // r0 = b
  start.tol = o.tol;
  if (converged(start.rr, start.bb, o.tol)) start.done = 1;
  g.scalars.upload(&start);
  *seen.get() = start;
  EXAMPLES_CUDA(cudaDeviceSynchronize());
  axon::barrierAll();  // every PE's p and zeroed signals are in place before anyone puts

  auto enqueueIteration = [&](long k) {
    enqueueHalo(d, m, k, s.get());
    spmvDotKernel<<<g.blocks, kThreads, 0, s.get()>>>(g.csr(), g.p, static_cast<long long>(l.firstOwn()),
                                                      g.ap.get(), g.partials.get(), g.scalars.get(), red);
    updateXrDotKernel<<<g.blocks, kThreads, 0, s.get()>>>(g.pOwn(), g.ap.get(), g.x.get(), g.r.get(), g.rows(),
                                                          g.partials.get(), g.scalars.get(), red, 0.0);
    updatePKernel<<<g.blocks, kThreads, 0, s.get()>>>(g.pOwn(), g.r.get(), g.rows(), g.scalars.get(), true, 0.0);
    EXAMPLES_CUDA(cudaGetLastError());
  };
  auto enqueueReadBack = [&] {
    EXAMPLES_CUDA(cudaMemcpyAsync(seen.get(), g.scalars.get(), sizeof(Scalars), cudaMemcpyDeviceToHost, s.get()));
  };
  // kCheckEvery iterations (an even number: the signals' parities repeat) and the read-back.
  static_assert(kCheckEvery % 2 == 0, "a replayed graph must start on an even iteration");
  CapturedGraph graph(o.graph && o.iters >= kCheckEvery, s.get(), [&] {
    for (long k = 0; k < kCheckEvery; ++k) enqueueIteration(k);
    enqueueReadBack();
  });

  const auto t0 = Clock::now();
  long launched = 0;
  while (launched < o.iters && !seen->done) {
    const long batch = std::min(kCheckEvery, o.iters - launched);
    if (batch == kCheckEvery && graph.ready()) {
      graph.launch(s.get());
    } else {
      for (long k = launched; k < launched + batch; ++k) enqueueIteration(k);
      enqueueReadBack();
    }
    launched += batch;
    axon::streamSynchronize(s.get());
    if (seen->failed)
      throw std::runtime_error("a device-side allreduce failed in iteration " + std::to_string(seen->failedAt) +
                               " (axon printed why above); the solve is void");
  }
  RunResult res;
  res.seconds = since(t0);
  res.iterations = seen->iterations;
  res.rr = seen->rr;
  res.bb = seen->bb;
  res.x = g.downloadX();
  res.detail = std::string(solo ? "one PE: dot products summed in the kernels, no halos"
                                : "device allreduce in the kernels, halos by stream-ordered put_signal") +
               ", " + std::to_string(g.blocks) + " blocks, state read every " +
               std::to_string(kCheckEvery) + " iterations" +
               (graph.ready() ? ", a CUDA graph of them replayed" : ", launched one by one");
  axon::barrierAll();  // no PE frees its heap while a neighbour's last puts may be landing
  return res;
}

RunResult runHost(const Options& o, const Decomposition& d, const Csr& a) {
  const Layout& l = d.layout;
  DeviceArray<double> pMemory(l.cells());
  GpuProblem g(d, a, pMemory.get());
  Stream s;
  PinnedHost<double> localDot;
  const Reduction red{false, true, ad::CollHandle{}};
  const Scalars start;  // done = 0 and arrived = 0 are all the kernels read in this mode
  g.scalars.upload(&start);
  double rr = bDotB(l);
  const double bb = rr;
  EXAMPLES_CUDA(cudaDeviceSynchronize());
  axon::barrierAll();

  RunResult res;
  res.haloSeconds = res.reduceSeconds = 0;
  // The kernel's partial to the host, then the host allreduce (timed alone).
  auto reduce = [&] {
    EXAMPLES_CUDA(cudaMemcpyAsync(localDot.get(), &g.scalars.get()->localDot, sizeof(double), cudaMemcpyDeviceToHost,
                            s.get()));
    EXAMPLES_CUDA(cudaStreamSynchronize(s.get()));
    const auto t = Clock::now();
    const double sum = allSum(*localDot.get());
    res.reduceSeconds += since(t);
    return sum;
  };
  const auto t0 = Clock::now();
  long k = 0;
  for (; k < o.iters && !converged(rr, bb, o.tol); ++k) {
    const auto th = Clock::now();
    exchangePlanes(d, g.p);  // p is complete: the stream was synchronized after the last kernel
    res.haloSeconds += since(th);
    spmvDotKernel<<<g.blocks, kThreads, 0, s.get()>>>(g.csr(), g.p, static_cast<long long>(l.firstOwn()),
                                                      g.ap.get(), g.partials.get(), g.scalars.get(), red);
    EXAMPLES_CUDA(cudaGetLastError());
    const double alpha = rr / reduce();
    updateXrDotKernel<<<g.blocks, kThreads, 0, s.get()>>>(g.pOwn(), g.ap.get(), g.x.get(), g.r.get(), g.rows(),
                                                          g.partials.get(), g.scalars.get(), red, alpha);
    EXAMPLES_CUDA(cudaGetLastError());
    const double rrNew = reduce();
    const double beta = rrNew / rr;
    rr = rrNew;
    updatePKernel<<<g.blocks, kThreads, 0, s.get()>>>(g.pOwn(), g.r.get(), g.rows(), g.scalars.get(), false, beta);
    EXAMPLES_CUDA(cudaGetLastError());
    EXAMPLES_CUDA(cudaStreamSynchronize(s.get()));  // the next exchange sends the p this kernel wrote
  }
  res.seconds = since(t0);
  res.iterations = k;
  res.rr = rr;
  res.bb = bb;
  res.x = g.downloadX();
  res.detail = "host allreduce of each dot product, isend/irecv of GPU planes, " + std::to_string(g.blocks) +
               " blocks";
  return res;
}

}  // namespace

RunResult runOnGpu(const Options& o, const Decomposition& d, const Csr& a) {
  EXAMPLES_CUDA(cudaSetDevice(axon::gpuDevice()));
  switch (o.mode) {
    case Mode::Device: return runDevice(o, d, a);
    case Mode::Host: return runHost(o, d, a);
    case Mode::Cpu: break;
  }
  throw std::logic_error("runOnGpu: mode cpu runs on the CPU");
}

}  // namespace axon::examples::cg
