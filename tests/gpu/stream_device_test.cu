// Stream-ordered calls (also captured into CUDA graphs and on concurrent streams) and the device
// API from kernels, at thread, warp and block scope.
#include <axon/axon.hpp>
#include <axon/device/device.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "gpu_test_util.hpp"

namespace dev = axon::device;

namespace {

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }
int rightOf(int pe) { return (pe + 1) % np(); }
int leftOf(int pe) { return (pe + np() - 1) % np(); }

__global__ void fillKernel(int* p, std::size_t n, int base) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = base + static_cast<int>(i);
  }
}

// Counts elements that differ from base + i into *wrong.
__global__ void checkKernel(const int* p, std::size_t n, int base, unsigned long long* wrong) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    if (p[i] != base + static_cast<int>(i)) atomicAdd(wrong, 1ull);
  }
}

// Across nodes (the gpu_nodes run): stream-ordered calls reach another node's GPU heap through
// the device proxy; its host heap is out of the kernels' reach, and such a call is refused at the
// call with an error that says so (the host calls reach it through UCX).
TEST(Stream, HostHeapOfAnotherNodeIsRefusedClearly) {
  int remote = -1;
  for (int pe = 0; pe < np(); ++pe) {
    if (axon::pathTo(pe).rfind("ucx", 0) == 0) remote = pe;
  }
  if (remote < 0) GTEST_SKIP() << "every PE shares this node";
  auto* hostBox = static_cast<std::uint64_t*>(axon::mallocHost(16));
  auto* inbox = static_cast<std::uint64_t*>(axon::calloc(4, 8));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  try {
    axon::putOnStream(hostBox, inbox, 8, remote, s);
    ADD_FAILURE() << "put_on_stream into the host heap of PE " << remote << " on another node was accepted";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("host heap"), std::string::npos) << e.what();
  }
  // Its GPU heap is reached.
  const std::uint64_t one = 1;
  axon::put(inbox + 1, &one, 8, me());
  axon::putOnStream(inbox + 2, inbox + 1, 8, remote, s);
  axon::signalOpOnStream(inbox, 1, axon::SignalOp::Add, remote, s);
  axon::quietOnStream(s);
  CUDA_OK(cudaStreamSynchronize(s));
  cudaStreamDestroy(s);
  std::uint64_t seen[2] = {0, 0};
  axon::get(seen, inbox + 2, 8, remote);
  axon::get(seen + 1, inbox, 8, remote);
  EXPECT_EQ(seen[0], 1u) << "put_on_stream to PE " << remote;
  EXPECT_GE(seen[1], 1u) << "signal_op_on_stream to PE " << remote;
  axon::barrierAll();
  axon::free(inbox);
  axon::free(hostBox);
}

TEST(Stream, PutSignalWaitRing) {
  const std::size_t n = (1 << 20) + 3;
  auto* inbox = static_cast<int*>(axon::calloc(n, sizeof(int)));
  auto* sig = static_cast<std::uint64_t*>(axon::calloc(1, 8));
  int* src;
  unsigned long long* wrong;
  CUDA_OK(cudaMalloc(&src, n * sizeof(int)));
  CUDA_OK(cudaMalloc(&wrong, 8));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int round = 1; round <= 3; ++round) {
    CUDA_OK(cudaMemsetAsync(wrong, 0, 8, s));
    fillKernel<<<64, 256, 0, s>>>(src, n, me() * 7919 + round);
    axon::putSignalOnStream(inbox, src, n * sizeof(int), sig, 1, axon::SignalOp::Add, rightOf(me()), s);
    axon::signalWaitUntilOnStream(sig, axon::Cmp::Ge, round, s);
    checkKernel<<<64, 256, 0, s>>>(inbox, n, leftOf(me()) * 7919 + round, wrong);
    axon::barrierAllOnStream(s);  // nobody overwrites inbox before its owner checked it
    CUDA_OK(cudaStreamSynchronize(s));
    ASSERT_EQ(toHost(wrong, 1)[0], 0u) << "round " << round;
  }
  CUDA_OK(cudaStreamDestroy(s));
  cudaFree(wrong);
  cudaFree(src);
  axon::barrierAll();
  axon::free(sig);
  axon::free(inbox);
}

