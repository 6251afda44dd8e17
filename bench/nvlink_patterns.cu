// nvlink_patterns: what NVLink carries between every pair of a node's GPUs at once, per data
// movement pattern, beside NCCL in the same run (docs/performance.md, "Bandwidth on one node").
// One process drives every GPU (peer access between all pairs); each kernel's blocks meet their
// namesakes on the other GPUs before and after the data moves, so a call is timed from all GPUs'
// start to the last one's end, as a collective's. Independent of the library on purpose: it
// measures the ceilings the library's kernels are held against.
//   ce_streams, ce_1stream  copy engines: each GPU copies its block to every other GPU
//                           (cudaMemcpyAsync, a stream per destination or one stream)
//   push                    allgather by SM stores into the peers' buffers
//   pull                    allgather by SM loads of the peers' buffers
//   ardirect_u4, _u2        allreduce in one pass as the library's Direct protocol: GPU j loads
//                           part j of every src, reduces, stores it into every dst
//   arpush_u4               allreduce in two phases of stores only: part k of my src into GPU
//                           k's scratch, meet, reduce locally and store into every dst
//   nccl_*                  NCCL 2.x (NCCL_LIB=path to libnccl.so.2), one communicator per GPU
// Output: CSV rows test,size_mib,blocks,threads,us,dir_gbs,busbw_gbs,ok; dir_gbs is the bytes each
// GPU sends per direction per second, busbw nccl-tests' bus bandwidth (the same for allgather).
// MB_SIZES (MiB, comma list), MB_BLOCKS (comma list) and MB_ONLY (test names) narrow the sweep.
// Float32 sums; results are checked at sample points (ok = 1). The copy engine rows skip each
// GPU's own block, so their check reads 0 there.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

constexpr int MAXG = 8;
constexpr int MAXB = 256;

struct Peers {
  char* src[MAXG];
  char* dst[MAXG];
  char* scr[MAXG];
  unsigned long long* flag[MAXG];
  int n;
  int me;
};

