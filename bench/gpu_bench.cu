// GPU benchmarks of the one-sided layer between PE 0 and PE 1, each next to the hardware limit
// measured in the same run:
//
//   axon run -n 2 build/bench/gpu_bench [--tests pingpong,stream,device,host] [--json FILE]
//                                       [--iters N] [--min-bw 64M] [--max-bw 1G]
//
//   pingpong  device put_signal ping-pong (8 B, thread scope), round trip, against raw
//             store + flag ping-pongs through the same mappings (release flag with and without
//             the waiter's acquire, and unordered), each the median of 8 signal addresses
//   pingpong_variants  (reference) raw round trips with the flag after a release store, an
//             acq_rel fence, a full system fence, or alone
//   stream    put_on_stream bandwidth, one way and both ways, against cudaMemcpyPeerAsync
//   device    device put and get at block scope over all SMs, against the copy engine one way;
//             and put both ways at once, against the copy engine both ways
//   host      blocking 8 B put latency, against cudaMemcpyAsync + cudaStreamSynchronize
//   staged    blocking put through the staged path (run with AXON_P2P=0), against copying by
//             hand GPU -> host -> other GPU with cudaMemcpy, through pageable and pinned memory
//   staged_stream  (run with AXON_P2P=0) time per signal_op_on_stream through the staged path,
//             in a row on a stream and replayed in a CUDA graph, against the blocking signal_op
//             each one runs on the worker thread
//   proxy     (run across nodes: axon run -n 2 --emulate-nodes 2; or with AXON_P2P=0) the device
//             API through the host proxy to a PE this GPU cannot map: put_signal round trip
//             (8 B) from a kernel against the host's put_signal + signal_wait_until round trip;
//             device put bandwidth (one block) against the host's blocking put of the same
//             buffers over the same transport; time per request (signal_op adds from one thread,
//             then quiet) against the host's signal_op calls
//
// Every transfer is checked afterwards (#wrong). PEs beyond 1 take part in barriers only.
#include <axon/axon.hpp>
#include <axon/device/device.hpp>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_cli.hpp"

namespace dev = axon::device;
using u64 = unsigned long long;

namespace {

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "gpu_bench: %s failed: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

struct Options {
  std::string tests = "pingpong,stream,device,host";
  std::string json;
  int iters = 10000;
  std::size_t minBw = 64u << 20;
  std::size_t maxBw = 1u << 30;
};

// Throws axon::bench::UsageError; main reports it.
Options parse(int argc, char** argv) {
  using axon::bench::UsageError;
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError{a + " needs a value"};
      return argv[++i];
    };
    if (a == "--tests") o.tests = value();
    else if (a == "--json") o.json = value();
    else if (a == "--iters") o.iters = static_cast<int>(std::max(10L, axon::bench::parseCount(value(), "--iters", 1)));
    else if (a == "--min-bw") o.minBw = axon::bench::parseSize(value(), "--min-bw");
    else if (a == "--max-bw") o.maxBw = axon::bench::parseSize(value(), "--max-bw");
    else throw UsageError{"unknown option " + a};
  }
  return o;
}

bool wants(const Options& o, const char* t) { return ("," + o.tests + ",").find(std::string(",") + t + ",") != std::string::npos; }

struct Record {
  std::string test, metric;
  std::size_t bytes;
  double axon, baseline;
  std::string baselineName;
  long long wrong;
  std::string config = "";
};
std::vector<Record> g_records;

void report(const Record& r) {
  g_records.push_back(r);
  std::printf("%-18s %12zu  %-9s axon %11.3f   %-26s %11.3f   ratio %6.3f   #wrong %lld  %s\n", r.test.c_str(), r.bytes,
              r.metric.c_str(), r.axon, r.baselineName.c_str(), r.baseline, r.axon / r.baseline, r.wrong, r.config.c_str());
  std::fflush(stdout);
}

__device__ __forceinline__ u64 globalTimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---------------------------------------------------------------------------------------------
// pingpong

__global__ void axonPingPong(dev::Context ctx, u64* data, const u64* src, u64* sig, int peer, int warmup, int iters,
                             bool initiator, u64* elapsedNs) {
  u64 t0 = 0;
  for (int i = 1; i <= warmup + iters; ++i) {
    if (i == warmup + 1) t0 = globalTimer();
    if (initiator) {
      dev::putSignal<dev::Thread>(ctx, data, src, 8, sig, static_cast<u64>(i), dev::SignalOp::Set, peer);
      dev::signalWaitUntil<dev::Thread>(ctx, sig, dev::Cmp::Ge, static_cast<u64>(i));
    } else {
      dev::signalWaitUntil<dev::Thread>(ctx, sig, dev::Cmp::Ge, static_cast<u64>(i));
      dev::putSignal<dev::Thread>(ctx, data, src, 8, sig, static_cast<u64>(i), dev::SignalOp::Set, peer);
    }
  }
  *elapsedNs = globalTimer() - t0;
}

// The limits: store the data through the peer mapping, then the flag; spin on our own flag.
//   ReleaseAcquire  the flag is a release store at system scope and the waiter makes the load that
//                   saw it an acquire: the cheapest protocol that guarantees a waiter sees the data
//                   (what put_signal + signal_wait_until promise);
//   Release         the same without the waiter's acquire (enough for this loop, which reads no
//                   data after the wait; a program that reads the data needs the acquire);
//   Unordered       two plain volatile stores, which the memory model does not order (the wire's
//                   floor, not a correct protocol).
// For reference runs (--tests pingpong_variants): the flag after an acq_rel fence, after a full
// system fence, or alone.
enum class RawFlag { ReleaseAcquire, Release, Unordered, FlagOnly, FenceAcqRel, FenceSc };