TEST(Stream, TwoStreamsAtOnce) {
  // Two independent rings in opposite directions on two streams, each with its own signal.
  const std::size_t n = 1 << 18;
  auto* inA = static_cast<int*>(axon::calloc(n, sizeof(int)));
  auto* inB = static_cast<int*>(axon::calloc(n, sizeof(int)));
  auto* sigs = static_cast<std::uint64_t*>(axon::calloc(2, 8));
  int *srcA, *srcB;
  unsigned long long* wrong;
  CUDA_OK(cudaMalloc(&srcA, n * sizeof(int)));
  CUDA_OK(cudaMalloc(&srcB, n * sizeof(int)));
  CUDA_OK(cudaMalloc(&wrong, 16));
  CUDA_OK(cudaMemset(wrong, 0, 16));
  CUDA_OK(cudaDeviceSynchronize());  // the legacy stream's memset, before the other streams' kernels
  cudaStream_t a, b;
  CUDA_OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  for (int round = 1; round <= 4; ++round) {
    fillKernel<<<32, 256, 0, a>>>(srcA, n, me() * 1000 + round);
    fillKernel<<<32, 256, 0, b>>>(srcB, n, -me() * 1000 - round);
    axon::putSignalOnStream(inA, srcA, n * sizeof(int), &sigs[0], 1, axon::SignalOp::Add, rightOf(me()), a);
    axon::putSignalOnStream(inB, srcB, n * sizeof(int), &sigs[1], 1, axon::SignalOp::Add, leftOf(me()), b);
    axon::signalWaitUntilOnStream(&sigs[0], axon::Cmp::Ge, round, a);
    axon::signalWaitUntilOnStream(&sigs[1], axon::Cmp::Ge, round, b);
    checkKernel<<<32, 256, 0, a>>>(inA, n, leftOf(me()) * 1000 + round, wrong);
    checkKernel<<<32, 256, 0, b>>>(inB, n, -rightOf(me()) * 1000 - round, wrong + 1);
    CUDA_OK(cudaStreamSynchronize(a));
    CUDA_OK(cudaStreamSynchronize(b));
    axon::barrierAll();
  }
  auto w = toHost(wrong, 2);
  EXPECT_EQ(w[0], 0u);
  EXPECT_EQ(w[1], 0u);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  cudaFree(wrong);
  cudaFree(srcA);
  cudaFree(srcB);
  axon::free(sigs);
  axon::free(inB);
  axon::free(inA);
}

__global__ void bumpKernel(int* counter) { ++*counter; }

TEST(Stream, CapturedIntoAGraph) {
  const std::size_t n = 1 << 16;
  auto* inbox = static_cast<int*>(axon::calloc(n, sizeof(int)));
  auto* sig = static_cast<std::uint64_t*>(axon::calloc(1, 8));
  int *src, *iteration;
  unsigned long long* wrong;
  CUDA_OK(cudaMalloc(&src, n * sizeof(int)));
  CUDA_OK(cudaMalloc(&iteration, sizeof(int)));
  CUDA_OK(cudaMalloc(&wrong, 8));
  CUDA_OK(cudaMemset(iteration, 0, sizeof(int)));
  CUDA_OK(cudaMemset(wrong, 0, 8));
  CUDA_OK(cudaDeviceSynchronize());
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  fillKernel<<<32, 256, 0, s>>>(src, n, me() * 31);
  CUDA_OK(cudaStreamSynchronize(s));

  // One step: put + signal to the right, wait for the left's, check, barrier, count the step.
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  axon::putOnStream(inbox, src, n * sizeof(int), rightOf(me()), s);
  axon::signalOpOnStream(sig, 1, axon::SignalOp::Add, rightOf(me()), s);
  axon::quietOnStream(s);
  bumpKernel<<<1, 1, 0, s>>>(iteration);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  cudaGraph_t waitGraph;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  checkKernel<<<32, 256, 0, s>>>(inbox, n, leftOf(me()) * 31, wrong);
  axon::barrierAllOnStream(s);
  CUDA_OK(cudaStreamEndCapture(s, &waitGraph));
  cudaGraphExec_t exec, waitExec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphInstantiate(&waitExec, waitGraph, 0));
  const int launches = 10;
  for (int i = 1; i <= launches; ++i) {
    CUDA_OK(cudaGraphLaunch(exec, s));
    // The wait's value changes each launch, so it is enqueued outside the graphs.
    axon::signalWaitUntilOnStream(sig, axon::Cmp::Ge, i, s);
    CUDA_OK(cudaGraphLaunch(waitExec, s));
  }
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(toHost(iteration, 1)[0], launches);
  EXPECT_EQ(toHost(wrong, 1)[0], 0u);
  EXPECT_EQ(axon::signalFetch(sig), static_cast<std::uint64_t>(launches));
  cudaGraphExecDestroy(exec);
  cudaGraphExecDestroy(waitExec);
  cudaGraphDestroy(graph);
  cudaGraphDestroy(waitGraph);
  cudaStreamDestroy(s);
  cudaFree(src);
  cudaFree(iteration);
  cudaFree(wrong);
  axon::barrierAll();
  axon::free(sig);
  axon::free(inbox);
}

