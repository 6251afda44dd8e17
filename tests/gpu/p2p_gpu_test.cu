// Two-sided messages with GPU buffers: every pairing of memory kinds (host, cudaMalloc, the GPU
// heap, stream-ordered pool memory) at eager and rendezvous sizes, and CUDA IPC's cache across a
// buffer freed and allocated again. On one node and across emulated nodes (UCX).
#include <axon/axon.hpp>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_util.hpp"
#include "p2p_random_messages.hpp"

namespace {

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }

enum class Kind { Host, CudaMalloc, GpuHeap, Pool };
const char* name(Kind k) {
  switch (k) {
    case Kind::Host: return "host";
    case Kind::CudaMalloc: return "cudaMalloc";
    case Kind::GpuHeap: return "GPU heap";
    case Kind::Pool: return "pool";
  }
  return "?";
}

struct Buffer {
  Kind kind;
  std::size_t bytes;
  void* p = nullptr;
  std::vector<unsigned char> host;
  Buffer(Kind k, std::size_t n) : kind(k), bytes(n) {
    const std::size_t room = n ? n : 1;
    switch (k) {
      case Kind::Host: host.assign(room, 0); p = host.data(); break;
      case Kind::CudaMalloc: cudaMalloc(&p, room); break;
      case Kind::GpuHeap: p = axon::malloc(room); break;  // collective: every PE allocates alike
      case Kind::Pool: cudaMallocAsync(&p, room, nullptr); cudaStreamSynchronize(nullptr); break;
    }
  }
  ~Buffer() {
    switch (kind) {
      case Kind::Host: break;
      case Kind::CudaMalloc: cudaFree(p); break;
      case Kind::GpuHeap: axon::free(p); break;
      case Kind::Pool: cudaFreeAsync(p, nullptr); cudaStreamSynchronize(nullptr); break;
    }
  }
  void fill(const std::vector<unsigned char>& v) {
    if (kind == Kind::Host) std::copy(v.begin(), v.end(), host.begin());
    else fromHost(static_cast<unsigned char*>(p), v);
  }
  std::vector<unsigned char> read() const {
    if (kind == Kind::Host) return std::vector<unsigned char>(host.begin(), host.begin() + bytes);
    return toHost(static_cast<const unsigned char*>(p), bytes);
  }
};

std::vector<unsigned char> pattern(int source, std::size_t bytes, int salt) {
  std::vector<unsigned char> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((source * 37 + salt * 11 + i * 13 + (i >> 9)) & 0xff);
  return v;
}

TEST(P2pGpu, EveryMemoryKindPairingAtEveryProtocol) {
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  const Kind kinds[] = {Kind::Host, Kind::CudaMalloc, Kind::GpuHeap, Kind::Pool};
  int salt = 0;
  for (std::size_t bytes : {std::size_t{8}, std::size_t{8192}, std::size_t{8193}, std::size_t{1} << 20}) {
    for (Kind from : kinds) {
      for (Kind to : kinds) {
        ++salt;
        Buffer out(from, bytes), in(to, bytes);
        out.fill(pattern(me(), bytes, salt));
        auto r = axon::irecv(in.p, bytes, left, salt);
        auto s = axon::isend(out.p, bytes, right, salt);
        const axon::Status st = r.wait();
        s.wait();
        EXPECT_EQ(st.bytes, bytes);
        EXPECT_EQ(in.read(), pattern(left, bytes, salt))
            << bytes << " B from " << name(from) << " to " << name(to) << ": "
            << axon::explainMessage(bytes, right, from != Kind::Host);
        axon::barrierAll();  // the GPU heap buffers are freed collectively
      }
    }
  }
}

