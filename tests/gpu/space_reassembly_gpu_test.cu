// The staging space's reassembly on the GPU: the pieces of an array, each stored dense in one
// device staging buffer, copied into a target box by ONE fusedRegionCopy launch. The result must
// match the host's copyRegions of the same plan byte for byte, and hold at every element the value
// that the element's global position gives (so the plan itself is checked, not only the kernel).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "space/space_kernels.hpp"
#include "space/box.hpp"

namespace axon::space {
namespace {

using i64 = std::int64_t;

#define SPACE_CUDA_OK(call)                                                                   \
  do {                                                                                        \
    const cudaError_t e_ = (call);                                                            \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorName(e_) << " " << cudaGetErrorString(e_); \
  } while (0)

bool haveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define SKIP_WITHOUT_GPU() \
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device"

// Byte k of the element at global position `cell` of the whole array: a function of the position
// alone, so that every piece holds consistent data and the expected target is known.
std::uint8_t valueAt(const Box& array, const std::vector<i64>& cell, i64 k, std::uint32_t seed) {
  std::uint64_t linear = 0;
  for (int d = 0; d < array.ndim; ++d) linear = linear * static_cast<std::uint64_t>(array.extent(d)) + (cell[d] - array.lo[d]);
  std::uint64_t h = (linear * 0x9E3779B97F4A7C15ull) ^ (static_cast<std::uint64_t>(k) << 56) ^ seed;
  h ^= h >> 29;
  return static_cast<std::uint8_t>(h * 0xBF58476D1CE4E5B9ull >> 56);
}

// Calls f(cell) for every cell of b in row-major order.
template <class F>
void forEachCell(const Box& b, F&& f) {
  if (b.empty()) return;
  std::vector<i64> cell(b.lo.begin(), b.lo.begin() + b.ndim);
  for (bool more = true; more;) {
    f(cell);
    more = false;
    for (int d = b.ndim - 1; d >= 0; --d) {
      if (++cell[d] < b.hi[d]) {
        more = true;
        break;
      }
      cell[d] = b.lo[d];
    }
  }
}

// Random cut points splitting [lo, hi) into `parts` non-empty intervals.
std::vector<i64> cuts(std::mt19937_64& rng, i64 lo, i64 hi, int parts) {
  std::vector<i64> inner;
  for (i64 x = lo + 1; x < hi; ++x) inner.push_back(x);
  std::shuffle(inner.begin(), inner.end(), rng);
  inner.resize(static_cast<std::size_t>(parts - 1));
  std::sort(inner.begin(), inner.end());
  std::vector<i64> c = {lo};
  c.insert(c.end(), inner.begin(), inner.end());
  c.push_back(hi);
  return c;
}

// The array cut into parts[d] slices in each dimension (a grid of uneven boxes).
std::vector<Box> decompose(std::mt19937_64& rng, const Box& array, const std::vector<int>& parts) {
  std::vector<std::vector<i64>> c;
  for (int d = 0; d < array.ndim; ++d) c.push_back(cuts(rng, array.lo[d], array.hi[d], parts[d]));
  std::vector<Box> pieces;
  std::vector<int> idx(array.ndim, 0);
  for (bool more = true; more;) {
    Box b = array;
    for (int d = 0; d < array.ndim; ++d) {
      b.lo[d] = c[d][idx[d]];
      b.hi[d] = c[d][idx[d] + 1];
    }
    pieces.push_back(b);
    more = false;
    for (int d = array.ndim - 1; d >= 0; --d) {
      if (++idx[d] < parts[d]) {
        more = true;
        break;
      }
      idx[d] = 0;
    }
  }
  return pieces;
}

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) {
    if (cudaMalloc(reinterpret_cast<void**>(&p), bytes) != cudaSuccess) p = nullptr;
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// The pieces (disjoint, inside `array`) are laid out one after another in a staging buffer, each
// at a 16-byte boundary plus `misalign` * (piece index % 4) bytes; the target at `dstMisalign`
// bytes past an allocation's start. Copies `target` out of them on the GPU and on the host.
void checkReassembly(const Box& array, const std::vector<Box>& pieces, const Box& target, i64 eb, i64 misalign,
                     i64 dstMisalign, std::uint32_t seed) {
  SCOPED_TRACE("target " + describe(target) + ", " + std::to_string(pieces.size()) + " pieces, " +
               std::to_string(eb) + "-byte elements, misalign " + std::to_string(misalign) + "/" +
               std::to_string(dstMisalign));
  // Staging: each piece's dense data, from the global values.
  std::vector<i64> offset;
  i64 size = 0;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    size = (size + 15) / 16 * 16 + misalign * static_cast<i64>(k % 4);
    offset.push_back(size);
    size += byteSize(pieces[k], static_cast<std::size_t>(eb));
  }
  std::vector<std::uint8_t> staging(static_cast<std::size_t>(size), 0);
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    i64 at = offset[k];
    forEachCell(pieces[k], [&](const std::vector<i64>& cell) {
      for (i64 b = 0; b < eb; ++b) staging[static_cast<std::size_t>(at++)] = valueAt(array, cell, b, seed);
    });
  }
  const i64 targetBytes = byteSize(target, static_cast<std::size_t>(eb));
  // Bytes no piece covers keep this filler, on both sides.
  std::vector<std::uint8_t> host(static_cast<std::size_t>(targetBytes + dstMisalign), 0xA5);