// Each block puts its slice to the right neighbour at `Scope`, then one signal per block.
template <class Scope>
__global__ void ringKernel(dev::Context ctx, int* inbox, const int* src, std::size_t perBlock,
                           unsigned long long* sig, int to) {
  const std::size_t off = blockIdx.x * perBlock;
  if constexpr (std::is_same_v<Scope, dev::Thread>) {
    if (threadIdx.x == 0) dev::putSignal<dev::Thread>(ctx, inbox + off, src + off, perBlock * sizeof(int), sig, 1, dev::SignalOp::Add, to);
  } else if constexpr (std::is_same_v<Scope, dev::Warp>) {
    if (threadIdx.x < 32) dev::putSignal<dev::Warp>(ctx, inbox + off, src + off, perBlock * sizeof(int), sig, 1, dev::SignalOp::Add, to);
  } else {
    dev::putSignal<dev::Block>(ctx, inbox + off, src + off, perBlock * sizeof(int), sig, 1, dev::SignalOp::Add, to);
  }
}

__global__ void waitAndCheckKernel(dev::Context ctx, const int* inbox, std::size_t n, unsigned long long* sig,
                                   unsigned long long expected, int base, unsigned long long* wrong) {
  dev::signalWaitUntil<dev::Block>(ctx, sig, dev::Cmp::Ge, expected);
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) {
    if (inbox[i] != base + static_cast<int>(i)) atomicAdd(wrong, 1ull);
  }
}

template <class Scope>
void deviceRing(int round) {
  const int blocks = 8;
  const std::size_t perBlock = 12345;
  const std::size_t n = blocks * perBlock;
  auto* inbox = static_cast<int*>(axon::calloc(n, sizeof(int)));
  auto* sig = static_cast<unsigned long long*>(axon::calloc(1, 8));
  int* src;
  unsigned long long* wrong;
  CUDA_OK(cudaMalloc(&src, n * sizeof(int)));
  CUDA_OK(cudaMalloc(&wrong, 8));
  CUDA_OK(cudaMemset(wrong, 0, 8));
  fillKernel<<<32, 256>>>(src, n, me() * 100 + round);
  auto ctx = axon::deviceContext();
  ringKernel<Scope><<<blocks, 128>>>(ctx, inbox, src, perBlock, sig, rightOf(me()));
  waitAndCheckKernel<<<1, 256>>>(ctx, inbox, n, sig, blocks, leftOf(me()) * 100 + round, wrong);
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(toHost(wrong, 1)[0], 0u);
  axon::barrierAll();
  cudaFree(src);
  cudaFree(wrong);
  axon::free(sig);
  axon::free(inbox);
}

TEST(Device, PutSignalThreadScope) { deviceRing<dev::Thread>(1); }
TEST(Device, PutSignalWarpScope) { deviceRing<dev::Warp>(2); }
TEST(Device, PutSignalBlockScope) { deviceRing<dev::Block>(3); }

