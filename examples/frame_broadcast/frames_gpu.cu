// Frames in GPU memory: a kernel produces them (the GPU source) or they are copied up from the
// camera's pinned ring (the host source); receivers check every word with a kernel. They travel by
// axon's broadcast, ncclBroadcast, or isend/irecv of the device buffers.
#include <axon/axon.hpp>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "../common/cuda_helpers.hpp"
#include "frames_run.hpp"
#include "nccl_peer.hpp"

namespace axon::examples::frames {
namespace {


constexpr int kThreads = 256;

// Four words a thread per step: the payload starts 16 bytes into a cudaMalloc'd frame and its
// length is a multiple of 16 bytes, so uint4 accesses are aligned.
__global__ void produceKernel(char* frame, std::size_t quads, std::uint64_t index, std::uint64_t stampNs) {
  auto* payload = reinterpret_cast<uint4*>(frame + kHeaderBytes);
  const std::uint64_t pattern = index % kPatterns;
  for (std::size_t q = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; q < quads;
       q += std::size_t(gridDim.x) * blockDim.x)
    payload[q] = make_uint4(wordOf(pattern, 4 * q), wordOf(pattern, 4 * q + 1), wordOf(pattern, 4 * q + 2),
                            wordOf(pattern, 4 * q + 3));
  if (blockIdx.x == 0 && threadIdx.x == 0) *reinterpret_cast<FrameHeader*>(frame) = FrameHeader{index, stampNs};
}

__global__ void checkKernel(const char* frame, std::size_t quads, std::uint64_t pattern, FrameCheck* out) {
  const auto* payload = reinterpret_cast<const uint4*>(frame + kHeaderBytes);
  unsigned long long wrong = 0;
  for (std::size_t q = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; q < quads;
       q += std::size_t(gridDim.x) * blockDim.x) {
    const uint4 v = payload[q];
    wrong += (v.x != wordOf(pattern, 4 * q)) + (v.y != wordOf(pattern, 4 * q + 1)) +
             (v.z != wordOf(pattern, 4 * q + 2)) + (v.w != wordOf(pattern, 4 * q + 3));
  }
  for (int offset = 16; offset > 0; offset /= 2) wrong += __shfl_down_sync(0xffffffffu, wrong, offset);
  if (threadIdx.x % 32 == 0 && wrong) ::atomicAdd(reinterpret_cast<unsigned long long*>(&out->wrongWords), wrong);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const FrameHeader h = *reinterpret_cast<const FrameHeader*>(frame);
    out->index = h.index;
    out->stampNs = h.stampNs;
  }
}

class GpuPath final : public FramePath {
 public:
  GpuPath(Transport t, const Options& o)
      : transport_(t), source_(o.source), bytes_(static_cast<std::size_t>(o.frameBytes)), isSource_(myPe() == kSource) {
    try {
      EXAMPLES_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
      EXAMPLES_CUDA(cudaMalloc(&frame_, bytes_));
      EXAMPLES_CUDA(cudaMalloc(&result_, sizeof(FrameCheck)));
      EXAMPLES_CUDA(cudaMallocHost(&hostResult_, sizeof(FrameCheck)));
      int device = 0, sms = 0;
      EXAMPLES_CUDA(cudaGetDevice(&device));
      EXAMPLES_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
      const std::size_t quads = wordsIn(bytes_) / 4;
      blocks_ = static_cast<int>(std::min<std::size_t>((quads + kThreads - 1) / kThreads, std::size_t(sms) * 8));
      if (isSource_ && source_ == Source::Host) {
        EXAMPLES_CUDA(cudaMallocHost(&ring_, kPatterns * bytes_));
        for (std::uint64_t p = 0; p < kPatterns; ++p) fillWords(ring_ + p * bytes_, bytes_, p);
      }
      if (t == Transport::Axon)
        streamOrdered_ = explain(Collective::Broadcast, Team::world(), bytes_, DataType::Uint8).path == "gpu-p2p";
      if (t == Transport::Nccl) nccl_ = bench::NcclPeer::open(o.ncclLibrary);
    } catch (...) {
      release();
      throw;
    }
  }

  ~GpuPath() override { release(); }

  void produce(std::uint64_t index, std::uint64_t stampNs) override {
    if (source_ == Source::Gpu) {
      produceKernel<<<blocks_, kThreads, 0, stream_>>>(frame_, wordsIn(bytes_) / 4, index, stampNs);
      EXAMPLES_CUDA(cudaGetLastError());
      return;
    }
    char* slot = ring_ + (index % kPatterns) * bytes_;
    const FrameHeader h{index, stampNs};
    std::memcpy(slot, &h, sizeof(h));
    // Every transport takes the frame from GPU memory, so the frame goes up first, as an NCCL
    // program does it, and the transports differ only in how they move it. (Sending straight
    // from the pinned ring to GPU receivers is CUDA-aware two-sided's other way; it is much slower
    // on one node: docs/examples.md.)
    EXAMPLES_CUDA(cudaMemcpyAsync(frame_, slot, bytes_, cudaMemcpyHostToDevice, stream_));
  }

