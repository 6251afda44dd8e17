// The GPU heap, host collective calls on device buffers, pinned host symmetric memory, and bad
// inputs with device pointers. The one-sided calls on GPU memory (device buffers on the local side,
// signals and atomics in the GPU heap) are the conformance suite's (tests/conformance), which this
// program runs too.
#include <axon/axon.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <thread>

#include "gpu_test_util.hpp"

namespace {

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }

bool isDevicePointer(const void* p) {
  cudaPointerAttributes a{};
  return cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeDevice;
}

TEST(GpuHeap, MallocIsSymmetricDeviceMemory) {
  auto* a = static_cast<int*>(axon::malloc(1 << 20));
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(isDevicePointer(a));
  EXPECT_TRUE(axon::isSymmetric(a));
  auto stats = axon::heapStats();
  EXPECT_GE(stats.mappedBytes, std::size_t(1) << 20);
  EXPECT_GE(stats.allocations, 1u);
  // Every reachable peer's copy is addressable from this GPU.
  for (int pe = 0; pe < np(); ++pe) {
    if (axon::gpuPeerReachable(pe)) EXPECT_NE(axon::ptr(a, pe), nullptr) << "PE " << pe;
  }
  axon::free(a);
}

TEST(GpuHeap, GrowsAcrossManyChunks) {
  // AXON_GPU_HEAP_CHUNK is small in the tests: these allocations map new chunks on every PE and
  // pass their handles to every peer.
  std::vector<char*> blocks;
  for (int i = 0; i < 6; ++i) blocks.push_back(static_cast<char*>(axon::malloc(3 << 20)));
  const std::size_t n = 3 << 20;
  std::vector<char> pattern(n);
  for (std::size_t i = 0; i < n; ++i) pattern[i] = static_cast<char>((i * 7 + me()) & 0x7f);
  int right = (me() + 1) % np();
  for (auto* b : blocks) axon::put(b, pattern.data(), n, right);
  axon::barrierAll();
  int left = (me() + np() - 1) % np();
  for (auto* b : blocks) {
    auto got = toHost(b, n);
    for (std::size_t i = 0; i < n; i += 4093) ASSERT_EQ(got[i], static_cast<char>((i * 7 + left) & 0x7f));
  }
  axon::barrierAll();
  for (auto* b : blocks) axon::free(b);
}

// Host collective calls on GPU buffers (cudaMalloc and the GPU heap), in place and out of place.
TEST(HostApi, CollectivesOnDeviceBuffers) {
  const std::size_t count = 70001;
  std::vector<float> mine(count);
  for (std::size_t i = 0; i < count; ++i) mine[i] = static_cast<float>((me() + 1) * (i % 13));
  float* dev = nullptr;
  CUDA_OK(cudaMalloc(&dev, count * sizeof(float)));
  auto* sym = static_cast<float*>(axon::malloc(count * sizeof(float)));
  fromHost(dev, mine);
  axon::allreduce(axon::Team::world(), dev, sym, count, axon::DataType::Float32, axon::ReduceOp::Sum);
  axon::allreduce(axon::Team::world(), dev, dev, count, axon::DataType::Float32, axon::ReduceOp::Sum);
  const float total = static_cast<float>(np() * (np() + 1) / 2);
  for (const float* out : {static_cast<const float*>(sym), static_cast<const float*>(dev)}) {
    auto got = toHost(out, count);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], total * static_cast<float>(i % 13)) << "i " << i;
  }
  std::vector<std::int32_t> block(5, me());
  std::int32_t* gathered = nullptr;
  CUDA_OK(cudaMalloc(&gathered, 5 * np() * sizeof(std::int32_t)));
  axon::allgather(axon::Team::world(), block.data(), gathered, 5, axon::DataType::Int32);
  auto g = toHost(gathered, 5 * np());
  for (int i = 0; i < 5 * np(); ++i) ASSERT_EQ(g[i], i / 5);
  // A cudaMalloc buffer too small for what the call writes there, or a heap one: OutOfBounds on
  // every PE, before any data moves (the team keeps working).
  if (np() > 1) {
    for (void* small : {static_cast<void*>(gathered + 5), static_cast<void*>(sym + count - 5)}) {
      try {
        axon::allgather(axon::Team::world(), block.data(), small, 5, axon::DataType::Int32);
        ADD_FAILURE() << "no error";
      } catch (const axon::Error& e) {
        EXPECT_EQ(e.code(), axon::ErrorCode::OutOfBounds) << e.what();
        EXPECT_NE(std::string(e.what()).find("dst range of " + std::to_string(20 * np()) + " bytes"),
                  std::string::npos)
            << e.what();
      }
    }
    axon::allgather(axon::Team::world(), block.data(), gathered, 5, axon::DataType::Int32);
  }
  cudaFree(gathered);
  axon::free(sym);
  cudaFree(dev);
}

