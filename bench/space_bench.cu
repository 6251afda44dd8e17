// The staging space on one GPU machine (docs/performance.md, "Staging space"); the driver of
// `axon bench space-put-get` and `axon bench space-reassembly`, which print its JSON lines as tables:
//
//   space_bench put-get [-b MIN] [-e MAX] [-f FACTOR] [--no-validate]
//       put and get of GPU data, 4 KiB to 1 GiB by default: axon's path against the host-staged
//       baseline of the DataSpaces-GPU study (reference 004) and against staging through one pinned
//       host buffer reused by hand, in the same run, through a server on this node (mapped memory)
//       and through UCX (what a server on another node takes); over UCX also GPU memory handed to
//       UCX as is (GpuPath::UcxDevice)
//   space_bench reassembly [--no-validate]
//       one get box filled from many stored pieces: CPU row copies plus one host-to-device copy,
//       one cudaMemcpy per row, one kernel per piece, and the fused kernel; each as a share of a
//       device-to-device cudaMemcpy of the same bytes; the fused kernel's box checked against the
//       CPU's byte for byte
//
// Output: one JSON object per line ("header", "result" per measurement, "done"; "error").
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
#include "bench_cli.hpp"
#include "space/space_kernels.hpp"
#include "space/box.hpp"
#include "axon/space_server.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using axon::bench::emitLine;
using axon::bench::jsonNumber;
using axon::bench::jsonString;
using axon::bench::median;
using axon::space::Box;

struct CudaFailure {
  std::string message;
};

#define CHECK_CUDA(call)                                                                      \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) throw CudaFailure{std::string(#call) + ": " + cudaGetErrorString(e_)}; \
  } while (0)

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct Options {
  std::string test;
  std::size_t minBytes = 4096, maxBytes = std::size_t{1} << 30, factor = 4;
  bool validate = true;
};

Options parse(int argc, char** argv) {
  Options o;
  if (argc < 2) throw axon::bench::UsageError{"usage: space_bench put-get|reassembly [-b MIN] [-e MAX] [-f FACTOR] [--no-validate]"};
  o.test = argv[1];
  if (o.test != "put-get" && o.test != "reassembly") {
    throw axon::bench::UsageError{"unknown test '" + o.test + "' (put-get, reassembly)"};
  }
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw axon::bench::UsageError{a + " needs a value"};
      return argv[++i];
    };
    if (a == "-b") o.minBytes = axon::bench::parseSize(value(), "-b");
    else if (a == "-e") o.maxBytes = axon::bench::parseSize(value(), "-e");
    else if (a == "-f") o.factor = static_cast<std::size_t>(axon::bench::parseCount(value(), "-f", 2));
    else if (a == "--no-validate") o.validate = false;
    else throw axon::bench::UsageError{"unknown option '" + a + "'"};
  }
  if (o.minBytes > o.maxBytes) throw axon::bench::UsageError{"-b is larger than -e"};
  if (o.minBytes % 8 || o.maxBytes % 8) throw axon::bench::UsageError{"sizes are of float64 elements: multiples of 8"};
  return o;
}

// Bytes of `got` that differ from `want`.
std::uint64_t countWrong(const unsigned char* got, const unsigned char* want, std::size_t n) {
  if (std::memcmp(got, want, n) == 0) return 0;
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += got[i] != want[i];
  return wrong;
}

// One way of moving a GPU buffer into the space and back.
struct Method {
  const char* impl;  // the JSON's "impl"
  axon::space::Client* client;
  unsigned char* pinned;  // non-null: staged by hand through this pinned buffer (reused)
};