// Small puts at every alignment: each size from 0 to kSmallMax bytes, from every source offset
// and to every destination offset in 0..15, into its own 64-byte cell of the right neighbour's
// buffer. That covers the one-word path (1, 2, 4, 8 or 16 naturally aligned bytes), heads and
// tails in 8-, 4-, 2- and 1-byte pieces, the 16-byte body, and the word-by-word copies of
// pointers that agree only modulo 8, 4, 2 or 1. Bytes outside [offset, offset + size) of a cell
// must keep the fill value.
constexpr int kSmallMax = 40;
constexpr int kSmallOffsets = 16;
constexpr std::size_t kSmallCell = 64;
constexpr std::size_t kSmallCells = (kSmallMax + 1) * kSmallOffsets * kSmallOffsets;
constexpr unsigned char kSmallFill = 0xEE;

__host__ __device__ unsigned char smallPattern(std::size_t i) { return static_cast<unsigned char>(i * 7 + 3); }

// The put of cell `cell`: `size` bytes from source offset `from` to destination offset `at`.
struct SmallPut {
  std::size_t size, from, at;
};
__host__ __device__ SmallPut smallPut(std::size_t cell) {
  return {cell / (kSmallOffsets * kSmallOffsets), cell / kSmallOffsets % kSmallOffsets, cell % kSmallOffsets};
}

template <class Scope>
__global__ void smallPutsKernel(dev::Context ctx, unsigned char* cells, const unsigned char* src, int to) {
  const bool caller = std::is_same_v<Scope, dev::Thread> ? threadIdx.x == 0
                      : std::is_same_v<Scope, dev::Warp> ? threadIdx.x < 32
                                                         : true;
  if (!caller) return;
  for (std::size_t cell = 0; cell < kSmallCells; ++cell) {
    const SmallPut c = smallPut(cell);
    dev::put<Scope>(ctx, cells + cell * kSmallCell + c.at, src + c.from, c.size, to);
  }
  dev::quiet(ctx);
}