TEST(HostHeap, MallocHostIsPinnedAndReachableFromDeviceCopies) {
  const std::size_t count = 1 << 16;
  auto* h = static_cast<double*>(axon::mallocHost(count * sizeof(double)));
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(isDevicePointer(h));
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, h), cudaSuccess);
  EXPECT_EQ(a.type, cudaMemoryTypeHost) << "the host heap is registered (pinned) with CUDA";
  double* d = nullptr;
  CUDA_OK(cudaMalloc(&d, count * sizeof(double)));
  std::vector<double> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = me() + i * 0.25;
  fromHost(d, v);
  int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  axon::put(h, d, count * sizeof(double), right);  // device memory into a peer's host heap
  axon::barrierAll();
  for (std::size_t i = 0; i < count; i += 31) ASSERT_DOUBLE_EQ(h[i], left + i * 0.25);
  EXPECT_GE(axon::hostHeapStats().allocations, 1u);
  axon::barrierAll();
  cudaFree(d);
  axon::free(h);
}

TEST(HostHeap, CopiesBetweenGpuAndHostHeapCrossItsGrowths) {
  // Each growth of the host heap is pinned as a registration of its own, and the driver rejects a
  // copy that runs past the end of one: 20 MiB blocks with the default 16 MiB growth straddle them.
  const std::size_t n = 20u << 20, count = n / sizeof(std::uint32_t);
  std::vector<std::uint32_t*> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(static_cast<std::uint32_t*>(axon::mallocHost(n)));
  auto* d = static_cast<std::uint32_t*>(axon::malloc(n));  // symmetric: the source of a get
  std::uint32_t* back = nullptr;
  CUDA_OK(cudaMalloc(&back, n));
  std::vector<std::uint32_t> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<std::uint32_t>(i * 2654435761u + me());
  fromHost(d, v);
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  for (auto* b : blocks) {
    axon::get(b, d, n, me());  // this GPU -> this PE's host heap
    for (std::size_t i = 0; i < count; i += 4099) ASSERT_EQ(b[i], v[i]) << "element " << i;
    ASSERT_EQ(b[count - 1], v[count - 1]);
  }
  axon::barrierAll();
  for (auto* b : blocks) axon::put(b, d, n, right);  // this GPU -> the right PE's host heap
  axon::barrierAll();
  for (auto* b : blocks) {
    axon::get(back, b, n, me());  // this PE's host heap -> this GPU
    auto got = toHost(back, count);
    for (std::size_t i = 0; i < count; i += 4099) {
      ASSERT_EQ(got[i], static_cast<std::uint32_t>(i * 2654435761u + left)) << "element " << i;
    }
    ASSERT_EQ(got[count - 1], static_cast<std::uint32_t>((count - 1) * 2654435761u + left));
  }
  axon::barrierAll();
  cudaFree(back);
  axon::free(d);
  for (auto* b : blocks) axon::free(b);
}