// A receive posted in the GPU heap before its message is offered to the sender, which copies the
// message straight into it: one cuMemcpy instead of two through the host ring (p2p/local_channel.hpp).
// From every kind of send buffer, at eager sizes; every message must take that path when PEs 0 and
// 1 share a node (unless AXON_P2P_POSTED=0).
TEST(P2pGpu, SmallMessagesGoStraightIntoPostedGpuHeapReceives) {
  if (np() < 2) GTEST_SKIP() << "needs 2 PEs";
  const bool sender = me() == 0, receiver = me() == 1;
  const std::size_t room = 8192;
  Buffer in(Kind::GpuHeap, room);  // collective
  const std::uint64_t before = axon::messageStats().postedSent;
  int sent = 0, salt = 700;
  for (Kind from : {Kind::GpuHeap, Kind::CudaMalloc, Kind::Host, Kind::Pool}) {
    for (std::size_t bytes : {std::size_t{8}, std::size_t{4096}, std::size_t{8192}}) {
      ++salt;
      Buffer out(from, bytes);  // every PE allocates alike (the GPU heap is collective)
      if (sender) out.fill(pattern(0, bytes, salt));
      axon::Request r;
      if (receiver) r = axon::irecv(in.p, room, 0, salt);
      axon::barrierAll();
      if (sender) {
        axon::send(out.p, bytes, 1, salt);
        ++sent;
      }
      if (receiver) {
        const axon::Status st = r.wait();
        EXPECT_EQ(st.bytes, bytes);
        in.bytes = bytes;
        EXPECT_EQ(in.read(), pattern(0, bytes, salt)) << bytes << " B from " << name(from);
      }
      axon::barrierAll();
    }
  }
  if (sender && axon::ptr(in.p, 1) != nullptr && axon::test::postedOffersOn()) {
    EXPECT_EQ(axon::messageStats().postedSent - before, static_cast<std::uint64_t>(sent));
  }
}

TEST(P2pGpu, IpcMappingsAreReusedAndRenewedWhenABufferIsFreed) {
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  const std::size_t bytes = 3 << 20;
  for (int round = 0; round < 4; ++round) {
    // Rounds 0-1 send one allocation twice (one IPC open); rounds 2-3 a new allocation each,
    // likely at the freed one's address: the receiver must read the new memory, not the old.
    static Buffer* kept = nullptr;
    if (round == 0 || round >= 2) {
      delete kept;
      kept = new Buffer(Kind::CudaMalloc, bytes);
    }
    kept->fill(pattern(me(), bytes, 100 + round));
    Buffer in(Kind::CudaMalloc, bytes);
    auto r = axon::irecv(in.p, bytes, left, 7);
    axon::send(kept->p, bytes, right, 7);
    r.wait();
    EXPECT_EQ(in.read(), pattern(left, bytes, 100 + round)) << "round " << round;
    axon::barrierAll();
    if (round == 3) {
      delete kept;
      kept = nullptr;
    }
  }
}

}  // namespace

// ── Stream-ordered messages ─────────────────────────────────────────────────────────────────────

namespace {

__global__ void fillKernel(unsigned char* p, std::size_t n, int seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = static_cast<unsigned char>((seed * 37 + i * 13 + (i >> 9)) & 0xff);
  }
}

__global__ void addKernel(unsigned char* p, std::size_t n, int add) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = static_cast<unsigned char>(p[i] + add);
  }
}

__global__ void sleepKernel(unsigned ms) {
  for (unsigned i = 0; i < ms * 1000; ++i) __nanosleep(1000);
}

std::vector<unsigned char> filled(int seed, std::size_t n, int add = 0) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(((seed * 37 + i * 13 + (i >> 9)) & 0xff) + add);
  return v;
}

struct DeviceBuffer {
  unsigned char* p = nullptr;
  std::size_t bytes;
  explicit DeviceBuffer(std::size_t n) : bytes(n) { cudaMalloc(&p, n ? n : 1); }
  ~DeviceBuffer() { cudaFree(p); }
};

}  // namespace

// A kernel fills the send buffer and a kernel reads the receive buffer, on the same stream as the
// messages: the stream orders them, with no synchronization by the host in between.
TEST(P2pGpu, StreamOrderedExchangeKeepsStreamOrder) {
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (std::size_t bytes : {std::size_t{0}, std::size_t{8}, std::size_t{8192}, std::size_t{65536}, std::size_t{4} << 20}) {
    DeviceBuffer out(bytes), in(bytes);
    if (bytes) fillKernel<<<64, 256, 0, s>>>(out.p, bytes, me() + static_cast<int>(bytes));
    axon::groupStart();
    axon::sendOnStream(out.p, bytes, right, s);
    axon::recvOnStream(in.p, bytes, left, s);
    axon::groupEnd();
    if (bytes) addKernel<<<64, 256, 0, s>>>(in.p, bytes, 1);
    // The send buffer may be written again once the stream is past the send.
    if (bytes) fillKernel<<<64, 256, 0, s>>>(out.p, bytes, 999);
    axon::streamSynchronize(s);
    EXPECT_EQ(toHost(in.p, bytes), filled(left + static_cast<int>(bytes), bytes, 1)) << bytes << " B";
    axon::barrierAll();
  }
  CUDA_OK(cudaStreamDestroy(s));
}