// Spins until our flag reaches i. Bounded like axon's waits: every 4096 polls it reads the clock
// (the first reading starts the count, so a flag already on its way costs no clock read), and past
// timeoutNs (AXON_TIMEOUT; 0: never) it says what it waited for and traps.
template <RawFlag Mode>
__device__ __forceinline__ void rawWait(volatile u64* mySig, u64 i, int me, u64 timeoutNs) {
  const u64* word = const_cast<const u64*>(mySig);
  u64 start = 0;
  for (unsigned polls = 1;; ++polls) {
    const u64 seen = Mode == RawFlag::ReleaseAcquire ? dev::detail::loadRelaxedSys(word) : *mySig;
    if (seen >= i) break;
    if (polls % 4096 != 0) continue;
    const u64 now = globalTimer();
    if (start == 0) {
      start = now;
    } else if (timeoutNs != 0 && now - start > timeoutNs) {
      printf("gpu_bench: PE %d: raw ping-pong waited past AXON_TIMEOUT for its flag at %p: expected >= %llu, "
             "seen %llu\n", me, static_cast<const void*>(word), i, seen);
      __trap();
    }
  }
  if (Mode == RawFlag::ReleaseAcquire) dev::detail::acquireAfterRelaxedLoad(word);
}

template <RawFlag Mode>
__global__ void rawPingPong(volatile u64* peerData, const u64* src, volatile u64* peerSig, volatile u64* mySig,
                            int warmup, int iters, bool initiator, u64* elapsedNs, int me, u64 timeoutNs) {
  u64 t0 = 0;
  for (int i = 1; i <= warmup + iters; ++i) {
    if (i == warmup + 1) t0 = globalTimer();
    if (!initiator) rawWait<Mode>(mySig, static_cast<u64>(i), me, timeoutNs);
    if (Mode != RawFlag::FlagOnly) *peerData = *src;
    if (Mode == RawFlag::Release || Mode == RawFlag::ReleaseAcquire) {
      asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(__cvta_generic_to_global(const_cast<u64*>(peerSig))),
                   "l"(static_cast<u64>(i)) : "memory");
    } else {
      if (Mode == RawFlag::FenceAcqRel) asm volatile("fence.acq_rel.sys;" ::: "memory");
      if (Mode == RawFlag::FenceSc) __threadfence_system();
      *peerSig = static_cast<u64>(i);
    }
    if (initiator) rawWait<Mode>(mySig, static_cast<u64>(i), me, timeoutNs);
  }
  *elapsedNs = globalTimer() - t0;
}

// A ping-pong between PE 0 and 1: data and signal words in the symmetric heap, the time of one
// round trip in microseconds (PE 0's clock). Zeroes both words on both PEs first.
template <class Launch>
double pingPongRtt(int me, u64* data, u64* sig, int iters, u64* elapsed, Launch launch) {
  CHECK(cudaMemset(data, 0, 8));
  CHECK(cudaMemset(sig, 0, 8));
  CHECK(cudaDeviceSynchronize());
  axon::barrierAll();
  if (me <= 1) {
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
  }
  axon::barrierAll();
  u64 ns = 0;
  CHECK(cudaMemcpy(&ns, elapsed, 8, cudaMemcpyDeviceToHost));
  return ns / 1e3 / iters;
}

template <RawFlag Mode>
double rawRtt(int me, u64* data, u64* sig, const u64* src, int warmup, int iters, u64* elapsed) {
  const int peer = 1 - me;
  return pingPongRtt(me, data, sig, iters, elapsed, [&] {
    rawPingPong<Mode><<<1, 1>>>(static_cast<u64*>(axon::ptr(data, peer)), src, static_cast<u64*>(axon::ptr(sig, peer)),
                                sig, warmup, iters, me == 0, elapsed, me, axon::deviceContext().timeoutNs);
  });
}

void benchPingPongVariants(const Options& o, int me) {
  auto* data = static_cast<u64*>(axon::calloc(5, 8));
  auto* sigs = static_cast<u64*>(axon::calloc(5, 8));
  u64 *src, *elapsed;
  CHECK(cudaMalloc(&src, 8));
  CHECK(cudaMalloc(&elapsed, 8));
  CHECK(cudaMemset(src, 7, 8));
  double unordered = rawRtt<RawFlag::Unordered>(me, &data[0], &sigs[0], src, 200, o.iters, elapsed);
  double flagOnly = rawRtt<RawFlag::FlagOnly>(me, &data[1], &sigs[1], src, 200, o.iters, elapsed);
  double release = rawRtt<RawFlag::Release>(me, &data[2], &sigs[2], src, 200, o.iters, elapsed);
  double acqRel = rawRtt<RawFlag::FenceAcqRel>(me, &data[3], &sigs[3], src, 200, o.iters, elapsed);
  double sc = rawRtt<RawFlag::FenceSc>(me, &data[4], &sigs[4], src, 200, o.iters, elapsed);
  if (me == 0) {
    report({"raw_rtt_flag_only", "us", 8, flagOnly, unordered, "raw stores, unordered", 0});
    report({"raw_rtt_release", "us", 8, release, unordered, "raw stores, unordered", 0});
    report({"raw_rtt_fence_acqrel", "us", 8, acqRel, unordered, "raw stores, unordered", 0});
    report({"raw_rtt_fence_sc", "us", 8, sc, unordered, "raw stores, unordered", 0});
  }
  cudaFree(src);
  cudaFree(elapsed);
  axon::barrierAll();
  axon::free(sigs);
  axon::free(data);
}

// The round trip depends on where the signal word lies, not only on the protocol: on two H200s
// an unordered ping-pong took 1.22 or 1.52 us (sometimes 1.33) with nothing changed but the
// word's offset, most likely the L2 partition holding its line, seen from the polling SM. So
// every protocol runs at the same kPlacements addresses, kPlacementStep apart, and each reports
// its median; the config column gives the range.
constexpr int kPlacements = 8;
constexpr std::size_t kPlacementStep = 4096;