TEST(BadInput, DevicePointersOutsideTheHeap) {
  int* notSymmetric = nullptr;
  CUDA_OK(cudaMalloc(&notSymmetric, 256));
  auto* sym = static_cast<int*>(axon::malloc(256));
  int host[64] = {};
  EXPECT_THROW(axon::put(notSymmetric, host, 64, 0), axon::Error);
  try {
    axon::put(notSymmetric, host, 64, 0);
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::OutOfBounds);
    EXPECT_NE(std::string(e.what()).find("not in the symmetric heap"), std::string::npos) << e.what();
  }
  try {
    axon::put(sym, notSymmetric, 512, 0);  // runs past the 256-byte allocation
    FAIL() << "no error";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::OutOfBounds);
    EXPECT_NE(std::string(e.what()).find("GPU heap offset"), std::string::npos) << e.what();
  }
  EXPECT_THROW(axon::get(notSymmetric, sym, 64, np()), axon::Error);  // PE out of range
  EXPECT_THROW(axon::put(sym, nullptr, 64, 0), axon::Error);
  // Stream-ordered signals must be in the GPU heap.
  auto* hostSig = static_cast<std::uint64_t*>(axon::mallocHost(8));
  try {
    axon::signalOpOnStream(hostSig, 1, axon::SignalOp::Set, 0, nullptr);
    FAIL() << "no error";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::InvalidArgument);
  }
  axon::barrierAll();
  axon::free(hostSig);
  axon::free(sym);
  cudaFree(notSymmetric);
}

TEST(BadInput, MismatchedGpuMallocFailsOnEveryPe) {
  if (np() < 2) GTEST_SKIP() << "needs 2 PEs";
  try {
    axon::malloc(me() == 0 ? 1024 : 2048);
    FAIL() << "no error";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch);
    EXPECT_NE(std::string(e.what()).find("GPU heap"), std::string::npos) << e.what();
  }
  // The heap stays usable.
  auto* p = axon::malloc(64);
  EXPECT_NE(p, nullptr);
  axon::free(p);
}

bool stagedRun() {
  const char* p2p = std::getenv("AXON_P2P");
  return p2p && std::string(p2p) == "0" && np() >= 2;
}

TEST(Staged, PeersAreUnreachableAndStreamBarriersSayWhy) {
  if (!stagedRun()) GTEST_SKIP() << "runs with AXON_P2P=0 on 2+ PEs";
  for (int pe = 0; pe < np(); ++pe) EXPECT_EQ(axon::gpuPeerReachable(pe), pe == me()) << "PE " << pe;
  auto* buf = static_cast<int*>(axon::malloc(64));
  EXPECT_EQ(axon::ptr(buf, (me() + 1) % np()), nullptr);
  try {
    axon::barrierAllOnStream(nullptr);  // a device barrier needs every member mapped
    FAIL() << "no error";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("AXON_P2P=0"), std::string::npos) << e.what();
  }
  axon::barrierAll();
  axon::free(buf);
}

