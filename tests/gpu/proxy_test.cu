// The device proxy: device calls to a PE on another node (the gpu_nodes run) are carried out by
// the host proxy. Every operation at thread, warp and block scope; a put_signal ring inside a
// kernel that mixes load/store and proxy neighbours; a full ring; a CUDA graph of 1,000
// stream-ordered calls replayed back to back; every device collective on a team across nodes, and
// a mismatched one. Each test skips when every PE shares this node.
#include <axon/axon.hpp>
#include <axon/collectives.hpp>
#include <axon/device/collectives.hpp>
#include <axon/device/device.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "gpu_test_util.hpp"

namespace dev = axon::device;

namespace {

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }

bool onAnotherNode(int pe) { return axon::pathTo(pe).rfind("ucx", 0) == 0; }

// The PE half the world away, when it runs on another node (pairs are symmetric: my partner's
// partner is me); -1 otherwise.
int remotePartner() {
  if (np() < 2 || np() % 2 != 0) return -1;
  const int partner = (me() + np() / 2) % np();
  return onAnotherNode(partner) ? partner : -1;
}

bool anyRemote() {
  for (int pe = 0; pe < np(); ++pe) {
    if (onAnotherNode(pe)) return true;
  }
  return false;
}

__host__ __device__ int pattern(int pe, int round, std::size_t i) {
  return pe * 1000003 + round * 7919 + static_cast<int>(i);
}

__global__ void fillKernel(int* p, std::size_t n, int pe, int round) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = pattern(pe, round, i);
  }
}

// What one scope's calls leave on the partner: data, a value by p, signals and atomic words.
struct Box {
  long long p;
  unsigned long long sig[2];
  unsigned long long c[8];
  int c32[2];
};
constexpr std::size_t kWords = 3000;  // ints per data area (two areas per scope)
constexpr int kScopes = 3;

// Initial atomic words on every PE, so that and/or/xor/compare-swap have something to act on.
Box initialBox() {
  Box b{};
  b.c[5] = 0xf0;  // fetch_or 0x0f  -> 0xff
  b.c[6] = 0xff;  // fetch_and 0x3c -> 0x3c
  b.c[7] = 0x55;  // fetch_xor 0xff -> 0xaa
  b.c32[0] = -5;  // fetch_add<int> 7 -> 2
  return b;
}

// One scope's calls to `to`: put and put_signal of the data, then (one thread) p, signal_op and
// every atomic; the fetched old values go to `fetched`.
template <class Scope>
__device__ void writeAll(dev::Context ctx, int* area, const int* src, Box* box, int to, long long* fetched) {
  dev::put<Scope>(ctx, area, src, kWords * sizeof(int), to);
  dev::putSignal<Scope>(ctx, area + kWords, src, kWords * sizeof(int), &box->sig[0], 1, dev::SignalOp::Add, to);
  if (threadIdx.x == 0) {
    dev::p<long long>(ctx, &box->p, 1000 + ctx.myPe, to);
    dev::signalOp(ctx, &box->sig[1], 42ull + ctx.myPe, dev::SignalOp::Set, to);
    fetched[0] = static_cast<long long>(dev::atomicFetchAdd<unsigned long long>(ctx, &box->c[0], 5ull, to));
    dev::atomicAdd<unsigned long long>(ctx, &box->c[1], 3ull, to);
    dev::atomicSet<unsigned long long>(ctx, &box->c[2], 77ull, to);
    fetched[1] = static_cast<long long>(dev::atomicSwap<unsigned long long>(ctx, &box->c[3], 9ull, to));
    fetched[2] = static_cast<long long>(dev::atomicCompareSwap<unsigned long long>(ctx, &box->c[4], 0ull, 11ull, to));
    fetched[3] = static_cast<long long>(dev::atomicFetchOr<unsigned long long>(ctx, &box->c[5], 0x0full, to));
    fetched[4] = static_cast<long long>(dev::atomicFetchAnd<unsigned long long>(ctx, &box->c[6], 0x3cull, to));
    fetched[5] = static_cast<long long>(dev::atomicFetchXor<unsigned long long>(ctx, &box->c[7], 0xffull, to));
    fetched[6] = dev::atomicFetchAdd<int>(ctx, &box->c32[0], 7, to);
    dev::fence(ctx);
    fetched[7] = static_cast<long long>(dev::atomicFetch<unsigned long long>(ctx, &box->c[0], to));
    dev::quiet(ctx);
  }
}

