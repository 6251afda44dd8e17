// axon_bench's two-sided tests: OSU's conventions on axon::send/recv, between PE 0 and PE 1
// (further PEs only take part in the barriers).
//
//   axon run -n 2 axon_bench p2p-TEST [-m MIN:MAX | -b MIN -e MAX -f FACTOR] [-i ITERS] [-x WARMUP]
//                                     [-d PE0 PE1] [--no-validate] [--via-host] [--settle-ms MS]
//
//   p2p-latency   blocking send/recv ping-pong; ONE-WAY latency = round trip / 2 (osu_latency)
//   p2p-bw        PE 0 isends a window of 64 messages, PE 1 irecvs them; a 4-byte ack per window
//                 (osu_bw)
//   p2p-bibw      both PEs run the bw pattern towards each other at once; the sum (osu_bibw)
//   p2p-pingping  both PEs isend and irecv at once and wait for both (an exchange); time per
//                 exchange, bandwidth = bytes sent by ONE PE / time. --via-host (GPU buffers):
//                 staged by hand the way "CUDA-staged MPI" does, GPU -> pinned host, host send and
//                 receive, host -> GPU; the time covers all three.
//
// -d gives PE 0's and PE 1's buffers: D (GPU memory, axon::malloc) or H (plain host memory);
// without -d, D D on the GPU backend and H H on the host backend. -i counts messages for latency
// and pingping and windows for bw and bibw; without -i/-x, OSU's defaults, fewer for sizes where
// they would move more than a few GiB per size.
//
// Output: the JSON lines of axon_bench (header, one result per size, done). Validation (unless
// --no-validate): the last message of each size carries a pattern of the size, the iteration and
// the sender, checked byte for byte by its receiver ("wrong"). Each result carries "limit" where
// PE 0 and PE 1 map each other's memory: the same bytes moved by one plain copy between buffers
// of the same kind (a memcpy between host mappings; for GPU buffers a blocking axon::put, one
// cuMemcpy between the two GPU heaps), the hardware's limit on this path.
#include "p2p_bench.hpp"

#include <axon/axon.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "p2p_conventions.hpp"