TEST(Staged, StreamPutSignalRing) {
  if (!stagedRun()) GTEST_SKIP() << "runs with AXON_P2P=0 on 2+ PEs";
  const std::size_t n = (3u << 20) / sizeof(int) + 7;  // several chunks and a tail
  auto* inbox = static_cast<int*>(axon::calloc(n, sizeof(int)));
  auto* sig = static_cast<std::uint64_t*>(axon::calloc(1, 8));
  int* src;
  CUDA_OK(cudaMalloc(&src, n * sizeof(int)));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<int> got(n);
  for (int round = 1; round <= 3; ++round) {
    std::vector<int> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = me() * 1000 + round * 7 + static_cast<int>(i % 1000);
    CUDA_OK(cudaMemcpyAsync(src, v.data(), n * sizeof(int), cudaMemcpyHostToDevice, s));
    axon::putSignalOnStream(inbox, src, n * sizeof(int), sig, 1, axon::SignalOp::Add, (me() + 1) % np(), s);
    axon::signalWaitUntilOnStream(sig, axon::Cmp::Ge, round, s);
    CUDA_OK(cudaMemcpyAsync(got.data(), inbox, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaStreamSynchronize(s));
    const int left = (me() + np() - 1) % np();
    for (std::size_t i = 0; i < n; i += 97) {
      ASSERT_EQ(got[i], left * 1000 + round * 7 + static_cast<int>(i % 1000)) << "round " << round << " i " << i;
    }
    axon::barrierAll();  // nobody overwrites inbox before its owner has read it
  }
  CUDA_OK(cudaStreamDestroy(s));
  cudaFree(src);
  axon::free(sig);
  axon::free(inbox);
}

TEST(Staged, StreamOpsCapturedIntoAGraph) {
  if (!stagedRun()) GTEST_SKIP() << "runs with AXON_P2P=0 on 2+ PEs";
  const std::size_t n = 1 << 18;
  auto* inbox = static_cast<int*>(axon::calloc(n, sizeof(int)));
  auto* sig = static_cast<std::uint64_t*>(axon::calloc(1, 8));
  int* src;
  CUDA_OK(cudaMalloc(&src, n * sizeof(int)));
  std::vector<int> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = me() * 31 + static_cast<int>(i);
  fromHost(src, v);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  axon::putOnStream(inbox, src, n * sizeof(int), (me() + 1) % np(), s);
  axon::signalOpOnStream(sig, 1, axon::SignalOp::Add, (me() + 1) % np(), s);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  std::vector<int> got(n);
  const int left = (me() + np() - 1) % np();
  for (int i = 1; i <= 5; ++i) {
    CUDA_OK(cudaGraphLaunch(exec, s));
    axon::signalWaitUntilOnStream(sig, axon::Cmp::Ge, i, s);
    CUDA_OK(cudaStreamSynchronize(s));
    got = toHost(inbox, n);
    for (std::size_t k = 0; k < n; k += 61) ASSERT_EQ(got[k], left * 31 + static_cast<int>(k)) << "launch " << i;
    axon::barrierAll();
  }
  EXPECT_EQ(axon::signalFetch(sig), 5u) << "each replay signalled once";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  cudaFree(src);
  axon::barrierAll();
  axon::free(sig);
  axon::free(inbox);
}

TEST(Staged, ManyStreamOpsAndLongGraphs) {
  if (!stagedRun()) GTEST_SKIP() << "runs with AXON_P2P=0 on 2+ PEs";
  auto* sig = static_cast<std::uint64_t*>(axon::calloc(1, 8));
  const int right = (me() + 1) % np();
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // More ops in a row than the doorbell ring has slots (4096): its slots are reused.
  constexpr int kOnce = 5000;
  for (int i = 0; i < kOnce; ++i) axon::signalOpOnStream(sig, 1, axon::SignalOp::Add, right, s);
  CUDA_OK(cudaStreamSynchronize(s));
  axon::barrierAll();
  EXPECT_EQ(axon::signalFetch(sig), std::uint64_t{kOnce});
  axon::barrierAll();
  // A graph of many staged ops, launched back to back. With host nodes this deadlocked: the
  // launch blocked in the driver while holding a lock the peers' staging proxies needed.
  constexpr int kCaptured = 64, kLaunches = 3;
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < kCaptured; ++i) axon::signalOpOnStream(sig, 1, axon::SignalOp::Add, right, s);
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < kLaunches; ++launch) CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  axon::barrierAll();
  EXPECT_EQ(axon::signalFetch(sig), std::uint64_t{kOnce + kLaunches * kCaptured});
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  axon::barrierAll();
  axon::free(sig);
}

