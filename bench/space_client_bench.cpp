// Clients of a running staging space (`axon space serve`; AXON_SPACE_ADDR or AXON_SPACE_FILE names
// it): the driver of `axon bench space-small-puts` and `axon bench space-workflow`.
//
//   space_client_bench small-puts [-n N] [-s BYTES]
//       N nonblocking puts of BYTES each (default 10,000 of 4 KiB), batching off and then on, in
//       one run; every put a UCX message (no shared memory), which is what batching saves
//   space_client_bench workflow --writers M --readers N [--slow-ms MS] [--versions V] [-d D|H]
//       run as M + N processes (axon run -n M+N): ranks below M write a 2048 x 2048 float64
//       variable (32 MiB a version) in row blocks; the others read it in column blocks (another
//       decomposition), the last reader sleeping MS per version (a slow reader); -d D puts from
//       and gets into GPU memory (builds with CUDA). Each rank reports its put or get p50/p99 and
//       GB/s, the versions it lost to the policy, and the elements that came back wrong; the last
//       reader also the servers' memory high-water marks against --mem.
//
// Output: one JSON object per line ("header", "result", "done"; "error"), as axon bench reads them.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "axon/error.hpp"
#include "axon/space.hpp"
#include "bench_cli.hpp"

#ifdef AXON_BENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
using axon::bench::emitLine;
using axon::bench::jsonNumber;
using axon::bench::jsonString;
using axon::bench::UsageError;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

struct Options {
  std::string test;
  long count = 10000, bytes = 4096;              // small-puts
  int writers = 0, readers = 0, slowMs = 0, versions = 10;  // workflow
  bool device = false;
};

Options parse(int argc, char** argv) {
  Options o;
  if (argc < 2 || (std::string(argv[1]) != "small-puts" && std::string(argv[1]) != "workflow")) {
    throw UsageError{"usage: space_client_bench small-puts [-n N] [-s BYTES] | workflow --writers M --readers N "
                     "[--slow-ms MS] [--versions V] [-d D|H]"};
  }
  o.test = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError{a + " needs a value"};
      return argv[++i];
    };
    if (a == "-n") o.count = axon::bench::parseCount(value(), "-n", 1);
    else if (a == "-s") o.bytes = static_cast<long>(axon::bench::parseSize(value(), "-s"));
    else if (a == "--writers") o.writers = static_cast<int>(axon::bench::parseCount(value(), "--writers", 1));
    else if (a == "--readers") o.readers = static_cast<int>(axon::bench::parseCount(value(), "--readers", 1));
    else if (a == "--slow-ms") o.slowMs = static_cast<int>(axon::bench::parseCount(value(), "--slow-ms", 0));
    else if (a == "--versions") o.versions = static_cast<int>(axon::bench::parseCount(value(), "--versions", 1));
    else if (a == "-d") {
      const std::string d = value();
      if (d != "D" && d != "H") throw UsageError{"-d takes D (GPU memory) or H (host memory), got '" + d + "'"};
      o.device = d == "D";
    } else {
      throw UsageError{"unknown option '" + a + "'"};
    }
  }
  if (o.bytes % 8) throw UsageError{"-s: puts are of float64 elements, a multiple of 8 bytes"};
  if (o.test == "workflow" && (o.writers < 1 || o.readers < 1)) throw UsageError{"workflow needs --writers and --readers"};
#ifndef AXON_BENCH_HAVE_CUDA
  if (o.device) throw UsageError{"-d D needs GPU memory: this build of space_client_bench has no CUDA"};
#endif
  return o;
}

