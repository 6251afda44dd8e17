// axon_bench: the driver behind `axon bench TEST`. One test of axon's one-sided API per run, over a
// sweep of message sizes, between PE 0 and PE 1 (further PEs only take part in the barriers).
//
//   axon run -n 2 build/bench/axon_bench TEST [-m MIN:MAX | -b MIN -e MAX -f FACTOR] [-i ITERS]
//                                              [-x WARMUP] [-d LOCAL REMOTE] [--no-validate] [--via-host]
//
// Tests (OSU micro-benchmark conventions, on put/get/put_signal instead of send/recv):
//   latency         put_signal ping-pong; ONE-WAY latency = round trip / 2 (osu_latency)
//   bw              windows of 64 put_nbi to PE 1, quiet, a signal, an ack per window (osu_bw)
//   bibw            PE 0 and PE 1 both run the bw pattern at once; the sum is reported (osu_bibw)
//   pingping        both PEs put_signal to each other at once and wait for the other's; time per
//                   exchange and bytes sent by ONE PE / time. With --via-host (GPU buffers only),
//                   GPU data staged by hand through host memory, as "CUDA-staged MPI" does: copy
//                   the GPU source to a pinned host buffer, put_signal between host buffers, copy
//                   what arrived to the GPU destination; the time covers all three
//   put_lat/get_lat one blocking put (+ quiet) / get at a time
//   put_bw/get_bw   windows of 64 put_nbi / get_nbi, then quiet
//   put_signal_rtt  put_signal ping-pong, reported as the ROUND TRIP
//   atomic_lat      one blocking 64-bit fetch_add at a time (8 bytes: -m is ignored); each answer
//                   is checked (the count of adds before it)
//
// The two-sided tests (p2p-latency, p2p-bw, p2p-bibw, p2p-pingping: send/recv) are in
// p2p_bench.cpp, the collectives in coll_bench.cpp.
//
// -i counts messages for the latency tests and windows for the windowed ones (as OSU does);
// without -i/-x the OSU defaults apply (above 8 KiB: fewer iterations). Before the first size,
// PE 0 and PE 1 ping-pong for --settle-ms (default 200) milliseconds, see settle().
// Placement -d LOCAL REMOTE, each D (GPU memory: axon::malloc with the GPU backend) or H (host
// memory: plain heap memory locally, axon::mallocHost for the symmetric remote buffer); without
// -d, D D on the GPU backend and H H on the host backend. Signals are always in the host heap.
// Bandwidth is GB/s = 1e9 bytes per second; times are microseconds.
//
// Output (PE 0, stdout): one JSON object per line, flushed as it goes: a "header" line, one
// "result" line per size, a "done" line; or an "error" line ("usage": true for a bad request).
// Validation (on unless --no-validate): the last transfer of each size carries a pattern that
// depends on the size, the iteration and the sender; the receiver checks every byte ("wrong").
// For the placement H H each result also carries "limit": the same transfers done with a plain
// memcpy between the same mappings, the hardware limit of this path.
#include <axon/axon.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "coll_bench.hpp"
#include "p2p_bench.hpp"
#include "p2p_conventions.hpp"