// Captured requests go with their graphs (a CUDA user object): graphs made and destroyed one
// after another, and a capture abandoned without a graph, leave the next graphs' requests (which
// reuse the released request numbers) running the right work.
TEST(Staged, CapturedOpsAreReleasedWithTheirGraphs) {
  if (!stagedRun()) GTEST_SKIP() << "runs with AXON_P2P=0 on 2+ PEs";
  auto* sig = static_cast<std::uint64_t*>(axon::calloc(2, 8));
  const int right = (me() + 1) % np();
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::uint64_t expected[2] = {0, 0};
  for (int round = 0; round < 6; ++round) {
    // Even rounds add 1 to sig[0] three times; odd rounds add 5 to sig[1] twice.
    const int which = round % 2;
    const std::uint64_t value = which == 0 ? 1 : 5;
    const int ops = which == 0 ? 3 : 2;
    cudaGraph_t graph;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < ops; ++i) axon::signalOpOnStream(&sig[which], value, axon::SignalOp::Add, right, s);
    CUDA_OK(cudaStreamEndCapture(s, &graph));
    if (round == 2) {  // abandoned: never instantiated
      CUDA_OK(cudaGraphDestroy(graph));
      continue;
    }
    cudaGraphExec_t exec;
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_OK(cudaGraphDestroy(graph));  // the executable graph keeps the requests
    for (int launch = 0; launch < 2; ++launch) CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaGraphExecDestroy(exec));
    expected[which] += 2ull * ops * value;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the release reach the worker
  }
  axon::barrierAll();
  EXPECT_EQ(axon::signalFetch(&sig[0]), expected[0]);
  EXPECT_EQ(axon::signalFetch(&sig[1]), expected[1]);
  cudaStreamDestroy(s);
  axon::barrierAll();
  axon::free(sig);
}

// Two executable graphs of the same captured ops, launched on two streams (they may or may not
// overlap): both post the same requests, and each post is served and released on its own.
TEST(Staged, OneGraphInstantiatedTwiceOnTwoStreams) {
  if (!stagedRun()) GTEST_SKIP() << "runs with AXON_P2P=0 on 2+ PEs";
  constexpr std::size_t kBytes = 1 << 20;
  auto* data = static_cast<char*>(axon::malloc(kBytes));
  auto* sig = static_cast<std::uint64_t*>(axon::calloc(1, 8));
  char* src;
  CUDA_OK(cudaMalloc(&src, kBytes));
  CUDA_OK(cudaMemset(src, 0x40 + me(), kBytes));
  CUDA_OK(cudaDeviceSynchronize());
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  cudaStream_t s[2];
  for (auto& st : s) CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeGlobal));
  axon::putSignalOnStream(data, src, kBytes, sig, 1, axon::SignalOp::Add, right, s[0]);
  for (int i = 0; i < 7; ++i) axon::signalOpOnStream(sig, 1, axon::SignalOp::Add, right, s[0]);
  CUDA_OK(cudaStreamEndCapture(s[0], &graph));
  cudaGraphExec_t exec[2];
  for (auto& e : exec) CUDA_OK(cudaGraphInstantiate(&e, graph, 0));
  constexpr int kLaunches = 4;
  for (int launch = 0; launch < kLaunches; ++launch) {
    for (int i = 0; i < 2; ++i) CUDA_OK(cudaGraphLaunch(exec[i], s[i]));
  }
  for (auto& st : s) CUDA_OK(cudaStreamSynchronize(st));
  axon::barrierAll();
  EXPECT_EQ(axon::signalFetch(sig), std::uint64_t{2 * kLaunches * 8});
  auto got = toHost(data, kBytes);
  for (std::size_t i = 0; i < kBytes; i += 4099) ASSERT_EQ(got[i], static_cast<char>(0x40 + left)) << "byte " << i;
  for (auto& e : exec) cudaGraphExecDestroy(e);
  cudaGraphDestroy(graph);
  for (auto& st : s) cudaStreamDestroy(st);
  cudaFree(src);
  axon::barrierAll();
  axon::free(sig);
  axon::free(data);
}