struct RttSpread {
  double median = 0, min = 0, max = 0;
};

RttSpread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  RttSpread r;
  r.min = v.front();
  r.max = v.back();
  const std::size_t n = v.size();
  r.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return r;
}

void benchPingPong(const Options& o, int me) {
  auto* region = static_cast<u64*>(axon::calloc(kPlacements * kPlacementStep / 8, 8));
  u64 *src, *elapsed;
  CHECK(cudaMalloc(&src, 8));
  CHECK(cudaMalloc(&elapsed, 8));
  const u64 pattern = 0x0123456789abcdefull + me;
  CHECK(cudaMemcpy(src, &pattern, 8, cudaMemcpyHostToDevice));
  const int peer = 1 - me, warmup = 200;
  auto ctx = axon::deviceContext();
  std::vector<double> axonUs, acquireUs, releaseUs, unorderedUs;
  long long wrong = 0;
  // What PE 0 must find in its data word after a protocol that writes PE 1's pattern.
  auto countWrong = [&](const u64* data) {
    if (me != 0) return;
    u64 got = 0;
    CHECK(cudaMemcpy(&got, data, 8, cudaMemcpyDeviceToHost));
    if (got != 0x0123456789abcdefull + 1) ++wrong;
  };
  for (int p = 0; p < kPlacements; ++p) {
    u64* data = region + p * kPlacementStep / 8;
    u64* sig = data + 8;  // 64 bytes on, in the same page
    axonUs.push_back(pingPongRtt(me, data, sig, o.iters, elapsed, [&] {
      axonPingPong<<<1, 1>>>(ctx, data, src, sig, peer, warmup, o.iters, me == 0, elapsed);
    }));
    countWrong(data);
    acquireUs.push_back(rawRtt<RawFlag::ReleaseAcquire>(me, data, sig, src, warmup, o.iters, elapsed));
    countWrong(data);
    releaseUs.push_back(rawRtt<RawFlag::Release>(me, data, sig, src, warmup, o.iters, elapsed));
    countWrong(data);
    unorderedUs.push_back(rawRtt<RawFlag::Unordered>(me, data, sig, src, warmup, o.iters, elapsed));
    countWrong(data);
  }
  if (me == 0) {
    const RttSpread a = spread(axonUs);
    auto row = [&](const std::vector<double>& baseline, const char* name) {
      const RttSpread b = spread(baseline);
      char config[160];
      std::snprintf(config, sizeof config,
                    "median of %d signal addresses; axon %.3f-%.3f, baseline %.3f-%.3f", kPlacements, a.min, a.max,
                    b.min, b.max);
      report({"pingpong_rtt", "us", 8, a.median, b.median, name, wrong, config});
    };
    row(acquireUs, "raw release flag + acquire");
    row(releaseUs, "raw store+release flag");
    row(unorderedUs, "raw stores, unordered");
  }
  cudaFree(src);
  cudaFree(elapsed);
  axon::barrierAll();
  axon::free(region);
}

// ---------------------------------------------------------------------------------------------
// stream and device bandwidth

__global__ void fill(unsigned* p, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    p[i] = static_cast<unsigned>(i * 2654435761u) ^ seed;
  }
}

__global__ void countWrong(const unsigned* p, std::size_t n, unsigned seed, u64* wrong) {
  u64 bad = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    bad += p[i] != (static_cast<unsigned>(i * 2654435761u) ^ seed);
  }
  if (bad) atomicAdd(wrong, bad);
}

// Put (or get, kGet) of `bytes` between this PE's `local` and `peer`'s `remote` by every block of
// the grid, each at block scope. chunk 0: block b moves one contiguous slice. Otherwise block b
// moves chunks b, b + grid, b + 2 grid, ...: the grid sweeps the buffer together (measured faster
// from 256 MiB on, likely because the pages it touches at once stay few).
template <int kThreads, bool kGet>
__global__ void __launch_bounds__(kThreads)
    deviceMove(dev::Context ctx, char* remote, char* local, std::size_t bytes, int peer, std::size_t chunk) {
  auto move = [&](std::size_t begin, std::size_t end) {
    if (kGet) {
      dev::get<dev::Block>(ctx, local + begin, remote + begin, end - begin, peer);
    } else {
      dev::put<dev::Block>(ctx, remote + begin, local + begin, end - begin, peer);
    }
  };
  if (chunk == 0) {
    std::size_t slice = (bytes / gridDim.x + 15) / 16 * 16;
    std::size_t begin = slice * blockIdx.x < bytes ? slice * blockIdx.x : bytes;
    std::size_t end = begin + slice < bytes ? begin + slice : bytes;
    if (end > begin) move(begin, end);
    return;
  }
  for (std::size_t begin = chunk * blockIdx.x; begin < bytes; begin += chunk * gridDim.x) {
    move(begin, begin + chunk < bytes ? begin + chunk : bytes);
  }
}

// One grid shape of deviceMove.
struct MoveShape {
  int blocks, threads;
  std::size_t chunk;
  std::string name() const {
    return std::to_string(blocks) + " blocks x " + std::to_string(threads) + " threads, " +
           (chunk ? std::to_string(chunk >> 10) + " KiB chunks interleaved" : "one slice per block");
  }
};

