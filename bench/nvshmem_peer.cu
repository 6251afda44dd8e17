// axon_nvshmem_peer: NVSHMEM as a comparison peer of `axon bench --compare`. The same tests,
// sizes, iteration counts and validation as axon_bench, run through NVSHMEM on the same GPUs,
// right after axon's own run. Built only where NVSHMEM is found (cmake/AxonNvshmem.cmake).
//
//   axon run -n N axon_nvshmem_peer TEST --sizes 8,64,... [-i ITERS] [-x WARMUP]
//                                  [--dtype T] [--op OP] [--root R] [--no-validate]
//
// TEST: allreduce, broadcast, allgather, reduce_scatter, alltoall (NVSHMEM has no rooted reduce),
// or latency, put_signal_rtt, pingping, bw, bibw between PE 0 and PE 1 (the others only take part
// in the barriers), with axon_bench's meanings (see bench/axon_bench.cpp). One more, run by hand
// beside gpu_bench's pingpong (not a test of axon bench): device_put_signal_rtt, a ping-pong
// between two one-thread kernels, nvshmem_putmem_signal + nvshmem_signal_wait_until, round trip
// timed on the GPU (%globaltimer), as gpu_bench times axon's device put_signal.
//
// axon is the control plane only: its launcher starts the PEs, axon::init picks the GPU (the peer
// runs on the one axon chose), PE 0's NVSHMEM unique id reaches the others by axon::broadcast,
// and times and #wrong are combined by axon's host allreduce. Every measured byte moves through
// NVSHMEM, between buffers of NVSHMEM's own symmetric heap (nvshmem_malloc). NVLink multicast is
// forced off (NVSHMEM_DISABLE_NVLS=1).
//
// The calls are NVSHMEM's host-initiated, stream-ordered ones: the collectives
// nvshmemx_*_on_stream on NVSHMEM_TEAM_WORLD; point to point nvshmemx_putmem_signal_on_stream,
// putmem_nbi_on_stream + quiet_on_stream + signal_op_on_stream, and
// signal_wait_until_on_stream for every wait. As in axon_bench's collectives, `iters` calls (or
// exchanges, or windows) are enqueued back to back and the stream is waited for once. For the
// point-to-point tests that hides NVSHMEM's host overhead behind the GPU's work, where
// axon_bench waits on the host for every exchange: the comparison favours NVSHMEM.
//
// In place: allreduce and broadcast only, where OpenSHMEM lets source and dest be the same
// array; fcollect and reducescatter take no slice of dest as their source, so those in-place
// sides are null. alltoall has no in-place form: out of place again, as axon_bench does.
// Validation: one more call (exchange, window) after the timed ones, on the drivers' exact
// inputs (coll_values.hpp, p2p_conventions.hpp). Every wait for the GPU is bounded by
// AXON_TIMEOUT. Output: JSON lines on PE 0 (peer, result, note, done, error), read by axon bench.
#include <axon/axon.hpp>
#include <axon/collectives.hpp>
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_cli.hpp"
#include "coll_values.hpp"
#include "p2p_conventions.hpp"

namespace axon::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kProgram = "axon_nvshmem_peer";

// A GPU wait that ran past AXON_TIMEOUT: the run cannot go on (the stream stays blocked).
struct StuckError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void cudaCheck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void nvshmemCheck(int status, const char* what) {
  if (status != 0) throw std::runtime_error(std::string(what) + " failed (status " + std::to_string(status) + ")");
}

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

enum class P2p { Latency, PutSignalRtt, PingPing, Bw, Bibw, DevicePutSignalRtt };
struct P2pInfo {
  P2p test;
  const char* name;
  bool windowed;
};
const P2pInfo kP2p[] = {
    {P2p::Latency, "latency", false}, {P2p::PutSignalRtt, "put_signal_rtt", false},
    {P2p::PingPing, "pingping", false}, {P2p::Bw, "bw", true}, {P2p::Bibw, "bibw", true},
    {P2p::DevicePutSignalRtt, "device_put_signal_rtt", false},
};
const Collective kCollectivesDriven[] = {Collective::Allreduce, Collective::Broadcast, Collective::Allgather,
                                         Collective::ReduceScatter, Collective::Alltoall};