// A transfer that timed out halfway must not leave the channel to the next call: that call gets
// its own data, not a slot's stale bytes, and is not skipped. PE 1 stops (SIGSTOP, its proxy
// thread with it) for longer than AXON_TIMEOUT while PE 0 gets 64 MiB from it; once PE 1 runs
// again, PE 0 gets another buffer. Only in its own ctest entry (gpu_staged_recovery_2pe).
TEST(StagedRecovery, ACallAfterATimedOutOneGetsItsOwnData) {
  if (!stagedRun() || !std::getenv("AXON_TEST_STALL_MS")) {
    GTEST_SKIP() << "runs in gpu_staged_recovery_2pe (AXON_P2P=0, AXON_TEST_STALL_MS)";
  }
  const useconds_t stallUs = static_cast<useconds_t>(std::atoi(std::getenv("AXON_TEST_STALL_MS"))) * 1000;
  const std::size_t big = 64u << 20, small = 4096;
  auto* a = static_cast<unsigned char*>(axon::malloc(big));
  auto* b = static_cast<unsigned char*>(axon::malloc(small));
  CUDA_OK(cudaMemset(a, 0xAA, big));
  CUDA_OK(cudaMemset(b, 0x55, small));
  CUDA_OK(cudaDeviceSynchronize());
  axon::barrierAll();
  if (me() == 1) {
    const pid_t self = getpid();
    const pid_t waker = fork();
    ASSERT_GE(waker, 0);
    if (waker == 0) {
      usleep(stallUs);
      kill(self, SIGCONT);
      _exit(0);
    }
    raise(SIGSTOP);
    waitpid(waker, nullptr, 0);
  } else if (me() == 0) {
    const auto stopped = std::chrono::steady_clock::now();
    usleep(300000);  // PE 1 has stopped
    unsigned char* dst;
    CUDA_OK(cudaMalloc(&dst, big));
    try {
      axon::get(dst, a, big, 1);
      ADD_FAILURE() << "a get from a stopped PE returned";
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), axon::ErrorCode::Timeout) << e.what();
    }
    // PE 1 runs again (its proxy serves the old requests first) by stallUs after the barrier.
    std::this_thread::sleep_until(stopped + std::chrono::microseconds(stallUs) + std::chrono::milliseconds(300));
    CUDA_OK(cudaMemset(dst, 0, small));
    CUDA_OK(cudaDeviceSynchronize());
    axon::get(dst, b, small, 1);
    auto got = toHost(dst, small);
    for (std::size_t i = 0; i < small; ++i) ASSERT_EQ(got[i], 0x55) << "byte " << i;
    // A put then a get back through the same channel.
    std::vector<unsigned char> v(small);
    for (std::size_t i = 0; i < small; ++i) v[i] = static_cast<unsigned char>(i * 7 + 1);
    fromHost(dst, v);
    axon::put(b, dst, small, 1);
    CUDA_OK(cudaMemset(dst, 0, small));
    CUDA_OK(cudaDeviceSynchronize());
    axon::get(dst, b, small, 1);
    got = toHost(dst, small);
    for (std::size_t i = 0; i < small; ++i) ASSERT_EQ(got[i], v[i]) << "byte " << i;
    cudaFree(dst);
  }
  axon::barrierAll();
  axon::free(b);
  axon::free(a);
}

TEST(Staged, LargeOddPutAndGet) {
  // Many chunks, a tail, and both directions at once from every PE.
  const std::size_t bytes = (9u << 20) + 12345;
  auto* dst = static_cast<unsigned char*>(axon::malloc(bytes));
  std::vector<unsigned char> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((i * 131 + me()) & 0xff);
  unsigned char* src;
  CUDA_OK(cudaMalloc(&src, bytes));
  fromHost(src, v);
  int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  axon::put(dst, src, bytes, right);
  axon::barrierAll();
  auto got = toHost(dst, bytes);
  for (std::size_t i = 0; i < bytes; i += 7) ASSERT_EQ(got[i], static_cast<unsigned char>((i * 131 + left) & 0xff)) << i;
  ASSERT_EQ(got[bytes - 1], static_cast<unsigned char>(((bytes - 1) * 131 + left) & 0xff));
  // get it back from the right neighbour: it holds what this PE sent
  CUDA_OK(cudaMemset(src, 0, bytes));
  // Host calls do not order with the program's streams (as with CUDA-aware MPI): finish the memset.
  CUDA_OK(cudaDeviceSynchronize());
  axon::get(src, dst, bytes, right);
  auto back = toHost(src, bytes);
  for (std::size_t i = 0; i < bytes; i += 7) ASSERT_EQ(back[i], v[i]) << i;
  axon::barrierAll();
  cudaFree(src);
  axon::free(dst);
}

}  // namespace
