// Host-backend put benchmark between two PEs, with the hardware baseline measured in the same run:
// a plain memcpy between the same shared-memory mappings.
//
//   axon run -n 2 build/bench/host_put_bench [--min 8] [--max 64M] [--json FILE]
//
// For each size PE 0 measures, alternating trials so both see the same machine state:
//   put      axon::put of `size` bytes from its heap to PE 1's heap, back to back, then quiet
//   memcpy   std::memcpy from the same source to the same destination (PE 1's mapping)
//   pingpong put_signal to PE 1, which answers with put_signal; the round trip is reported
// The destination is checked after the timed loops (a #wrong column, as in OSU/nccl-tests).
#include <axon/axon.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_cli.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::size_t minBytes = 8;
  std::size_t maxBytes = 64u << 20;
  int trials = 5;
  std::string json;
};

// Throws axon::bench::UsageError; main reports it.
Options parse(int argc, char** argv) {
  using axon::bench::UsageError;
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError{a + " needs a value"};
      return argv[++i];
    };
    if (a == "--min") o.minBytes = axon::bench::parseSize(value(), "--min");
    else if (a == "--max") o.maxBytes = axon::bench::parseSize(value(), "--max");
    else if (a == "--trials") o.trials = static_cast<int>(axon::bench::parseCount(value(), "--trials", 1));
    else if (a == "--json") o.json = value();
    else throw UsageError{"unknown option " + a};
  }
  if (o.minBytes > o.maxBytes) throw UsageError{"--min is larger than --max"};
  return o;
}

// Enough repetitions for ~30 ms of copying per trial, at least a few.
long itersFor(std::size_t bytes) {
  return std::clamp<long>(static_cast<long>((256u << 20) / bytes), 5, 20000);
}

struct Row {
  std::size_t bytes;
  double putUs, memcpyUs, rttUs;
  long wrong;
};

}  // namespace

int main(int argc, char** argv) {
  const auto parsed = axon::bench::parseCommandLine("host_put_bench", parse, argc, argv);
  if (!parsed) return 2;
  const Options& opt = *parsed;
  try {
    axon::init();
    const int me = axon::myPe();
    if (axon::nPes() != 2) {
      if (me == 0) std::fprintf(stderr, "host_put_bench: run with exactly 2 PEs (axon run -n 2 ...)\n");
      axon::finalize();
      return 2;
    }
    // The host path: every buffer on the host heap (mallocHost), whichever backend runs.
    auto* src = static_cast<unsigned char*>(axon::mallocHost(opt.maxBytes));
    auto* dst = static_cast<unsigned char*>(axon::mallocHost(opt.maxBytes));
    auto* sig = static_cast<std::uint64_t*>(axon::mallocHost(2 * sizeof(std::uint64_t)));
    auto* wrongOnPeer = static_cast<std::int64_t*>(axon::mallocHost(sizeof(std::int64_t)));
    std::memset(sig, 0, 2 * sizeof(std::uint64_t));
    *wrongOnPeer = 0;
    axon::syncAll();  // zeroed everywhere before any PE signals
    unsigned char* peerDst = static_cast<unsigned char*>(axon::ptr(dst, 1));
    std::vector<Row> rows;
    std::uint64_t rounds = 0;

    for (std::size_t bytes = opt.minBytes; bytes <= opt.maxBytes; bytes *= 2) {
      const long iters = itersFor(bytes);
      std::vector<double> putT, memT;
      const unsigned char stamp = static_cast<unsigned char>(bytes * 7 + 3);
      if (me == 0) {
        for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(stamp + i);
        for (int t = 0; t < opt.trials; ++t) {
          auto t0 = Clock::now();
          for (long i = 0; i < iters; ++i) std::memcpy(peerDst, src, bytes);
          auto t1 = Clock::now();
          for (long i = 0; i < iters; ++i) axon::put(dst, src, bytes, 1);
          axon::quiet();
          auto t2 = Clock::now();
          memT.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
          putT.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count() / iters);
        }
      }
      axon::barrierAll();
      if (me == 1) {  // PE 1 validates what landed in its own buffer
        long wrong = 0;
        for (std::size_t i = 0; i < bytes; ++i) wrong += dst[i] != static_cast<unsigned char>(stamp + i);
        axon::p<std::int64_t>(wrongOnPeer, wrong, 0);
      }
      axon::barrierAll();

      // put_signal ping-pong: PE 0 -> PE 1 -> PE 0 is one round trip.
      const long pingIters = std::clamp<long>(static_cast<long>((64u << 20) / bytes), 10, 2000);
      double rtt = 0;
      auto t0 = Clock::now();
      for (long i = 0; i < pingIters; ++i) {
        ++rounds;
        if (me == 0) {
          axon::putSignal(dst, src, bytes, &sig[0], rounds, axon::SignalOp::Set, 1);
          axon::signalWaitUntil(&sig[1], axon::Cmp::Ge, rounds);
        } else {
          axon::signalWaitUntil(&sig[0], axon::Cmp::Ge, rounds);
          axon::putSignal(dst, src, bytes, &sig[1], rounds, axon::SignalOp::Set, 0);
        }
      }
      rtt = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / pingIters;
      axon::barrierAll();
      if (me == 0) rows.push_back({bytes, axon::bench::median(putT), axon::bench::median(memT), rtt, *wrongOnPeer});
    }

    if (me == 0) {
      std::printf("# axon host_put_bench: 2 PEs, host backend (shared memory), median of %d trials\n", opt.trials);
      std::printf("%12s %12s %12s %10s %10s %8s %14s %7s\n", "size(B)", "put(us)", "memcpy(us)",
                  "put GB/s", "memcpy GB/s", "ratio", "put_signal RTT", "#wrong");
      for (const auto& r : rows) {
        double putBw = r.bytes / r.putUs / 1e3, memBw = r.bytes / r.memcpyUs / 1e3;
        std::printf("%12zu %12.3f %12.3f %10.2f %10.2f %8.3f %11.3f us %7ld\n", r.bytes, r.putUs,
                    r.memcpyUs, putBw, memBw, putBw / memBw, r.rttUs, r.wrong);
      }
      if (!opt.json.empty()) {
        FILE* f = std::fopen(opt.json.c_str(), "w");
        if (!f) {
          std::fprintf(stderr, "host_put_bench: cannot write %s\n", opt.json.c_str());
        } else {
          std::fprintf(f, "{\"benchmark\": \"host_put\", \"pes\": 2, \"backend\": \"host\", \"results\": [\n");
          for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto& r = rows[i];
            std::fprintf(f,
                         "  {\"bytes\": %zu, \"put_us\": %.4f, \"memcpy_us\": %.4f, \"put_GBps\": %.4f, "
                         "\"memcpy_GBps\": %.4f, \"put_signal_rtt_us\": %.4f, \"wrong\": %ld}%s\n",
                         r.bytes, r.putUs, r.memcpyUs, r.bytes / r.putUs / 1e3, r.bytes / r.memcpyUs / 1e3,
                         r.rttUs, r.wrong, i + 1 < rows.size() ? "," : "");
          }
          std::fprintf(f, "]}\n");
          std::fclose(f);
        }
      }
    }
    long wrongTotal = 0;
    for (const auto& r : rows) wrongTotal += r.wrong;
    axon::free(wrongOnPeer);
    axon::free(sig);
    axon::free(dst);
    axon::free(src);
    axon::finalize();
    return wrongTotal == 0 ? 0 : 1;
  } catch (const axon::Error& e) {
    std::fprintf(stderr, "host_put_bench: %s\n", e.what());
    return 2;
  }
}