void launchMove(const MoveShape& m, bool get, cudaStream_t s, dev::Context ctx, char* remote, char* local,
                std::size_t bytes, int peer) {
  const dim3 grid(m.blocks);
  if (m.threads == 1024) {
    if (get) deviceMove<1024, true><<<grid, 1024, 0, s>>>(ctx, remote, local, bytes, peer, m.chunk);
    else deviceMove<1024, false><<<grid, 1024, 0, s>>>(ctx, remote, local, bytes, peer, m.chunk);
  } else {
    if (get) deviceMove<512, true><<<grid, 512, 0, s>>>(ctx, remote, local, bytes, peer, m.chunk);
    else deviceMove<512, false><<<grid, 512, 0, s>>>(ctx, remote, local, bytes, peer, m.chunk);
  }
  CHECK(cudaGetLastError());  // a shape that does not launch must not time as infinitely fast
}

long long wrongIn(const void* p, std::size_t bytes, unsigned seed) {
  u64* w;
  CHECK(cudaMalloc(&w, 8));
  CHECK(cudaMemset(w, 0, 8));
  countWrong<<<264, 512>>>(static_cast<const unsigned*>(p), bytes / 4, seed, w);
  u64 h;
  CHECK(cudaMemcpy(&h, w, 8, cudaMemcpyDeviceToHost));
  cudaFree(w);
  return static_cast<long long>(h);
}

// Seconds for `reps` launches of `work` on `s`, timed with events.
template <class F>
double timed(cudaStream_t s, int reps, F work) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  work();  // warm-up
  CHECK(cudaEventRecord(a, s));
  for (int r = 0; r < reps; ++r) work();
  CHECK(cudaEventRecord(b, s));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / 1e3;
}

