// The staging space's reassembly kernel (space_kernels.hpp): every region copy of a get in one
// launch.
//
// Work is numbered by contiguous run: run r of the whole table belongs to the copy whose firstRun
// is the last one <= r (a binary search, over a copy of the firstRun column in shared memory
// when the table is small), and its n-D position inside that copy comes from r - firstRun and the
// extents of the outer dimensions (64-bit, 32-bit divisions where the values fit). A "group" of G
// threads copies one run (or one chunk of a long run), G chosen from the longest run: a thread or
// two for the 8-byte runs of a slab, up to a warp for runs up to 16 KiB, a block beyond, with long
// runs cut into chunks when there are too few runs to fill the GPU. Groups take runs block-stride,
// neighbouring groups neighbouring runs, so that short runs side by side are read and written by
// neighbouring threads. Copies use the widest unit (16 bytes down to 1) that the addresses allow.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "axon/error.hpp"
#include "space/space_kernels.hpp"

namespace axon::kernels {
namespace {

using i64 = std::int64_t;
using u64 = std::uint64_t;

constexpr int kBlock = 256;
constexpr int kSharedFirstRuns = 2048;            // firstRun column in shared memory up to this (16 KiB)
constexpr i64 kMinChunk = 16 << 10;               // a block's chunk of a long run: at least 16 KiB
// At most 64 registers a thread: 4 blocks of 256 per SM, enough threads in flight for a copy.
constexpr int kMinBlocksPerSm = 4;
// A short run's units (16 bytes at most) per lane, loaded together before they are stored.
constexpr int kUnitsPerLane = 2;

void fail(const std::string& what, cudaError_t e) {
  throw Error(ErrorCode::Cuda, what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// The copy a group is on: runs [first, end) of the table. Only what every run needs is kept in
// registers; the outer extents and strides are read from the table (L1 hits) as runs are located,
// which keeps the kernel small enough for full occupancy (short runs need many threads in flight).
struct Current {
  i64 first = 0;
  i64 end = 0;
  i64 runBytes = 0;
  u64 src = 0;  // base + the region's offset
  u64 dst = 0;
  const space::CopyRegion* region = nullptr;
  int outer = 0;  // ndim - 1: the dimensions that number runs
};

__device__ __forceinline__ i64 readOnly(const i64* p) { return __ldg(reinterpret_cast<const long long*>(p)); }

// std::array's data() is constexpr, hence callable here (--expt-relaxed-constexpr).
__device__ void load(Current& cur, const RegionCopy* rc) {
  const space::CopyRegion* g = &rc->region;
  cur.region = g;
  cur.outer = g->ndim - 1;
  cur.runBytes = readOnly(g->extent.data() + cur.outer);
  cur.src = rc->src + static_cast<u64>(g->srcOffset);
  cur.dst = rc->dst + static_cast<u64>(g->dstOffset);
  i64 runs = 1;
  for (int d = 0; d < cur.outer; ++d) runs *= readOnly(g->extent.data() + d);
  cur.first = rc->firstRun;
  cur.end = rc->firstRun + runs;
}

// The last copy whose firstRun is <= r (copies of no runs share their successor's firstRun and
// are passed over).
__device__ int findCopy(const i64* firstRuns, const RegionCopy* table, int count, i64 r) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    const i64 f = firstRuns ? firstRuns[mid] : table[mid].firstRun;
    if (f <= r) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// q -> q / e, returning q % e; 32-bit division where the values allow (64-bit division is a long
// software sequence on the GPU).
__device__ __forceinline__ i64 divMod(i64& q, i64 e) {
  if (q < e) {
    const i64 r = q;
    q = 0;
    return r;
  }
  if (((q | e) >> 32) == 0) {
    const unsigned a = static_cast<unsigned>(q), b = static_cast<unsigned>(e);
    q = a / b;
    return a % b;
  }
  const i64 r = q % e;
  q /= e;
  return r;
}

// Byte offsets of local run q (row-major over the outer dimensions).
__device__ __forceinline__ void locate(const Current& cur, i64 q, i64& srcOff, i64& dstOff) {
  srcOff = 0;
  dstOff = 0;
  const space::CopyRegion* g = cur.region;
  for (int d = cur.outer - 1; d >= 0 && q > 0; --d) {
    const i64 idx = divMod(q, readOnly(g->extent.data() + d));
    srcOff += idx * readOnly(g->srcStride.data() + d);
    dstOff += idx * readOnly(g->dstStride.data() + d);
  }
}

// n elements of T, lane `lane` of G; four loads in flight before their stores.
template <class T, int G>
__device__ __forceinline__ void copyBody(T* __restrict__ dst, const T* __restrict__ src, i64 n, int lane) {
  i64 k = lane;
  for (; k + 3 * G < n; k += 4 * G) {
    const T a = src[k], b = src[k + G], c = src[k + 2 * G], d = src[k + 3 * G];
    dst[k] = a;
    dst[k + G] = b;
    dst[k + 2 * G] = c;
    dst[k + 3 * G] = d;
  }
  for (; k < n; k += G) dst[k] = src[k];
}

// len bytes by G lanes. The widest unit w (16 down to 1 bytes) at which src and dst are equally
// misaligned: a few head bytes bring dst to w, then w-byte units, then the tail bytes.
template <int G>
__device__ __forceinline__ void copyBytes(char* dst, const char* src, i64 len, int lane) {
  u64 w = (reinterpret_cast<u64>(src) ^ reinterpret_cast<u64>(dst)) | 16;
  w &= ~w + 1;  // lowest set bit
  i64 head = static_cast<i64>((w - (reinterpret_cast<u64>(dst) & (w - 1))) & (w - 1));
  if (head > len) head = len;
  for (i64 k = lane; k < head; k += G) dst[k] = src[k];
  const i64 n = (len - head) / static_cast<i64>(w);
  char* d = dst + head;
  const char* s = src + head;
  switch (w) {
    case 16: copyBody<uint4, G>(reinterpret_cast<uint4*>(d), reinterpret_cast<const uint4*>(s), n, lane); break;
    case 8: copyBody<uint2, G>(reinterpret_cast<uint2*>(d), reinterpret_cast<const uint2*>(s), n, lane); break;
    case 4: copyBody<unsigned, G>(reinterpret_cast<unsigned*>(d), reinterpret_cast<const unsigned*>(s), n, lane); break;
    case 2:
      copyBody<unsigned short, G>(reinterpret_cast<unsigned short*>(d), reinterpret_cast<const unsigned short*>(s), n,
                                  lane);
      break;
    default: copyBody<unsigned char, G>(reinterpret_cast<unsigned char*>(d), reinterpret_cast<const unsigned char*>(s),
                                        n, lane);
  }
  for (i64 k = head + n * static_cast<i64>(w) + lane; k < len; k += G) dst[k] = src[k];
}

// copyBytes out of line, for the short-run path's rare long or unaligned runs: inlined, its loops
// would cost the common straight-line path registers (and so occupancy).
template <int G>
__device__ __noinline__ void copyBytesOutOfLine(char* dst, const char* src, i64 len, int lane) {
  copyBytes<G>(dst, src, len, lane);
}

// Where item `run` (a whole run: no chunks) starts, and its length.
__device__ __forceinline__ i64 placeRun(Current& cur, const i64* firstRuns, const RegionCopy* table, int count, i64 run,
                                        char*& dst, const char*& src) {
  if (run < cur.first || run >= cur.end) load(cur, table + findCopy(firstRuns, table, count, run));
  i64 srcOff = 0, dstOff = 0;
  locate(cur, run - cur.first, srcOff, dstOff);
  dst = reinterpret_cast<char*>(cur.dst + static_cast<u64>(dstOff));
  src = reinterpret_cast<const char*>(cur.src + static_cast<u64>(srcOff));
  return cur.runBytes;
}

// Units [0, n) of a run, lane `lane` of g taking lane, lane + g, ...: all loads before the stores.
template <class T>
__device__ __forceinline__ void copyUnits(char* dst, const char* src, i64 n, int lane, int g) {
  T v[kUnitsPerLane];
#pragma unroll
  for (int u = 0; u < kUnitsPerLane; ++u) {
    const i64 k = lane + static_cast<i64>(u) * g;
    if (k < n) v[u] = reinterpret_cast<const T*>(src)[k];
  }
#pragma unroll
  for (int u = 0; u < kUnitsPerLane; ++u) {
    const i64 k = lane + static_cast<i64>(u) * g;
    if (k < n) reinterpret_cast<T*>(dst)[k] = v[u];
  }
}

// A short run: when src, dst and len are all multiples of a unit w and the run is at most
// kUnitsPerLane units per lane (the common case: slabs, small pieces), straight-line loads, then
// the stores, no loops, no head or tail; otherwise the general copy.
template <int G>
__device__ __forceinline__ void copyShortRun(char* dst, const char* src, i64 len, int lane) {
  u64 w = reinterpret_cast<u64>(src) | reinterpret_cast<u64>(dst) | static_cast<u64>(len) | 16;
  w &= ~w + 1;  // the widest unit that src, dst and len are all multiples of
  const i64 n = len / static_cast<i64>(w);
  if (n > i64{kUnitsPerLane} * G) {
    copyBytesOutOfLine<G>(dst, src, len, lane);
    return;
  }
  switch (w) {
    case 16: copyUnits<uint4>(dst, src, n, lane, G); break;
    case 8: copyUnits<uint2>(dst, src, n, lane, G); break;
    case 4: copyUnits<unsigned>(dst, src, n, lane, G); break;
    case 2: copyUnits<unsigned short>(dst, src, n, lane, G); break;
    default: copyUnits<unsigned char>(dst, src, n, lane, G);
  }
}

// Items: run r's chunk c is item r * chunksPerRun + c (chunks of chunkBytes; past a run's end
// they are empty; chunks only with block groups). Groups of G threads take items block-stride.
template <int G>
__global__ void __launch_bounds__(kBlock, kMinBlocksPerSm) fusedCopyKernel(const RegionCopy* table, int count,
                                                                           i64 items, i64 chunksPerRun,
                                                                           i64 chunkBytes) {
  extern __shared__ i64 sharedFirstRuns[];
  const i64* firstRuns = nullptr;
  if (count <= kSharedFirstRuns) {  // the same for the whole block: the barrier is safe
    for (int i = threadIdx.x; i < count; i += blockDim.x) sharedFirstRuns[i] = table[i].firstRun;
    __syncthreads();
    firstRuns = sharedFirstRuns;
  }
  constexpr int kGroups = kBlock / G;
  const int lane = static_cast<int>(threadIdx.x) % G;
  const i64 step = static_cast<i64>(gridDim.x) * kGroups;
  const i64 firstItem = static_cast<i64>(blockIdx.x) * kGroups + threadIdx.x / G;
  Current cur;
  if constexpr (G <= 32) {
    for (i64 item = firstItem; item < items; item += step) {
      char* dst;
      const char* src;
      const i64 len = placeRun(cur, firstRuns, table, count, item, dst, src);
      copyShortRun<G>(dst, src, len, lane);
    }
  } else {
    for (i64 item = firstItem; item < items; item += step) {
      i64 run = item, begin = 0;
      if (chunksPerRun > 1) {
        run = item / chunksPerRun;
        begin = (item - run * chunksPerRun) * chunkBytes;
      }
      char* dst;
      const char* src;
      const i64 runBytes = placeRun(cur, firstRuns, table, count, run, dst, src);
      if (begin >= runBytes) continue;
      copyBytes<G>(dst + begin, src + begin, min(runBytes - begin, chunkBytes), lane);
    }
  }
}

using KernelFn = void (*)(const RegionCopy*, int, i64, i64, i64);

// Threads per run, from the longest run and the unit the runs allow (measured on an H100): one
// unit per lane for runs up to two units, two beyond, up to a warp (runs up to 16 KiB, looping
// past 64 units); a whole block beyond 16 KiB (runs cut into chunks when there are few). Fewer lanes per run means less
// repeated bookkeeping per warp, more lanes more bytes in flight: these were the best mixes.
constexpr int kModes = 7;
constexpr KernelFn kKernels[kModes] = {fusedCopyKernel<1>,  fusedCopyKernel<2>,  fusedCopyKernel<4>,
                                       fusedCopyKernel<8>,  fusedCopyKernel<16>, fusedCopyKernel<32>,
                                       fusedCopyKernel<kBlock>};
constexpr int kGroupOf[kModes] = {1, 2, 4, 8, 16, 32, kBlock};
constexpr i64 kWarpRunsUpTo = 16 << 10;

int modeFor(i64 maxRunBytes, int unitBytes) {
  if (maxRunBytes > kWarpRunsUpTo) return kModes - 1;
  const i64 unit = std::clamp(unitBytes, 1, 16);
  const i64 perLane = maxRunBytes <= 2 * unit ? unit : unit * kUnitsPerLane;
  int m = 0;
  while (m < kModes - 2 && perLane * kGroupOf[m] < maxRunBytes) ++m;
  return m;
}

// Resident blocks of `kernel` on the current device (SMs x blocks per SM), worked out once per
// device and kernel: the occupancy query costs microseconds, the launch must not.
constexpr int kCachedDevices = 64;
std::atomic<int> residentCache[kCachedDevices][kModes];

int residentBlocks(int mode) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) fail("region copy: cudaGetDevice", e);
  if (dev >= 0 && dev < kCachedDevices) {
    const int cached = residentCache[dev][mode].load(std::memory_order_relaxed);
    if (cached > 0) return cached;
  }
  int sms = 0, perSm = 0;
  e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e != cudaSuccess) fail("region copy: cudaDeviceGetAttribute(MultiProcessorCount)", e);
  // With the most shared memory a launch uses: never more blocks than fit.
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kKernels[mode], kBlock, kSharedFirstRuns * sizeof(i64));
  if (e != cudaSuccess) fail("region copy: cudaOccupancyMaxActiveBlocksPerMultiprocessor", e);
  const int blocks = std::max(1, sms) * std::max(1, perSm);
  if (dev >= 0 && dev < kCachedDevices) residentCache[dev][mode].store(blocks, std::memory_order_relaxed);
  return blocks;
}

}  // namespace