namespace {

using namespace axon::bench;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Tests and options
// ---------------------------------------------------------------------------------------------

enum class Test { Latency, Bw, Bibw, PingPing, PutLat, GetLat, PutBw, GetBw, PutSignalRtt, AtomicLat };

struct TestInfo {
  Test test;
  const char* name;
  const char* metric;     // "latency" or "bandwidth": the main column
  bool windowed;          // -i counts windows of kWindow messages
  const char* timeLabel;  // what time_us is
};

const TestInfo kTests[] = {
    {Test::Latency, "latency", "latency", false, "one-way latency (put_signal round trip / 2)"},
    {Test::Bw, "bw", "bandwidth", true, "time per message (window of 64 put_nbi, ack per window)"},
    {Test::Bibw, "bibw", "bandwidth", true, "time per message per direction (both PEs at once)"},
    {Test::PingPing, "pingping", "bandwidth", false, "time per exchange (both PEs put_signal at once)"},
    {Test::PutLat, "put_lat", "latency", false, "blocking put + quiet, one message"},
    {Test::GetLat, "get_lat", "latency", false, "blocking get, one message"},
    {Test::PutBw, "put_bw", "bandwidth", true, "time per message (window of 64 put_nbi, then quiet)"},
    {Test::GetBw, "get_bw", "bandwidth", true, "time per message (window of 64 get_nbi, then quiet)"},
    {Test::PutSignalRtt, "put_signal_rtt", "latency", false, "put_signal ping-pong ROUND TRIP"},
    {Test::AtomicLat, "atomic_lat", "latency", false, "blocking 64-bit fetch_add, one at a time (8 bytes)"},
};

struct Options {
  const TestInfo* test = nullptr;
  std::size_t minBytes = 1, maxBytes = std::size_t{4} << 20;
  std::size_t factor = 2;
  long iters = -1, warmup = -1;  // -1: OSU defaults by size
  bool localDev = false, remoteDev = false;
  bool placementGiven = false;
  bool validate = true;
  bool viaHost = false;  // pingping: stage GPU data through host memory by hand
  int settleMs = 200;
};

bool parsePlace(const std::string& text, bool& dev) {
  if (text == "D" || text == "d") return dev = true, true;
  if (text == "H" || text == "h") return dev = false, true;
  return false;
}

Options parse(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  std::size_t i = 0;
  auto value = [&](const std::string& opt) -> std::string {
    if (i + 1 >= args.size()) throw UsageError{opt + " needs a value"};
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-m" || a == "--message-size") {
      std::string v = value(a);
      auto colon = v.find(':');
      if (colon == std::string::npos) {
        o.maxBytes = parseSize(v, "-m MAX");
      } else {
        if (colon > 0) o.minBytes = parseSize(v.substr(0, colon), "-m MIN");
        if (colon + 1 < v.size()) o.maxBytes = parseSize(v.substr(colon + 1), "-m MAX");
      }
    } else if (a == "-b" || a == "--minbytes") {
      o.minBytes = parseSize(value(a), "-b");
    } else if (a == "-e" || a == "--maxbytes") {
      o.maxBytes = parseSize(value(a), "-e");
    } else if (a == "-f" || a == "--stepfactor") {
      o.factor = static_cast<std::size_t>(parseCount(value(a), "-f", 2));
    } else if (a == "-i" || a == "--iterations") {
      o.iters = parseCount(value(a), "-i", 1);
    } else if (a == "-x" || a == "--warmup") {
      o.warmup = parseCount(value(a), "-x", 0);
    } else if (a == "-d" || a == "--placement") {
      std::string l = value(a), r = value(a);
      if (!parsePlace(l, o.localDev) || !parsePlace(r, o.remoteDev)) {
        throw UsageError{"-d takes two of D (GPU memory) and H (host memory), e.g. -d H D; got '" + l +
                         " " + r + "'"};
      }
      o.placementGiven = true;
    } else if (a == "--settle-ms") {
      o.settleMs = static_cast<int>(parseCount(value(a), "--settle-ms", 0));
    } else if (a == "--no-validate") {
      o.validate = false;
    } else if (a == "--via-host") {
      o.viaHost = true;
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError{"unknown option " + a};
    } else if (o.test == nullptr) {
      for (const auto& t : kTests) {
        if (a == t.name) o.test = &t;
      }
      if (o.test == nullptr) {
        std::string names;
        for (const auto& t : kTests) names += std::string(names.empty() ? "" : ", ") + t.name;
        throw UsageError{"unknown test '" + a + "' (tests: " + names + ")"};
      }
    } else {
      throw UsageError{"one test per run; got a second one, '" + a + "'"};
    }
  }
  if (o.test == nullptr) throw UsageError{"no test given (e.g. axon_bench latency)"};
  if (o.viaHost && o.test->test != Test::PingPing) throw UsageError{"--via-host is an option of pingping only"};
  if (o.viaHost && o.placementGiven && !(o.localDev && o.remoteDev)) {
    throw UsageError{"--via-host stages GPU data through the host: it takes -d D D"};
  }
  if (o.minBytes > o.maxBytes) {
    throw UsageError{"the smallest size (" + std::to_string(o.minBytes) + ") is larger than the largest (" +
                     std::to_string(o.maxBytes) + ")"};
  }
  return o;
}

std::vector<std::size_t> sweep(const Options& o) {
  if (o.test && o.test->test == Test::AtomicLat) return {8};  // one 64-bit word, whatever -m says
  return sizeSweep(o.minBytes, o.maxBytes, o.factor);
}

// ---------------------------------------------------------------------------------------------
// Buffers, patterns, validation
// ---------------------------------------------------------------------------------------------