void benchBandwidth(const Options& o, int me, bool stream, bool device) {
  const int peer = 1 - me;
  int myDev = axon::gpuDevice();
  // Every PE learns PE 1's and PE 0's CUDA ordinals (same numbering: one node, same visibility).
  auto* devs = static_cast<int*>(axon::mallocHost(2 * sizeof(int)));
  if (me <= 1) for (int pe = 0; pe <= 1; ++pe) axon::p(&devs[me], myDev, pe);
  axon::barrierAll();
  const int peerDev = me <= 1 ? devs[peer] : 0;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, myDev));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  bool samePhysical = peerDev == myDev;
  if (me == 0 && !samePhysical) {
    // Both directions, for the baseline's copies each way.
    for (int from : {myDev, peerDev}) {
      CHECK(cudaSetDevice(from));
      cudaError_t e = cudaDeviceEnablePeerAccess(from == myDev ? peerDev : myDev, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CHECK(e);
      cudaGetLastError();
    }
    CHECK(cudaSetDevice(myDev));
  }
  for (std::size_t bytes = o.minBw; bytes <= o.maxBw; bytes *= 4) {
    const int reps = std::max<int>(3, static_cast<int>((8ull << 30) / bytes));
    char* dst = static_cast<char*>(axon::malloc(bytes));
    char* src;
    CHECK(cudaMalloc(&src, bytes));
    unsigned seed = 1000u * static_cast<unsigned>(me) + static_cast<unsigned>(bytes >> 20);
    fill<<<264, 512>>>(reinterpret_cast<unsigned*>(src), bytes / 4, seed);
    CHECK(cudaDeviceSynchronize());
    // The copy engine's limit, measured by PE 0 alone: its buffer to one it allocates on PE 1's GPU.
    double ceOne = 0, ceBoth = 0;
    char *peerBuf = nullptr, *peerSrc = nullptr, *back = nullptr;
    if (me == 0) {
      CHECK(cudaSetDevice(peerDev));
      CHECK(cudaMalloc(&peerBuf, bytes));
      CHECK(cudaMalloc(&peerSrc, bytes));
      CHECK(cudaSetDevice(myDev));
      CHECK(cudaMalloc(&back, bytes));
      ceOne = timed(s, reps, [&] { CHECK(cudaMemcpyPeerAsync(peerBuf, peerDev, src, myDev, bytes, s)); });
      // Both ways: two streams, one on each GPU, copying towards each other at once.
      cudaStream_t s2;
      CHECK(cudaSetDevice(peerDev));
      CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
      CHECK(cudaSetDevice(myDev));
      CHECK(cudaMemcpyPeerAsync(peerBuf, peerDev, src, myDev, bytes, s));
      CHECK(cudaMemcpyPeerAsync(back, myDev, peerSrc, peerDev, bytes, s2));
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaStreamSynchronize(s2));
      auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) {
        CHECK(cudaMemcpyPeerAsync(peerBuf, peerDev, src, myDev, bytes, s));
        CHECK(cudaMemcpyPeerAsync(back, myDev, peerSrc, peerDev, bytes, s2));
      }
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaStreamSynchronize(s2));
      ceBoth = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      CHECK(cudaStreamDestroy(s2));
    }
    axon::barrierAll();
    double gb = static_cast<double>(bytes) * reps / 1e9;
    if (stream) {
      double one = 0;
      if (me == 0) one = timed(s, reps, [&] { axon::putOnStream(dst, src, bytes, 1, s); });
      axon::barrierAll();
      long long wrong = me == 1 ? wrongIn(dst, bytes, seed - 1000u) : 0;
      auto* shared = static_cast<double*>(axon::mallocHost(4 * sizeof(double)));
      if (me == 1) axon::p(&shared[2], static_cast<double>(wrong), 0);
      axon::barrierAll();
      // Both ways: PE 0 and PE 1 put to each other at the same time; the slower one counts.
      double both = 0;
      if (me <= 1) both = timed(s, reps, [&] { axon::putOnStream(dst, src, bytes, peer, s); });
      if (me == 1) axon::p(&shared[1], both, 0);
      axon::barrierAll();
      if (me == 0) {
        long long wrongBoth = wrongIn(dst, bytes, seed + 1000u);
        report({"stream_put_1way", "GB/s", bytes, gb / one, gb / ceOne, "cudaMemcpyPeerAsync", static_cast<long long>(shared[2])});
        report({"stream_put_2way", "GB/s", bytes, 2 * gb / std::max(both, shared[1]), 2 * gb / ceBoth,
                 "cudaMemcpyPeerAsync x2", wrongBoth});
      }
      axon::barrierAll();
      axon::free(shared);
    }
    if (device) {
      CHECK(cudaMemset(dst, 0, bytes));
      CHECK(cudaDeviceSynchronize());  // the memset must end before PE 0 writes
      axon::barrierAll();
      auto ctx = axon::deviceContext();
      // Grid shapes tried in this run, each printed; the best is reported (named in the JSON as
      // "config") and used for the run both ways. 1 or 2 blocks per SM; and 32 or 64 blocks, to
      // show what part of the SMs it takes to fill NVLink (a collective call runs 64 by default).
      std::vector<MoveShape> shapes;
      for (std::size_t chunk : {std::size_t{0}, std::size_t{64} << 10, std::size_t{512} << 10}) {
        for (int blocks : {sms, 2 * sms}) {
          for (int threads : {512, 1024}) shapes.push_back({blocks, threads, chunk});
        }
      }
      for (int blocks : {32, 64}) shapes.push_back({blocks, 512, std::size_t{64} << 10});
      char* got = nullptr;
      CHECK(cudaMalloc(&got, bytes));
      auto* shared = static_cast<double*>(axon::mallocHost(6 * sizeof(double)));
      double tPut = 1e30, tGet = 1e30;
      MoveShape bestPut{}, bestGet{};
      if (me == 0) {
        for (bool get : {false, true}) {
          for (const MoveShape& m : shapes) {
            char* local = get ? got : src;
            double ti = timed(s, reps, [&] { launchMove(m, get, s, ctx, dst, local, bytes, 1); });
            std::printf("# device %s %zu B, %s: %.1f GB/s\n", get ? "get" : "put", bytes, m.name().c_str(), gb / ti);
            double& best = get ? tGet : tPut;
            if (ti < best) {
              best = ti;
              (get ? bestGet : bestPut) = m;
            }
          }
        }
      }
      axon::barrierAll();
      // PE 1 checks what PE 0 put; PE 0 checks what it got back from PE 1's copy of it.
      if (me == 1) axon::p(&shared[0], static_cast<double>(wrongIn(dst, bytes, seed - 1000u)), 0);
      long long wrongGet = me == 0 ? wrongIn(got, bytes, seed) : 0;
      // Both ways: PE 0 and PE 1 put to each other at once, with PE 0's best shape; the slower
      // one counts.
      if (me == 0) {
        axon::p(&shared[3], static_cast<double>(bestPut.blocks), 1);
        axon::p(&shared[4], static_cast<double>(bestPut.threads), 1);
        axon::p(&shared[5], static_cast<double>(bestPut.chunk), 1);
      }
      axon::barrierAll();
      if (me == 1) {
        bestPut = {static_cast<int>(shared[3]), static_cast<int>(shared[4]), static_cast<std::size_t>(shared[5])};
      }
      double both = 0;
      if (me <= 1) both = timed(s, reps, [&] { launchMove(bestPut, false, s, ctx, dst, src, bytes, peer); });
      if (me == 1) axon::p(&shared[1], both, 0);
      axon::barrierAll();
      if (me == 1) axon::p(&shared[2], static_cast<double>(wrongIn(dst, bytes, seed - 1000u)), 0);
      axon::barrierAll();
      if (me == 0) {
        const long long wrongBoth = wrongIn(dst, bytes, seed + 1000u) + static_cast<long long>(shared[2]);
        report({"device_put_block", "GB/s", bytes, gb / tPut, gb / ceOne, "copy engine (1 way)",
                static_cast<long long>(shared[0]), bestPut.name()});
        report({"device_get_block", "GB/s", bytes, gb / tGet, gb / ceOne, "copy engine (1 way)", wrongGet,
                bestGet.name()});
        report({"device_put_block_2way", "GB/s", bytes, 2 * gb / std::max(both, shared[1]), 2 * gb / ceBoth,
                "copy engine x2", wrongBoth, bestPut.name()});
      }
      axon::barrierAll();
      axon::free(shared);
      cudaFree(got);
    }
    if (me == 0) {
      cudaFree(peerBuf);
      cudaFree(peerSrc);
      cudaFree(back);
    }
    cudaFree(src);
    axon::free(dst);
  }
  cudaStreamDestroy(s);
  axon::free(devs);
}

// ---------------------------------------------------------------------------------------------
// staged path

