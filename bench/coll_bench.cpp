// The collective tests of axon_bench (nccl-tests conventions): for each size, `iters` timed calls
// out of place, then in place, after `warmup` untimed ones; then one validated call of each.
//
//   axon run -n N axon_bench allreduce|broadcast|reduce|allgather|reduce_scatter|alltoall
//       [-b MIN -e MAX -f FACTOR | -m MIN:MAX] [-i ITERS] [-x WARMUP] [-t TYPE] [-o OP] [-r ROOT]
//       [-d D|H] [--no-validate] [--nccl LIBNCCL] [--trials T]
//
// With -d D (the default where the GPU backend is on) the calls are the stream-ordered forms:
// `iters` calls enqueued back to back, then one wait for the stream, as nccl-tests does. With --nccl, NCCL runs the same sizes on the same
// buffers and stream right after axon, in the same run; its rows carry "impl": "nccl".
//
// As in nccl-tests: size is the bytes of the largest buffer of a PE (allgather: the output;
// reduce_scatter: the input; alltoall: either), count its elements; time is the slowest PE's
// average per call (microseconds; with --trials T, the median of T such averages, each over `iters`
// calls after a barrier: a stall of a few milliseconds that hits one trial, as either library
// meets now and then on a shared machine, then moves no row); algbw = size / time; busbw = algbw * factor, with factor
// 2(n-1)/n (allreduce), (n-1)/n (allgather, reduce_scatter, alltoall), 1 (broadcast, reduce).
// #wrong counts elements of the validated call that differ from the exact expected values.
#include "coll_bench.hpp"

#include <axon/axon.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <cstring>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "bench_stream.hpp"
#include "coll_values.hpp"
#include "nccl_peer.hpp"

namespace axon::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct CollOptions {
  Collective coll = Collective::Allreduce;
  std::size_t minBytes = 8, maxBytes = std::size_t{4} << 20, factor = 2;
  long iters = -1, warmup = -1;
  long trials = 1;  // timed runs of `iters` calls per size and side; the median is reported
  DataType type = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;
  bool device = false;
  bool placementGiven = false;  // without -d: GPU buffers where the GPU backend is on
  bool validate = true;
  std::string nccl;  // libnccl to compare with ("" = none)
};

CollOptions parseColl(int argc, char** argv) {
  CollOptions o;
  std::vector<std::string> args(argv + 1, argv + argc);
  o.coll = pickByName<Collective>(args.at(0), "test", kCollectives, collectiveName);
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UsageError{a + " needs a value"};
      return args[++i];
    };
    if (a == "-m" || a == "--message-size") {
      std::string v = value();
      auto colon = v.find(':');
      if (colon == std::string::npos) o.maxBytes = parseSize(v, "-m MAX");
      else {
        if (colon > 0) o.minBytes = parseSize(v.substr(0, colon), "-m MIN");
        if (colon + 1 < v.size()) o.maxBytes = parseSize(v.substr(colon + 1), "-m MAX");
      }
    } else if (a == "-b" || a == "--minbytes") o.minBytes = parseSize(value(), "-b");
    else if (a == "-e" || a == "--maxbytes") o.maxBytes = parseSize(value(), "-e");
    else if (a == "-f" || a == "--stepfactor") o.factor = static_cast<std::size_t>(parseCount(value(), "-f", 2));
    else if (a == "-i" || a == "--iterations") o.iters = parseCount(value(), "-i", 1);
    else if (a == "-x" || a == "--warmup") o.warmup = parseCount(value(), "-x", 0);
    else if (a == "--trials") o.trials = parseCount(value(), "--trials", 1);
    else if (a == "-t" || a == "--dtype") o.type = pickByName<DataType>(value(), "-t", kTypes, dataTypeName);
    else if (a == "-o" || a == "--op") o.op = pickByName<ReduceOp>(value(), "-o", kOps, reduceOpName);
    else if (a == "-r" || a == "--root") o.root = static_cast<int>(parseCount(value(), "-r", 0));
    else if (a == "-d" || a == "--placement") {
      std::string v = value();
      if (v != "D" && v != "H") throw UsageError{"-d takes D (GPU memory) or H (host memory) for the collectives, got '" + v + "'"};
      o.device = v == "D";
      o.placementGiven = true;
    } else if (a == "--no-validate") o.validate = false;
    else if (a == "--nccl") o.nccl = value();
    else throw UsageError{"unknown option " + a};
  }
  if (o.minBytes > o.maxBytes) throw UsageError{"the smallest size is larger than the largest"};
  return o;
}