struct Ctx {
  Options opt;
  const TestInfo* test;
  int me = 0, peer = 1;
  bool measures = false;         // PE 0 or PE 1
  unsigned char* local = nullptr;   // source of puts, destination of gets
  unsigned char* remote = nullptr;  // symmetric: destination of puts, source of gets
  std::vector<unsigned char> staging;  // host copy for filling and checking GPU buffers
  std::uint64_t* sig = nullptr;     // symmetric, host heap
  double* box = nullptr;            // symmetric, host heap: PE 1 reports numbers to PE 0 here
  std::uint64_t seq = 0;            // signal values: both PEs advance it identically
  unsigned char* hostSend = nullptr;  // --via-host: pinned symmetric host buffers
  unsigned char* hostRecv = nullptr;  // two halves, used by turns (see runPingPing)
  std::size_t cap = 0;                // bytes of the largest size
  bool peersShareMemory = false;      // PE 0 and PE 1 map each other's heaps: a memcpy limit exists
};

// Symmetric signal words (each PE's copy is written by its peer).
enum Sig {
  kPing = 0, kPong = 1, kData = 2, kAck = 3, kDataFrom0 = 4, kAckTo0 = 6, kExchFrom0 = 8,
  kSettlePing = 10, kSettlePong = 11, kSettleStop = 12, kCounter = 13,
};
// box slots: [0] wrong counted by PE 0, [1] by PE 1, [2] PE 1's time, [3] PE 1's limit time
enum Box { kWrong0 = 0, kWrong1 = 1, kTime1 = 2, kLimit1 = 3 };

// Writes the pattern (or poison) into `buf`, a local buffer or one of this PE's symmetric ones.
void fill(Ctx& c, unsigned char* buf, bool dev, std::size_t bytes, long iter, int sender) {
  unsigned char* host = dev ? c.staging.data() : buf;
  for (std::size_t i = 0; i < bytes; ++i) host[i] = patternByte(i, bytes, iter, sender);
  // GPU memory from axon::malloc is symmetric: a put to this PE itself writes it.
  if (dev) axon::put(buf, host, bytes, c.me);
}

long countWrong(Ctx& c, unsigned char* buf, bool dev, std::size_t bytes, long iter, int sender) {
  const unsigned char* host = buf;
  if (dev) {
    axon::get(c.staging.data(), buf, bytes, c.me);
    host = c.staging.data();
  }
  long wrong = 0;
  for (std::size_t i = 0; i < bytes; ++i) wrong += host[i] != patternByte(i, bytes, iter, sender);
  return wrong;
}

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// ---------------------------------------------------------------------------------------------
// The tests. Each returns this PE's timed seconds for `iters` iterations (0 where it does not
// time), leaves the pattern of the last iteration at the receiver, and says who checks what.
// ---------------------------------------------------------------------------------------------

struct Check {
  bool onRemote;  // the received data is in `remote` (else in `local`)
  int sender;     // whose pattern it is
};

// Ping-pong with put_signal (latency, put_signal_rtt). Both PEs check what the other sent.
double runPingPong(Ctx& c, std::size_t bytes, long iters, long warmup, Check& check) {
  const long total = warmup + iters;
  double excluded = 0;
  Clock::time_point t0 = Clock::now();
  for (long i = 0; i < total; ++i) {
    if (i == warmup) t0 = Clock::now();
    const bool last = i == total - 1 && c.opt.validate;
    ++c.seq;
    if (c.me == 0) {
      if (last) {
        auto f0 = Clock::now();
        fill(c, c.local, c.opt.localDev, bytes, i, 0);
        excluded += seconds(f0, Clock::now());
      }
      axon::putSignal(c.remote, c.local, bytes, &c.sig[kPing], c.seq, axon::SignalOp::Set, 1);
      axon::signalWaitUntil(&c.sig[kPong], axon::Cmp::Ge, c.seq);
    } else {
      if (last) fill(c, c.local, c.opt.localDev, bytes, i, 1);  // while the ping travels
      axon::signalWaitUntil(&c.sig[kPing], axon::Cmp::Ge, c.seq);
      axon::putSignal(c.remote, c.local, bytes, &c.sig[kPong], c.seq, axon::SignalOp::Set, 0);
    }
  }
  check = {true, c.peer};
  return seconds(t0, Clock::now()) - excluded;
}