// Reads back what this PE wrote to `from` with get (the scope) and g (one thread).
template <class Scope>
__device__ void readAll(dev::Context ctx, const int* area, int* out, const Box* box, int from, long long* got) {
  dev::get<Scope>(ctx, out, area, 2 * kWords * sizeof(int), from);
  if (threadIdx.x == 0) {
    got[0] = dev::g(ctx, &box->p, from);
    got[1] = dev::g(ctx, &box->c32[0], from);
  }
}

template <class Scope>
__global__ void writeKernel(dev::Context ctx, int* area, const int* src, Box* box, int to, long long* fetched) {
  if (std::is_same_v<Scope, dev::Warp> && threadIdx.x >= 32) return;
  if (std::is_same_v<Scope, dev::Thread> && threadIdx.x != 0) return;
  writeAll<Scope>(ctx, area, src, box, to, fetched);
}

template <class Scope>
__global__ void readKernel(dev::Context ctx, const int* area, int* out, const Box* box, int from, long long* got) {
  if (std::is_same_v<Scope, dev::Warp> && threadIdx.x >= 32) return;
  if (std::is_same_v<Scope, dev::Thread> && threadIdx.x != 0) return;
  readAll<Scope>(ctx, area, out, box, from, got);
}

template <class Scope>
void everyOperation(int s) {
  const int partner = remotePartner();
  if (partner < 0) GTEST_SKIP() << "the partner PE shares this node (or the PE count is odd)";
  auto* areas = static_cast<int*>(axon::calloc(2 * kWords, sizeof(int)));
  auto* box = static_cast<Box*>(axon::malloc(sizeof(Box)));
  const Box init = initialBox();
  CUDA_OK(cudaMemcpy(box, &init, sizeof(Box), cudaMemcpyHostToDevice));
  int *src, *out;
  long long *fetched, *got;
  CUDA_OK(cudaMalloc(&src, kWords * sizeof(int)));
  CUDA_OK(cudaMalloc(&out, 2 * kWords * sizeof(int)));
  CUDA_OK(cudaMalloc(&fetched, 8 * sizeof(long long)));
  CUDA_OK(cudaMalloc(&got, 2 * sizeof(long long)));
  fillKernel<<<8, 256>>>(src, kWords, me(), s);
  CUDA_OK(cudaDeviceSynchronize());
  axon::barrierAll();

  const auto ctx = axon::deviceContext();
  writeKernel<Scope><<<1, 96>>>(ctx, areas, src, box, partner, fetched);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  axon::barrierAll();

  // What the partner's calls left here.
  const auto data = toHost(areas, 2 * kWords);
  int wrong = 0;
  for (std::size_t i = 0; i < 2 * kWords; ++i) wrong += data[i] != pattern(partner, s, i % kWords);
  EXPECT_EQ(wrong, 0) << "data put by PE " << partner;
  const Box b = toHost(box, 1)[0];
  EXPECT_EQ(b.p, 1000 + partner);
  EXPECT_EQ(b.sig[0], 1u);
  EXPECT_EQ(b.sig[1], 42u + partner);
  EXPECT_EQ(b.c[0], 5u);
  EXPECT_EQ(b.c[1], 3u);
  EXPECT_EQ(b.c[2], 77u);
  EXPECT_EQ(b.c[3], 9u);
  EXPECT_EQ(b.c[4], 11u);
  EXPECT_EQ(b.c[5], 0xffu);
  EXPECT_EQ(b.c[6], 0x3cu);
  EXPECT_EQ(b.c[7], 0xaau);
  EXPECT_EQ(b.c32[0], 2);
  // What the atomics fetched on the partner's words.
  const auto f = toHost(fetched, 8);
  EXPECT_EQ(f[0], 0);
  EXPECT_EQ(f[1], 0);
  EXPECT_EQ(f[2], 0);
  EXPECT_EQ(f[3], 0xf0);
  EXPECT_EQ(f[4], 0xff);
  EXPECT_EQ(f[5], 0x55);
  EXPECT_EQ(f[6], -5);
  EXPECT_EQ(f[7], 5) << "atomic_fetch after the fetch_add (fenced)";

  // get and g read back what this PE wrote there.
  readKernel<Scope><<<1, 96>>>(ctx, areas, out, box, partner, got);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  const auto back = toHost(out, 2 * kWords);
  wrong = 0;
  for (std::size_t i = 0; i < 2 * kWords; ++i) wrong += back[i] != pattern(me(), s, i % kWords);
  EXPECT_EQ(wrong, 0) << "data read back from PE " << partner;
  const auto g = toHost(got, 2);
  EXPECT_EQ(g[0], 1000 + me());
  EXPECT_EQ(g[1], 2);

  axon::barrierAll();
  cudaFree(src);
  cudaFree(out);
  cudaFree(fetched);
  cudaFree(got);
  axon::free(box);
  axon::free(areas);
}