__device__ __forceinline__ unsigned long long ldAcq(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void stRel(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Block b of every GPU meets block b of every other GPU.
__device__ void xbar(const Peers& p, int phase, unsigned long long v) {
  __syncthreads();
  const int t = threadIdx.x;
  if (t < p.n && t != p.me) {
    __threadfence_system();
    stRel(&p.flag[t][(phase * MAXG + p.me) * MAXB + blockIdx.x], v);
    const unsigned long long* w = &p.flag[p.me][(phase * MAXG + t) * MAXB + blockIdx.x];
    long long start = clock64();
    while (ldAcq(w) < v) {
      if (clock64() - start > 20000000000ll) {
        printf("timeout gpu %d block %d phase %d from %d want %llu seen %llu\n", p.me, blockIdx.x, phase, t, v,
               ldAcq(w));
        __trap();
      }
    }
  }
  __syncthreads();
}

__device__ __forceinline__ void blockRange(size_t bytes, size_t* lo, size_t* hi) {
  // 16-byte units split evenly over the grid
  const size_t units = bytes / 16;
  const size_t per = (units + gridDim.x - 1) / gridDim.x;
  size_t a = per * blockIdx.x, b = a + per;
  if (a > units) a = units;
  if (b > units) b = units;
  *lo = a * 16;
  *hi = b * 16;
}

// A thread's U vectors of the block-strided round from vector `base` (of `vec`): loaded from `in`
// into r, or stored from r into `out`. Every pattern below moves its data in such rounds.
template <int U, class V>
__device__ __forceinline__ void loadRound(V (&r)[U], const V* in, size_t base, size_t vec) {
#pragma unroll
  for (int j = 0; j < U; ++j) {
    size_t i = base + threadIdx.x + (size_t)j * blockDim.x;
    if (i < vec) r[j] = in[i];
  }
}
template <int U, class V>
__device__ __forceinline__ void storeRound(V* out, const V (&r)[U], size_t base, size_t vec) {
#pragma unroll
  for (int j = 0; j < U; ++j) {
    size_t i = base + threadIdx.x + (size_t)j * blockDim.x;
    if (i < vec) out[i] = r[j];
  }
}

// allgather by pushes: my `part` bytes into every GPU's dst at me * part.
template <int N, int U>
__global__ void __launch_bounds__(512) pushAllgather(Peers p, size_t part, unsigned long long v) {
  xbar(p, 0, v);
  size_t lo, hi;
  blockRange(part, &lo, &hi);
  const uint4* in = reinterpret_cast<const uint4*>(p.src[p.me] + lo);
  const size_t vec = (hi - lo) / 16;
  for (size_t base = 0; base < vec; base += (size_t)blockDim.x * U) {
    uint4 r[U];
    loadRound(r, in, base, vec);
#pragma unroll
    for (int k = 0; k < N; ++k) storeRound(reinterpret_cast<uint4*>(p.dst[k] + (size_t)p.me * part + lo), r, base, vec);
  }
  xbar(p, 2, v);
}

// allgather by pulls: every GPU's src block into my dst at k * part.
template <int N, int U>
__global__ void __launch_bounds__(512) pullAllgather(Peers p, size_t part, unsigned long long v) {
  xbar(p, 0, v);
  size_t lo, hi;
  blockRange(part, &lo, &hi);
  const size_t vec = (hi - lo) / 16;
  for (size_t base = 0; base < vec; base += (size_t)blockDim.x * U) {
    uint4 r[N][U];
#pragma unroll
    for (int k = 0; k < N; ++k) loadRound(r[k], reinterpret_cast<const uint4*>(p.src[k] + lo), base, vec);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      storeRound(reinterpret_cast<uint4*>(p.dst[p.me] + (size_t)k * part + lo), r[k], base, vec);
    }
  }
  xbar(p, 2, v);
}

__device__ __forceinline__ void add4(float4& a, const float4& b) {
  a.x += b.x;
  a.y += b.y;
  a.z += b.z;
  a.w += b.w;
}

// One-pass allreduce as axon's Direct: GPU me reduces part me of every src (pull) and writes the
// result into every dst (push).
template <int N, int U>
__global__ void __launch_bounds__(512) allreduceDirect(Peers p, size_t S, unsigned long long v) {
  xbar(p, 0, v);
  const size_t part = S / p.n;
  size_t lo, hi;
  blockRange(part, &lo, &hi);
  const size_t off = (size_t)p.me * part + lo;
  const size_t vec = (hi - lo) / 16;
  for (size_t base = 0; base < vec; base += (size_t)blockDim.x * U) {
    float4 r[N][U];
#pragma unroll
    for (int k = 0; k < N; ++k) loadRound(r[k], reinterpret_cast<const float4*>(p.src[k] + off), base, vec);

#pragma unroll
    for (int k = 1; k < N; ++k)
#pragma unroll
      for (int j = 0; j < U; ++j) add4(r[0][j], r[k][j]);

#pragma unroll
    for (int k = 0; k < N; ++k) storeRound(reinterpret_cast<float4*>(p.dst[k] + off), r[0], base, vec);
  }
  xbar(p, 2, v);
}

// Two-phase push allreduce: part k of my src into GPU k's scratch at me; meet; reduce my scratch
// parts locally and push the result into every dst. Every NVLink byte is a write.
template <int N, int U>
__global__ void __launch_bounds__(512) allreducePushed(Peers p, size_t S, unsigned long long v) {
  xbar(p, 0, v);
  const size_t part = S / p.n;
  size_t lo, hi;
  blockRange(part, &lo, &hi);
  const size_t vec = (hi - lo) / 16;
  for (size_t base = 0; base < vec; base += (size_t)blockDim.x * U) {

#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (k == p.me) continue;
      uint4 r[U];
      loadRound(r, reinterpret_cast<const uint4*>(p.src[p.me] + (size_t)k * part + lo), base, vec);
      storeRound(reinterpret_cast<uint4*>(p.scr[k] + (size_t)p.me * part + lo), r, base, vec);
    }
  }
  xbar(p, 1, v);
  const size_t off = (size_t)p.me * part + lo;
  for (size_t base = 0; base < vec; base += (size_t)blockDim.x * U) {
    float4 acc[U];
    loadRound(acc, reinterpret_cast<const float4*>(p.src[p.me] + off), base, vec);

#pragma unroll
    for (int k = 0; k < N; ++k) {
      if (k == p.me) continue;
      const float4* in = reinterpret_cast<const float4*>(p.scr[p.me] + (size_t)k * part + lo);
#pragma unroll
      for (int j = 0; j < U; ++j) {
        size_t i = base + threadIdx.x + (size_t)j * blockDim.x;
        if (i < vec) add4(acc[j], in[i]);
      }
    }

#pragma unroll
    for (int k = 0; k < N; ++k) storeRound(reinterpret_cast<float4*>(p.dst[k] + off), acc, base, vec);
  }
  xbar(p, 2, v);
}