// osu_bw on one-sided calls: PE 0 puts a window, quiets, signals; PE 1 acks each window.
// With both = true (bibw) each PE does that towards the other at the same time.
double runWindows(Ctx& c, std::size_t bytes, long iters, long warmup, bool both, Check& check) {
  const long total = warmup + iters;
  const bool sends = both || c.me == 0;
  double excluded = 0;
  Clock::time_point t0 = Clock::now();
  for (long w = 0; w < total; ++w) {
    if (w == warmup) t0 = Clock::now();
    ++c.seq;
    if (sends) {
      if (w == total - 1 && c.opt.validate) {
        auto f0 = Clock::now();
        fill(c, c.local, c.opt.localDev, bytes, w, c.me);
        excluded += seconds(f0, Clock::now());
      }
      for (int k = 0; k < kWindow; ++k) axon::putNbi(c.remote, c.local, bytes, c.peer);
      axon::quiet();
    }
    if (both) {
      axon::signalOp(&c.sig[kDataFrom0 + c.me], c.seq, axon::SignalOp::Set, c.peer);
      axon::signalWaitUntil(&c.sig[kDataFrom0 + c.peer], axon::Cmp::Ge, c.seq);
      axon::signalOp(&c.sig[kAckTo0 + c.peer], c.seq, axon::SignalOp::Set, c.peer);
      axon::signalWaitUntil(&c.sig[kAckTo0 + c.me], axon::Cmp::Ge, c.seq);
    } else if (c.me == 0) {
      axon::signalOp(&c.sig[kData], c.seq, axon::SignalOp::Set, 1);
      axon::signalWaitUntil(&c.sig[kAck], axon::Cmp::Ge, c.seq);
    } else {
      axon::signalWaitUntil(&c.sig[kData], axon::Cmp::Ge, c.seq);
      axon::signalOp(&c.sig[kAck], c.seq, axon::SignalOp::Set, 0);
    }
  }
  check = {true, both ? c.peer : 0};
  return sends ? seconds(t0, Clock::now()) - excluded : 0;
}

// Both PEs put_signal to each other at once and wait for the other's (Isend/Irecv/Waitall).
double runPingPing(Ctx& c, std::size_t bytes, long iters, long warmup, Check& check) {
  const long total = warmup + iters;
  double excluded = 0;
  Clock::time_point t0 = Clock::now();
  for (long i = 0; i < total; ++i) {
    if (i == warmup) t0 = Clock::now();
    ++c.seq;
    if (i == total - 1 && c.opt.validate) {
      auto f0 = Clock::now();
      fill(c, c.local, c.opt.localDev, bytes, i, c.me);
      excluded += seconds(f0, Clock::now());
    }
    if (c.opt.viaHost) {
      // By hand: GPU -> this host, host -> peer's host, then (once the peer's data is here)
      // host -> GPU. The host buffers are pinned (axon::mallocHost); a get or put to this PE
      // itself is a plain copy between its own GPU and host memory. The receive buffer
      // alternates between two halves: the peer may send exchange i+1 while this PE still copies
      // exchange i to its GPU, but not i+2 (that needs this PE's signal of i+1).
      unsigned char* inbox = c.hostRecv + (c.seq % 2) * c.cap;
      axon::get(c.hostSend, c.local, bytes, c.me);
      axon::putSignal(inbox, c.hostSend, bytes, &c.sig[kExchFrom0 + c.me], c.seq, axon::SignalOp::Set, c.peer);
      axon::signalWaitUntil(&c.sig[kExchFrom0 + c.peer], axon::Cmp::Ge, c.seq);
      axon::put(c.remote, inbox, bytes, c.me);
    } else {
      axon::putSignal(c.remote, c.local, bytes, &c.sig[kExchFrom0 + c.me], c.seq, axon::SignalOp::Set, c.peer);
      axon::signalWaitUntil(&c.sig[kExchFrom0 + c.peer], axon::Cmp::Ge, c.seq);
    }
  }
  check = {true, c.peer};
  return seconds(t0, Clock::now()) - excluded;
}