namespace axon::bench {
namespace {

using Clock = std::chrono::steady_clock;

enum class Test { Latency, Bw, Bibw, PingPing };

struct TestInfo {
  Test test;
  const char* name;
  const char* metric;
  bool windowed;
  const char* timeLabel;
};

const TestInfo kTests[] = {
    {Test::Latency, "p2p-latency", "latency", false, "one-way latency (send/recv round trip / 2)"},
    {Test::Bw, "p2p-bw", "bandwidth", true, "time per message (window of 64 isend, ack per window)"},
    {Test::Bibw, "p2p-bibw", "bandwidth", true, "time per message per direction (both PEs at once)"},
    {Test::PingPing, "p2p-pingping", "bandwidth", false, "time per exchange (both PEs isend and irecv at once)"},
};

struct Options {
  const TestInfo* test = nullptr;
  std::size_t minBytes = 1, maxBytes = std::size_t{4} << 20, factor = 2;
  long iters = -1, warmup = -1;
  bool dev[2] = {false, false};
  bool placementGiven = false;
  bool validate = true;
  bool viaHost = false;
  int settleMs = 200;  // the ping-pong before the first size (settle())
};

Options parse(int argc, char** argv) {
  Options o;
  for (const auto& t : kTests) {
    if (std::strcmp(argv[1], t.name) == 0) o.test = &t;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  std::size_t i = 0;
  auto value = [&](const std::string& opt) -> std::string {
    if (i + 1 >= args.size()) throw UsageError{opt + " needs a value"};
    return args[++i];
  };
  auto place = [](const std::string& text, bool& dev) {
    if (text == "D" || text == "d") return dev = true, true;
    if (text == "H" || text == "h") return dev = false, true;
    return false;
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-m" || a == "--message-size") {
      const std::string v = value(a);
      const auto colon = v.find(':');
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
      const std::string p0 = value(a), p1 = value(a);
      if (!place(p0, o.dev[0]) || !place(p1, o.dev[1])) {
        throw UsageError{"-d takes PE 0's and PE 1's buffers, each D (GPU memory) or H (host memory); got '" + p0 +
                         " " + p1 + "'"};
      }
      o.placementGiven = true;
    } else if (a == "--settle-ms") {
      o.settleMs = static_cast<int>(parseCount(value(a), "--settle-ms", 0));
    } else if (a == "--no-validate") {
      o.validate = false;
    } else if (a == "--via-host") {
      o.viaHost = true;
    } else {
      throw UsageError{"unknown option " + a + " for " + o.test->name};
    }
  }
  if (o.viaHost && o.test->test != Test::PingPing) throw UsageError{"--via-host is an option of p2p-pingping only"};
  if (o.viaHost && o.placementGiven && !(o.dev[0] && o.dev[1])) {
    throw UsageError{"--via-host stages GPU data through the host: it takes -d D D"};
  }
  if (o.minBytes > o.maxBytes) {
    throw UsageError{"the smallest size (" + std::to_string(o.minBytes) + ") is larger than the largest (" +
                     std::to_string(o.maxBytes) + ")"};
  }
  return o;
}

// OSU's counts, capped so that one size moves at most about 4 GiB per direction.
long itersFor(const Options& o, std::size_t bytes) {
  if (o.iters > 0) return o.iters;
  const bool windowed = o.test->windowed;
  const long osu = defaultIters(windowed, bytes);
  const double perIter = static_cast<double>(bytes) * (windowed ? kWindow : 1);
  const long cap = static_cast<long>(4.0 * (1u << 30) / std::max(perIter, 1.0));
  return std::max<long>(windowed ? 2 : 10, std::min(osu, cap));
}
long warmupFor(const Options& o, std::size_t bytes) {
  if (o.warmup >= 0) return o.warmup;
  return std::min(defaultWarmup(o.test->windowed, bytes), std::max<long>(1, itersFor(o, bytes) / 10));
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct Ctx {
  Options opt;
  int me = 0, peer = 1;
  bool measures = false;
  bool dev = false;                     // this PE's buffers are GPU memory
  unsigned char* send = nullptr;        // this PE's buffers (GPU heap or plain host memory)
  unsigned char* recv = nullptr;
  unsigned char* hostSend = nullptr;    // --via-host: pinned host buffers
  unsigned char* hostRecv = nullptr;
  std::vector<unsigned char> staging;   // host copy for filling and checking GPU buffers
  double* box = nullptr;                // host heap: PE 1 reports to PE 0 here
  unsigned char* limitSrc = nullptr;    // symmetric buffers for the copy limit (nullptr: none)
  unsigned char* limitDst = nullptr;
};

enum Box { kWrong1 = 0, kTime1 = 1, kLimit1 = 2 };

void fill(Ctx& c, unsigned char* buf, std::size_t bytes, long iter, int sender) {
  unsigned char* host = c.dev ? c.staging.data() : buf;
  for (std::size_t i = 0; i < bytes; ++i) host[i] = patternByte(i, bytes, iter, sender);
  if (c.dev) axon::put(buf, host, bytes, c.me);  // a GPU heap buffer: a put to this PE itself
}

long countWrong(Ctx& c, std::size_t bytes, long iter, int sender) {
  const unsigned char* host = c.recv;
  if (c.dev) {
    axon::get(c.staging.data(), c.recv, bytes, c.me);
    host = c.staging.data();
  }
  long wrong = 0;
  for (std::size_t i = 0; i < bytes; ++i) wrong += host[i] != patternByte(i, bytes, iter, sender);
  return wrong;
}

constexpr int kDataTag = 1, kAckTag = 2;

// At the last iteration (validation on), writes its pattern into the send buffer; returns the
// seconds that took, which the timing leaves out.
double fillLast(Ctx& c, std::size_t bytes, long i, long last) {
  if (i != last || !c.opt.validate) return 0;
  const auto f0 = Clock::now();
  fill(c, c.send, bytes, i, c.me);
  return seconds(f0, Clock::now());
}

// Each returns this PE's timed seconds (the fill of the last message excluded).
double runLatency(Ctx& c, std::size_t bytes, long iters, long warmup) {
  double excluded = 0;
  auto t0 = Clock::now();
  for (long i = 0; i < warmup + iters; ++i) {
    if (i == warmup) t0 = Clock::now();
    excluded += fillLast(c, bytes, i, warmup + iters - 1);
    if (c.me == 0) {
      axon::send(c.send, bytes, 1, kDataTag);
      axon::recv(c.recv, bytes, 1, kDataTag);
    } else {
      axon::recv(c.recv, bytes, 0, kDataTag);
      axon::send(c.send, bytes, 0, kDataTag);
    }
  }
  return seconds(t0, Clock::now()) - excluded;
}

double runWindows(Ctx& c, std::size_t bytes, long iters, long warmup, bool both) {
  const bool sends = both || c.me == 0, receives = both || c.me == 1;
  std::vector<axon::Request> reqs;
  std::uint32_t ack = 0;
  double excluded = 0;
  auto t0 = Clock::now();
  for (long w = 0; w < warmup + iters; ++w) {
    if (w == warmup) t0 = Clock::now();
    if (sends) excluded += fillLast(c, bytes, w, warmup + iters - 1);
    reqs.clear();
    if (receives) {
      for (int k = 0; k < kWindow; ++k) reqs.push_back(axon::irecv(c.recv, bytes, c.peer, kDataTag));
    }
    if (sends) {
      for (int k = 0; k < kWindow; ++k) reqs.push_back(axon::isend(c.send, bytes, c.peer, kDataTag));
    }
    axon::waitAll(reqs);
    if (both) continue;
    if (c.me == 0) axon::recv(&ack, sizeof ack, 1, kAckTag);
    else axon::send(&ack, sizeof ack, 0, kAckTag);
  }
  return seconds(t0, Clock::now()) - excluded;
}

double runPingPing(Ctx& c, std::size_t bytes, long iters, long warmup) {
  double excluded = 0;
  auto t0 = Clock::now();
  for (long i = 0; i < warmup + iters; ++i) {
    if (i == warmup) t0 = Clock::now();
    excluded += fillLast(c, bytes, i, warmup + iters - 1);
    if (c.opt.viaHost) {
      // By hand: GPU -> pinned host (a get from this PE's own GPU heap is a plain copy), the
      // exchange between host buffers, then host -> GPU.
      axon::get(c.hostSend, c.send, bytes, c.me);
      axon::Request r[2] = {axon::irecv(c.hostRecv, bytes, c.peer, kDataTag),
                            axon::isend(c.hostSend, bytes, c.peer, kDataTag)};
      axon::waitAll(r, 2);
      axon::put(c.recv, c.hostRecv, bytes, c.me);
    } else {
      axon::Request r[2] = {axon::irecv(c.recv, bytes, c.peer, kDataTag), axon::isend(c.send, bytes, c.peer, kDataTag)};
      axon::waitAll(r, 2);
    }
  }
  return seconds(t0, Clock::now()) - excluded;
}

// The same bytes as one plain copy each between symmetric buffers of this PE's kind: PE 0 (and
// PE 1 for the exchanges) copies into the other's buffer. Seconds per message (0 where none).
double runLimit(Ctx& c, std::size_t bytes, long messages) {
  const Test t = c.opt.test->test;
  const bool both = t == Test::Bibw || t == Test::PingPing;
  axon::barrierAll();
  if (!(c.me == 0 || (both && c.me == 1))) return 0;
  auto t0 = Clock::now();
  if (c.dev) {
    for (long i = 0; i < messages; ++i) axon::put(c.limitDst, c.limitSrc, bytes, c.peer);
    axon::quiet();
  } else {
    auto* dst = static_cast<unsigned char*>(axon::ptr(c.limitDst, c.peer));
    for (long i = 0; i < messages; ++i) std::memcpy(dst, c.limitSrc, bytes);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  return seconds(t0, Clock::now()) / static_cast<double>(messages);
}

// Before the first size PE 0 and PE 1 ping-pong for `ms` milliseconds: a CPU that was idle runs
// slowly for a while on virtual machines, which the first sizes would otherwise measure.
void settle(Ctx& c, int ms) {
  if (!c.measures || ms <= 0) return;
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  std::uint32_t more = 1;
  while (more) {
    if (c.me == 0) {
      more = Clock::now() < end ? 1 : 0;
      axon::send(&more, sizeof more, 1, kAckTag);
      axon::recv(&more, sizeof more, 1, kAckTag);
    } else {
      axon::recv(&more, sizeof more, 0, kAckTag);
      axon::send(&more, sizeof more, 0, kAckTag);
    }
  }
}

struct Row {
  std::size_t bytes;
  long iters, warmup, wrong;
  double timeUs, bwGbs;
  bool hasLimit;
  double limitUs, limitGbs;
};

Row runSize(Ctx& c, std::size_t bytes) {
  const Test t = c.opt.test->test;
  const long iters = itersFor(c.opt, bytes), warmup = warmupFor(c.opt, bytes);
  const long lastIter = warmup + iters - 1;
  if (c.measures && c.opt.validate) fill(c, c.recv, bytes, kPoison, c.me);
  axon::barrierAll();
  double secs = 0;
  if (c.measures) {
    switch (t) {
      case Test::Latency: secs = runLatency(c, bytes, iters, warmup); break;
      case Test::Bw: secs = runWindows(c, bytes, iters, warmup, false); break;
      case Test::Bibw: secs = runWindows(c, bytes, iters, warmup, true); break;
      case Test::PingPing: secs = runPingPing(c, bytes, iters, warmup); break;
    }
  }
  axon::barrierAll();
  long wrong = 0;
  const bool received = t != Test::Bw || c.me == 1;
  if (c.measures && c.opt.validate && received) wrong = countWrong(c, bytes, lastIter, c.peer);
  if (c.me == 1) {
    axon::p<double>(&c.box[kWrong1], static_cast<double>(wrong), 0);
    axon::p<double>(&c.box[kTime1], secs, 0);
  }
  axon::barrierAll();
  Row row{bytes, iters, warmup, 0, 0, 0, false, 0, 0};
  const long messages = c.opt.test->windowed ? iters * kWindow : iters;
  if (c.me == 0) {
    row.wrong = wrong + static_cast<long>(c.box[kWrong1]);
    const double t1 = c.box[kTime1];
    switch (t) {
      case Test::Latency: row.timeUs = secs * 1e6 / iters / 2; break;
      case Test::Bw: row.timeUs = secs * 1e6 / messages; break;
      case Test::Bibw: row.timeUs = std::max(secs, t1) * 1e6 / messages; break;
      case Test::PingPing: row.timeUs = std::max(secs, t1) * 1e6 / messages; break;
    }
    row.bwGbs = t == Test::Bibw ? static_cast<double>(bytes) * messages / secs / 1e9 +
                                      static_cast<double>(bytes) * messages / t1 / 1e9
                                : bytes / (row.timeUs * 1e3);
  }
  if (c.limitSrc) {
    const long copies = std::max<long>(1, std::min<long>(messages, 200));
    const double per = c.measures ? runLimit(c, bytes, copies) : (axon::barrierAll(), 0.0);
    if (c.me == 1) axon::p<double>(&c.box[kLimit1], per, 0);
    axon::barrierAll();
    if (c.me == 0) {
      const double per1 = c.box[kLimit1];
      const bool both = t == Test::Bibw || t == Test::PingPing;
      row.hasLimit = true;
      row.limitUs = (both ? std::max(per, per1) : per) * 1e6;
      row.limitGbs = t == Test::Bibw ? bytes / per / 1e9 + bytes / per1 / 1e9 : bytes / (row.limitUs * 1e3);
    }
  }
  return row;
}

std::string placementText(const Options& o) { return std::string(o.dev[0] ? "D" : "H") + " " + (o.dev[1] ? "D" : "H"); }

void emitHeader(const Ctx& c, const std::vector<std::size_t>& sizes, const std::string& limitName) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const Options& o = c.opt;
  const bool gpu = axon::gpuEnabled();
  std::string s = "{\"type\": \"header\", \"tool\": \"axon_bench\", \"test\": " + jsonString(o.test->name) +
                  ", \"metric\": " + jsonString(o.test->metric) + ", \"time_label\": " + jsonString(o.test->timeLabel) +
                  ", \"pes\": " + std::to_string(axon::nPes()) + ", \"backend\": " + jsonString(gpu ? "gpu" : "host") +
                  ", \"gpu_unavailable_reason\": " + jsonString(axon::gpuUnavailableReason()) +
                  ", \"gpu_device\": " + std::to_string(gpu ? axon::gpuDevice() : -1) +
                  ", \"placement\": " + jsonString(placementText(o)) + ", \"local\": " + jsonString(o.dev[0] ? "D" : "H") +
                  ", \"remote\": " + jsonString(o.dev[1] ? "D" : "H") +
                  ", \"window\": " + std::to_string(o.test->windowed ? kWindow : 1) +
                  ", \"validate\": " + (o.validate ? "true" : "false") + ", \"via_host\": " + (o.viaHost ? "true" : "false") +
                  ", \"settle_ms\": " + std::to_string(o.settleMs) +
                  ", \"iters\": " + (o.iters > 0 ? std::to_string(o.iters) : "null") +
                  ", \"warmup\": " + (o.warmup >= 0 ? std::to_string(o.warmup) : "null") +
                  ", \"limit_name\": " + (limitName.empty() ? std::string("null") : jsonString(limitName)) +
                  ", \"protocols\": " +
                  jsonString("8 B: " + axon::explainMessage(8, c.peer, c.dev) + "; " + std::to_string(sizes.back()) +
                             " B: " + axon::explainMessage(sizes.back(), c.peer, c.dev)) +
                  ", \"hostname\": " + jsonString(host) +
                  ", \"units\": {\"time_us\": \"microseconds\", \"bw_gbs\": \"GB/s = 1e9 bytes per second\"}, \"sizes\": [";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  emitLine(s + "]}");
}

void emitRow(const Ctx& c, const Row& r) {
  std::string s = "{\"type\": \"result\", \"test\": " + jsonString(c.opt.test->name) + ", \"size\": " +
                  std::to_string(r.bytes) + ", \"iters\": " + std::to_string(r.iters) + ", \"warmup\": " +
                  std::to_string(r.warmup) + ", \"time_us\": " + jsonNumber(r.timeUs) + ", \"bw_gbs\": " +
                  jsonNumber(r.bwGbs) + ", \"wrong\": " + (c.opt.validate ? std::to_string(r.wrong) : "null");
  if (r.hasLimit) {
    s += ", \"limit\": {\"time_us\": " + jsonNumber(r.limitUs) + ", \"bw_gbs\": " + jsonNumber(r.limitGbs) + "}";
  }
  emitLine(s + "}");
}

int run(Options opt) {
  axon::init();
  if (!opt.placementGiven && (axon::gpuEnabled() || opt.viaHost)) opt.dev[0] = opt.dev[1] = true;
  Ctx c;
  c.opt = opt;
  c.me = axon::myPe();
  if (axon::nPes() < 2) {
    if (c.me == 0) emitError("axon_bench", "run on at least 2 PEs (axon run -n 2 axon_bench ...)", true);
    axon::finalize();
    return 2;
  }
  if ((opt.dev[0] || opt.dev[1]) && !axon::gpuEnabled()) {
    if (c.me == 0) {
      emitError("axon_bench", "placement " + placementText(opt) + " needs GPU memory, but the GPU backend is off: " +
                                  axon::gpuUnavailableReason(), true);
    }
    axon::finalize();
    return 2;
  }
  c.peer = c.me == 0 ? 1 : 0;
  c.measures = c.me < 2;
  c.dev = c.me < 2 && opt.dev[c.me];
  const std::vector<std::size_t> sizes = sizeSweep(opt.minBytes, opt.maxBytes, opt.factor);
  const std::size_t cap = sizes.back();
  // GPU buffers come from the GPU heap, a collective allocation: every PE makes them when either
  // measuring PE uses them, and only that PE touches its own.
  const bool anyDev = opt.dev[0] || opt.dev[1];
  unsigned char* gpuSend = anyDev ? static_cast<unsigned char*>(axon::malloc(cap)) : nullptr;
  unsigned char* gpuRecv = anyDev ? static_cast<unsigned char*>(axon::malloc(cap)) : nullptr;
  const std::size_t rounded = (cap + 4095) / 4096 * 4096;
  std::unique_ptr<unsigned char, decltype(&std::free)> hostSend(nullptr, &std::free), hostRecv(nullptr, &std::free);
  if (c.dev) {
    c.send = gpuSend;
    c.recv = gpuRecv;
    c.staging.resize(cap);
  } else {
    hostSend.reset(static_cast<unsigned char*>(std::aligned_alloc(4096, rounded)));
    hostRecv.reset(static_cast<unsigned char*>(std::aligned_alloc(4096, rounded)));
    if (!hostSend || !hostRecv) throw Error(ErrorCode::OutOfMemory, "cannot allocate 2 x " + std::to_string(cap) + " bytes");
    std::memset(hostSend.get(), 0, cap);
    std::memset(hostRecv.get(), 0, cap);
    c.send = hostSend.get();
    c.recv = hostRecv.get();
  }
  if (opt.viaHost) {
    c.hostSend = static_cast<unsigned char*>(axon::mallocHost(cap));
    c.hostRecv = static_cast<unsigned char*>(axon::mallocHost(cap));
  }
  c.box = static_cast<double*>(axon::mallocHost(8 * sizeof(double)));
  std::memset(c.box, 0, 8 * sizeof(double));
  axon::barrierAll();
  // The copy limit needs both measuring PEs' buffers of one kind, mapped by each other.
  std::string limitName;
  const bool sameKind = opt.dev[0] == opt.dev[1] && !opt.viaHost;
  unsigned char* limitHost[2] = {nullptr, nullptr};
  if (sameKind && opt.dev[0]) {
    std::int32_t mapped = c.me < 2 ? (axon::ptr(gpuRecv, c.peer) != nullptr ? 1 : 0) : 1;
    axon::allreduce(axon::Team::world(), &mapped, &mapped, 1, axon::ReduceOp::Min);
    if (mapped) {
      c.limitSrc = gpuSend;
      c.limitDst = gpuRecv;
      limitName = "one cuMemcpy between the two PEs' GPU buffers (a blocking put)";
    }
  } else if (sameKind) {
    // Symmetric host buffers of the same size; where the host heap cannot hold them, no limit.
    std::int32_t ok = 1;
    try {
      limitHost[0] = static_cast<unsigned char*>(axon::mallocHost(cap));
      limitHost[1] = static_cast<unsigned char*>(axon::mallocHost(cap));
    } catch (const Error&) {
      ok = 0;
    }
    std::int32_t mapped = ok && (c.me >= 2 || axon::ptr(limitHost[1], c.peer) != nullptr) ? 1 : 0;
    axon::allreduce(axon::Team::world(), &mapped, &mapped, 1, axon::ReduceOp::Min);
    if (mapped) {
      c.limitSrc = limitHost[0];
      c.limitDst = limitHost[1];
      std::memset(c.limitSrc, 1, cap);
      limitName = "memcpy between the two PEs' host mappings";
    }
  }
  if (c.me == 0) emitHeader(c, sizes, limitName);
  settle(c, c.opt.settleMs);
  axon::barrierAll();
  long wrongTotal = 0;
  for (std::size_t bytes : sizes) {
    const Row r = runSize(c, bytes);
    if (c.me == 0) {
      emitRow(c, r);
      wrongTotal += r.wrong;
    }
  }
  if (c.me == 0) emitLine("{\"type\": \"done\", \"wrong\": " + std::to_string(wrongTotal) + "}");
  axon::barrierAll();
  for (unsigned char* p : limitHost) {
    if (p) axon::free(p);
  }
  axon::free(c.box);
  if (opt.viaHost) {
    axon::free(c.hostRecv);
    axon::free(c.hostSend);
  }
  if (gpuRecv) axon::free(gpuRecv);
  if (gpuSend) axon::free(gpuSend);
  axon::finalize();
  return wrongTotal == 0 ? 0 : 1;
}

}  // namespace

bool isP2pTest(const char* name) {
  for (const auto& t : kTests) {
    if (std::strcmp(name, t.name) == 0) return true;
  }
  return false;
}

int runP2pBench(int argc, char** argv) {
  auto opt = parseCommandLine("axon_bench", parse, argc, argv);
  if (!opt) return 2;
  try {
    return run(*opt);
  } catch (const std::exception& e) {
    if (!axon::isInitialized() || axon::myPe() == 0) emitError("axon_bench", e.what(), false);
    else std::fprintf(stderr, "axon_bench: %s\n", e.what());
    return 1;
  }
}

}  // namespace axon::bench