void benchStaged(const Options& o, int me) {
  auto* devs = static_cast<int*>(axon::mallocHost(2 * sizeof(int)));
  int myDev = axon::gpuDevice();
  if (me <= 1) for (int pe = 0; pe <= 1; ++pe) axon::p(&devs[me], myDev, pe);
  axon::barrierAll();
  if (me == 0 && axon::gpuPeerReachable(1)) {
    std::printf("# staged: PE 1 is mapped (peer access); run with AXON_P2P=0 to measure the staged path\n");
  }
  for (std::size_t bytes = 1u << 20; bytes <= std::min<std::size_t>(o.maxBw, 256u << 20); bytes *= 4) {
    const int reps = std::max<int>(3, static_cast<int>((2ull << 30) / bytes));
    char* dst = static_cast<char*>(axon::malloc(bytes));
    char* src;
    CHECK(cudaMalloc(&src, bytes));
    unsigned seed = 77u + static_cast<unsigned>(bytes >> 20);
    fill<<<264, 512>>>(reinterpret_cast<unsigned*>(src), bytes / 4, seed);
    CHECK(cudaDeviceSynchronize());
    double pageable = 0, pinned = 0, staged = 0;
    if (me == 0) {
      char* peerBuf;
      CHECK(cudaSetDevice(devs[1]));
      CHECK(cudaMalloc(&peerBuf, bytes));
      CHECK(cudaSetDevice(myDev));
      std::vector<char> host(bytes);
      char* pinnedHost;
      CHECK(cudaMallocHost(&pinnedHost, bytes));
      auto byHand = [&](char* via) {
        auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) {
          CHECK(cudaMemcpy(via, src, bytes, cudaMemcpyDeviceToHost));
          CHECK(cudaMemcpy(peerBuf, via, bytes, cudaMemcpyHostToDevice));
        }
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      };
      byHand(host.data());
      pageable = byHand(host.data());
      byHand(pinnedHost);
      pinned = byHand(pinnedHost);
      axon::put(dst, src, bytes, 1);  // warm-up
      auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) axon::put(dst, src, bytes, 1);
      staged = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      cudaFreeHost(pinnedHost);
      cudaFree(peerBuf);
    }
    axon::barrierAll();
    auto* shared = static_cast<double*>(axon::mallocHost(sizeof(double)));
    if (me == 1) axon::p(shared, static_cast<double>(wrongIn(dst, bytes, seed)), 0);
    axon::barrierAll();
    if (me == 0) {
      double gb = static_cast<double>(bytes) * reps / 1e9;
      long long wrong = static_cast<long long>(*shared);
      report({"staged_put", "GB/s", bytes, gb / staged, gb / pageable, "by hand via pageable", wrong});
      report({"staged_put", "GB/s", bytes, gb / staged, gb / pinned, "by hand via pinned", wrong});
    }
    axon::barrierAll();
    axon::free(shared);
    cudaFree(src);
    axon::free(dst);
  }
  axon::free(devs);
}

// ---------------------------------------------------------------------------------------------
// staged stream ops

void benchStagedStream(const Options& o, int me) {
  auto* sig = static_cast<std::uint64_t*>(axon::calloc(1, 8));
  auto* wrong = static_cast<long long*>(axon::mallocHost(sizeof(long long)));  // read on the host
  const int n = std::min(o.iters, 2000), warm = 100;
  // PE 0 decides for everyone: PE 1 mapped means the staged path is not what would be measured.
  auto* skip = static_cast<int*>(axon::mallocHost(sizeof(int)));
  if (me == 0) {
    const int mapped = axon::gpuPeerReachable(1) ? 1 : 0;
    for (int pe = 0; pe < axon::nPes(); ++pe) axon::p(skip, mapped, pe);
  }
  axon::barrierAll();
  const bool skipped = *skip != 0;
  axon::free(skip);
  if (skipped) {
    if (me == 0) std::printf("# staged_stream: skipped: PE 1 is mapped (peer access); run with AXON_P2P=0\n");
    axon::free(wrong);
    axon::free(sig);
    return;
  }
  double host = 0, stream = 0, graphed = 0;
  if (me == 0) {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    auto seconds = [](auto t0) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    for (int i = 0; i < warm; ++i) axon::signalOpOnStream(sig, 1, axon::SignalOp::Add, 1, s);
    CHECK(cudaStreamSynchronize(s));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) axon::signalOp(sig, 1, axon::SignalOp::Add, 1);
    host = seconds(t0) * 1e6 / n;
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) axon::signalOpOnStream(sig, 1, axon::SignalOp::Add, 1, s);
    CHECK(cudaStreamSynchronize(s));
    stream = seconds(t0) * 1e6 / n;
    cudaGraph_t graph;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < n; ++i) axon::signalOpOnStream(sig, 1, axon::SignalOp::Add, 1, s);
    CHECK(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));  // warm-up replay
    CHECK(cudaStreamSynchronize(s));
    t0 = std::chrono::steady_clock::now();
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    graphed = seconds(t0) * 1e6 / n;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
  }
  axon::barrierAll();
  if (me == 1) {
    const std::uint64_t expected = static_cast<std::uint64_t>(warm) + 4ull * n;  // host, stream, two graph replays
    axon::p(wrong, axon::signalFetch(sig) == expected ? 0ll : 1ll, 0);
  }
  axon::barrierAll();
  if (me == 0) {
    report({"staged_stream_signal", "us", 8, stream, host, "blocking signal_op", *wrong, "on a stream, in a row"});
    report({"staged_stream_signal", "us", 8, graphed, host, "blocking signal_op", *wrong, "in a CUDA graph"});
  }
  axon::barrierAll();
  axon::free(wrong);
  axon::free(sig);
}

// ---------------------------------------------------------------------------------------------
// device proxy

__global__ void proxyPingPong(dev::Context ctx, u64* data, const u64* src, u64* sig, int peer, int warmup, int iters,
                              bool initiator, u64* elapsedNs) {
  u64 t0 = 0;
  for (int i = 1; i <= warmup + iters; ++i) {
    if (i == warmup + 1) t0 = globalTimer();
    if (!initiator) dev::signalWaitUntil<dev::Thread>(ctx, sig, dev::Cmp::Ge, static_cast<u64>(i));
    dev::putSignal<dev::Thread>(ctx, data, src, 8, sig, static_cast<u64>(i), dev::SignalOp::Set, peer);
    if (initiator) dev::signalWaitUntil<dev::Thread>(ctx, sig, dev::Cmp::Ge, static_cast<u64>(i));
  }
  *elapsedNs = globalTimer() - t0;
}

__global__ void proxyPut(dev::Context ctx, char* dest, const char* src, std::size_t bytes, int peer, int reps) {
  for (int r = 0; r < reps; ++r) dev::put<dev::Block>(ctx, dest, src, bytes, peer);
}