// PE 0 alone: blocking put (+ quiet) or get, one message at a time, or windows of nbi + quiet.
double runOneSided(Ctx& c, std::size_t bytes, long iters, long warmup, bool isGet, bool windowed,
                   Check& check) {
  check = isGet ? Check{false, 1} : Check{true, 0};
  if (c.me != 0) return 0;
  const long total = warmup + iters;
  double excluded = 0;
  Clock::time_point t0 = Clock::now();
  for (long i = 0; i < total; ++i) {
    if (i == warmup) t0 = Clock::now();
    if (i == total - 1 && c.opt.validate) {
      auto f0 = Clock::now();
      // put: the last message carries this iteration's pattern; get: the local buffer is
      // cleared so that only the last get can have filled it.
      if (isGet) fill(c, c.local, c.opt.localDev, bytes, kPoison, 0);
      else fill(c, c.local, c.opt.localDev, bytes, i, 0);
      excluded += seconds(f0, Clock::now());
    }
    if (windowed) {
      for (int k = 0; k < kWindow; ++k) {
        if (isGet) axon::getNbi(c.local, c.remote, bytes, 1);
        else axon::putNbi(c.remote, c.local, bytes, 1);
      }
      axon::quiet();
    } else if (isGet) {
      axon::get(c.local, c.remote, bytes, 1);
    } else {
      axon::put(c.remote, c.local, bytes, 1);
      axon::quiet();
    }
  }
  return seconds(t0, Clock::now()) - excluded;
}

// PE 0 alone: blocking fetch_add of 1 on PE 1's counter, one at a time. Each answer must be the
// count of adds before it; a wrong one is counted.
double runAtomic(Ctx& c, long iters, long warmup, long& wrong) {
  wrong = 0;
  if (c.me != 0) return 0;
  const long total = warmup + iters;
  Clock::time_point t0 = Clock::now();
  for (long i = 0; i < total; ++i) {
    if (i == warmup) t0 = Clock::now();
    const std::uint64_t before = axon::atomicFetchAdd<std::uint64_t>(&c.sig[kCounter], 1, 1);
    if (before != static_cast<std::uint64_t>(i)) ++wrong;
  }
  return seconds(t0, Clock::now());
}