  DeviceBuffer<std::uint8_t> dStaging(static_cast<std::size_t>(size) + 1);
  DeviceBuffer<std::uint8_t> dTarget(host.size() + 1);
  ASSERT_NE(dStaging.p, nullptr);
  ASSERT_NE(dTarget.p, nullptr);
  SPACE_CUDA_OK(cudaMemcpy(dStaging.p, staging.data(), staging.size(), cudaMemcpyHostToDevice));
  SPACE_CUDA_OK(cudaMemcpy(dTarget.p, host.data(), host.size(), cudaMemcpyHostToDevice));

  // The plan: one copy per piece that meets the target.
  std::vector<kernels::RegionCopy> table;
  std::vector<HostRegionCopy> hostCopies;
  i64 maxRunBytes = 0;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    const std::optional<Box> part = intersect(pieces[k], target);
    if (!part) continue;
    const CopyRegion c = planCopy(pieces[k], target, *part, static_cast<std::size_t>(eb));
    kernels::RegionCopy rc;
    rc.region = c;
    rc.src = reinterpret_cast<std::uint64_t>(dStaging.p + offset[k]);
    rc.dst = reinterpret_cast<std::uint64_t>(dTarget.p + dstMisalign);
    table.push_back(rc);
    hostCopies.push_back({c, staging.data() + offset[k], host.data() + dstMisalign});
    maxRunBytes = std::max(maxRunBytes, c.extent[c.ndim - 1]);
  }
  const kernels::RunSummary summary = kernels::numberRuns(table.data(), static_cast<int>(table.size()));
  i64 runs = 0;
  for (const kernels::RegionCopy& rc : table) {
    ASSERT_EQ(rc.firstRun, runs);
    runs += rc.region.runs();
  }
  ASSERT_EQ(summary.runs, runs);
  ASSERT_EQ(summary.maxRunBytes, maxRunBytes);

  DeviceBuffer<kernels::RegionCopy> dTable(std::max<std::size_t>(table.size(), 1) * sizeof(kernels::RegionCopy));
  ASSERT_NE(dTable.p, nullptr);
  SPACE_CUDA_OK(cudaMemcpy(dTable.p, table.data(), table.size() * sizeof(kernels::RegionCopy), cudaMemcpyHostToDevice));
  cudaStream_t stream = nullptr;
  SPACE_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  kernels::fusedRegionCopy(stream, dTable.p, static_cast<int>(table.size()), summary);
  const cudaError_t e = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  SPACE_CUDA_OK(e);

  std::vector<std::uint8_t> gpu(host.size());
  SPACE_CUDA_OK(cudaMemcpy(gpu.data(), dTarget.p, gpu.size(), cudaMemcpyDeviceToHost));
  copyRegions(hostCopies, 4);
  ASSERT_TRUE(gpu == host) << "the GPU's bytes differ from the host's";

  // Every element of the target inside the array holds its global value; the rest, the filler.
  std::vector<std::uint8_t> want(host.size(), 0xA5);
  i64 at = dstMisalign;
  forEachCell(target, [&](const std::vector<i64>& cell) {
    Box one = target;
    for (int d = 0; d < target.ndim; ++d) {
      one.lo[d] = cell[d];
      one.hi[d] = cell[d] + 1;
    }
    const bool covered = contains(array, one);
    for (i64 b = 0; b < eb; ++b, ++at) {
      if (covered) want[static_cast<std::size_t>(at)] = valueAt(array, cell, b, seed);
    }
  });
  ASSERT_TRUE(gpu == want) << "the target does not hold the array's values";
}

// A random box inside `array` (at least one element per dimension).
Box randomInside(std::mt19937_64& rng, const Box& array) {
  Box b = array;
  for (int d = 0; d < array.ndim; ++d) {
    b.lo[d] = array.lo[d] + static_cast<i64>(rng() % static_cast<std::uint64_t>(array.extent(d)));
    b.hi[d] = b.lo[d] + 1 + static_cast<i64>(rng() % static_cast<std::uint64_t>(array.hi[d] - b.lo[d]));
  }
  return b;
}