__global__ void proxySignals(dev::Context ctx, u64* sig, int peer, int n) {
  for (int i = 0; i < n; ++i) dev::signalOp(ctx, sig, 1ull, dev::SignalOp::Add, peer);
  dev::quiet(ctx);
}

// Seconds since t0.
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void benchProxy(const Options& o, int me) {
  // PE 0 decides for everyone: PE 1 mapped means the proxy is not what would be measured.
  auto* flags = static_cast<long long*>(axon::mallocHost(4 * sizeof(long long)));  // skip, wrong x3
  if (me == 0) {
    for (int pe = 0; pe < axon::nPes(); ++pe) axon::p(&flags[0], axon::gpuPeerReachable(1) ? 1ll : 0ll, pe);
  }
  axon::barrierAll();
  if (flags[0] != 0) {
    if (me == 0) std::printf("# proxy: skipped: PE 1 is mapped; run across nodes (--emulate-nodes 2) or with AXON_P2P=0\n");
    axon::barrierAll();
    axon::free(flags);
    return;
  }
  const int peer = 1 - me;
  auto ctx = axon::deviceContext();

  // Round trip of 8 B + signal: from a kernel (each put_signal a request to the proxy) and from
  // the host (put_signal, then signal_wait_until on a GPU heap word).
  {
    auto* words = static_cast<u64*>(axon::calloc(4, 8));  // data, sig (device); data, sig (host)
    u64 *src, *elapsed;
    CHECK(cudaMalloc(&src, 8));
    CHECK(cudaMalloc(&elapsed, 8));
    const u64 mine = 0xabcdef00ull + me;
    CHECK(cudaMemcpy(src, &mine, 8, cudaMemcpyHostToDevice));
    const int iters = std::min(o.iters, 2000), warmup = 50;
    const double device = pingPongRtt(me, &words[0], &words[1], iters, elapsed, [&] {
      proxyPingPong<<<1, 1>>>(ctx, &words[0], src, &words[1], peer, warmup, iters, me == 0, elapsed);
    });
    double host = 0;
    if (me <= 1) {
      axon::barrierAll();
      std::chrono::steady_clock::time_point t0;
      auto* hostSig = reinterpret_cast<std::uint64_t*>(&words[3]);
      for (int i = 1; i <= warmup + iters; ++i) {
        if (i == warmup + 1) t0 = std::chrono::steady_clock::now();
        if (me == 1) axon::signalWaitUntil(hostSig, axon::Cmp::Ge, static_cast<std::uint64_t>(i));
        axon::putSignal(&words[2], src, 8, hostSig, static_cast<std::uint64_t>(i), axon::SignalOp::Set, peer);
        if (me == 0) axon::signalWaitUntil(hostSig, axon::Cmp::Ge, static_cast<std::uint64_t>(i));
      }
      host = since(t0) * 1e6 / iters;
    }
    axon::barrierAll();
    u64 got[3] = {0, 0, 0};
    CHECK(cudaMemcpy(got, words, 24, cudaMemcpyDeviceToHost));
    const long long wrong = (got[0] != 0xabcdef00ull + peer) + (got[2] != 0xabcdef00ull + peer);
    if (me == 1) axon::p(&flags[1], wrong, 0);
    axon::barrierAll();
    if (me == 0) {
      report({"proxy_put_signal_rtt", "us", 8, device, host, "host put_signal+wait", wrong + flags[1],
              "device thread scope, PE 1 through the proxy"});
    }
    cudaFree(src);
    cudaFree(elapsed);
    axon::barrierAll();
    axon::free(words);
  }

  // Bandwidth: PE 0 puts to PE 1 from a kernel (one block; each put one request) and from the
  // host (blocking put), the same buffers.
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (std::size_t bytes = 64u << 10; bytes <= std::min<std::size_t>(o.maxBw, 64u << 20); bytes *= 4) {
    const int reps = std::max(4, static_cast<int>(std::min<std::size_t>(200, (512u << 20) / bytes)));
    char* dst = static_cast<char*>(axon::malloc(bytes));
    char* src;
    CHECK(cudaMalloc(&src, bytes));
    const unsigned seed = 5000u + static_cast<unsigned>(bytes >> 10);
    fill<<<264, 512>>>(reinterpret_cast<unsigned*>(src), bytes / 4, seed);
    CHECK(cudaDeviceSynchronize());
    axon::barrierAll();
    double device = 0, host = 0;
    if (me == 0) {
      device = timed(s, 1, [&] { proxyPut<<<1, 128, 0, s>>>(ctx, dst, src, bytes, 1, reps); });
      axon::put(dst, src, bytes, 1);  // warm-up
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) axon::put(dst, src, bytes, 1);
      host = since(t0);
    }
    axon::barrierAll();
    if (me == 1) axon::p(&flags[2], wrongIn(dst, bytes, seed), 0);
    axon::barrierAll();
    if (me == 0) {
      const double gb = static_cast<double>(bytes) * reps / 1e9;
      report({"proxy_device_put", "GB/s", bytes, gb / device, gb / host, "host put (blocking)", flags[2],
              "one block, " + std::to_string(reps) + " puts in a row"});
    }
    axon::barrierAll();
    cudaFree(src);
    axon::free(dst);
  }
  cudaStreamDestroy(s);

  // Time per request: n signal_op adds from one device thread (the proxy carries each out), then
  // quiet; against n host signal_op calls, then quiet.
  {
    auto* sig = static_cast<u64*>(axon::calloc(1, 8));
    const int n = std::min(o.iters, 5000);
    double device = 0, host = 0;
    axon::barrierAll();
    if (me == 0) {
      proxySignals<<<1, 1>>>(ctx, sig, 1, 100);  // warm-up
      CHECK(cudaDeviceSynchronize());
      auto t0 = std::chrono::steady_clock::now();
      proxySignals<<<1, 1>>>(ctx, sig, 1, n);
      CHECK(cudaDeviceSynchronize());
      device = since(t0) * 1e6 / n;
      t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) axon::signalOp(reinterpret_cast<std::uint64_t*>(sig), 1, axon::SignalOp::Add, 1);
      axon::quiet();
      host = since(t0) * 1e6 / n;
    }
    axon::barrierAll();
    if (me == 1) {
      const bool ok = axon::signalFetch(reinterpret_cast<std::uint64_t*>(sig)) == 100ull + 2ull * n;
      axon::p(&flags[3], ok ? 0ll : 1ll, 0);
    }
    axon::barrierAll();
    if (me == 0) {
      report({"proxy_request_cost", "us", 8, device, host, "host signal_op", flags[3],
              "signal_op add per request, " + std::to_string(n) + " in a row, then quiet"});
    }
    axon::barrierAll();
    axon::free(sig);
  }
  axon::free(flags);
}