int smallPuts(const Options& o) {
  const std::int64_t elems = o.bytes / 8;
  std::vector<double> data(static_cast<std::size_t>(o.count * elems), 1.0);
  emitLine("{\"type\": \"header\", \"test\": \"space-small-puts\", \"backend\": \"host\", \"placement\": \"H\", "
           "\"count\": " + std::to_string(o.count) + ", \"size\": " + std::to_string(o.bytes) +
           ", \"time_label\": \"all the nonblocking puts, then one wait for all\"}");
  for (int on = 0; on < 2; ++on) {
    axon::space::ConnectOptions co;
    co.batchBytes = on ? 64 * 1024 : 0;
    co.sharedMemory = false;  // every put a message: what batching saves
    axon::space::Client c(co);
    const std::string name = "small" + std::to_string(on) + "_" + std::to_string(::getpid());
    c.define(name, {o.count, elems}, axon::DataType::Float64, 1);
    auto t0 = Clock::now();
    std::vector<axon::space::Request> reqs;
    reqs.reserve(static_cast<std::size_t>(o.count));
    for (long i = 0; i < o.count; ++i) reqs.push_back(c.iput(name, 0, {i, 0}, {1, elems}, data.data() + i * elems));
    for (auto& r : reqs) r.wait();
    const double seconds = since(t0);
    // What arrived: the whole variable back in one get.
    std::vector<double> back(data.size(), 0.0);
    c.get(name, 0, {0, 0}, {o.count, elems}, back.data(), back.size() * 8);
    const auto wrong = std::count_if(back.begin(), back.end(), [](double v) { return v != 1.0; });
    const auto st = c.stats().client;
    const std::uint64_t messages = on ? st.batches : st.ucxPuts;
    emitLine(std::string("{\"type\": \"result\", \"batching\": ") + (on ? "\"on\"" : "\"off\"") +
             ", \"series\": " + (on ? "\"axon iput, batching on\"" : "\"axon iput, batching off\"") +
             ", \"batch_bytes\": " + std::to_string(co.batchBytes) + ", \"puts\": " + std::to_string(o.count) +
             ", \"size\": " + std::to_string(o.bytes) + ", \"seconds\": " + jsonNumber(seconds) +
             ", \"puts_per_s\": " + jsonNumber(o.count / seconds) + ", \"messages\": " + std::to_string(messages) +
             ", \"time_us\": " + jsonNumber(seconds / o.count * 1e6) +
             ", \"bw_gbs\": " + jsonNumber(static_cast<double>(o.count) * o.bytes / seconds / 1e9) +
             ", \"wrong\": " + std::to_string(wrong) + "}");
  }
  emitLine("{\"type\": \"done\"}");
  return 0;
}

