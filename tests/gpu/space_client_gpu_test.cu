// The staging space with GPU memory, end to end in one process: a server on a thread of its own,
// clients that put from device buffers and get into device buffers on every path (the server's
// mapped memory on this node; UCX through pinned buffers, or from GPU memory; the host-staged
// baseline). Each get of 64 KiB or more spanning many pieces must take ONE fused kernel, and bring
// back exactly what was put. Run by PE 0 only.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <axon/axon.hpp>
#include <axon/space.hpp>

#include <numeric>
#include <random>
#include <vector>

#include "axon/space_server.hpp"

namespace {

using axon::space::Client;
using axon::space::ConnectOptions;
using axon::space::GpuPath;

struct Case {
  const char* name;
  bool sharedMemory;
  GpuPath path;
};

TEST(SpaceGpu, DeviceBuffersOnEveryPathComeBackExactly) {
  if (axon::myPe() != 0) GTEST_SKIP() << "PE 0 runs it";
  axon::space::ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.memBytes = 256ull << 20;
  axon::space::Server server(so);
  server.start();
  const std::vector<std::int64_t> shape = {96, 64, 40};
  const std::size_t n = 96 * 64 * 40;
  std::vector<double> host(n);
  std::iota(host.begin(), host.end(), 0.5);
  double* dev = nullptr;
  double* out = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, n * 8), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, n * 8), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dev, host.data(), n * 8, cudaMemcpyHostToDevice), cudaSuccess);
  const Case cases[] = {{"mapped memory, direct", true, GpuPath::Direct},
                        {"UCX, direct (pipelined through pinned buffers)", false, GpuPath::Direct},
                        {"UCX, GPU memory handed to UCX", false, GpuPath::UcxDevice},
                        {"mapped memory, host-staged", true, GpuPath::HostStaged},
                        {"UCX, host-staged", false, GpuPath::HostStaged}};
  std::mt19937 rng(5);
  int version = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ConnectOptions o;
    o.address = server.address();
    o.key = server.key();
    o.timeoutSec = 30;
    o.sharedMemory = c.sharedMemory;
    o.gpuPath = c.path;
    Client client(o);
    client.define("f", shape, axon::DataType::Float64, 8);
    // 12 writer blocks: 4 slabs along dimension 0 by 3 along dimension 1 (not contiguous in `dev`,
    // so each is first packed by a device-to-device copy, as a simulation's block would be).
    const std::int64_t rows[] = {0, 20, 50, 51, 96}, cols[] = {0, 30, 33, 64};
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 3; ++j) {
        const std::int64_t r0 = rows[i], r1 = rows[i + 1], c0 = cols[j], c1 = cols[j + 1];
        double* block = nullptr;
        ASSERT_EQ(cudaMalloc(&block, (r1 - r0) * (c1 - c0) * 40 * 8), cudaSuccess);
        ASSERT_EQ(cudaMemcpy2D(block, (c1 - c0) * 40 * 8, dev + (r0 * 64 + c0) * 40, 64 * 40 * 8, (c1 - c0) * 40 * 8,
                               r1 - r0, cudaMemcpyDeviceToDevice),
                  cudaSuccess);
        client.put("f", version, {r0, c0, 0}, {r1 - r0, c1 - c0, 40}, block);
        cudaFree(block);
      }
    }
    for (int k = 0; k < 6; ++k) {
      std::int64_t lo[3], hi[3];
      for (int d = 0; d < 3; ++d) {
        lo[d] = std::uniform_int_distribution<std::int64_t>(0, shape[d] - 1)(rng);
        hi[d] = std::uniform_int_distribution<std::int64_t>(lo[d] + 1, shape[d])(rng);
      }
      const std::size_t count = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
      ASSERT_EQ(cudaMemset(out, 0, count * 8), cudaSuccess);
      const auto before = client.stats().client.fusedKernels;
      client.get("f", version, {lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}, out, n * 8);
      const bool kernel = c.path != GpuPath::HostStaged && count * 8 >= 64 * 1024;
      EXPECT_EQ(client.stats().client.fusedKernels, before + (kernel ? 1u : 0u))
          << "one fused kernel per get of 64 KiB or more; none for the host-staged baseline";
      std::vector<double> back(count);
      ASSERT_EQ(cudaMemcpy(back.data(), out, count * 8, cudaMemcpyDeviceToHost), cudaSuccess);
      std::size_t at = 0, wrong = 0;
      for (std::int64_t a = lo[0]; a < hi[0]; ++a)
        for (std::int64_t b = lo[1]; b < hi[1]; ++b)
          for (std::int64_t e = lo[2]; e < hi[2]; ++e) wrong += back[at++] != host[(a * 64 + b) * 40 + e];
      EXPECT_EQ(wrong, 0u) << "box " << k;
    }
    const auto st = client.stats().client;
    if (c.path == GpuPath::HostStaged) EXPECT_EQ(st.hostStagedCopies, 12u + 6u) << "12 puts and 6 gets";
    else EXPECT_EQ(st.hostStagedCopies, 0u);
    EXPECT_EQ(st.pipelinedPuts, 0u) << "blocks under 4 MiB take one message";
    if (!c.sharedMemory && c.path == GpuPath::Direct) {
      // A block of 4 MiB and more goes through pinned buffers in chunks (cut inside rows: 1111
      // float64 a row), into one reservation committed at the end.
      const std::int64_t R = 1000, C = 1111;
      std::vector<double> big(R * C);
      std::iota(big.begin(), big.end(), -7.25);
      double* bigDev = nullptr;
      double* bigOut = nullptr;
      ASSERT_EQ(cudaMalloc(&bigDev, big.size() * 8), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&bigOut, big.size() * 8), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(bigDev, big.data(), big.size() * 8, cudaMemcpyHostToDevice), cudaSuccess);
      client.define("big", {R, C}, axon::DataType::Float64, 2);
      client.put("big", 0, {0, 0}, {R, C}, bigDev);
      client.get("big", 0, {0, 0}, {R, C}, bigOut, big.size() * 8);
      std::vector<double> back(big.size());
      ASSERT_EQ(cudaMemcpy(back.data(), bigOut, back.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_TRUE(back == big) << "the pipelined block came back different";
      const auto after = client.stats().client;
      EXPECT_EQ(after.pipelinedPuts, 1u);
      EXPECT_GT(after.pipelineChunks, 4u);
      cudaFree(bigDev);
      cudaFree(bigOut);
    }
    if (c.sharedMemory) EXPECT_GT(st.sharedMemoryGets, 0u);
    else EXPECT_GT(st.ucxGets, 0u);
    // A host destination of the same data, for good measure.
    std::vector<double> hostOut(8 * 64 * 40);
    client.get("f", version, {40, 0, 0}, {48, 64, 40}, hostOut.data(), hostOut.size() * 8);
    EXPECT_TRUE(std::equal(hostOut.begin(), hostOut.end(), host.begin() + 40 * 64 * 40));
    ++version;
  }
  cudaFree(dev);
  cudaFree(out);
  server.stop();
}

}  // namespace