__global__ void fillKernel(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

#define PICK(K, U) (n == 2 ? K<2, U> : n == 3 ? K<3, U> : n == 8 ? K<8, U> : K<4, U>)

// ── NCCL through dlopen ──
struct Nccl {
  void* lib = nullptr;
  int (*commInitAll)(void**, int, const int*);
  int (*allReduce)(const void*, void*, size_t, int, int, void*, cudaStream_t);
  int (*allGather)(const void*, void*, size_t, int, void*, cudaStream_t);
  int (*reduceScatter)(const void*, void*, size_t, int, int, void*, cudaStream_t);
  int (*broadcast)(const void*, void*, size_t, int, int, void*, cudaStream_t);
  int (*groupStart)();
  int (*groupEnd)();
  void* comm[MAXG];
  bool load(const char* path, int n) {
    lib = dlopen(path, RTLD_NOW);
    if (!lib) return false;
    commInitAll = (decltype(commInitAll))dlsym(lib, "ncclCommInitAll");
    allReduce = (decltype(allReduce))dlsym(lib, "ncclAllReduce");
    allGather = (decltype(allGather))dlsym(lib, "ncclAllGather");
    reduceScatter = (decltype(reduceScatter))dlsym(lib, "ncclReduceScatter");
    broadcast = (decltype(broadcast))dlsym(lib, "ncclBroadcast");
    groupStart = (decltype(groupStart))dlsym(lib, "ncclGroupStart");
    groupEnd = (decltype(groupEnd))dlsym(lib, "ncclGroupEnd");
    int devs[MAXG];
    for (int i = 0; i < n; ++i) devs[i] = i;
    return commInitAll(comm, n, devs) == 0;
  }
};

struct Ctx {
  int n;
  size_t maxS;
  Peers p;
  cudaStream_t st[MAXG], side[MAXG][MAXG];
  cudaEvent_t e0[MAXG], e1[MAXG], fork[MAXG], join[MAXG][MAXG];
  unsigned long long epoch = 0;
};

double timeAll(Ctx& c, int iters, const std::function<void()>& launchAll) {
  for (int w = 0; w < 2; ++w) launchAll();
  for (int g = 0; g < c.n; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaDeviceSynchronize());
  }
  for (int g = 0; g < c.n; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaEventRecord(c.e0[g], c.st[g]));
  }
  for (int i = 0; i < iters; ++i) launchAll();
  for (int g = 0; g < c.n; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaEventRecord(c.e1[g], c.st[g]));
  }
  float worst = 0;
  for (int g = 0; g < c.n; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaEventSynchronize(c.e1[g]));
    float ms;
    CK(cudaEventElapsedTime(&ms, c.e0[g], c.e1[g]));
    worst = std::max(worst, ms);
  }
  return worst * 1000.0 / iters;  // us per call
}

template <class K>
std::function<void()> kernelAll(Ctx& c, K kernel, int blocks, int threads, size_t arg) {
  return [&c, kernel, blocks, threads, arg] {
    ++c.epoch;
    for (int g = 0; g < c.n; ++g) {
      CK(cudaSetDevice(g));
      Peers p = c.p;
      p.me = g;
      kernel<<<blocks, threads, 0, c.st[g]>>>(p, arg, c.epoch);
    }
    CK(cudaGetLastError());
  };
}

