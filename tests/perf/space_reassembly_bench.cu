// The staging space's reassembly on one GPU machine (docs/performance.md, "Staging space"): a
// benchmark of the library's internal pieces (the box maths and the fused kernel of src/space/),
// and the driver of `axon bench space-reassembly`, which prints its JSON lines as a table:
//
//   space_reassembly_bench reassembly [--no-validate]
//       one get box filled from many stored pieces: CPU row copies plus one host-to-device copy,
//       one cudaMemcpy per row, one kernel per piece, and the fused kernel; each as a share of a
//       device-to-device cudaMemcpy of the same bytes; the fused kernel's box checked against the
//       CPU's byte for byte
//
// Output: one JSON object per line ("header", "result" per measurement, "done"; "error").
// Its command line and error reporting are those of bench/space_bench.cu (bench/space_driver.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "space/box.hpp"
#include "space/space_kernels.hpp"
#include "space_driver.hpp"

namespace axon::bench {
namespace {

using axon::space::Box;

// Byte offsets in source and destination of contiguous run `r` of a copy (for the baselines
// below, which take one run at a time).
__host__ __device__ inline void runOffsets(const axon::space::CopyRegion& c, std::int64_t r, std::int64_t& so,
                                           std::int64_t& dof) {
  so = c.srcOffset;
  dof = c.dstOffset;
  for (int d = c.ndim - 2; d >= 0; --d) {
    const std::int64_t i = r % c.extent[d];
    r /= c.extent[d];
    so += i * c.srcStride[d];
    dof += i * c.dstStride[d];
  }
}

__global__ void copyPiece(const unsigned char* src, unsigned char* dst, axon::space::CopyRegion c) {
  // One kernel per piece (the DataSpaces-GPU way): at most 3 dimensions, here up to 3 after merging.
  std::int64_t runs = 1;
  for (int d = 0; d + 1 < c.ndim; ++d) runs *= c.extent[d];
  const std::int64_t runBytes = c.extent[c.ndim - 1];
  for (std::int64_t r = blockIdx.x; r < runs; r += gridDim.x) {
    std::int64_t so, dof;
    runOffsets(c, r, so, dof);
    for (std::int64_t k = threadIdx.x; k < runBytes; k += blockDim.x) dst[dof + k] = src[so + k];
  }
}

struct Stored {
  Box box;
  std::size_t offset;  // in the staging buffer
};

int reassembly(const SpaceOptions& o) {
  // The array: 1024^3 float64 as 8x8x8 pieces of 128^3 (16 MiB each), stored back to back in a
  // device staging buffer for the device methods and in host memory for the CPU one.
  const std::int64_t N = 1024, P = 128;
  const std::size_t elem = 8;
  std::vector<Stored> pieces;
  std::size_t total = 0;
  for (std::int64_t i = 0; i < N / P; ++i)
    for (std::int64_t j = 0; j < N / P; ++j)
      for (std::int64_t k = 0; k < N / P; ++k) {
        Box b = Box::of({i * P, j * P, k * P}, {(i + 1) * P, (j + 1) * P, (k + 1) * P});
        pieces.push_back({b, total});
        total += static_cast<std::size_t>(P * P * P) * elem;
      }
  struct Case {
    const char* name;
    Box box;
    std::vector<Stored> pieces;
  };
  std::vector<Case> cases;
  cases.push_back({"aligned 256^3 (8 pieces)", Box::of({256, 256, 256}, {512, 512, 512}), pieces});
  cases.push_back({"unaligned 200^3 (27 pieces)", Box::of({100, 100, 100}, {300, 300, 300}), pieces});
  cases.push_back({"slab 1024x1024x1 (64 pieces)", Box::of({0, 0, 500}, {1024, 1024, 501}), pieces});
  // A 5-D array 32^5 float64 (256 MiB) as 4^5 pieces of 8^5; the box 3..29 in every dimension.
  {
    std::vector<Stored> p5;
    std::size_t at = 0;
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b)
        for (int c = 0; c < 4; ++c)
          for (int d = 0; d < 4; ++d)
            for (int e = 0; e < 4; ++e) {
              p5.push_back({Box::of({a * 8, b * 8, c * 8, d * 8, e * 8}, {a * 8 + 8, b * 8 + 8, c * 8 + 8, d * 8 + 8, e * 8 + 8}), at});
              at += 8 * 8 * 8 * 8 * 8 * elem;
            }
    cases.push_back({"5-D 26^5 of 32^5 (1024 pieces)", Box::of({3, 3, 3, 3, 3}, {29, 29, 29, 29, 29}), p5});
  }
  unsigned char* staging = nullptr;
  unsigned char* out = nullptr;
  CHECK_CUDA(cudaMalloc(&staging, total));
  CHECK_CUDA(cudaMalloc(&out, 512ull << 20));
  // Every stored 8-byte element holds its own index: a misplaced element shows.
  std::vector<unsigned char> hostStaging(total), hostOut(512ull << 20);
  for (std::size_t i = 0; i < total / 8; ++i) {
    const std::uint64_t v = i * 0x9E3779B97F4A7C15ull;
    std::memcpy(hostStaging.data() + i * 8, &v, 8);
  }
  CHECK_CUDA(cudaMemcpy(staging, hostStaging.data(), total, cudaMemcpyHostToDevice));
  unsigned char* pinnedOut = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinnedOut, 512ull << 20));
  axon::kernels::RegionCopy* table = nullptr;
  CHECK_CUDA(cudaMalloc(&table, 4096 * sizeof(axon::kernels::RegionCopy)));
  auto timeIt = [&](auto&& body, int reps) {
    std::vector<double> t;
    for (int r = 0; r < reps + 1; ++r) {
      CHECK_CUDA(cudaDeviceSynchronize());
      auto a = Clock::now();
      body();
      CHECK_CUDA(cudaDeviceSynchronize());
      if (r) t.push_back(seconds(a, Clock::now()));
    }
    return median(t);
  };
  emitLine("{\"type\": \"header\", \"test\": \"space-reassembly\", \"backend\": \"gpu\", \"placement\": \"D D\", "
           "\"validate\": " + std::string(o.validate ? "true" : "false") + ", \"time_label\": \"one box filled from "
           "stored pieces in device staging; GB/s of the box's bytes, share = device-to-device cudaMemcpy time of "
           "the same bytes / the method's time\"}");
  for (const Case& c : cases) {
    const std::size_t bytes = static_cast<std::size_t>(axon::space::byteSize(c.box, elem));
    std::vector<axon::kernels::RegionCopy> copies;
    std::vector<axon::space::HostRegionCopy> hostCopies;
    for (const Stored& s : c.pieces) {
      auto overlap = axon::space::intersect(s.box, c.box);
      if (!overlap) continue;
      axon::kernels::RegionCopy rc;
      rc.region = axon::space::planCopy(s.box, c.box, *overlap, elem);
      rc.src = reinterpret_cast<std::uint64_t>(staging + s.offset);
      rc.dst = reinterpret_cast<std::uint64_t>(out);
      copies.push_back(rc);
      hostCopies.push_back({rc.region, hostStaging.data() + s.offset, pinnedOut});
    }
    const axon::kernels::RunSummary runs = axon::kernels::numberRuns(copies.data(), static_cast<int>(copies.size()));
    CHECK_CUDA(cudaMemcpy(table, copies.data(), copies.size() * sizeof(copies[0]), cudaMemcpyHostToDevice));
    const double tMemcpy = timeIt([&] { CHECK_CUDA(cudaMemcpy(out, staging, bytes, cudaMemcpyDeviceToDevice)); }, 5);
    const double tFused = timeIt([&] {
      axon::kernels::fusedRegionCopy(nullptr, table, static_cast<int>(copies.size()), runs);
    }, 5);
    const double tPerPiece = timeIt([&] {
      for (const auto& rc : copies) {
        copyPiece<<<1024, 256>>>(reinterpret_cast<const unsigned char*>(rc.src), out, rc.region);
      }
    }, 3);
    // One cudaMemcpy per contiguous run (row), as a reader without a kernel would; capped at 20,000
    // rows measured and scaled (a slab has a million 8-byte rows).
    std::int64_t rowsTotal = 0;
    for (const auto& rc : copies) rowsTotal += rc.region.runs();
    const std::int64_t rowsMeasured = std::min<std::int64_t>(rowsTotal, 20000);
    const double tRowsSample = timeIt([&] {
      std::int64_t done = 0;
      for (const auto& rc : copies) {
        const auto& g = rc.region;
        for (std::int64_t r = 0; r < g.runs() && done < rowsMeasured; ++r, ++done) {
          std::int64_t so, dof;
          runOffsets(g, r, so, dof);
          cudaMemcpyAsync(out + dof, reinterpret_cast<const unsigned char*>(rc.src) + so, g.extent[g.ndim - 1],
                          cudaMemcpyDeviceToDevice);
        }
        if (done >= rowsMeasured) break;
      }
    }, 1);
    const double tRows = tRowsSample * static_cast<double>(rowsTotal) / static_cast<double>(rowsMeasured);
    const double tCpu = timeIt([&] {
      axon::space::copyRegions(hostCopies, 1);
      CHECK_CUDA(cudaMemcpy(out, pinnedOut, bytes, cudaMemcpyHostToDevice));
    }, 1);
    std::uint64_t wrong = 0;
    if (o.validate) {  // pinnedOut holds the CPU's box; the fused kernel's must equal it
      axon::kernels::fusedRegionCopy(nullptr, table, static_cast<int>(copies.size()), runs);
      CHECK_CUDA(cudaMemcpy(hostOut.data(), out, bytes, cudaMemcpyDeviceToHost));
      wrong = countWrong(hostOut.data(), pinnedOut, bytes);
    }
    auto method = [&](const char* name, double t) {
      return std::string("{\"method\": \"") + name + "\", \"time_us\": " + jsonNumber(t * 1e6) +
             ", \"bw_gbs\": " + jsonNumber(bytes / t / 1e9) + ", \"share\": " + jsonNumber(tMemcpy / t) + "}";
    };
    emitLine(std::string("{\"type\": \"result\", \"case\": ") + jsonString(c.name) + ", \"size\": " +
             std::to_string(bytes) + ", \"pieces\": " + std::to_string(copies.size()) + ", \"runs\": " +
             std::to_string(runs.runs) + ", \"longest_run\": " + std::to_string(runs.maxRunBytes) +
             ", \"unit\": " + std::to_string(runs.unitBytes) + ", \"memcpy_gbs\": " +
             jsonNumber(bytes / tMemcpy / 1e9) + ", \"methods\": [" + method("cpu-rows", tCpu) + ", " +
             method("row-memcpys", tRows) + ", " + method("kernel-per-piece", tPerPiece) + ", " +
             method("fused", tFused) + "], \"fused_vs_cpu\": " + jsonNumber(tCpu / tFused) +
             ", \"fused_vs_rows\": " + jsonNumber(tRows / tFused) +
             ", \"wrong\": " + (o.validate ? std::to_string(wrong) : "null") + "}");
  }
  cudaFree(staging);
  cudaFree(out);
  cudaFree(table);
  cudaFreeHost(pinnedOut);
  emitLine("{\"type\": \"done\"}");
  return 0;
}

}  // namespace
}  // namespace axon::bench

int main(int argc, char** argv) {
  const char* usage = "usage: space_reassembly_bench reassembly [--no-validate]";
  return axon::bench::spaceDriverMain("space_reassembly_bench", usage, {"reassembly"}, argc, argv,
                                      axon::bench::reassembly);
}