template <class Scope>
void smallPuts() {
  auto* cells = static_cast<unsigned char*>(axon::malloc(kSmallCells * kSmallCell));
  CUDA_OK(cudaMemset(cells, kSmallFill, kSmallCells * kSmallCell));
  std::vector<unsigned char> pattern(kSmallCell);
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = smallPattern(i);
  unsigned char* src;
  CUDA_OK(cudaMalloc(&src, pattern.size()));
  CUDA_OK(cudaMemcpy(src, pattern.data(), pattern.size(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());
  axon::barrierAll();
  smallPutsKernel<Scope><<<1, 128>>>(axon::deviceContext(), cells, src, rightOf(me()));
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  axon::barrierAll();
  const auto got = toHost(cells, kSmallCells * kSmallCell);
  int reported = 0;
  for (std::size_t cell = 0; cell < kSmallCells && reported < 5; ++cell) {
    const SmallPut c = smallPut(cell);
    for (std::size_t b = 0; b < kSmallCell; ++b) {
      const bool written = b >= c.at && b < c.at + c.size;
      const unsigned char expected = written ? smallPattern(c.from + b - c.at) : kSmallFill;
      if (got[cell * kSmallCell + b] != expected) {
        ADD_FAILURE() << "put of " << c.size << " B from source offset " << c.from << " to destination offset " << c.at
                      << ": byte " << b << " of the cell is " << int(got[cell * kSmallCell + b]) << ", expected "
                      << int(expected);
        ++reported;
        break;
      }
    }
  }
  axon::barrierAll();
  cudaFree(src);
  axon::free(cells);
}

TEST(Device, SmallPutsAtEveryAlignmentThreadScope) { smallPuts<dev::Thread>(); }
TEST(Device, SmallPutsAtEveryAlignmentWarpScope) { smallPuts<dev::Warp>(); }
TEST(Device, SmallPutsAtEveryAlignmentBlockScope) { smallPuts<dev::Block>(); }

__global__ void getAndAtomicsKernel(dev::Context ctx, const long long* values, long long* got,
                                    unsigned long long* counter, int* flag) {
  // g from every PE, fetch-add on PE 0, one compare-swap race on PE 0's flag.
  for (int pe = 0; pe < ctx.nPes; ++pe) got[pe] = dev::g(ctx, values, pe);
  dev::atomicFetchAdd<unsigned long long>(ctx, counter, ctx.myPe + 1ull, 0);
  int old = dev::atomicCompareSwap<int>(ctx, flag, -1, ctx.myPe, 0);
  if (old == -1) dev::atomicAdd<unsigned long long>(ctx, counter + 1, 1ull, 0);
  dev::quiet(ctx);
}

__global__ void barrierKernel(dev::Context ctx, int reps) {
  for (int i = 0; i < reps; ++i) dev::barrierAll<dev::Block>(ctx);
}

TEST(Device, GetAtomicsAndBarrier) {
  auto* values = static_cast<long long*>(axon::malloc(sizeof(long long)));
  auto* counter = static_cast<unsigned long long*>(axon::calloc(2, 8));
  auto* flag = static_cast<int*>(axon::malloc(sizeof(int)));
  long long v = 1000 + me();
  CUDA_OK(cudaMemcpy(values, &v, sizeof(v), cudaMemcpyHostToDevice));
  int minusOne = -1;
  CUDA_OK(cudaMemcpy(flag, &minusOne, sizeof(int), cudaMemcpyHostToDevice));
  long long* got;
  CUDA_OK(cudaMalloc(&got, np() * sizeof(long long)));
  axon::barrierAll();
  auto ctx = axon::deviceContext();
  getAndAtomicsKernel<<<1, 1>>>(ctx, values, got, counter, flag);
  barrierKernel<<<1, 128>>>(ctx, 20);
  CUDA_OK(cudaDeviceSynchronize());
  auto g = toHost(got, np());
  for (int pe = 0; pe < np(); ++pe) EXPECT_EQ(g[pe], 1000 + pe);
  axon::barrierAll();
  if (me() == 0) {
    auto c = toHost(counter, 2);
    EXPECT_EQ(c[0], static_cast<unsigned long long>(np()) * (np() + 1) / 2);
    EXPECT_EQ(c[1], 1u) << "exactly one compare-swap wins";
  }
  axon::barrierAll();
  cudaFree(got);
  axon::free(flag);
  axon::free(counter);
  axon::free(values);
}

TEST(Device, BarrierOnASplitTeam) {
  if (np() < 2) GTEST_SKIP() << "needs 2 PEs";
  // Even PEs form a team; its stream barrier and the device barrier use its own slot.
  axon::Team evens = axon::Team::world().splitStrided(0, 2, (np() + 1) / 2);
  if (me() % 2 == 0) {
    ASSERT_TRUE(evens.valid());
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    for (int i = 0; i < 5; ++i) axon::barrierOnStream(evens, s);
    CUDA_OK(cudaStreamSynchronize(s));
    cudaStreamDestroy(s);
    evens.destroy();
  }
  axon::barrierAll();
}

__global__ void spinKernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// destroy() while stream barriers on the team are still queued: PE 0's waits behind a signal that
// PE 1 sends from another stream after 0.5 s. destroy must let them finish before it zeroes the
// team's barrier counters (else a late increment is lost and a barrier kernel times out), and the
// next team in that slot must work.
TEST(Device, DestroyWithStreamBarriersStillQueued) {
  if (np() < 2) GTEST_SKIP() << "needs 2 PEs";
  for (int pe = 0; pe < np(); ++pe) {
    if (!axon::gpuPeerReachable(pe)) GTEST_SKIP() << "stream barriers need every GPU mapped";
  }
  auto* sig = static_cast<std::uint64_t*>(axon::calloc(1, 8));
  cudaStream_t s, late;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&late, cudaStreamNonBlocking));
  for (int round = 0; round < 2; ++round) {
    axon::Team all = axon::Team::world().splitStrided(0, 1, np());
    ASSERT_TRUE(all.valid());
    if (me() == 1) {
      spinKernel<<<1, 1, 0, late>>>(500000000ull);
      axon::signalOpOnStream(sig, 1, axon::SignalOp::Add, 0, late);
    }
    if (me() == 0) axon::signalWaitUntilOnStream(sig, axon::Cmp::Ge, round + 1, s);
    for (int i = 0; i < 3; ++i) axon::barrierOnStream(all, s);
    all.destroy();  // must not return before this PE's queued barriers are done
    EXPECT_EQ(cudaStreamQuery(s), cudaSuccess) << "round " << round;
  }
  CUDA_OK(cudaStreamSynchronize(late));
  cudaStreamDestroy(late);
  cudaStreamDestroy(s);
  axon::barrierAll();
  axon::free(sig);
}

}  // namespace
