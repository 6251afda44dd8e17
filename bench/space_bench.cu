// The staging space on one GPU machine (docs/performance.md, "Staging space"):
//
//   space_bench put-get [MAX]     put and get of GPU data, 4 KiB to MAX (default 1 GiB): axon's
//                                 direct path against the host-staged baseline of the DataSpaces-GPU
//                                 study, both through a server on this node (mapped memory) and
//                                 through UCX, in the same run
//   space_bench reassembly        one get box filled from many stored pieces: CPU row copies plus
//                                 one host-to-device copy, one cudaMemcpy per row, one kernel per
//                                 piece, and the fused kernel; each as a share of a device-to-device
//                                 cudaMemcpy of the same bytes
//
// A server runs on a thread of this process (its own UCX worker and arena, as `axon space serve`).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "axon/space.hpp"
#include "kernels/space_kernels.hpp"
#include "space/box.hpp"
#include "space/server.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using axon::space::Box;

#define CHECK_CUDA(call)                                                                        \
  do {                                                                                          \
    cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                          \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string sizeLabel(std::size_t n) {
  char buf[32];
  if (n >= (1u << 30)) std::snprintf(buf, sizeof buf, "%zu GiB", n >> 30);
  else if (n >= (1u << 20)) std::snprintf(buf, sizeof buf, "%zu MiB", n >> 20);
  else std::snprintf(buf, sizeof buf, "%zu KiB", n >> 10);
  return buf;
}

int putGet(std::size_t maxBytes) {
  axon::space::ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.memBytes = 3 * maxBytes + (256ull << 20);  // keep_versions 1: at most two versions at once
  axon::space::Server server(so);
  server.start();
  void* src = nullptr;
  void* dst = nullptr;
  CHECK_CUDA(cudaMalloc(&src, maxBytes));
  CHECK_CUDA(cudaMalloc(&dst, maxBytes));
  CHECK_CUDA(cudaMemset(src, 7, maxBytes));
  std::printf("# put and get of GPU data through one staging server on this node; median of the reps\n");
  std::printf("%-10s %-12s %12s %12s %12s %12s %9s %9s\n", "size", "route", "put base us", "put axon us",
              "get base us", "get axon us", "put ratio", "get ratio");
  for (bool shared : {true, false}) {
    axon::space::ConnectOptions direct, staged;
    direct.address = staged.address = server.address();
    direct.timeoutSec = staged.timeoutSec = 120;
    direct.sharedMemory = staged.sharedMemory = shared;
    staged.gpuPath = axon::space::GpuPath::HostStaged;
    axon::space::Client a(direct), b(staged);
    std::int64_t version = 0;
    for (std::size_t bytes = 4096; bytes <= maxBytes; bytes *= 4) {
      const std::int64_t n = static_cast<std::int64_t>(bytes / 8);
      const std::string name = "pg" + std::to_string(bytes) + (shared ? "s" : "u");
      a.define(name, {n}, axon::DataType::Float64, 1);
      const int reps = bytes <= (1u << 20) ? 20 : bytes <= (64u << 20) ? 6 : 3;
      std::vector<double> tPut[2], tGet[2];
      for (int r = 0; r < reps; ++r) {
        for (int which = 0; which < 2; ++which) {
          axon::space::Client& c = which ? a : b;  // 0: baseline, 1: axon
          const std::int64_t v = version++;
          auto t0 = Clock::now();
          c.put(name, v, {0}, {n}, src);
          auto t1 = Clock::now();
          c.get(name, v, {0}, {n}, dst, bytes);
          auto t2 = Clock::now();
          c.release(name, v);
          tPut[which].push_back(seconds(t0, t1));
          tGet[which].push_back(seconds(t1, t2));
        }
      }
      const double pb = median(tPut[0]) * 1e6, pa = median(tPut[1]) * 1e6;
      const double gb = median(tGet[0]) * 1e6, ga = median(tGet[1]) * 1e6;
      std::printf("%-10s %-12s %12.1f %12.1f %12.1f %12.1f %9.2f %9.2f\n", sizeLabel(bytes).c_str(),
                  shared ? "mapped" : "UCX", pb, pa, gb, ga, pa / pb, ga / gb);
      std::fflush(stdout);
    }
  }
  cudaFree(src);
  cudaFree(dst);
  server.stop();
  return 0;
}

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

int reassembly() {
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
    cases.push_back({"5-D 26^5 of 32^5 (243 pieces)", Box::of({3, 3, 3, 3, 3}, {29, 29, 29, 29, 29}), p5});
  }
  unsigned char* staging = nullptr;
  unsigned char* out = nullptr;
  CHECK_CUDA(cudaMalloc(&staging, total));
  CHECK_CUDA(cudaMalloc(&out, 512ull << 20));
  CHECK_CUDA(cudaMemset(staging, 3, total));
  std::vector<unsigned char> hostStaging(total, 3), hostOut(512ull << 20);
  unsigned char* pinnedOut = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinnedOut, 512ull << 20));
  axon::kernels::RegionCopy* table = nullptr;
  CHECK_CUDA(cudaMalloc(&table, 4096 * sizeof(axon::kernels::RegionCopy)));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
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
  std::printf("# reassembly of one box from stored pieces; GB/s of the box's bytes, and the share of a\n"
              "# device-to-device cudaMemcpy of the same bytes\n");
  std::printf("%-32s %10s %12s %12s %12s %12s %12s\n", "box", "MiB", "memcpy GB/s", "cpu rows", "row memcpys",
              "kernel/piece", "fused");
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
    auto gbs = [&](double t) { return bytes / t / 1e9; };
    std::printf("%-32s %10.1f %12.1f %6.1f(%4.2f) %6.1f(%4.2f) %6.1f(%4.2f) %6.1f(%4.2f)   fused/cpu %.0fx, fused/rows %.0fx\n",
                c.name, bytes / 1048576.0, gbs(tMemcpy), gbs(tCpu), tMemcpy / tCpu, gbs(tRows), tMemcpy / tRows,
                gbs(tPerPiece), tMemcpy / tPerPiece, gbs(tFused), tMemcpy / tFused, tCpu / tFused, tRows / tFused);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  try {
    if (what == "put-get") return putGet(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (1ull << 30));
    if (what == "reassembly") return reassembly();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "space_bench %s: %s\n", what.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: space_bench put-get [MAX_BYTES] | reassembly\n");
  return 2;
}