// PE 0 makes two sends on two streams; the first stream is held back by a long kernel, so the
// second send runs first. The receiver's calls still pair with them in call order.
TEST(P2pGpu, StreamOrderedMessagesPairInCallOrderAcrossStreams) {
  if (np() < 2) GTEST_SKIP() << "needs 2 PEs";
  const std::size_t bytes = 1 << 20;
  cudaStream_t s1, s2;
  CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  DeviceBuffer a(bytes), b(bytes);
  if (me() == 0) {
    fillKernel<<<64, 256, 0, s1>>>(a.p, bytes, 1);
    fillKernel<<<64, 256, 0, s2>>>(b.p, bytes, 2);
    sleepKernel<<<1, 1, 0, s1>>>(200);
    axon::sendOnStream(a.p, bytes, 1, s1);
    axon::sendOnStream(b.p, bytes, 1, s2);
  } else if (me() == 1) {
    axon::recvOnStream(a.p, bytes, 0, s2);  // the first call: takes the first send
    axon::recvOnStream(b.p, bytes, 0, s1);
  }
  axon::streamSynchronize(s1);
  axon::streamSynchronize(s2);
  if (me() == 1) {
    EXPECT_EQ(toHost(a.p, bytes), filled(1, bytes));
    EXPECT_EQ(toHost(b.p, bytes), filled(2, bytes));
  }
  axon::barrierAll();
  CUDA_OK(cudaStreamDestroy(s1));
  CUDA_OK(cudaStreamDestroy(s2));
}

// An exchange and a kernel captured into a graph: each replay sends and receives again.
TEST(P2pGpu, StreamOrderedExchangeReplaysFromAGraph) {
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  for (std::size_t bytes : {std::size_t{256}, std::size_t{3} << 20}) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    DeviceBuffer buf(bytes), in(bytes);
    fillKernel<<<64, 256, 0, s>>>(buf.p, bytes, me());
    CUDA_OK(cudaStreamSynchronize(s));
    // Each replay: receive the left neighbour's buffer, add 1, and that becomes what this PE sends
    // next (copied back into `buf`): after k replays every PE holds its k-th left neighbour's
    // pattern plus k.
    cudaGraph_t graph;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    axon::groupStart();
    axon::sendOnStream(buf.p, bytes, right, s);
    axon::recvOnStream(in.p, bytes, left, s);
    axon::groupEnd();
    addKernel<<<64, 256, 0, s>>>(in.p, bytes, 1);
    cudaMemcpyAsync(buf.p, in.p, bytes, cudaMemcpyDeviceToDevice, s);
    CUDA_OK(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    const int replays = 5;
    for (int k = 0; k < replays; ++k) CUDA_OK(cudaGraphLaunch(exec, s));
    axon::streamSynchronize(s);
    const int source = ((me() - replays) % np() + np()) % np();
    EXPECT_EQ(toHost(buf.p, bytes), filled(source, bytes, replays)) << bytes << " B";
    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
    CUDA_OK(cudaStreamDestroy(s));
    axon::barrierAll();
  }
}

// A receive smaller than the message: the stream is released (no hang), nothing is written, and
// the failure, naming both sizes, is thrown by the next call that synchronizes with the stream.
TEST(P2pGpu, StreamOrderedTruncationFailsTheNextCallNotTheStream) {
  if (np() < 2) GTEST_SKIP() << "needs 2 PEs";
  for (std::size_t bytes : {std::size_t{64}, std::size_t{1} << 20}) {
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    DeviceBuffer buf(bytes);
    if (me() == 0) {
      fillKernel<<<64, 256, 0, s>>>(buf.p, bytes, 3);
      axon::sendOnStream(buf.p, bytes, 1, s);
      axon::streamSynchronize(s);
    } else if (me() == 1) {
      CUDA_OK(cudaMemset(buf.p, 0xab, bytes));
      CUDA_OK(cudaDeviceSynchronize());
      axon::recvOnStream(buf.p, bytes / 2, 0, s);
      try {
        axon::streamSynchronize(s);
        ADD_FAILURE() << "no error for a truncated stream-ordered receive of " << bytes << " B";
      } catch (const axon::Error& e) {
        EXPECT_EQ(e.code(), axon::ErrorCode::Truncated) << e.what();
        EXPECT_NE(std::string(e.what()).find(std::to_string(bytes)), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("recv_on_stream"), std::string::npos) << e.what();
      }
      EXPECT_EQ(toHost(buf.p, bytes), std::vector<unsigned char>(bytes, 0xab));
    }
    axon::barrierAll();
    CUDA_OK(cudaStreamDestroy(s));
  }
}

