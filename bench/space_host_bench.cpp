// The staging space with host data (docs/performance.md, "Staging space"). A server must be
// running (`axon space serve`); AXON_SPACE_ADDR names it.
//
//   space_host_bench small-puts [N] [BYTES]   N nonblocking puts of BYTES each (default 10,000 of
//                                             4 KiB), batching off and then on, in one run
//   space_host_bench workflow M N [SLOW_MS]   run as M + N processes (axon run -n M+N): ranks below
//                                             M write a 2-D variable in row blocks, 10 versions; the
//                                             others read it in column blocks (another
//                                             decomposition), the last reader sleeping SLOW_MS per
//                                             version; each prints put or get p50/p99 and GB/s, and
//                                             the last reader the server's high-water mark
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "axon/error.hpp"
#include "axon/space.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

int smallPuts(long n, long bytes) {
  const std::int64_t elems = bytes / 8;
  std::vector<double> data(static_cast<std::size_t>(n * elems), 1.0);
  std::printf("# %ld nonblocking puts of %ld bytes, then one wait for all\n", n, bytes);
  std::printf("%-10s %10s %12s %10s %10s\n", "batching", "seconds", "puts/s", "messages", "MB/s");
  double seconds[2] = {0, 0};
  for (int on = 0; on < 2; ++on) {
    axon::space::ConnectOptions o;
    o.batchBytes = on ? 64 * 1024 : 0;
    o.sharedMemory = false;  // every put a message: what batching saves
    axon::space::Client c(o);
    const std::string name = "small" + std::to_string(on) + "_" + std::to_string(::getpid());
    c.define(name, {n, elems}, axon::DataType::Float64, 1);
    auto t0 = Clock::now();
    std::vector<axon::space::Request> reqs;
    reqs.reserve(static_cast<std::size_t>(n));
    for (long i = 0; i < n; ++i) reqs.push_back(c.iput(name, 0, {i, 0}, {1, elems}, data.data() + i * elems));
    for (auto& r : reqs) r.wait();
    seconds[on] = since(t0);
    const auto st = c.stats().client;
    const std::uint64_t messages = on ? st.batches : st.ucxPuts;
    std::printf("%-10s %10.3f %12.0f %10llu %10.1f\n", on ? "on (64K)" : "off", seconds[on], n / seconds[on],
                static_cast<unsigned long long>(messages), n * bytes / seconds[on] / 1e6);
  }
  std::printf("# batching on takes %.2fx the time of batching off\n", seconds[1] / seconds[0]);
  return 0;
}

int workflow(int writers, int readers, int slowMs) {
  const char* rankText = std::getenv("AXON_RANK");
  if (!rankText) {
    std::fprintf(stderr, "space_host_bench workflow: run it under `axon run -n %d`\n", writers + readers);
    return 2;
  }
  const int rank = std::atoi(rankText);
  const std::int64_t rows = 2048, cols = 2048;  // 32 MiB of float64 per version
  const int versions = 10;
  axon::space::Client c;
  c.define("wf", {rows, cols}, axon::DataType::Float64, 2);
  std::vector<double> lat;
  std::uint64_t bytes = 0;
  int skipped = 0;
  auto t0 = Clock::now();
  if (rank < writers) {
    const std::int64_t r0 = rows * rank / writers, r1 = rows * (rank + 1) / writers;
    std::vector<double> block(static_cast<std::size_t>((r1 - r0) * cols));
    for (int v = 0; v < versions; ++v) {
      std::fill(block.begin(), block.end(), static_cast<double>(v));
      auto t = Clock::now();
      c.put("wf", v, {r0, 0}, {r1 - r0, cols}, block.data(), 120);
      lat.push_back(since(t));
      bytes += block.size() * 8;
    }
  } else {
    const int me = rank - writers;
    const std::int64_t c0 = cols * me / readers, c1 = cols * (me + 1) / readers;
    std::vector<double> box(static_cast<std::size_t>(rows * (c1 - c0)));
    for (int v = 0; v < versions; ++v) {
      auto t = Clock::now();
      try {
        c.get("wf", v, {0, c0}, {rows, c1}, box.data(), box.size() * 8, 120);
      } catch (const axon::Error& e) {
        if (e.code() != axon::ErrorCode::Evicted) throw;
        // A reader more than keep_versions behind loses versions: the servers do not know it.
        std::printf("reader %d: version %d was dropped before it got there\n", me, v);
        ++skipped;
        continue;
      }
      lat.push_back(since(t));
      bytes += box.size() * 8;
      if (box.front() != v || box.back() != v) {
        std::fprintf(stderr, "reader %d: version %d holds %g..%g\n", me, v, box.front(), box.back());
        return 1;
      }
      if (me == readers - 1 && slowMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(slowMs));
      c.release("wf", v);
    }
  }
  const double total = since(t0);
  std::printf("%s %d: %s p50 %.2f ms, p99 %.2f ms, %.2f GB/s over %d versions (%d dropped before read)\n",
              rank < writers ? "writer" : "reader", rank < writers ? rank : rank - writers,
              rank < writers ? "put" : "get", lat.empty() ? 0.0 : percentile(lat, 0.5) * 1e3,
              lat.empty() ? 0.0 : percentile(lat, 0.99) * 1e3, bytes / total / 1e9, versions, skipped);
  if (rank == writers + readers - 1) {
    const auto st = c.stats();
    for (const auto& s : st.servers) {
      std::printf("server %s: high-water %.1f MiB of --mem %.1f MiB (%s)\n", s.address.c_str(), s.highWater / 1048576.0,
                  s.capacity / 1048576.0, s.highWater <= s.capacity ? "within" : "OVER");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  try {
    if (what == "small-puts") return smallPuts(argc > 2 ? std::atol(argv[2]) : 10000, argc > 3 ? std::atol(argv[3]) : 4096);
    if (what == "workflow" && argc > 3) return workflow(std::atoi(argv[2]), std::atoi(argv[3]), argc > 4 ? std::atoi(argv[4]) : 0);
  } catch (const axon::Error& e) {
    std::fprintf(stderr, "space_host_bench %s: %s\n", what.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: space_host_bench small-puts [N] [BYTES] | workflow M N [SLOW_MS]\n");
  return 2;
}