TEST(Proxy, EveryOperationThreadScope) { everyOperation<dev::Thread>(1); }
TEST(Proxy, EveryOperationWarpScope) { everyOperation<dev::Warp>(2); }
TEST(Proxy, EveryOperationBlockScope) { everyOperation<dev::Block>(3); }

// A ring inside one kernel per PE: each round puts a block of data with a signal to the right
// neighbour, waits for the left's, checks it and acknowledges it, so that a buffer is rewritten
// only once its reader is done (two buffers). Neighbours on this node by load/store, the others
// through the proxy.
__global__ void ringKernel(dev::Context ctx, int* inbox, int* src, std::size_t n, unsigned long long* sig,
                           unsigned long long* ack, int rounds, unsigned long long* wrong) {
  const int right = (ctx.myPe + 1) % ctx.nPes, left = (ctx.myPe + ctx.nPes - 1) % ctx.nPes;
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) src[i] = pattern(ctx.myPe, r, i);
    __syncthreads();
    if (r >= 2) dev::signalWaitUntil<dev::Block>(ctx, ack, dev::Cmp::Ge, static_cast<unsigned long long>(r - 1));
    int* half = inbox + (r % 2) * n;
    dev::putSignal<dev::Block>(ctx, half, src, n * sizeof(int), sig, 1ull, dev::SignalOp::Add, right);
    dev::signalWaitUntil<dev::Block>(ctx, sig, dev::Cmp::Ge, static_cast<unsigned long long>(r + 1));
    for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) {
      if (half[i] != pattern(left, r, i)) atomicAdd(wrong, 1ull);
    }
    __syncthreads();
    if (threadIdx.x == 0) dev::signalOp(ctx, ack, 1ull, dev::SignalOp::Add, left);
  }
  if (threadIdx.x == 0) dev::quiet(ctx);
}

TEST(Proxy, PutSignalRingInsideAKernel) {
  if (!anyRemote()) GTEST_SKIP() << "every PE shares this node";
  const int rounds = 60;
  for (std::size_t n : {std::size_t{1000}, std::size_t{40000}}) {  // eager and rendezvous over UCX
    auto* inbox = static_cast<int*>(axon::calloc(2 * n, sizeof(int)));
    auto* words = static_cast<unsigned long long*>(axon::calloc(2, 8));
    int* src;
    unsigned long long* wrong;
    CUDA_OK(cudaMalloc(&src, n * sizeof(int)));
    CUDA_OK(cudaMalloc(&wrong, 8));
    CUDA_OK(cudaMemset(wrong, 0, 8));
    CUDA_OK(cudaDeviceSynchronize());
    axon::barrierAll();
    ringKernel<<<1, 256>>>(axon::deviceContext(), inbox, src, n, &words[0], &words[1], rounds, wrong);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    EXPECT_EQ(toHost(wrong, 1)[0], 0u) << n << " ints per round";
    const auto w = toHost(words, 2);
    EXPECT_EQ(w[0], static_cast<unsigned long long>(rounds));
    axon::barrierAll();
    cudaFree(src);
    cudaFree(wrong);
    axon::free(words);
    axon::free(inbox);
  }
}

// More requests than the ring has slots, from 1,120 threads at once: posters wait for free slots,
// and every request arrives once (each thread's p lands in its own cell, which starts at -1).
__global__ void floodKernel(dev::Context ctx, long long* cells, int to, int perThread) {
  const long long id = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = 0; i < perThread; ++i) dev::p<long long>(ctx, &cells[id * perThread + i], id * 1000 + i, to);
  __syncthreads();
  if (threadIdx.x == 0) dev::quiet(ctx);
}