struct Options {
  std::string test;
  bool collective = false;
  Collective coll = Collective::Allreduce;
  const P2pInfo* p2p = nullptr;
  std::vector<std::size_t> sizes;
  long iters = -1, warmup = -1;
  DataType type = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;
  bool validate = true;
};

Options parse(int argc, char** argv) {
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) throw UsageError{"no test given (e.g. axon_nvshmem_peer allreduce --sizes 8,1024)"};
  o.test = args[0];
  for (Collective c : kCollectivesDriven) {
    if (o.test == collectiveName(c)) o.collective = true, o.coll = c;
  }
  for (const auto& t : kP2p) {
    if (o.test == t.name) o.p2p = &t;
  }
  if (!o.collective && o.p2p == nullptr) {
    throw UsageError{"test '" + o.test + "' is not one NVSHMEM is compared on (allreduce, broadcast, allgather, "
                     "reduce_scatter, alltoall, latency, put_signal_rtt, pingping, bw, bibw, device_put_signal_rtt)"};
  }
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UsageError{a + " needs a value"};
      return args[++i];
    };
    if (a == "--sizes") {
      std::string list = value();
      for (std::size_t at = 0; at <= list.size();) {
        std::size_t comma = std::min(list.find(',', at), list.size());
        if (comma > at) o.sizes.push_back(parseSize(list.substr(at, comma - at), "--sizes"));
        at = comma + 1;
      }
    } else if (a == "-i" || a == "--iters") o.iters = parseCount(value(), "-i", 1);
    else if (a == "-x" || a == "--warmup") o.warmup = parseCount(value(), "-x", 0);
    else if (a == "--dtype") o.type = pickByName<DataType>(value(), "--dtype", kTypes, dataTypeName);
    else if (a == "--op") o.op = pickByName<ReduceOp>(value(), "--op", kOps, reduceOpName);
    else if (a == "--root") o.root = static_cast<int>(parseCount(value(), "--root", 0));
    else if (a == "--no-validate") o.validate = false;
    else throw UsageError{"unknown option " + a};
  }
  if (o.sizes.empty()) throw UsageError{"--sizes needs at least one size"};
  return o;
}

// ---------------------------------------------------------------------------------------------
// NVSHMEM over axon's launcher, and bounded waits
// ---------------------------------------------------------------------------------------------

double timeoutSeconds() {
  const char* text = std::getenv("AXON_TIMEOUT");
  const double v = text ? std::strtod(text, nullptr) : 0;
  return v > 0 ? v : 300;
}

// What a stuck stream was last told to wait for, for the timeout's message.
struct LastWait {
  const std::uint64_t* sig = nullptr;
  std::uint64_t want = 0;
};

// Waits for everything enqueued on `stream`, at most AXON_TIMEOUT seconds (spinning, as a
// synchronize does: the time it takes to notice is measured too).
void waitStream(cudaStream_t stream, const std::string& what, const LastWait& last = {}) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeoutSeconds());
  while (true) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) cudaCheck(e, what.c_str());
    if (Clock::now() < deadline) continue;
    std::string msg = "PE " + std::to_string(myPe()) + ": " + what + " did not finish within AXON_TIMEOUT=" +
                      jsonNumber(timeoutSeconds()) + " s";
    if (last.sig != nullptr) {
      std::uint64_t seen = 0;  // read beside the blocked stream (it is a non-blocking stream)
      const bool read = cudaMemcpy(&seen, last.sig, sizeof seen, cudaMemcpyDeviceToHost) == cudaSuccess;
      char addr[32];
      std::snprintf(addr, sizeof addr, "%p", static_cast<const void*>(last.sig));
      msg += "; its last wait: signal at " + std::string(addr) + " >= " + std::to_string(last.want) +
             ", seen " + (read ? std::to_string(seen) : std::string("(unreadable)"));
    }
    throw StuckError(msg);
  }
}