class Buffers {
 public:
  Buffers(std::size_t bytes, bool device) : device_(device) {
    if (device) ptr_ = axon::malloc(bytes ? bytes : 1);
    else host_.resize(bytes ? bytes : 1);
  }
  ~Buffers() {
    if (device_) axon::free(ptr_);
  }
  char* data() { return device_ ? static_cast<char*>(ptr_) : host_.data(); }

 private:
  bool device_;
  void* ptr_ = nullptr;
  std::vector<char> host_;
};

// One call of the implementation under test: axon's blocking call (host buffers), axon's
// stream-ordered call (device buffers) or NCCL's; `sync` waits for what the calls enqueued.
struct Impl {
  NcclPeer* nccl = nullptr;  // null: axon
  bool onStream = false;
  Stream stream = nullptr;

  void call(const CollOptions& o, const Team& team, const char* src, char* dst, const Shape& s) const {
    if (nccl) return nccl->run(o.coll, src, dst, s.arg, o.type, o.op, o.root, stream);
    if (onStream) {
      switch (o.coll) {
        case Collective::Broadcast: broadcastOnStream(team, src, dst, s.arg, o.type, o.root, stream); break;
        case Collective::Reduce: reduceOnStream(team, src, dst, s.arg, o.type, o.op, o.root, stream); break;
        case Collective::Allreduce: allreduceOnStream(team, src, dst, s.arg, o.type, o.op, stream); break;
        case Collective::Allgather: allgatherOnStream(team, src, dst, s.arg, o.type, stream); break;
        case Collective::ReduceScatter: reduceScatterOnStream(team, src, dst, s.arg, o.type, o.op, stream); break;
        case Collective::Alltoall: alltoallOnStream(team, src, dst, s.arg, o.type, stream); break;
        case Collective::Barrier: barrierOnStream(team, stream); break;
      }
      return;
    }
    switch (o.coll) {
      case Collective::Broadcast: broadcast(team, src, dst, s.arg, o.type, o.root); break;
      case Collective::Reduce: reduce(team, src, dst, s.arg, o.type, o.op, o.root); break;
      case Collective::Allreduce: allreduce(team, src, dst, s.arg, o.type, o.op); break;
      case Collective::Allgather: allgather(team, src, dst, s.arg, o.type); break;
      case Collective::ReduceScatter: reduceScatter(team, src, dst, s.arg, o.type, o.op); break;
      case Collective::Alltoall: alltoall(team, src, dst, s.arg, o.type); break;
      case Collective::Barrier: barrier(team); break;
    }
  }
  void sync() const {
    if (nccl || onStream) streamSynchronize(stream);
  }
};

struct Measured {
  double timeUs;
  long wrong;  // -1: not validated
};

// In place: the conventions of axon/collectives.hpp (alltoall has none: out of place twice).
Measured measure(const CollOptions& o, const Impl& impl, const Team& team, const Shape& s, bool inPlace, long iters,
                 long warmup) {
  const std::size_t e = dataTypeSize(o.type);
  const int me = team.myPe(), n = team.nPes();
  Buffers a(std::max(s.src, s.dst) * e, o.device), b(s.dst * e, o.device);
  const char* src = a.data();
  char* dst = b.data();
  if (inPlace) {
    dst = a.data();
    if (o.coll == Collective::Allgather) src = a.data() + me * s.arg * e;
    if (o.coll == Collective::ReduceScatter) dst = a.data() + me * s.arg * e;
    if (o.coll == Collective::Alltoall) dst = b.data();
  }
  for (long i = 0; i < warmup; ++i) impl.call(o, team, src, dst, s);
  impl.sync();
  std::vector<double> trials;
  for (long t = 0; t < o.trials; ++t) {
    barrier(team);
    const auto t0 = Clock::now();
    for (long i = 0; i < iters; ++i) impl.call(o, team, src, dst, s);
    impl.sync();
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / static_cast<double>(iters);
    allreduce(team, &us, &us, 1, DataType::Float64, ReduceOp::Max);  // the slowest PE's
    trials.push_back(us);
  }
  const double us = median(trials);
  if (!o.validate) return {us, -1};
  // One validated call on fresh, exactly representable inputs.
  std::vector<char> in(s.src * e), out;
  const bool rootOnly = o.coll == Collective::Reduce;
  // Broadcast: only the root holds the data; the others hold zeros (no input is zero), so that an
  // in-place call that delivers nothing is counted wrong.
  const bool zeros = o.coll == Collective::Broadcast && me != o.root;
  for (std::size_t i = 0; i < s.src; ++i) storeAt(o.type, in.data(), i, zeros ? 0.0 : inputAt(o.op, me, i));
  // GPU buffers are symmetric (axon::malloc): a put/get to this PE itself copies them.
  if (o.device) axon::put(const_cast<char*>(src), in.data(), in.size(), myPe());
  else std::memcpy(const_cast<char*>(src), in.data(), in.size());
  impl.call(o, team, src, dst, s);
  impl.sync();
  out.resize(s.dst * e);
  if (o.device) axon::get(out.data(), dst, out.size(), myPe());
  else std::memcpy(out.data(), dst, out.size());
  long wrong = 0;
  const std::size_t checked = rootOnly && me != o.root ? 0 : s.dst;  // reduce: only the root's dst
  for (std::size_t i = 0; i < checked; ++i) {
    if (loadAt(o.type, out.data(), i) != wantedAt(o.coll, o.op, n, me, o.root, s.arg, i)) ++wrong;
  }
  long total = wrong;
  allreduce(team, &wrong, &total, 1, DataType::Int64, ReduceOp::Sum);
  return {us, total};
}