// A buffer of float64 in host or GPU memory; filled and read through host memory, untimed.
class Block {
 public:
  Block(std::size_t n, bool device) : host_(n), device_(device) {
#ifdef AXON_BENCH_HAVE_CUDA
    if (device_ && cudaMalloc(&dev_, n * 8) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
#endif
  }
  ~Block() {
#ifdef AXON_BENCH_HAVE_CUDA
    if (dev_) cudaFree(dev_);
#endif
  }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  void* data() { return device_ ? dev_ : host_.data(); }
  std::size_t bytes() const { return host_.size() * 8; }
  void fill(double v) {
    std::fill(host_.begin(), host_.end(), v);
#ifdef AXON_BENCH_HAVE_CUDA
    if (device_) cudaMemcpy(dev_, host_.data(), bytes(), cudaMemcpyHostToDevice);
#endif
  }
  std::size_t countNot(double v) {
#ifdef AXON_BENCH_HAVE_CUDA
    if (device_) cudaMemcpy(host_.data(), dev_, bytes(), cudaMemcpyDeviceToHost);
#endif
    return static_cast<std::size_t>(std::count_if(host_.begin(), host_.end(), [v](double x) { return x != v; }));
  }

 private:
  std::vector<double> host_;
  bool device_;
  void* dev_ = nullptr;
};

int workflow(const Options& o) {
  const char* rankText = std::getenv("AXON_RANK");
  if (!rankText) throw UsageError{"workflow runs under `axon run -n " + std::to_string(o.writers + o.readers) + "`"};
  const int rank = std::atoi(rankText);
  const std::int64_t rows = 2048, cols = 2048;  // 32 MiB of float64 per version
  if (rank == 0) {
    emitLine("{\"type\": \"header\", \"test\": \"space-workflow\", \"backend\": \"" +
             std::string(o.device ? "gpu" : "host") + "\", \"placement\": \"" + (o.device ? "D" : "H") +
             "\", \"writers\": " + std::to_string(o.writers) + ", \"readers\": " + std::to_string(o.readers) +
             ", \"slow_ms\": " + std::to_string(o.slowMs) + ", \"versions\": " + std::to_string(o.versions) +
             ", \"version_bytes\": " + std::to_string(rows * cols * 8) +
             ", \"time_label\": \"one blocking put of a writer's row block, or get of a reader's column block\"}");
  }
  axon::space::Client c;
  c.define("wf", {rows, cols}, axon::DataType::Float64, 2);
  std::vector<double> lat;
  std::uint64_t bytes = 0, wrong = 0;
  int dropped = 0;
  const bool writer = rank < o.writers;
  const int me = writer ? rank : rank - o.writers;
  auto t0 = Clock::now();
  if (writer) {
    const std::int64_t r0 = rows * me / o.writers, r1 = rows * (me + 1) / o.writers;
    Block block(static_cast<std::size_t>((r1 - r0) * cols), o.device);
    for (int v = 0; v < o.versions; ++v) {
      block.fill(static_cast<double>(v));
      auto t = Clock::now();
      c.put("wf", v, {r0, 0}, {r1 - r0, cols}, block.data(), 120);
      lat.push_back(since(t));
      bytes += block.bytes();
    }
  } else {
    const std::int64_t c0 = cols * me / o.readers, c1 = cols * (me + 1) / o.readers;
    Block box(static_cast<std::size_t>(rows * (c1 - c0)), o.device);
    for (int v = 0; v < o.versions; ++v) {
      auto t = Clock::now();
      try {
        c.get("wf", v, {0, c0}, {rows, c1}, box.data(), box.bytes(), 120);
      } catch (const axon::Error& e) {
        if (e.code() != axon::ErrorCode::Evicted) throw;
        ++dropped;  // more than keep_versions behind: the policy dropped it before this reader came
        continue;
      }
      lat.push_back(since(t));
      bytes += box.bytes();
      wrong += box.countNot(static_cast<double>(v));
      if (me == o.readers - 1 && o.slowMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.slowMs));
      c.release("wf", v);
    }
  }
  const double total = since(t0);
  emitLine(std::string("{\"type\": \"result\", \"role\": \"") + (writer ? "writer" : "reader") + "\", \"index\": " +
           std::to_string(me) + ", \"slow\": " + (!writer && me == o.readers - 1 && o.slowMs > 0 ? "true" : "false") +
           ", \"ops\": " + std::to_string(lat.size()) + ", \"p50_ms\": " + jsonNumber(percentile(lat, 0.5) * 1e3) +
           ", \"p99_ms\": " + jsonNumber(percentile(lat, 0.99) * 1e3) + ", \"bytes\": " + std::to_string(bytes) +
           ", \"seconds\": " + jsonNumber(total) + ", \"gbs\": " + jsonNumber(bytes / total / 1e9) +
           ", \"dropped\": " + std::to_string(dropped) + ", \"wrong\": " + std::to_string(wrong) +
           ", \"path\": " + jsonString(c.stats().client.lastPath) + "}");
  if (rank == o.writers + o.readers - 1) {
    for (const auto& s : c.stats().servers) {
      emitLine("{\"type\": \"result\", \"role\": \"server\", \"address\": " + jsonString(s.address) +
               ", \"high_water\": " + std::to_string(s.highWater) + ", \"capacity\": " + std::to_string(s.capacity) +
               ", \"versions_dropped\": " + std::to_string(s.versionsDropped) +
               ", \"pinned\": " + (s.pinned ? "true" : "false") + "}");
    }
    emitLine("{\"type\": \"done\"}");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto o = axon::bench::parseCommandLine("space_client_bench", parse, argc, argv);
  if (!o) return 2;
  try {
    return o->test == "small-puts" ? smallPuts(*o) : workflow(*o);
  } catch (const UsageError& e) {
    axon::bench::emitError("space_client_bench", e.message, true);
    return 2;
  } catch (const std::exception& e) {
    axon::bench::emitError("space_client_bench", o->test + ": " + e.what(), false);
  }
  return 1;
}