void initNvshmem(std::size_t heapBytes) {
  setenv("NVSHMEM_DISABLE_NVLS", "1", 1);  // never NVLink multicast on these machines
  setenv("NVSHMEM_SYMMETRIC_SIZE", std::to_string(heapBytes).c_str(), 0);
  // axon's launcher starts the PEs of one node: no network transport to load.
  const char* local = std::getenv("AXON_LOCAL_SIZE");
  const char* world = std::getenv("AXON_WORLD_SIZE");
  if (local && world && std::strcmp(local, world) == 0) setenv("NVSHMEM_REMOTE_TRANSPORT", "none", 0);
  cudaCheck(cudaSetDevice(gpuDevice()), "cudaSetDevice");
  nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
  if (myPe() == 0) nvshmemCheck(nvshmemx_get_uniqueid(&id), "nvshmemx_get_uniqueid");
  broadcast(Team::world(), &id, &id, sizeof id, DataType::Uint8, 0);
  nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
  nvshmemCheck(nvshmemx_set_attr_uniqueid_args(myPe(), nPes(), &id, &attr), "nvshmemx_set_attr_uniqueid_args");
  nvshmemCheck(nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr), "nvshmemx_init_attr");
  if (nvshmem_my_pe() != myPe() || nvshmem_n_pes() != nPes()) {
    throw std::runtime_error("NVSHMEM numbered this PE " + std::to_string(nvshmem_my_pe()) + " of " +
                             std::to_string(nvshmem_n_pes()) + ", axon " + std::to_string(myPe()) + " of " +
                             std::to_string(nPes()));
  }
}