// The same transfers as a plain memcpy between the same mappings (placement H H only): the
// hardware limit of this path. Returns this PE's seconds per message (0 where it copies nothing).
double runLimit(Ctx& c, std::size_t bytes, long messages) {
  const Test t = c.test->test;
  const bool both = t == Test::Bibw || t == Test::PingPing;
  axon::barrierAll();
  if (!(c.me == 0 || (both && c.me == 1))) return 0;
  auto* peerRemote = static_cast<unsigned char*>(axon::ptr(c.remote, c.peer));
  const bool isGet = t == Test::GetLat || t == Test::GetBw;
  auto t0 = Clock::now();
  for (long i = 0; i < messages; ++i) {
    if (isGet) std::memcpy(c.local, peerRemote, bytes);
    else std::memcpy(peerRemote, c.local, bytes);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return seconds(t0, Clock::now()) / static_cast<double>(messages);
}

// Before the first size, PE 0 and PE 1 ping-pong for `ms` milliseconds. On virtual machines a
// CPU that was idle runs slowly for a while (the host wakes it up, clocks it up); without this,
// the first sizes of a run measure that instead of axon.
void settle(Ctx& c, int ms) {
  if (!c.measures || ms <= 0) return;
  std::uint64_t round = 0;
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  if (c.me == 0) {
    bool stop = false;
    while (!stop) {
      stop = Clock::now() >= end;
      if (stop) axon::signalOp(&c.sig[kSettleStop], 1, axon::SignalOp::Set, 1);
      axon::signalOp(&c.sig[kSettlePing], ++round, axon::SignalOp::Set, 1);
      axon::signalWaitUntil(&c.sig[kSettlePong], axon::Cmp::Ge, round);
    }
  } else {
    // Signals from one PE are ordered: the stop flag is seen with the ping that follows it.
    while (true) {
      axon::signalWaitUntil(&c.sig[kSettlePing], axon::Cmp::Ge, ++round);
      const bool stop = axon::signalFetch(&c.sig[kSettleStop]) != 0;
      axon::signalOp(&c.sig[kSettlePong], round, axon::SignalOp::Set, 0);
      if (stop) break;
    }
  }
}

struct Row {
  std::size_t bytes;
  long iters, warmup;
  double timeUs, bwGbs;
  long wrong;
  bool hasLimit;
  double limitUs, limitGbs;
};

Row runSize(Ctx& c, std::size_t bytes) {
  const Options& o = c.opt;
  const Test t = c.test->test;
  const long iters = o.iters > 0 ? o.iters : defaultIters(c.test->windowed, bytes);
  const long warmup = o.warmup >= 0 ? o.warmup : defaultWarmup(c.test->windowed, bytes);
  const long lastIter = warmup + iters - 1;

  // Receivers clear what they will check; get tests: PE 1 holds the data PE 0 fetches.
  if (t == Test::AtomicLat) c.sig[kCounter] = 0;  // each PE its own; PE 0 adds to PE 1's
  if (c.measures && o.validate) {
    fill(c, c.remote, o.remoteDev, bytes, kPoison, c.me);
    if ((t == Test::GetLat || t == Test::GetBw) && c.me == 1) fill(c, c.remote, o.remoteDev, bytes, lastIter, 1);
  }
  axon::barrierAll();

  double secs = 0;
  Check check{true, 0};
  long atomicWrong = 0;
  if (c.measures) {
    switch (t) {
      case Test::AtomicLat: secs = runAtomic(c, iters, warmup, atomicWrong); break;
      case Test::Latency:
      case Test::PutSignalRtt: secs = runPingPong(c, bytes, iters, warmup, check); break;
      case Test::Bw: secs = runWindows(c, bytes, iters, warmup, false, check); break;
      case Test::Bibw: secs = runWindows(c, bytes, iters, warmup, true, check); break;
      case Test::PingPing: secs = runPingPing(c, bytes, iters, warmup, check); break;
      case Test::PutLat: secs = runOneSided(c, bytes, iters, warmup, false, false, check); break;
      case Test::GetLat: secs = runOneSided(c, bytes, iters, warmup, true, false, check); break;
      case Test::PutBw: secs = runOneSided(c, bytes, iters, warmup, false, true, check); break;
      case Test::GetBw: secs = runOneSided(c, bytes, iters, warmup, true, true, check); break;
    }
  }
  axon::barrierAll();

  // Who checks: the PE the data went to (both PEs for the exchanges).
  if (c.measures) {
    long wrong = 0;
    if (t == Test::AtomicLat) {
      wrong = atomicWrong;
    } else if (o.validate) {
      const bool receiver = check.onRemote ? check.sender == c.peer : c.me == 0;
      if (receiver) {
        wrong = check.onRemote ? countWrong(c, c.remote, o.remoteDev, bytes, lastIter, check.sender)
                               : countWrong(c, c.local, o.localDev, bytes, lastIter, check.sender);
      }
    }
    if (c.me == 1) {
      axon::p<double>(&c.box[kWrong1], static_cast<double>(wrong), 0);
      axon::p<double>(&c.box[kTime1], secs, 0);
    } else {
      c.box[kWrong0] = static_cast<double>(wrong);
    }
  }
  axon::barrierAll();

  Row row{bytes, iters, warmup, 0, 0, 0, false, 0, 0};
  const bool windowed = c.test->windowed;
  const long messages = windowed ? iters * kWindow : iters;
  if (c.me == 0) {
    row.wrong = static_cast<long>(c.box[kWrong0] + c.box[kWrong1]);
    const double t1 = c.box[kTime1];
    switch (t) {
      case Test::Latency:
        row.timeUs = secs * 1e6 / iters / 2;  // one way
        row.bwGbs = bytes / (row.timeUs * 1e3);
        break;
      case Test::PutSignalRtt:
        row.timeUs = secs * 1e6 / iters;  // round trip
        row.bwGbs = 2.0 * bytes / (row.timeUs * 1e3);
        break;
      case Test::Bibw:
        row.timeUs = std::max(secs, t1) * 1e6 / messages;
        row.bwGbs = static_cast<double>(bytes) * messages / secs / 1e9 +
                    static_cast<double>(bytes) * messages / t1 / 1e9;
        break;
      case Test::PingPing:
        row.timeUs = std::max(secs, t1) * 1e6 / messages;  // per exchange
        row.bwGbs = bytes / (row.timeUs * 1e3);            // bytes sent by one PE / time
        break;
      default:
        row.timeUs = secs * 1e6 / messages;
        row.bwGbs = bytes / (row.timeUs * 1e3);
        break;
    }
  }

  if (!o.localDev && !o.remoteDev && c.peersShareMemory) {
    double per = c.measures ? runLimit(c, bytes, messages) : (axon::barrierAll(), 0.0);
    if (c.me == 1) axon::p<double>(&c.box[kLimit1], per, 0);
    axon::barrierAll();
    if (c.me == 0) {
      const double per1 = c.box[kLimit1];
      row.hasLimit = true;
      switch (t) {
        case Test::Latency: row.limitUs = per * 1e6; break;
        case Test::PutSignalRtt: row.limitUs = 2 * per * 1e6; break;
        case Test::Bibw:
        case Test::PingPing: row.limitUs = std::max(per, per1) * 1e6; break;
        default: row.limitUs = per * 1e6; break;
      }
      row.limitGbs = t == Test::Bibw ? bytes / per / 1e9 + bytes / per1 / 1e9
                     : t == Test::PutSignalRtt ? 2.0 * bytes / (row.limitUs * 1e3)
                                               : bytes / (row.limitUs * 1e3);
    }
  }
  return row;
}

std::string placementText(const Options& o) {
  return std::string(o.localDev ? "D" : "H") + " " + (o.remoteDev ? "D" : "H");
}

void emitHeader(const Ctx& c, const std::vector<std::size_t>& sizes) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const Options& o = c.opt;
  const bool gpu = axon::gpuEnabled();
  std::string s = "{\"type\": \"header\", \"tool\": \"axon_bench\", \"test\": " + jsonString(c.test->name) +
                  ", \"metric\": " + jsonString(c.test->metric) + ", \"time_label\": " +
                  jsonString(c.test->timeLabel) + ", \"pes\": " + std::to_string(axon::nPes()) +
                  ", \"backend\": " + jsonString(gpu ? "gpu" : "host") +
                  ", \"gpu_unavailable_reason\": " + jsonString(axon::gpuUnavailableReason()) +
                  ", \"gpu_device\": " + std::to_string(gpu ? axon::gpuDevice() : -1) +
                  ", \"placement\": " + jsonString(placementText(o)) +
                  ", \"local\": " + jsonString(o.localDev ? "D" : "H") +
                  ", \"remote\": " + jsonString(o.remoteDev ? "D" : "H") +
                  ", \"window\": " + std::to_string(c.test->windowed ? kWindow : 1) +
                  ", \"validate\": " + (o.validate ? "true" : "false") +
                  ", \"via_host\": " + (o.viaHost ? "true" : "false") +
                  ", \"settle_ms\": " + std::to_string(o.settleMs) +
                  ", \"iters\": " + (o.iters > 0 ? std::to_string(o.iters) : "null") +
                  ", \"warmup\": " + (o.warmup >= 0 ? std::to_string(o.warmup) : "null") +
                  ", \"limit_name\": " +
                  (!o.localDev && !o.remoteDev ? jsonString("memcpy between the same mappings") : "null") +
                  ", \"hostname\": " + jsonString(host) + ", \"units\": {\"time_us\": \"microseconds\", "
                  "\"bw_gbs\": \"GB/s = 1e9 bytes per second\"}, \"sizes\": [";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  emitLine(s + "]}");
}

