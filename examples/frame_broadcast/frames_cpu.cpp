// Frames in host memory (the host backend): the CPU fills and checks them, and they travel by
// axon's broadcast or by isend/irecv.
#include <axon/axon.hpp>

#include <cstring>
#include <stdexcept>

#include "frames_run.hpp"

namespace axon::examples::frames {

namespace {

class CpuPath final : public FramePath {
 public:
  CpuPath(Transport t, const Options& o) : transport_(t), bytes_(static_cast<std::size_t>(o.frameBytes)) {
    if (myPe() == kSource) {
      // The camera's ring: the words are there before the run, the source stamps each header.
      ring_.resize(kPatterns);
      for (std::uint64_t p = 0; p < kPatterns; ++p) {
        ring_[p].resize(bytes_ / 4);
        fillWords(ring_[p].data(), bytes_, p);
      }
    } else {
      frame_.resize(bytes_ / 4);
    }
  }

  void produce(std::uint64_t index, std::uint64_t stampNs) override {
    current_ = ring_[index % kPatterns].data();
    const FrameHeader h{index, stampNs};
    std::memcpy(current_, &h, sizeof(h));
  }

  void deliver() override {
    void* here = myPe() == kSource ? current_ : static_cast<void*>(frame_.data());
    if (transport_ == Transport::Axon) broadcastBlocking(here, bytes_);
    else sendToAll(current_, here, bytes_);
  }

  FrameCheck consume(std::uint64_t index) override { return checkFrame(frame_.data(), bytes_, index); }

  std::string detail() const override {
    return transport_ == Transport::Axon ? "host memory, axon::broadcast" : "host memory, isend to each PE / recv";
  }

 private:
  Transport transport_;
  std::size_t bytes_;
  std::vector<std::vector<std::uint32_t>> ring_;  // the source's frames
  std::vector<std::uint32_t> frame_;              // a receiver's frame
  std::uint32_t* current_ = nullptr;
};

}  // namespace

std::unique_ptr<FramePath> makeCpuPath(Transport t, const Options& o) {
  if (t == Transport::Nccl) throw std::invalid_argument("NCCL moves GPU frames only: it needs the GPU backend");
  return std::make_unique<CpuPath>(t, o);
}

#ifndef FRAMES_HAVE_CUDA
std::unique_ptr<FramePath> makeGpuPath(Transport, const Options&) {
  throw std::runtime_error("this frame_broadcast was built without CUDA; rebuild with a CUDA toolkit for GPU frames");
}
std::string ncclRefusal(const Options&) { return "this frame_broadcast was built without CUDA"; }
#endif

}  // namespace axon::examples::frames