void fusedRegionCopy(void* stream, const RegionCopy* table, int count, const RunSummary& runs) {
  const i64 totalRuns = runs.runs, maxRunBytes = runs.maxRunBytes;
  if (count <= 0 || totalRuns <= 0 || maxRunBytes <= 0) return;  // nothing to copy
  const int mode = modeFor(maxRunBytes, runs.unitBytes);
  const int group = kGroupOf[mode];
  const int resident = residentBlocks(mode);
  const int groupsPerBlock = kBlock / group;

  // Long runs: cut into chunks when the runs alone give fewer than ~4 items per resident block,
  // never below kMinChunk (a chunk's bookkeeping must stay small next to its bytes).
  i64 chunksPerRun = 1, chunkBytes = maxRunBytes;
  if (group == kBlock) {
    const i64 wanted = (4 * static_cast<i64>(resident) + totalRuns - 1) / totalRuns;
    const i64 most = (maxRunBytes + kMinChunk - 1) / kMinChunk;
    chunksPerRun = std::clamp<i64>(wanted, 1, most);
    chunkBytes = ((maxRunBytes + chunksPerRun - 1) / chunksPerRun + 15) / 16 * 16;  // keep 16-byte units whole
    chunksPerRun = (maxRunBytes + chunkBytes - 1) / chunkBytes;
  }
  const i64 items = totalRuns * chunksPerRun;
  const i64 blocks = std::min<i64>((items + groupsPerBlock - 1) / groupsPerBlock, resident);

  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(kBlock);
  config.dynamicSmemBytes = count <= kSharedFirstRuns ? static_cast<std::size_t>(count) * sizeof(i64) : 0;
  config.stream = static_cast<cudaStream_t>(stream);
  // The launch's own status, not cudaGetLastError (which would also report an earlier call's
  // error): see signal_kernels.cu.
  const cudaError_t e = cudaLaunchKernelEx(&config, kKernels[mode], table, count, items, chunksPerRun, chunkBytes);
  if (e != cudaSuccess) fail("launching the region copy kernel (" + std::to_string(count) + " copies)", e);
}

}  // namespace axon::kernels