void emitRow(const Ctx& c, const Row& r) {
  std::string s = "{\"type\": \"result\", \"test\": " + jsonString(c.test->name) +
                  ", \"size\": " + std::to_string(r.bytes) + ", \"iters\": " + std::to_string(r.iters) +
                  ", \"warmup\": " + std::to_string(r.warmup) + ", \"time_us\": " + jsonNumber(r.timeUs) +
                  ", \"bw_gbs\": " + jsonNumber(r.bwGbs) + ", \"wrong\": " +
                  (c.opt.validate ? std::to_string(r.wrong) : "null");
  if (r.hasLimit) {
    s += ", \"limit\": {\"time_us\": " + jsonNumber(r.limitUs) + ", \"bw_gbs\": " + jsonNumber(r.limitGbs) + "}";
  }
  emitLine(s + "}");
}

int run(Options opt) {
  axon::init();
  // Without -d: GPU memory on both sides where the GPU backend is on, host memory otherwise.
  if (!opt.placementGiven && (axon::gpuEnabled() || opt.viaHost)) opt.localDev = opt.remoteDev = true;
  Ctx c;
  c.opt = opt;
  c.test = opt.test;
  c.me = axon::myPe();
  const int n = axon::nPes();
  if (n < 2) {
    if (c.me == 0) emitError("axon_bench", "run on at least 2 PEs (axon run -n 2 axon_bench ...)", true);
    axon::finalize();
    return 2;
  }
  if ((opt.localDev || opt.remoteDev) && !axon::gpuEnabled()) {
    if (c.me == 0) {
      const char* which = opt.localDev && opt.remoteDev ? "both buffers" : opt.localDev ? "the local buffer" : "the remote buffer";
      emitError("axon_bench", "placement " + placementText(opt) + " needs GPU memory for " + which +
                    ", but the GPU backend is off: " + axon::gpuUnavailableReason(),
                true);
    }
    axon::finalize();
    return 2;
  }
  c.peer = c.me == 0 ? 1 : 0;
  c.measures = c.me < 2;

  const std::vector<std::size_t> sizes = sweep(opt);
  const std::size_t cap = sizes.back();
  // Local buffer: device memory from axon::malloc (D) or plain heap memory (H). Remote buffer:
  // the symmetric GPU heap (D) or the symmetric host heap (H). Collective calls: every PE.
  c.local = static_cast<unsigned char*>(opt.localDev ? axon::malloc(cap) : nullptr);
  std::unique_ptr<unsigned char, decltype(&std::free)> hostLocal(nullptr, &std::free);
  if (!opt.localDev) {
    hostLocal.reset(static_cast<unsigned char*>(std::aligned_alloc(4096, (cap + 4095) / 4096 * 4096)));
    if (!hostLocal) throw axon::Error(axon::ErrorCode::OutOfMemory, "cannot allocate " + std::to_string(cap) + " bytes");
    std::memset(hostLocal.get(), 0, cap);
    c.local = hostLocal.get();
  }
  c.remote = static_cast<unsigned char*>(opt.remoteDev ? axon::malloc(cap) : axon::mallocHost(cap));
  if (opt.localDev || opt.remoteDev) c.staging.resize(cap);
  if (opt.viaHost) {
    c.hostSend = static_cast<unsigned char*>(axon::mallocHost(cap));
    c.hostRecv = static_cast<unsigned char*>(axon::mallocHost(2 * cap));
    c.cap = cap;
  }
  c.sig = static_cast<std::uint64_t*>(axon::mallocHost(16 * sizeof(std::uint64_t)));
  c.box = static_cast<double*>(axon::mallocHost(8 * sizeof(double)));
  std::memset(c.sig, 0, 16 * sizeof(std::uint64_t));
  std::memset(c.box, 0, 8 * sizeof(double));
  axon::barrierAll();
  {
    // The memcpy limit needs PE 0 and PE 1 on one node (across nodes, --emulate-nodes, there is no
    // mapping to copy through). PE 0 knows; every PE learns it (a min over the world).
    std::int32_t shares = c.me == 0 ? (axon::ptr(c.remote, 1) != nullptr ? 1 : 0) : 1;
    axon::allreduce(axon::Team::world(), &shares, &shares, 1, axon::ReduceOp::Min);
    c.peersShareMemory = shares != 0;
  }

  if (c.me == 0) emitHeader(c, sizes);
  settle(c, opt.settleMs);
  axon::barrierAll();
  long wrongTotal = 0;
  for (std::size_t bytes : sizes) {
    Row r = runSize(c, bytes);
    if (c.me == 0) {
      emitRow(c, r);
      wrongTotal += r.wrong;
    }
  }
  if (c.me == 0) emitLine("{\"type\": \"done\", \"wrong\": " + std::to_string(wrongTotal) + "}");

  axon::free(c.box);
  axon::free(c.sig);
  if (opt.viaHost) {
    axon::free(c.hostRecv);
    axon::free(c.hostSend);
  }
  axon::free(c.remote);
  if (opt.localDev) axon::free(c.local);
  axon::finalize();
  return wrongTotal == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool collective = argc > 1 && axon::bench::isCollectiveTest(argv[1]);
  const bool p2p = !collective && argc > 1 && axon::bench::isP2pTest(argv[1]);
  Options opt;
  if (!collective && !p2p) {
    try {
      opt = parse(argc, argv);
    } catch (const UsageError& e) {
      if (isRankZero()) emitError("axon_bench", e.message, true);
      return 2;
    }
  }
  try {
    if (collective) return axon::bench::runCollectiveBench(argc, argv);
    if (p2p) return axon::bench::runP2pBench(argc, argv);
    return run(opt);
  } catch (const std::exception& e) {
    // Every PE that fails says so; the launcher stops the others.
    if (!axon::isInitialized() || axon::myPe() == 0) emitError("axon_bench", e.what(), false);
    else std::fprintf(stderr, "axon_bench: %s\n", e.what());
    return 1;
  }
}