TEST(Proxy, FullRingMakesPostersWait) {
  const int partner = remotePartner();
  if (partner < 0) GTEST_SKIP() << "the partner PE shares this node (or the PE count is odd)";
  const int blocks = 5, threads = 224, perThread = 1;
  static_assert(5 * 224 * 1 > dev::kProxySlots, "the flood must overflow the ring");
  const std::size_t n = static_cast<std::size_t>(blocks) * threads * perThread;
  auto* cells = static_cast<long long*>(axon::malloc(n * sizeof(long long)));
  CUDA_OK(cudaMemset(cells, 0xff, n * sizeof(long long)));
  CUDA_OK(cudaDeviceSynchronize());
  axon::barrierAll();
  floodKernel<<<blocks, threads>>>(axon::deviceContext(), cells, partner, perThread);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  axon::barrierAll();
  const auto got = toHost(cells, n);
  int wrong = 0;
  for (std::size_t c = 0; c < n; ++c) {
    const long long id = static_cast<long long>(c) / perThread, i = static_cast<long long>(c) % perThread;
    wrong += got[c] != id * 1000 + i;
  }
  EXPECT_EQ(wrong, 0) << "cells written by PE " << partner;
  axon::barrierAll();
  axon::free(cells);
}

__global__ void bumpKernel(int* p, std::size_t n) {
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) p[i] += 1;
}

// A CUDA graph of 1,000 stream-ordered calls to the partner (500 puts and 500 signals) and a
// stream barrier, launched 3 times back to back (on the staged path's host nodes, this hung).
TEST(Proxy, GraphOfAThousandCallsReplayedBackToBack) {
  const int partner = remotePartner();
  if (partner < 0) GTEST_SKIP() << "the partner PE shares this node (or the PE count is odd)";
  const int calls = 500, launches = 3;
  auto* inbox = static_cast<int*>(axon::calloc(calls, sizeof(int)));
  auto* sig = static_cast<std::uint64_t*>(axon::calloc(1, 8));
  int* src;
  CUDA_OK(cudaMalloc(&src, calls * sizeof(int)));
  fillKernel<<<1, 256>>>(src, calls, me(), 0);
  CUDA_OK(cudaDeviceSynchronize());
  axon::barrierAll();
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  bumpKernel<<<1, 256, 0, s>>>(src, calls);
  for (int i = 0; i < calls; ++i) {
    axon::putOnStream(inbox + i, src + i, sizeof(int), partner, s);
    axon::signalOpOnStream(sig, 1, axon::SignalOp::Add, partner, s);
  }
  axon::quietOnStream(s);
  axon::barrierAllOnStream(s);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < launches; ++i) CUDA_OK(cudaGraphLaunch(exec, s));
  axon::signalWaitUntilOnStream(sig, axon::Cmp::Ge, static_cast<std::uint64_t>(calls) * launches, s);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(axon::signalFetch(sig), static_cast<std::uint64_t>(calls) * launches);
  const auto got = toHost(inbox, calls);
  int wrong = 0;
  for (int i = 0; i < calls; ++i) wrong += got[i] != pattern(partner, 0, i) + launches;
  EXPECT_EQ(wrong, 0) << "values put by PE " << partner << " in the last launch";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  cudaFree(src);
  axon::barrierAll();
  axon::free(sig);
  axon::free(inbox);
}

// ── Device collectives on a team that spans nodes (the host proxy runs each call) ──────────────

// Exact in float for any PE count here.
__host__ __device__ float valueAt(int pe, std::size_t i) { return static_cast<float>(pe + 1 + static_cast<int>(i % 5)); }

__global__ void fillValues(float* p, std::size_t n, int pe) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = valueAt(pe, i);
}

// Every device collective, one block, in one kernel; ok[k] is what call k returned.
__global__ void everyCollective(dev::CollHandle h, const float* src, float* bcast, float* red, float* sum,
                                float* gathered, float* scattered, float* exchanged, std::size_t count, int* ok) {
  int k = 0;
  auto note = [&](bool fine) {
    if (threadIdx.x == 0) ok[k] = fine ? 1 : 0;
    ++k;
  };
  note(dev::barrier<dev::Block>(h));
  note(dev::broadcast<dev::Block>(h, src, bcast, count, h.size - 1));
  note(dev::reduce<dev::Block>(h, src, red, count, dev::ReduceOp::Max, 0));
  note(dev::allreduce<dev::Block>(h, src, sum, count, dev::ReduceOp::Sum));
  note(dev::allgather<dev::Block>(h, src, gathered, count));
  // Every member's gathered is the same: block j reduces to size x valueAt(j).
  note(dev::reduceScatter<dev::Block>(h, gathered, scattered, count, dev::ReduceOp::Sum));
  // Block j of gathered (valueAt(j)) goes to member j, which stores it as block i: valueAt(me) everywhere.
  note(dev::alltoall<dev::Block>(h, gathered, exchanged, count));
}

