// Two-sided messages with GPU buffers: every pairing of memory kinds (host, cudaMalloc, the GPU
// heap, stream-ordered pool memory) at eager and rendezvous sizes, and CUDA IPC's cache across a
// buffer freed and allocated again. On one node and across emulated nodes (UCX).
#include <axon/axon.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_test_util.hpp"

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