int putGet(const Options& o) {
  axon::space::ServerOptions so;
  so.listen = "127.0.0.1:0";
  // keep_versions 1 keeps each size's last version: about 4/3 of the largest size per route (two
  // routes), plus two versions of the size being measured.
  so.memBytes = 5 * o.maxBytes + (512ull << 20);
  axon::space::Server server(so);
  server.start();
  void* src = nullptr;
  void* dst = nullptr;
  unsigned char* pinned = nullptr;
  CHECK_CUDA(cudaMalloc(&src, o.maxBytes));
  CHECK_CUDA(cudaMalloc(&dst, o.maxBytes));
  CHECK_CUDA(cudaMallocHost(&pinned, o.maxBytes));
  std::vector<unsigned char> pattern(o.maxBytes), back(o.validate ? o.maxBytes : 0);
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  CHECK_CUDA(cudaMemcpy(src, pattern.data(), o.maxBytes, cudaMemcpyHostToDevice));
  const std::vector<std::size_t> sizes = axon::bench::sizeSweep(o.minBytes, o.maxBytes, o.factor);
  std::string sizeList;
  for (std::size_t s : sizes) sizeList += (sizeList.empty() ? "" : ", ") + std::to_string(s);
  emitLine("{\"type\": \"header\", \"test\": \"space-put-get\", \"backend\": \"gpu\", \"placement\": \"D D\", "
           "\"validate\": " + std::string(o.validate ? "true" : "false") + ", \"sizes\": [" + sizeList + "], "
           "\"time_label\": \"one blocking put (the server owns the data) or get (the data is in GPU memory), median "
           "of the repetitions\", \"baselines\": [\"host-staged\", \"pinned-staged\"]}");
  for (bool shared : {true, false}) {
    axon::space::ConnectOptions base;
    base.address = server.address();
    base.timeoutSec = 120;
    base.sharedMemory = shared;
    axon::space::ConnectOptions staged = base, device = base;
    staged.gpuPath = axon::space::GpuPath::HostStaged;
    device.gpuPath = axon::space::GpuPath::UcxDevice;
    axon::space::Client direct(base), hostStaged(staged), byHand(base), ucxDevice(device);
    std::vector<Method> methods = {{"host-staged", &hostStaged, nullptr}, {"pinned-staged", &byHand, pinned},
                                   {"axon", &direct, nullptr}};
    if (!shared) methods.push_back({"ucx-device", &ucxDevice, nullptr});
    const char* route = shared ? "mapped" : "UCX";
    std::int64_t version = 0;
    for (std::size_t bytes : sizes) {
      const std::int64_t n = static_cast<std::int64_t>(bytes / 8);
      const std::string name = "pg" + std::to_string(bytes) + (shared ? "s" : "u");
      direct.define(name, {n}, axon::DataType::Float64, 1);
      // One untimed repetition first: it pins the arena memory the first versions land in (once per
      // client and arena chunk), as a long-running workflow has.
      const int reps = 1 + (bytes <= (1u << 20) ? 20 : bytes <= (64u << 20) ? 6 : 3);
      std::vector<std::vector<double>> tPut(methods.size()), tGet(methods.size());
      std::vector<std::uint64_t> wrong(methods.size(), 0);
      std::vector<std::string> putPaths(methods.size()), getPaths(methods.size());
      for (int r = 0; r < reps; ++r) {
        for (std::size_t m = 0; m < methods.size(); ++m) {  // interleaved: drifts hit every method alike
          const Method& me = methods[m];
          const std::int64_t v = version++;
          const bool check = o.validate && r == reps - 1;
          if (check) CHECK_CUDA(cudaMemset(dst, 0, bytes));
          auto t0 = Clock::now();
          if (me.pinned) {
            CHECK_CUDA(cudaMemcpy(me.pinned, src, bytes, cudaMemcpyDeviceToHost));
            me.client->put(name, v, {0}, {n}, me.pinned);
          } else {
            me.client->put(name, v, {0}, {n}, src);
          }
          auto t1 = Clock::now();
          if (check) putPaths[m] = me.client->stats().client.lastPath;
          t1 = Clock::now();
          if (me.pinned) {
            me.client->get(name, v, {0}, {n}, me.pinned, bytes);
            CHECK_CUDA(cudaMemcpy(dst, me.pinned, bytes, cudaMemcpyHostToDevice));
          } else {
            me.client->get(name, v, {0}, {n}, dst, bytes);
          }
          auto t2 = Clock::now();
          me.client->release(name, v);
          if (r > 0) {
            tPut[m].push_back(seconds(t0, t1));
            tGet[m].push_back(seconds(t1, t2));
          }
          if (check) {
            CHECK_CUDA(cudaMemcpy(back.data(), dst, bytes, cudaMemcpyDeviceToHost));
            wrong[m] = countWrong(back.data(), pattern.data(), bytes);
            getPaths[m] = me.client->stats().client.lastPath;
          }
        }
      }
      for (std::size_t m = 0; m < methods.size(); ++m) {
        for (int op = 0; op < 2; ++op) {
          const double t = median(op ? tGet[m] : tPut[m]);  // of reps - 1 timed repetitions
          emitLine(std::string("{\"type\": \"result\", \"op\": \"") + (op ? "get" : "put") + "\", \"route\": \"" +
                   route + "\", \"impl\": \"" + methods[m].impl + "\", \"series\": " +
                   jsonString(std::string(methods[m].impl) + " " + (op ? "get" : "put") + ", " + route) +
                   ", \"size\": " + std::to_string(bytes) + ", \"iters\": " + std::to_string(reps - 1) +
                   ", \"time_us\": " + jsonNumber(t * 1e6) + ", \"bw_gbs\": " + jsonNumber(bytes / t / 1e9) +
                   ", \"wrong\": " + (o.validate ? std::to_string(wrong[m]) : "null") +
                   ", \"path\": " + jsonString(op ? getPaths[m] : putPaths[m]) + "}");
        }
      }
    }
  }
  cudaFree(src);
  cudaFree(dst);
  cudaFreeHost(pinned);
  server.stop();
  emitLine("{\"type\": \"done\"}");
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

int reassembly(const Options& o) {
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

int main(int argc, char** argv) {
  const auto o = axon::bench::parseCommandLine("space_bench", parse, argc, argv);
  if (!o) return 2;
  try {
    return o->test == "put-get" ? putGet(*o) : reassembly(*o);
  } catch (const CudaFailure& e) {
    axon::bench::emitError("space_bench", e.message, false);
  } catch (const std::exception& e) {
    axon::bench::emitError("space_bench", o->test + ": " + e.what(), false);
  }
  return 1;
}