// n zeroed floats in GPU memory.
float* deviceFloats(std::size_t n) {
  float* p = nullptr;
  if (cudaMalloc(&p, n * sizeof(float)) != cudaSuccess || cudaMemset(p, 0, n * sizeof(float)) != cudaSuccess) {
    ADD_FAILURE() << "cudaMalloc of " << n << " floats failed";
  }
  return p;
}

TEST(Proxy, DeviceCollectivesOnATeamAcrossNodes) {
  if (!anyRemote()) GTEST_SKIP() << "every PE shares this node";
  const int n = np();
  const std::size_t count = 4099;
  float* src = deviceFloats(count);
  float* bcast = deviceFloats(count);
  float* red = deviceFloats(count);
  float* sum = deviceFloats(count);
  float* gathered = deviceFloats(count * n);
  float* scattered = deviceFloats(count);
  float* exchanged = deviceFloats(count * n);
  int* ok = nullptr;
  CUDA_OK(cudaMallocManaged(&ok, 7 * sizeof(int)));
  for (int k = 0; k < 7; ++k) ok[k] = -1;
  fillValues<<<16, 256>>>(src, count, me());
  CUDA_OK(cudaDeviceSynchronize());
  const dev::CollHandle h = axon::deviceCollHandle(axon::Team::world());
  EXPECT_NE(h.proxyTeam, 0u) << "the world spans nodes: its device collectives go through the proxy";
  everyCollective<<<1, 256>>>(h, src, bcast, red, sum, gathered, scattered, exchanged, count, ok);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  const char* names[7] = {"barrier", "broadcast", "reduce", "allreduce", "allgather", "reduce_scatter", "alltoall"};
  for (int k = 0; k < 7; ++k) EXPECT_EQ(ok[k], 1) << names[k];
  const auto b = toHost(bcast, count), r = toHost(red, count), s = toHost(sum, count), g = toHost(gathered, count * n),
             sc = toHost(scattered, count), x = toHost(exchanged, count * n);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    float total = 0;
    for (int pe = 0; pe < n; ++pe) total += valueAt(pe, i);
    wrong += b[i] != valueAt(n - 1, i);
    wrong += r[i] != (me() == 0 ? valueAt(n - 1, i) : 0.0f);
    wrong += s[i] != total;
    wrong += sc[i] != static_cast<float>(n) * valueAt(me(), i);
    for (int pe = 0; pe < n; ++pe) {
      wrong += g[pe * count + i] != valueAt(pe, i);
      wrong += x[pe * count + i] != valueAt(me(), i);
    }
  }
  EXPECT_EQ(wrong, 0u);
  for (float* p : {src, bcast, red, sum, gathered, scattered, exchanged}) cudaFree(p);
  cudaFree(ok);
  axon::barrierAll();
}

__global__ void oneAllreduce(dev::CollHandle h, const float* src, float* dst, std::size_t count, int* ok) {
  const bool fine = dev::allreduce<dev::Block>(h, src, dst, count, dev::ReduceOp::Sum);
  if (threadIdx.x == 0) *ok = fine ? 1 : 0;
}

TEST(Proxy, MismatchedDeviceCollectiveAcrossNodesReturnsFalseEverywhere) {
  if (!anyRemote()) GTEST_SKIP() << "every PE shares this node";
  axon::Team team = axon::Team::world().splitStrided(0, 1, np());
  // PE 0 passes one element more than the others.
  const std::size_t count = 10 + (me() == 0 ? 1 : 0);
  float* src = deviceFloats(11);
  float* dst = deviceFloats(11);
  int* ok = nullptr;
  CUDA_OK(cudaMallocManaged(&ok, sizeof(int)));
  *ok = -1;
  oneAllreduce<<<1, 128>>>(axon::deviceCollHandle(team), src, dst, count, ok);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(*ok, 0) << "a mismatched device allreduce completed";
  // The host calls on the team refuse from then on, naming both calls.
  try {
    axon::barrier(team);
    FAIL() << "a failed team ran another collective";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
  }
  team.destroy();
  cudaFree(src);
  cudaFree(dst);
  cudaFree(ok);
  axon::barrierAll();
}

}  // namespace