// Copy engines: every GPU copies `part` to every other GPU, one stream per destination.
std::function<void()> ceAll(Ctx& c, size_t part, bool oneStream) {
  return [&c, part, oneStream] {
    for (int g = 0; g < c.n; ++g) {
      CK(cudaSetDevice(g));
      CK(cudaEventRecord(c.fork[g], c.st[g]));
      for (int k = 0; k < c.n; ++k) {
        if (k == g) continue;
        cudaStream_t s = oneStream ? c.st[g] : c.side[g][k];
        if (!oneStream) CK(cudaStreamWaitEvent(s, c.fork[g], 0));
        CK(cudaMemcpyAsync(c.p.dst[k] + (size_t)g * part, c.p.src[g], part, cudaMemcpyDeviceToDevice, s));
        if (!oneStream) {
          CK(cudaEventRecord(c.join[g][k], s));
          CK(cudaStreamWaitEvent(c.st[g], c.join[g][k], 0));
        }
      }
    }
  };
}

float sample(int g, const char* base, size_t byteOff) {
  float v;
  CK(cudaSetDevice(g));
  CK(cudaMemcpy(&v, base + byteOff, 4, cudaMemcpyDeviceToHost));
  return v;
}

void fillSrc(Ctx& c) {
  for (int g = 0; g < c.n; ++g) {
    CK(cudaSetDevice(g));
    fillKernel<<<264, 512, 0, c.st[g]>>>(reinterpret_cast<float*>(c.p.src[g]), c.maxS / 4, float(g + 1));
    CK(cudaMemsetAsync(c.p.dst[g], 0, c.maxS, c.st[g]));
    CK(cudaStreamSynchronize(c.st[g]));
  }
}

bool checkAllreduce(Ctx& c, size_t S) {
  const float want = c.n * (c.n + 1) / 2.0f;
  for (int g = 0; g < c.n; ++g)
    for (size_t off : {size_t(0), S / 2, S - 4, S / 3 & ~size_t(15)}) {
      float v = sample(g, c.p.dst[g], off);
      if (v != want) {
        printf("  WRONG allreduce gpu %d off %zu: %f want %f\n", g, off, v, want);
        return false;
      }
    }
  return true;
}

bool checkGather(Ctx& c, size_t part) {
  for (int g = 0; g < c.n; ++g)
    for (int k = 0; k < c.n; ++k)
      for (size_t off : {size_t(0), part / 2 & ~size_t(15), part - 4}) {
        float v = sample(g, c.p.dst[g], k * part + off);
        if (v != float(k + 1)) {
          printf("  WRONG gather gpu %d block %d off %zu: %f\n", g, k, off, v);
          return false;
        }
      }
  return true;
}

void clearDst(Ctx& c) {
  for (int g = 0; g < c.n; ++g) {
    CK(cudaSetDevice(g));
    CK(cudaMemset(c.p.dst[g], 0, c.maxS));
  }
}

// The comma-separated numbers in variable `name`, each in [lo, hi], or `fallback` when it is unset.
// Anything else stops the program naming the variable (the buffers and flags are sized for hi).
std::vector<unsigned long long> envList(const char* name, std::vector<unsigned long long> fallback,
                                        unsigned long long lo, unsigned long long hi) {
  const char* text = getenv(name);
  if (!text) return fallback;
  std::vector<unsigned long long> out;
  std::string list(text);
  for (char* s = strtok(list.data(), ","); s; s = strtok(nullptr, ",")) {
    char* end = nullptr;
    const unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || v < lo || v > hi) {
      fprintf(stderr, "%s: '%s' is not a number from %llu to %llu\n", name, s, lo, hi);
      exit(2);
    }
    out.push_back(v);
  }
  return out;
}