std::string sideJson(const Measured& m, double bytes, double factor) {
  const double algbw = bytes / (m.timeUs * 1e3);
  return "{\"time_us\": " + jsonNumber(m.timeUs) + ", \"algbw_gbs\": " + jsonNumber(algbw) +
         ", \"busbw_gbs\": " + jsonNumber(algbw * factor) + ", \"wrong\": " +
         (m.wrong < 0 ? std::string("null") : std::to_string(m.wrong)) + "}";
}

// The SMs a GPU kernel of axon's call occupies (", \"blocks\": 64, ..."); nothing for a peer or a
// path that runs no kernel.
std::string smsJson(const Explanation* e) {
  if (!e || e->blocks <= 0) return "";
  return ", \"blocks\": " + std::to_string(e->blocks) + ", \"threads_per_block\": " +
         std::to_string(e->threadsPerBlock) + ", \"blocks_per_sm\": " + std::to_string(e->blocksPerSm) +
         ", \"sms\": " + jsonNumber(e->sms) + ", \"device_sms\": " + std::to_string(e->deviceSms);
}

}  // namespace

bool isCollectiveTest(const char* name) {
  for (int i = 0; i < kCollectives; ++i) {
    const auto c = static_cast<Collective>(i);
    if (c != Collective::Barrier && std::strcmp(name, collectiveName(c)) == 0) return true;
  }
  return false;
}