TEST(P2pGpu, StreamOrderedBadArgumentsAreRefusedAtTheCall) {
  cudaStream_t s = nullptr;
  char b[8];
  try {
    axon::sendOnStream(b, 8, np(), s);
    ADD_FAILURE() << "no error for dest " << np();
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::InvalidPe) << e.what();
  }
  try {
    axon::recvOnStream(b, 8, -1, s);
    ADD_FAILURE() << "no error for source -1 (ANY_SOURCE is not allowed)";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::InvalidPe) << e.what();
  }
  try {
    axon::groupEnd();
    ADD_FAILURE() << "no error for group_end without group_start";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::InvalidArgument) << e.what();
  }
}

// Many messages in flight on several streams at once: every one
// arrives, in the order of the pair's calls.
TEST(P2pGpu, StreamOrderedManyMessagesOnSeveralStreams) {
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  const int streams = 4, perStream = 50;
  const std::size_t bytes = 24 << 10;
  std::vector<cudaStream_t> s(streams);
  for (auto& x : s) CUDA_OK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  std::vector<std::unique_ptr<DeviceBuffer>> out, in;
  for (int k = 0; k < streams * perStream; ++k) {
    out.push_back(std::make_unique<DeviceBuffer>(bytes));
    in.push_back(std::make_unique<DeviceBuffer>(bytes));
  }
  for (int k = 0; k < streams * perStream; ++k) {
    cudaStream_t st = s[k % streams];
    fillKernel<<<16, 256, 0, st>>>(out[k]->p, bytes, me() * 1000 + k);
    axon::groupStart();
    axon::sendOnStream(out[k]->p, bytes, right, st);
    axon::recvOnStream(in[k]->p, bytes, left, st);
    axon::groupEnd();
  }
  for (auto& x : s) axon::streamSynchronize(x);
  for (int k = 0; k < streams * perStream; ++k) {
    ASSERT_EQ(toHost(in[k]->p, bytes), filled(left * 1000 + k, bytes)) << "message " << k;
  }
  for (auto& x : s) CUDA_OK(cudaStreamDestroy(x));
  axon::barrierAll();
}

// Random messages (sizes to 4 MiB, 8 tags, every wildcard kind) whose send and receive buffers
// are each, at random, pageable host memory, cudaMalloc memory or pool memory: every pairing of
// kinds at every protocol, each message checked byte for byte. AXON_TEST_P2P_MESSAGES sets the
// count (10,000 by default).
namespace {

struct MixedBuffers {
  std::mt19937_64 rng{7};
  std::unique_ptr<Buffer> make(std::size_t bytes, std::uint64_t) {
    static const Kind kinds[] = {Kind::Host, Kind::CudaMalloc, Kind::Pool};
    return std::make_unique<Buffer>(kinds[rng() % 3], bytes);
  }
  void* data(std::unique_ptr<Buffer>& b) { return b->p; }
  void write(std::unique_ptr<Buffer>& b, const std::vector<unsigned char>& v) { b->fill(v); }
  std::vector<unsigned char> read(std::unique_ptr<Buffer>& b, std::size_t bytes) {
    b->bytes = bytes;
    return b->read();
  }
};

}  // namespace

TEST(P2pGpu, RandomMessagesWithHostAndGpuBuffers) {
  const char* env = std::getenv("AXON_TEST_P2P_MESSAGES");
  MixedBuffers buffers;
  buffers.rng.seed(1000 + static_cast<unsigned>(me()));
  const int checked = axon::test::runRandomMessages(buffers, env ? std::atoi(env) : 10000, 20261124);
  if (me() == 0) std::printf("[ p2p ] %d messages in host and GPU buffers received and checked on PE 0\n", checked);
}