const i64 kElementSizes[] = {1, 4, 8};

TEST(SpaceReassemblyGpu, ThreeDimensionalArrayInFourByThreeByFivePieces) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(1);
  const Box array = Box::of({0, 0, 0}, {40, 30, 50});
  const std::vector<Box> pieces = decompose(rng, array, {4, 3, 5});
  ASSERT_EQ(pieces.size(), 60u);
  for (i64 eb : kElementSizes) {
    checkReassembly(array, pieces, array, eb, 0, 0, 11);  // the whole array
    for (int k = 0; k < 6; ++k) checkReassembly(array, pieces, randomInside(rng, array), eb, 0, 0, 12 + k);
    // A target reaching outside the array: the part outside is left alone.
    checkReassembly(array, pieces, Box::of({-3, 10, 45}, {5, 40, 60}), eb, 0, 0, 20);
  }
}

TEST(SpaceReassemblyGpu, FiveDimensionalArray) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(2);
  const Box array = Box::of({0, 0, 0, 0, 0}, {6, 5, 4, 7, 9});
  const std::vector<Box> pieces = decompose(rng, array, {2, 3, 2, 2, 3});
  for (i64 eb : kElementSizes) {
    checkReassembly(array, pieces, array, eb, 0, 0, 21);
    for (int k = 0; k < 8; ++k) checkReassembly(array, pieces, randomInside(rng, array), eb, 0, 0, 22 + k);
  }
}

TEST(SpaceReassemblyGpu, SlabsOfOneElementPerRow) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(3);
  const Box array = Box::of({0, 0, 0}, {64, 64, 64});
  const std::vector<Box> pieces = decompose(rng, array, {2, 2, 2});
  for (i64 eb : kElementSizes) {
    checkReassembly(array, pieces, Box::of({0, 0, 17}, {64, 64, 18}), eb, 0, 0, 31);  // runs of one element
    checkReassembly(array, pieces, Box::of({0, 40, 0}, {64, 41, 64}), eb, 0, 0, 32);
    checkReassembly(array, pieces, Box::of({5, 0, 0}, {6, 64, 64}), eb, 0, 0, 33);
  }
}

TEST(SpaceReassemblyGpu, UnalignedBoxesAcrossTwentySevenPieces) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(4);
  const Box array = Box::of({-7, 3, 11}, {26, 38, 48});  // 33 x 35 x 37, odd everywhere
  const std::vector<Box> pieces = decompose(rng, array, {3, 3, 3});
  ASSERT_EQ(pieces.size(), 27u);
  for (i64 eb : kElementSizes) {
    for (i64 misalign : {i64{0}, i64{1}, i64{3}}) {
      checkReassembly(array, pieces, Box::of({-5, 4, 12}, {24, 37, 47}), eb, misalign, 0, 41);
      checkReassembly(array, pieces, randomInside(rng, array), eb, misalign, 1, 42);
      checkReassembly(array, pieces, randomInside(rng, array), eb, misalign, 8, 43);
    }
  }
}

TEST(SpaceReassemblyGpu, LongRunsAndManyPieces) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(5);
  // Pieces of whole rows: a few runs of megabytes, cut into chunks by the kernel.
  const Box big = Box::whole({4, 512, 1024});
  checkReassembly(big, decompose(rng, big, {2, 2, 1}), big, 4, 0, 0, 51);
  // Runs of ~30 KiB (a block each), and a single piece holding everything.
  const Box wide = Box::whole({64, 8192});
  checkReassembly(wide, decompose(rng, wide, {4, 1}), Box::of({0, 100}, {64, 8000}), 4, 0, 0, 52);
  checkReassembly(wide, {wide}, Box::of({3, 1}, {60, 8191}), 1, 0, 3, 53);
  // More pieces than the kernel keeps in shared memory (a search in global memory).
  const Box grid = Box::whole({120, 120});
  const std::vector<Box> small = decompose(rng, grid, {60, 60});
  ASSERT_EQ(small.size(), 3600u);
  for (i64 eb : kElementSizes) checkReassembly(grid, small, Box::of({1, 3}, {119, 117}), eb, 0, 0, 54);
}

TEST(SpaceReassemblyGpu, NothingToCopyLaunchesNothing) {
  SKIP_WITHOUT_GPU();
  EXPECT_NO_THROW(kernels::fusedRegionCopy(nullptr, nullptr, 0, kernels::RunSummary{}));
  EXPECT_EQ(kernels::numberRuns(nullptr, 0).runs, 0);
}

}  // namespace
}  // namespace axon::space