// ---------------------------------------------------------------------------------------------
// host latency

void benchHostLatency(const Options& o, int me) {
  auto* dst = static_cast<u64*>(axon::calloc(1, 8));
  auto* devs = static_cast<int*>(axon::mallocHost(2 * sizeof(int)));
  int myDev = axon::gpuDevice();
  if (me <= 1) for (int pe = 0; pe <= 1; ++pe) axon::p(&devs[me], myDev, pe);
  axon::barrierAll();
  if (me == 0) {
    u64* src;
    CHECK(cudaMalloc(&src, 8));
    u64 v = 42;
    CHECK(cudaMemcpy(src, &v, 8, cudaMemcpyHostToDevice));
    u64* peerBuf;
    CHECK(cudaSetDevice(devs[1]));
    CHECK(cudaMalloc(&peerBuf, 8));
    CHECK(cudaSetDevice(myDev));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const int n = std::min(o.iters, 2000);
    std::vector<double> a(n), b(n);
    for (int i = 0; i < n + 100; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      axon::put(dst, src, 8, 1);
      auto t1 = std::chrono::steady_clock::now();
      CHECK(cudaMemcpyAsync(peerBuf, src, 8, cudaMemcpyDeviceToDevice, s));
      CHECK(cudaStreamSynchronize(s));
      auto t2 = std::chrono::steady_clock::now();
      if (i >= 100) {
        a[i - 100] = std::chrono::duration<double, std::micro>(t1 - t0).count();
        b[i - 100] = std::chrono::duration<double, std::micro>(t2 - t1).count();
      }
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    cudaFree(peerBuf);
    cudaFree(src);
    cudaStreamDestroy(s);
    axon::barrierAll();
    report({"host_put_latency", "us", 8, a[n / 2], b[n / 2], "cudaMemcpyAsync+sync", 0});
  } else {
    axon::barrierAll();
    if (me == 1) {
      u64 got;
      CHECK(cudaMemcpy(&got, dst, 8, cudaMemcpyDeviceToHost));
      if (got != 42) std::printf("host_put_latency: PE 1 holds %llu, not 42\n", got);
    }
  }
  axon::barrierAll();
  axon::free(devs);
  axon::free(dst);
}

void writeJson(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "gpu_bench: cannot write %s\n", path.c_str());
    return;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, axon::gpuDevice());
  int driver = 0;
  cudaDriverGetVersion(&driver);
  std::fprintf(f, "{\n  \"benchmark\": \"gpu_bench\",\n  \"gpu\": \"%s\",\n  \"cuda_driver\": %d,\n  \"pes\": %d,\n  \"results\": [\n",
               prop.name, driver, axon::nPes());
  for (std::size_t i = 0; i < g_records.size(); ++i) {
    const auto& r = g_records[i];
    std::fprintf(f,
                 "    {\"test\": \"%s\", \"bytes\": %zu, \"unit\": \"%s\", \"axon\": %.6g, \"baseline\": %.6g, "
                 "\"baseline_name\": \"%s\", \"ratio\": %.4f, \"wrong\": %lld, \"config\": \"%s\"}%s\n",
                 r.test.c_str(), r.bytes, r.metric.c_str(), r.axon, r.baseline, r.baselineName.c_str(),
                 r.axon / r.baseline, r.wrong, r.config.c_str(), i + 1 < g_records.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = axon::bench::parseCommandLine("gpu_bench", parse, argc, argv);
  if (!parsed) return 2;
  const Options& o = *parsed;
  axon::init();
  const int me = axon::myPe();
  if (!axon::gpuEnabled() || axon::nPes() < 2) {
    if (me == 0) {
      std::fprintf(stderr, "gpu_bench needs the GPU backend and at least 2 PEs (%s)\n",
                   axon::gpuEnabled() ? "run it with axon run -n 2" : axon::gpuUnavailableReason());
    }
    axon::finalize();
    return 2;
  }
  if (me == 0) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, axon::gpuDevice());
    std::printf("# gpu_bench: %d PEs, PE 0 on %s; peers %s\n", axon::nPes(), prop.name,
                axon::gpuPeerReachable(1) ? "mapped (peer access)" : "not mapped");
  }
  if (wants(o, "pingpong")) benchPingPong(o, me);
  if (wants(o, "pingpong_variants")) benchPingPongVariants(o, me);
  if (wants(o, "stream") || wants(o, "device")) benchBandwidth(o, me, wants(o, "stream"), wants(o, "device"));
  if (wants(o, "host")) benchHostLatency(o, me);
  if (wants(o, "staged")) benchStaged(o, me);
  if (wants(o, "staged_stream")) benchStagedStream(o, me);
  if (wants(o, "proxy")) benchProxy(o, me);
  if (me == 0 && !o.json.empty()) writeJson(o.json);
  axon::finalize();
  return 0;
}