  void deliver() override {
    switch (transport_) {
      case Transport::Axon:
        if (streamOrdered_) {
          broadcastOnStream(Team::world(), frame_, frame_, bytes_, DataType::Uint8, kSource, stream_);
        } else {
          EXAMPLES_CUDA(cudaStreamSynchronize(stream_));
          broadcastBlocking(frame_, bytes_);
        }
        break;
      case Transport::Nccl:
        nccl_->run(Collective::Broadcast, frame_, frame_, bytes_, DataType::Uint8, ReduceOp::Sum, kSource, stream_);
        break;
      case Transport::TwoSided:
        EXAMPLES_CUDA(cudaStreamSynchronize(stream_));  // the frame is made before it is sent
        sendToAll(frame_, frame_, bytes_);
        break;
    }
    // The source's frame is on its way to every PE before it makes the next one (a camera ring
    // slot comes round again after kPatterns frames).
    if (isSource_) EXAMPLES_CUDA(cudaStreamSynchronize(stream_));
  }

  FrameCheck consume(std::uint64_t index) override {
    EXAMPLES_CUDA(cudaMemsetAsync(result_, 0, sizeof(FrameCheck), stream_));
    checkKernel<<<blocks_, kThreads, 0, stream_>>>(frame_, wordsIn(bytes_) / 4, index % kPatterns, result_);
    EXAMPLES_CUDA(cudaGetLastError());
    EXAMPLES_CUDA(cudaMemcpyAsync(hostResult_, result_, sizeof(FrameCheck), cudaMemcpyDeviceToHost, stream_));
    EXAMPLES_CUDA(cudaStreamSynchronize(stream_));
    return *hostResult_;
  }

  std::string detail() const override {
    std::string how;
    switch (transport_) {
      case Transport::Axon:
        how = streamOrdered_ ? "broadcastOnStream" : "axon::broadcast (blocking: no GPU workspace spans the PEs)";
        break;
      case Transport::Nccl: how = "ncclBroadcast " + nccl_->version() + " on a stream"; break;
      case Transport::TwoSided: how = "isend to each PE / recv"; break;
    }
    if (source_ == Source::Host) how += ", after a copy to the GPU";
    return "GPU frames, " + how;
  }

 private:
  // What the constructor made, in any state it got to.
  void release() {
    nccl_.reset();
    if (stream_) cudaStreamSynchronize(stream_);
    cudaFree(frame_);
    cudaFree(result_);
    cudaFreeHost(hostResult_);
    cudaFreeHost(ring_);
    if (stream_) cudaStreamDestroy(stream_);
    frame_ = ring_ = nullptr;
    result_ = hostResult_ = nullptr;
    stream_ = nullptr;
  }

  Transport transport_;
  Source source_;
  std::size_t bytes_;
  bool isSource_;
  bool streamOrdered_ = false;
  int blocks_ = 1;
  cudaStream_t stream_ = nullptr;
  char* frame_ = nullptr;      // this PE's frame on the GPU
  char* ring_ = nullptr;       // the host source's pinned ring of kPatterns frames
  FrameCheck* result_ = nullptr;
  FrameCheck* hostResult_ = nullptr;
  std::unique_ptr<bench::NcclPeer> nccl_;
};

// Where a PE runs: its host's name and its GPU's PCI address.
struct Place {
  char host[64];
  char busId[32];
};

}  // namespace

std::unique_ptr<FramePath> makeGpuPath(Transport t, const Options& o) { return std::make_unique<GpuPath>(t, o); }

std::string ncclRefusal(const Options&) {
  if (!gpuEnabled()) return "NCCL needs the GPU backend";
  // NCCL refuses two ranks on one GPU of one host ("Duplicate GPU detected"), and does so inside
  // ncclCommInitRank: every PE looks first, so that all of them skip NCCL together.
  Place mine{};
  gethostname(mine.host, sizeof(mine.host) - 1);
  int device = 0;
  EXAMPLES_CUDA(cudaGetDevice(&device));
  EXAMPLES_CUDA(cudaDeviceGetPCIBusId(mine.busId, sizeof(mine.busId) - 1, device));
  std::vector<Place> all(static_cast<std::size_t>(nPes()));
  allgather(Team::world(), &mine, all.data(), sizeof(Place), DataType::Uint8);
  for (int a = 0; a < nPes(); ++a)
    for (int b = a + 1; b < nPes(); ++b)
      if (std::strcmp(all[a].host, all[b].host) == 0 && std::strcmp(all[a].busId, all[b].busId) == 0)
        return "NCCL refuses two ranks on one GPU, and PEs " + std::to_string(a) + " and " + std::to_string(b) +
               " share GPU " + all[a].busId + " on " + all[a].host;
  return {};
}

}  // namespace axon::examples::frames