int runCollectiveBench(int argc, char** argv) {
  CollOptions o;
  try {
    o = parseColl(argc, argv);
  } catch (const UsageError& e) {
    if (isRankZero()) emitError("axon_bench", e.message, true);
    return 2;
  }
  axon::init();
  Team world = Team::world();
  const int n = world.nPes(), me = world.myPe();
  if (o.root >= n) {
    if (me == 0) emitError("axon_bench", "-r " + std::to_string(o.root) + " is not a PE of " + std::to_string(n), true);
    axon::finalize();
    return 2;
  }
  if (!o.placementGiven) {
    o.device = gpuEnabled();
    if (!o.device) o.nccl.clear();  // nothing to compare on without GPUs (axon bench says so)
  }
  if (!o.nccl.empty() && !o.device) {
    if (me == 0) emitError("axon_bench", "--nccl compares on GPU buffers: add -d D", true);
    axon::finalize();
    return 2;
  }
  if (o.device && !gpuEnabled()) {
    if (me == 0) emitError("axon_bench", std::string("-d D needs GPU memory: ") + gpuUnavailableReason(), true);
    axon::finalize();
    return 2;
  }
  const std::size_t e = dataTypeSize(o.type);
  const double factor = busFactor(o.coll, n);
  const auto sizes = sizeSweep(o.minBytes, o.maxBytes, o.factor);
  if (me == 0) {
    std::string list;
    for (auto s : sizes) list += (list.empty() ? "" : ", ") + std::to_string(s);
    emitLine(std::string("{\"type\": \"header\", \"test\": ") + jsonString(collectiveName(o.coll)) +
             ", \"kind\": \"collective\", \"pes\": " + std::to_string(n) + ", \"backend\": " +
             jsonString(gpuEnabled() ? "gpu" : "host") + ", \"dtype\": " + jsonString(dataTypeName(o.type)) +
             ", \"redop\": " + jsonString(reduceOpName(o.op)) + ", \"root\": " + std::to_string(o.root) +
             ", \"placement\": " + jsonString(o.device ? "D" : "H") + ", \"bus_factor\": " + jsonNumber(factor) +
             ", \"validate\": " + (o.validate ? "true" : "false") + ", \"trials\": " + std::to_string(o.trials) +
             ", \"sizes\": [" + list + "]}");
  }
  // Idle (virtual) CPUs wake up slowly: a fixed number of barriers first (time-based would let
  // the PEs disagree on how many), so that the first size is not measured cold.
  for (int i = 0; i < 2000; ++i) barrier(world);
  std::unique_ptr<NcclPeer> nccl;
  if (!o.nccl.empty()) {
    try {
      nccl = NcclPeer::open(o.nccl);
    } catch (const std::exception& ex) {
      if (me == 0) emitError("axon_bench", std::string("--nccl: ") + ex.what(), false);
      axon::finalize();
      return 1;
    }
    if (me == 0) {
      emitLine("{\"type\": \"peer\", \"impl\": \"nccl\", \"version\": " + jsonString(nccl->version()) +
               ", \"library\": " + jsonString(o.nccl) + "}");
    }
  }
  std::unique_ptr<BenchStream> stream;
  if (o.device) {
    try {
      stream = std::make_unique<BenchStream>();
    } catch (const std::exception& ex) {
      if (me == 0) emitError("axon_bench", ex.what(), false);
      axon::finalize();
      return 1;
    }
  }
  const Impl axonImpl{nullptr, o.device, stream ? stream->get() : nullptr};
  long wrongTotal = 0;
  for (std::size_t bytes : sizes) {
    const Shape s = shapeOf(o.coll, bytes, e, n);
    if (s.printed == 0) continue;  // smaller than one element per PE
    const long iters = o.iters > 0 ? o.iters : bytes <= 65536 ? 200 : 20;
    const long warmup = o.warmup >= 0 ? o.warmup : bytes <= 65536 ? 20 : 5;
    const double size = static_cast<double>(s.printed * e);
    // `how`: what axon's call ran (its algorithm and the SMs its kernel occupies); null for a peer.
    auto report = [&](const char* impl, const Explanation* how, const Measured& oop, const Measured& ip) {
      if (me != 0) return;
      const long wrong = std::max(oop.wrong, 0L) + std::max(ip.wrong, 0L);
      wrongTotal += wrong;
      emitLine("{\"type\": \"result\", \"impl\": " + jsonString(impl) + ", \"size\": " + std::to_string(s.printed * e) +
               ", \"count\": " + std::to_string(s.printed) + ", \"dtype\": " + jsonString(dataTypeName(o.type)) +
               ", \"redop\": " + jsonString(reduceOpName(o.op)) + ", \"root\": " + std::to_string(o.root) +
               ", \"algorithm\": " + jsonString(how ? how->algorithm : impl) + smsJson(how) +
               ", \"time_us\": " + jsonNumber(oop.timeUs) +
               ", \"bw_gbs\": " + jsonNumber(size / (oop.timeUs * 1e3) * factor) + ", \"wrong\": " +
               (o.validate ? std::to_string(wrong) : "null") + ", \"out_of_place\": " + sideJson(oop, size, factor) +
               ", \"in_place\": " + sideJson(ip, size, factor) + "}");
    };
    {
      Measured oop = measure(o, axonImpl, world, s, false, iters, warmup);
      Measured ip = measure(o, axonImpl, world, s, true, iters, warmup);
      const Explanation how = explain(o.coll, world, s.arg, o.type);
      report("axon", &how, oop, ip);
    }
    if (nccl) {
      const Impl ncclImpl{nccl.get(), true, stream->get()};
      Measured oop = measure(o, ncclImpl, world, s, false, iters, warmup);
      Measured ip = measure(o, ncclImpl, world, s, true, iters, warmup);
      report("nccl", nullptr, oop, ip);
    }
  }
  nccl.reset();
  stream.reset();
  if (me == 0) emitLine("{\"type\": \"done\", \"wrong\": " + std::to_string(wrongTotal) + "}");
  axon::finalize();
  return wrongTotal == 0 ? 0 : 1;
}

}  // namespace axon::bench