std::string nvshmemVersion() {
  int major = 0, minor = 0, patch = 0;
  nvshmemx_vendor_get_version_info(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// NVSHMEM's symmetric memory, freed collectively; not while an error unwinds (nvshmem_free waits
// for every PE, and the others may be gone: the process ends anyway).
class SymBuffer {
 public:
  explicit SymBuffer(std::size_t bytes) : ptr_(nvshmem_malloc(std::max<std::size_t>(bytes, 1))) {
    if (ptr_ == nullptr) throw std::runtime_error("nvshmem_malloc(" + std::to_string(bytes) + ") failed");
  }
  ~SymBuffer() {
    if (std::uncaught_exceptions() == 0) nvshmem_free(ptr_);
  }
  SymBuffer(const SymBuffer&) = delete;
  SymBuffer& operator=(const SymBuffer&) = delete;
  unsigned char* get() const { return static_cast<unsigned char*>(ptr_); }

 private:
  void* ptr_;
};

class CudaStream {
 public:
  CudaStream() { cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~CudaStream() { cudaStreamDestroy(stream_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

double slowest(double seconds) {
  allreduce(Team::world(), &seconds, &seconds, 1, DataType::Float64, ReduceOp::Max);
  return seconds;
}

long summed(long count) {
  allreduce(Team::world(), &count, &count, 1, DataType::Int64, ReduceOp::Sum);
  return count;
}

std::string resultHead(const Options& o, std::size_t size, long iters, long warmup) {
  return "{\"type\": \"result\", \"impl\": \"nvshmem\", \"test\": " + jsonString(o.test) +
         ", \"size\": " + std::to_string(size) + ", \"iters\": " + std::to_string(iters) +
         ", \"warmup\": " + std::to_string(warmup);
}

// ---------------------------------------------------------------------------------------------
// Collectives
// ---------------------------------------------------------------------------------------------

// One of NVSHMEM's typed reductions on the stream (scatter: reducescatter, else reduce = allreduce).
int reduceOnStream(bool scatter, DataType type, ReduceOp op, void* dst, const void* src, std::size_t count,
                   cudaStream_t s) {
#define AXON_NVSHMEM_OP(TN, T, OP)                                                                         \
  return scatter ? nvshmemx_##TN##_##OP##_reducescatter_on_stream(NVSHMEM_TEAM_WORLD, static_cast<T*>(dst), \
                                                                  static_cast<const T*>(src), count, s)    \
                 : nvshmemx_##TN##_##OP##_reduce_on_stream(NVSHMEM_TEAM_WORLD, static_cast<T*>(dst),       \
                                                           static_cast<const T*>(src), count, s)
#define AXON_NVSHMEM_TYPE(ENUM, TN, T)                  \
  case DataType::ENUM:                                   \
    switch (op) {                                        \
      case ReduceOp::Sum: AXON_NVSHMEM_OP(TN, T, sum);   \
      case ReduceOp::Prod: AXON_NVSHMEM_OP(TN, T, prod); \
      case ReduceOp::Min: AXON_NVSHMEM_OP(TN, T, min);   \
      case ReduceOp::Max: AXON_NVSHMEM_OP(TN, T, max);   \
    }                                                    \
    break;
  switch (type) {
    AXON_NVSHMEM_TYPE(Int8, int8, std::int8_t)
    AXON_NVSHMEM_TYPE(Uint8, uint8, std::uint8_t)
    AXON_NVSHMEM_TYPE(Int32, int32, std::int32_t)
    AXON_NVSHMEM_TYPE(Uint32, uint32, std::uint32_t)
    AXON_NVSHMEM_TYPE(Int64, int64, std::int64_t)
    AXON_NVSHMEM_TYPE(Uint64, uint64, std::uint64_t)
    AXON_NVSHMEM_TYPE(Float16, half, half)
    AXON_NVSHMEM_TYPE(BFloat16, bfloat16, __nv_bfloat16)
    AXON_NVSHMEM_TYPE(Float32, float, float)
    AXON_NVSHMEM_TYPE(Float64, double, double)
  }
#undef AXON_NVSHMEM_TYPE
#undef AXON_NVSHMEM_OP
  throw std::runtime_error("no NVSHMEM reduction for this type and op");
}

void callCollective(const Options& o, const void* src, void* dst, const Shape& s, cudaStream_t st) {
  const std::size_t bytes = s.arg * dataTypeSize(o.type);
  switch (o.coll) {
    case Collective::Allreduce:
      return nvshmemCheck(reduceOnStream(false, o.type, o.op, dst, src, s.arg, st), "nvshmemx_*_reduce_on_stream");
    case Collective::ReduceScatter:
      return nvshmemCheck(reduceOnStream(true, o.type, o.op, dst, src, s.arg, st),
                          "nvshmemx_*_reducescatter_on_stream");
    case Collective::Broadcast:
      return nvshmemCheck(nvshmemx_broadcastmem_on_stream(NVSHMEM_TEAM_WORLD, dst, src, bytes, o.root, st),
                          "nvshmemx_broadcastmem_on_stream");
    case Collective::Allgather:
      return nvshmemCheck(nvshmemx_fcollectmem_on_stream(NVSHMEM_TEAM_WORLD, dst, src, bytes, st),
                          "nvshmemx_fcollectmem_on_stream");
    case Collective::Alltoall:
      return nvshmemCheck(nvshmemx_alltoallmem_on_stream(NVSHMEM_TEAM_WORLD, dst, src, bytes, st),
                          "nvshmemx_alltoallmem_on_stream");
    default: throw std::runtime_error("not a collective NVSHMEM is compared on");
  }
}

struct Side {
  bool ran = false;
  double us = 0;
  long wrong = -1;  // -1: not validated
};

std::string sideJson(const Side& m, double bytes, double factor) {
  if (!m.ran) return "{\"time_us\": null, \"algbw_gbs\": null, \"busbw_gbs\": null, \"wrong\": null}";
  const double algbw = bytes / (m.us * 1e3);
  return "{\"time_us\": " + jsonNumber(m.us) + ", \"algbw_gbs\": " + jsonNumber(algbw) +
         ", \"busbw_gbs\": " + jsonNumber(algbw * factor) + ", \"wrong\": " +
         (m.wrong < 0 ? std::string("null") : std::to_string(m.wrong)) + "}";
}

bool hasInPlace(Collective c) {
  return c == Collective::Allreduce || c == Collective::Broadcast || c == Collective::Alltoall;
}

// One side (out of place or in place) of one size: the slowest PE's microseconds per call and
// the elements of the validated call that differ from the exact values (summed over the PEs).
Side measureCollective(const Options& o, const Shape& s, bool inPlace, long iters, long warmup,
                       unsigned char* a, unsigned char* b, cudaStream_t st) {
  const std::size_t e = dataTypeSize(o.type);
  const int me = myPe(), n = nPes();
  const unsigned char* src = a;
  unsigned char* dst = inPlace && o.coll != Collective::Alltoall ? a : b;
  const std::string what = "NVSHMEM " + o.test;
  for (long i = 0; i < warmup; ++i) callCollective(o, src, dst, s, st);
  waitStream(st, what);
  barrier(Team::world());
  const auto t0 = Clock::now();
  for (long i = 0; i < iters; ++i) callCollective(o, src, dst, s, st);
  waitStream(st, what);
  Side side{true, slowest(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters), -1};
  if (!o.validate) return side;
  std::vector<unsigned char> in(s.src * e), out(s.dst * e);
  const bool zeros = o.coll == Collective::Broadcast && me != o.root;  // as axon_bench
  for (std::size_t i = 0; i < s.src; ++i) storeAt(o.type, in.data(), i, zeros ? 0.0 : inputAt(o.op, me, i));
  cudaCheck(cudaMemcpy(a, in.data(), in.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
  barrier(Team::world());
  callCollective(o, src, dst, s, st);
  waitStream(st, what);
  cudaCheck(cudaMemcpy(out.data(), dst, out.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  long wrong = 0;
  for (std::size_t i = 0; i < s.dst; ++i) {
    wrong += loadAt(o.type, out.data(), i) != wantedAt(o.coll, o.op, n, me, o.root, s.arg, i);
  }
  side.wrong = summed(wrong);
  return side;
}

long runCollectives(const Options& o) {
  const int n = nPes(), me = myPe();
  const std::size_t e = dataTypeSize(o.type);
  std::size_t capA = 0, capB = 0;
  for (std::size_t bytes : o.sizes) {
    const Shape s = shapeOf(o.coll, bytes, e, n);
    capA = std::max(capA, std::max(s.src, s.dst) * e);
    capB = std::max(capB, s.dst * e);
  }
  SymBuffer a(capA), b(capB);
  CudaStream stream;
  const double factor = busFactor(o.coll, n);
  long wrongTotal = 0;
  bool failed[2] = {false, false};  // a side NVSHMEM rejected stays off for the larger sizes
  for (std::size_t bytes : o.sizes) {
    const Shape s = shapeOf(o.coll, bytes, e, n);
    if (s.printed == 0) continue;  // smaller than one element per PE, as the driver skips it
    const long iters = o.iters > 0 ? o.iters : bytes <= 65536 ? 200 : 20;
    const long warmup = o.warmup >= 0 ? o.warmup : bytes <= 65536 ? 20 : 5;
    Side sides[2];
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      if (failed[inPlace] || (inPlace && !hasInPlace(o.coll))) continue;
      std::string why;
      try {
        sides[inPlace] = measureCollective(o, s, inPlace != 0, iters, warmup, a.get(), b.get(), stream.get());
      } catch (const StuckError&) {
        throw;  // the stream stays blocked: nothing after it can run
      } catch (const std::exception& ex) {
        why = ex.what();
      }
      if (summed(why.empty() ? 0 : 1) != 0) {  // every PE agrees, and goes on without this side
        failed[inPlace] = true;
        sides[inPlace] = Side{};
        if (me == 0) {
          emitLine("{\"type\": \"note\", \"impl\": \"nvshmem\", \"note\": " +
                   jsonString(std::string("nvshmem ") + (inPlace ? "in place" : "out of place") + " stopped at " +
                              std::to_string(bytes) + " B: " + (why.empty() ? "another PE failed" : why)) + "}");
        }
      }
    }
    if (!sides[0].ran && !sides[1].ran) continue;
    const long wrong = std::max(sides[0].wrong, 0L) + std::max(sides[1].wrong, 0L);
    wrongTotal += wrong;
    const Side& main = sides[0].ran ? sides[0] : sides[1];
    const double size = static_cast<double>(s.printed * e);
    if (me == 0) {
      emitLine(resultHead(o, s.printed * e, iters, warmup) + ", \"count\": " + std::to_string(s.printed) +
               ", \"dtype\": " + jsonString(dataTypeName(o.type)) + ", \"redop\": " +
               jsonString(reduceOpName(o.op)) + ", \"root\": " + std::to_string(o.root) +
               ", \"algorithm\": \"nvshmem\", \"time_us\": " + jsonNumber(main.us) + ", \"bw_gbs\": " +
               jsonNumber(size / (main.us * 1e3) * factor) + ", \"plotted\": " +
               jsonString(sides[0].ran ? "out_of_place" : "in_place") + ", \"wrong\": " +
               (o.validate ? std::to_string(wrong) : "null") + ", \"out_of_place\": " +
               sideJson(sides[0], size, factor) + ", \"in_place\": " + sideJson(sides[1], size, factor) + "}");
    }
  }
  return wrongTotal;
}

// ---------------------------------------------------------------------------------------------
// Point to point (PE 0 and PE 1)
// ---------------------------------------------------------------------------------------------

// Symmetric signal words (each PE's copy is written by its peer), as in axon_bench.
enum Sig { kPing = 0, kPong = 1, kData = 2, kAck = 3, kDataFrom0 = 4, kAckTo0 = 6, kExchFrom0 = 8, kElapsed = 15, kSignals = 16 };

struct P2pCtx {
  const Options* opt;
  int me = 0, peer = 1;
  unsigned char* local = nullptr;   // source of the puts (symmetric too)
  unsigned char* remote = nullptr;  // destination of the peer's puts
  std::uint64_t* sig = nullptr;
  std::uint64_t seq = 0;  // signal values: both PEs advance it identically
  cudaStream_t stream = nullptr;
  LastWait last;
};

void waitSignal(P2pCtx& c, Sig which) {
  c.last = {&c.sig[which], c.seq};
  nvshmemx_signal_wait_until_on_stream(&c.sig[which], NVSHMEM_CMP_GE, c.seq, c.stream);
}

void signalPeer(P2pCtx& c, Sig which) {
  nvshmemx_signal_op_on_stream(&c.sig[which], c.seq, NVSHMEM_SIGNAL_SET, c.peer, c.stream);
}

void putSignal(P2pCtx& c, std::size_t bytes, Sig which) {
  nvshmemx_putmem_signal_on_stream(c.remote, c.local, bytes, &c.sig[which], c.seq, NVSHMEM_SIGNAL_SET, c.peer,
                                   c.stream);
}

void putWindow(P2pCtx& c, std::size_t bytes) {
  for (int k = 0; k < kWindow; ++k) nvshmemx_putmem_nbi_on_stream(c.remote, c.local, bytes, c.peer, c.stream);
  nvshmemx_quiet_on_stream(c.stream);
}

// Enqueues one iteration (message, exchange or window) of the test, the pattern of axon_bench's.
void enqueueIteration(P2pCtx& c, std::size_t bytes) {
  ++c.seq;
  switch (c.opt->p2p->test) {
    case P2p::Latency:
    case P2p::PutSignalRtt:
      if (c.me == 0) {
        putSignal(c, bytes, kPing);
        waitSignal(c, kPong);
      } else {
        waitSignal(c, kPing);
        putSignal(c, bytes, kPong);
      }
      break;
    case P2p::PingPing:
      putSignal(c, bytes, static_cast<Sig>(kExchFrom0 + c.me));
      waitSignal(c, static_cast<Sig>(kExchFrom0 + c.peer));
      break;
    case P2p::Bw:
      if (c.me == 0) {
        putWindow(c, bytes);
        signalPeer(c, kData);
        waitSignal(c, kAck);
      } else {
        waitSignal(c, kData);
        signalPeer(c, kAck);
      }
      break;
    case P2p::Bibw:
      putWindow(c, bytes);
      signalPeer(c, static_cast<Sig>(kDataFrom0 + c.me));
      waitSignal(c, static_cast<Sig>(kDataFrom0 + c.peer));
      signalPeer(c, static_cast<Sig>(kAckTo0 + c.peer));
      waitSignal(c, static_cast<Sig>(kAckTo0 + c.me));
      break;
  }
}

__device__ std::uint64_t globalTimerNs() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread of PE 0 (initiator) or PE 1: iteration i puts `bytes` with the signal set to i and
// waits for the other's i; the last iteration carries the data that is checked afterwards.
__global__ void devicePingPong(unsigned char* remote, const unsigned char* local, std::size_t bytes,
                               std::uint64_t* sig, std::uint64_t base, long warmup, long iters, int peer,
                               bool initiator, std::uint64_t* elapsedNs) {
  std::uint64_t t0 = 0;
  for (long i = 1; i <= warmup + iters; ++i) {
    if (i == warmup + 1) t0 = globalTimerNs();
    const std::uint64_t value = base + static_cast<std::uint64_t>(i);
    if (initiator) {
      nvshmem_putmem_signal(remote, local, bytes, sig, value, NVSHMEM_SIGNAL_SET, peer);
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, value);
    } else {
      nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, value);
      nvshmem_putmem_signal(remote, local, bytes, sig, value, NVSHMEM_SIGNAL_SET, peer);
    }
  }
  *elapsedNs = globalTimerNs() - t0;
}

void fillPattern(unsigned char* devBuf, std::size_t bytes, long iter, int sender, std::vector<unsigned char>& host) {
  for (std::size_t i = 0; i < bytes; ++i) host[i] = patternByte(i, bytes, iter, sender);
  cudaCheck(cudaMemcpy(devBuf, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}

long runPointToPoint(const Options& o) {
  const int me = myPe();
  const bool measures = me < 2;
  const std::size_t cap = *std::max_element(o.sizes.begin(), o.sizes.end());
  SymBuffer local(cap), remote(cap), signals(kSignals * sizeof(std::uint64_t));
  cudaCheck(cudaMemset(signals.get(), 0, kSignals * sizeof(std::uint64_t)), "cudaMemset");
  CudaStream stream;
  P2pCtx c{&o, me, me == 0 ? 1 : 0, local.get(), remote.get(), reinterpret_cast<std::uint64_t*>(signals.get()),
           0, stream.get(), {}};
  std::vector<unsigned char> host(cap);
  std::uint64_t* elapsed = reinterpret_cast<std::uint64_t*>(signals.get()) + kElapsed;  // the kernel's time
  const bool windowed = o.p2p->windowed;
  const bool device = o.p2p->test == P2p::DevicePutSignalRtt;  // one kernel runs every iteration
  const std::string what = "NVSHMEM " + o.test;
  long wrongTotal = 0;
  barrierAll();
  for (std::size_t bytes : o.sizes) {
    const long iters = o.iters > 0 ? o.iters : defaultIters(windowed, bytes);
    const long warmup = o.warmup >= 0 ? o.warmup : defaultWarmup(windowed, bytes);
    const long lastIter = warmup + iters - 1;
    double secs = 0;
    if (device) {
      // Every iteration carries the pattern of the last: the kernel runs them all at once.
      if (measures && o.validate) {
        fillPattern(c.local, bytes, lastIter, me, host);
        fillPattern(c.remote, bytes, kPoison, me, host);
      }
      barrierAll();
      if (measures) {
        devicePingPong<<<1, 1, 0, c.stream>>>(c.remote, c.local, bytes, &c.sig[kPing], c.seq, warmup, iters,
                                               c.peer, me == 0, elapsed);
        cudaCheck(cudaGetLastError(), "devicePingPong launch");
        c.seq += static_cast<std::uint64_t>(warmup + iters);
        c.last = {&c.sig[kPing], c.seq};
        waitStream(c.stream, what, c.last);
        std::uint64_t ns = 0;
        cudaCheck(cudaMemcpy(&ns, elapsed, sizeof ns, cudaMemcpyDeviceToHost), "cudaMemcpy");
        secs = static_cast<double>(ns) * 1e-9;
      }
    } else {
      if (measures) {
        for (long i = 0; i < warmup; ++i) enqueueIteration(c, bytes);
        waitStream(c.stream, what, c.last);
      }
      barrierAll();
      if (measures) {
        const auto t0 = Clock::now();
        for (long i = 0; i < iters; ++i) enqueueIteration(c, bytes);
        waitStream(c.stream, what, c.last);
        secs = std::chrono::duration<double>(Clock::now() - t0).count();
      }
    }
    // One validated iteration: senders send the pattern of the last iteration, receivers have
    // cleared what they check. Who receives: both PEs, except in bw (PE 1 only).
    const bool both = o.p2p->test != P2p::Bw;
    const bool receives = measures && (both || me == 1);
    long wrong = 0;
    if (o.validate && !device) {
      if (measures) fillPattern(c.local, bytes, lastIter, me, host);
      if (receives) fillPattern(c.remote, bytes, kPoison, me, host);
      barrierAll();
      if (measures) {
        enqueueIteration(c, bytes);
        waitStream(c.stream, what, c.last);
      }
    }
    barrierAll();
    if (o.validate && receives) {
      cudaCheck(cudaMemcpy(host.data(), c.remote, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
      for (std::size_t i = 0; i < bytes; ++i) wrong += host[i] != patternByte(i, bytes, lastIter, c.peer);
    }
    wrong = summed(wrong);
    double t[2] = {me == 0 ? secs : 0.0, me == 1 ? secs : 0.0};
    allreduce(Team::world(), t, t, 2, DataType::Float64, ReduceOp::Max);
    wrongTotal += wrong;
    if (me != 0) continue;
    const double messages = static_cast<double>(windowed ? iters * kWindow : iters);
    const double b = static_cast<double>(bytes);
    double us = 0, gbs = 0;
    switch (o.p2p->test) {
      case P2p::Latency: us = t[0] * 1e6 / iters / 2; gbs = b / (us * 1e3); break;  // one way
      case P2p::PutSignalRtt:
      case P2p::DevicePutSignalRtt: us = t[0] * 1e6 / iters; gbs = 2 * b / (us * 1e3); break;  // round trip
      case P2p::PingPing: us = std::max(t[0], t[1]) * 1e6 / iters; gbs = b / (us * 1e3); break;
      case P2p::Bw: us = t[0] * 1e6 / messages; gbs = b / (us * 1e3); break;
      case P2p::Bibw:
        us = std::max(t[0], t[1]) * 1e6 / messages;
        gbs = b * messages / t[0] / 1e9 + b * messages / t[1] / 1e9;
        break;
    }
    emitLine(resultHead(o, bytes, iters, warmup) + ", \"time_us\": " + jsonNumber(us) + ", \"bw_gbs\": " +
             jsonNumber(gbs) + ", \"wrong\": " + (o.validate ? std::to_string(wrong) : "null") + "}");
  }
  return wrongTotal;
}

// The symmetric heap this run needs, with room for NVSHMEM's own buffers; never below its
// default of 1 GiB.
std::size_t heapBytes(const Options& o) {
  const std::size_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  const std::size_t need = 3 * largest + (std::size_t{256} << 20);
  return std::max(need, std::size_t{1} << 30);
}

int run(const Options& o) {
  init();
  if (!gpuEnabled()) throw std::runtime_error(std::string("it needs GPUs: ") + gpuUnavailableReason());
  if (o.collective && o.root >= nPes()) throw std::runtime_error("--root " + std::to_string(o.root) + " is not a PE");
  if (!o.collective && nPes() < 2) throw std::runtime_error("run on at least 2 PEs");
  initNvshmem(heapBytes(o));
  if (myPe() == 0) emitLine("{\"type\": \"peer\", \"impl\": \"nvshmem\", \"version\": " + jsonString(nvshmemVersion()) + "}");
  const long wrong = o.collective ? runCollectives(o) : runPointToPoint(o);
  if (myPe() == 0) emitLine("{\"type\": \"done\", \"wrong\": " + std::to_string(wrong) + "}");
  nvshmem_finalize();
  finalize();
  return wrong == 0 ? 0 : 1;
}

}  // namespace
}  // namespace axon::bench

int main(int argc, char** argv) {
  using namespace axon::bench;
  Options opt;
  try {
    opt = parse(argc, argv);
  } catch (const UsageError& e) {
    if (isRankZero()) emitError(kProgram, e.message, true);
    return 2;
  }
  try {
    return run(opt);
  } catch (const std::exception& e) {
    // Every PE that fails says so; the launcher stops the others (NVSHMEM is not finalized: its
    // collective finalize would wait for them).
    if (isRankZero()) emitError(kProgram, std::string("NVSHMEM peer: ") + e.what(), false);
    else std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 1;
  }
}
