// The staging space on one GPU machine (docs/performance.md, "Staging space"); the driver of
// `axon bench space-put-get`, which prints its JSON lines as tables. It uses public headers only;
// the reassembly methods, which measure the library's internal pieces, are measured by
// tests/perf/space_reassembly_bench.cu (`axon bench space-reassembly`).
//
//   space_bench put-get [-b MIN] [-e MAX] [-f FACTOR] [--no-validate]
//       put and get of GPU data, 4 KiB to 1 GiB by default: axon's path against the host-staged
//       baseline of the DataSpaces-GPU study (reference 004) and against staging through one pinned
//       host buffer reused by hand, in the same run, through a server on this node (mapped memory)
//       and through UCX (what a server on another node takes); over UCX also GPU memory handed to
//       UCX as is (GpuPath::UcxDevice)
//
// Output: one JSON object per line ("header", "result" per measurement, "done"; "error").
// A server runs on a thread of this process (its own UCX worker and arena, as `axon space serve`).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "axon/space.hpp"
#include "axon/space_server.hpp"
#include "space_driver.hpp"

namespace axon::bench {
namespace {


// One way of moving a GPU buffer into the space and back.
struct Method {
  const char* impl;  // the JSON's "impl"
  axon::space::Client* client;
  unsigned char* pinned;  // non-null: staged by hand through this pinned buffer (reused)
};

int putGet(const SpaceOptions& o) {
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
  const std::vector<std::size_t> sizes = sizeSweep(o.minBytes, o.maxBytes, o.factor);
  std::string sizeList;
  for (std::size_t s : sizes) sizeList += (sizeList.empty() ? "" : ", ") + std::to_string(s);
  emitLine("{\"type\": \"header\", \"test\": \"space-put-get\", \"backend\": \"gpu\", \"placement\": \"D D\", "
           "\"validate\": " + std::string(o.validate ? "true" : "false") + ", \"sizes\": [" + sizeList + "], "
           "\"time_label\": \"one blocking put (the server owns the data) or get (the data is in GPU memory), median "
           "of the repetitions\", \"baselines\": [\"host-staged\", \"pinned-staged\"]}");
  for (bool shared : {true, false}) {
    axon::space::ConnectOptions base;
    base.address = server.address();
    base.key = server.key();
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

}  // namespace
}  // namespace axon::bench

int main(int argc, char** argv) {
  const char* usage = "usage: space_bench put-get [-b MIN] [-e MAX] [-f FACTOR] [--no-validate]";
  return axon::bench::spaceDriverMain("space_bench", usage, {"put-get"}, argc, argv, axon::bench::putGet);
}