int main(int argc, char** argv) {
  Ctx c;
  // The options first: bad ones are refused before any GPU is touched.
  c.maxS = (size_t)512 << 20;
  std::vector<size_t> sizes;
  for (unsigned long long mib : envList("MB_SIZES", {8, 32, 128, 512}, 1, c.maxS >> 20)) sizes.push_back(mib << 20);
  std::vector<int> blockCounts;
  for (unsigned long long b : envList("MB_BLOCKS", {8, 16, 24, 32, 48, 64, 96, 128}, 1, MAXB)) {
    blockCounts.push_back((int)b);
  }
  CK(cudaGetDeviceCount(&c.n));
  if (c.n > MAXG) c.n = MAXG;
  const char* only = getenv("MB_ONLY");  // comma list of test names
  auto want = [&](const char* t) { return !only || strstr(only, t) != nullptr; };
  c.p.n = c.n;
  for (int g = 0; g < c.n; ++g) {
    CK(cudaSetDevice(g));
    for (int k = 0; k < c.n; ++k)
      if (k != g) CK(cudaDeviceEnablePeerAccess(k, 0));
    CK(cudaMalloc(&c.p.src[g], c.maxS));
    CK(cudaMalloc(&c.p.dst[g], c.maxS));
    CK(cudaMalloc(&c.p.scr[g], c.maxS));
    CK(cudaMalloc(&c.p.flag[g], sizeof(unsigned long long) * 3 * MAXG * MAXB));
    CK(cudaMemset(c.p.flag[g], 0, sizeof(unsigned long long) * 3 * MAXG * MAXB));
    CK(cudaStreamCreateWithFlags(&c.st[g], cudaStreamNonBlocking));
    for (int k = 0; k < c.n; ++k) {
      CK(cudaStreamCreateWithFlags(&c.side[g][k], cudaStreamNonBlocking));
      CK(cudaEventCreateWithFlags(&c.join[g][k], cudaEventDisableTiming));
    }
    CK(cudaEventCreate(&c.e0[g]));
    CK(cudaEventCreate(&c.e1[g]));
    CK(cudaEventCreateWithFlags(&c.fork[g], cudaEventDisableTiming));
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("# %d x %s, %d SMs\n", c.n, prop.name, prop.multiProcessorCount);
  fillSrc(c);
  const int n = c.n;
  auto iters = [](size_t S) { return S >= (256u << 20) ? 10 : S >= (32u << 20) ? 30 : 100; };
  // columns: test size_MiB blocks threads us GBps_per_direction busbw_GBps ok
  printf("test,size_mib,blocks,threads,us,dir_gbs,busbw_gbs,ok\n");
  for (size_t S : sizes) {
    const double mib = S / 1048576.0;
    const size_t part = S / n;  // allgather: S is the gathered total; allreduce: S per GPU
    const double dirBytes = (double)(n - 1) * part;   // per GPU each direction, allgather-like
    const double arBus = 2.0 * (n - 1) / n * S;       // allreduce busbw bytes
    if (want("ce")) {
      for (int one = 0; one <= 1; ++one) {
        clearDst(c);
        double us = timeAll(c, iters(S), ceAll(c, part, one));
        printf("%s,%.0f,0,0,%.1f,%.1f,%.1f,%d\n", one ? "ce_1stream" : "ce_streams", mib, us, dirBytes / us / 1e3,
               dirBytes / us / 1e3, (int)checkGather(c, part) ? 1 : 0);
      }
    }
    for (int threads : {512, 256}) {
      for (int b : blockCounts) {
        if (want("push")) {
          clearDst(c);
          double us = timeAll(c, iters(S), kernelAll(c, PICK(pushAllgather, 4), b, threads, part));
          printf("push,%.0f,%d,%d,%.1f,%.1f,%.1f,%d\n", mib, b, threads, us, dirBytes / us / 1e3, dirBytes / us / 1e3,
                 checkGather(c, part) ? 1 : 0);
        }
        if (want("pull")) {
          clearDst(c);
          double us = timeAll(c, iters(S), kernelAll(c, PICK(pullAllgather, 2), b, threads, part));
          printf("pull,%.0f,%d,%d,%.1f,%.1f,%.1f,%d\n", mib, b, threads, us, dirBytes / us / 1e3, dirBytes / us / 1e3,
                 checkGather(c, part) ? 1 : 0);
        }
        if (want("ardirect")) {
          clearDst(c);
          double us = timeAll(c, iters(S), kernelAll(c, PICK(allreduceDirect, 4), b, threads, S));
          printf("ardirect_u4,%.0f,%d,%d,%.1f,%.1f,%.1f,%d\n", mib, b, threads, us, arBus / us / 1e3, arBus / us / 1e3,
                 checkAllreduce(c, S) ? 1 : 0);
          if (threads == 512) {
            clearDst(c);
            us = timeAll(c, iters(S), kernelAll(c, PICK(allreduceDirect, 2), b, threads, S));
            printf("ardirect_u2,%.0f,%d,%d,%.1f,%.1f,%.1f,%d\n", mib, b, threads, us, arBus / us / 1e3,
                   arBus / us / 1e3, checkAllreduce(c, S) ? 1 : 0);
          }
        }
        if (want("arpush")) {
          clearDst(c);
          double us = timeAll(c, iters(S), kernelAll(c, PICK(allreducePushed, 4), b, threads, S));
          printf("arpush_u4,%.0f,%d,%d,%.1f,%.1f,%.1f,%d\n", mib, b, threads, us, arBus / us / 1e3, arBus / us / 1e3,
                 checkAllreduce(c, S) ? 1 : 0);
        }
      }
    }
    fflush(stdout);
  }
  const char* ncclPath = getenv("NCCL_LIB");
  Nccl nc;
  if (ncclPath && want("nccl") && nc.load(ncclPath, n)) {
    for (size_t S : sizes) {
      const double mib = S / 1048576.0;
      const size_t part = S / n;
      const double dirBytes = (double)(n - 1) * part;
      const double arBus = 2.0 * (n - 1) / n * S;
      // One NCCL call per GPU, grouped, as a communicator of one process drives several GPUs.
      auto onEveryGpu = [&](auto call) {
        return [&, call] {
          nc.groupStart();
          for (int g = 0; g < n; ++g) {
            CK(cudaSetDevice(g));
            call(g);
          }
          nc.groupEnd();
        };
      };
      clearDst(c);
      double us = timeAll(c, iters(S), onEveryGpu([&](int g) {
        nc.allReduce(c.p.src[g], c.p.dst[g], S / 4, 7, 0, nc.comm[g], c.st[g]);
      }));
      printf("nccl_allreduce,%.0f,0,0,%.1f,%.1f,%.1f,%d\n", mib, us, arBus / us / 1e3, arBus / us / 1e3,
             checkAllreduce(c, S) ? 1 : 0);
      clearDst(c);
      us = timeAll(c, iters(S), onEveryGpu([&](int g) {
        nc.allGather(c.p.src[g], c.p.dst[g], part / 4, 7, nc.comm[g], c.st[g]);
      }));
      printf("nccl_allgather,%.0f,0,0,%.1f,%.1f,%.1f,%d\n", mib, us, dirBytes / us / 1e3, dirBytes / us / 1e3,
             checkGather(c, part) ? 1 : 0);
      us = timeAll(c, iters(S), onEveryGpu([&](int g) {
        nc.reduceScatter(c.p.src[g], c.p.dst[g], part / 4, 7, 0, nc.comm[g], c.st[g]);
      }));
      printf("nccl_reducescatter,%.0f,0,0,%.1f,%.1f,%.1f,1\n", mib, us, dirBytes / us / 1e3, dirBytes / us / 1e3);
      us = timeAll(c, iters(S), onEveryGpu([&](int g) {
        nc.broadcast(c.p.src[g], c.p.dst[g], S / 4, 7, 0, nc.comm[g], c.st[g]);
      }));
      printf("nccl_broadcast,%.0f,0,0,%.1f,%.1f,%.1f,1\n", mib, us, S / us / 1e3, S / us / 1e3);
      fflush(stdout);
    }
  } else {
    printf("# NCCL not run (NCCL_LIB=%s)\n", ncclPath ? ncclPath : "unset");
  }
  return 0;
}
