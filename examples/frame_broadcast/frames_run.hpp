// How the streaming broadcast runs: the options, the transports, and the one loop every transport
// runs through a FramePath (where frames live, how the source makes them, how they travel).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frames.hpp"

namespace axon::examples::frames {

enum class Transport {
  Axon,      // axon's broadcast (stream-ordered on GPUs that map each other, else the blocking call)
  TwoSided,  // the source sends the frame to every other PE with isend; they recv (the baseline)
  Nccl,      // ncclBroadcast on a stream (GPU backend, libnccl loaded at run time)
};
enum class Source {
  Host,  // a camera: frames arrive in a ring of pinned host buffers; the source only stamps them
  Gpu,   // a GPU producer: a kernel writes each frame into device memory
};

const char* transportName(Transport t);
const char* sourceName(Source s);

struct Options {
  long frameBytes = 1L << 20;
  long frames = 200;  // measured
  long warmup = 10;   // sent and checked first, not measured
  Source source = Source::Host;
  std::vector<Transport> transports;  // in the order run; empty: every one this machine has
  std::string ncclLibrary = "libnccl.so.2";
  bool json = false;
};

// Where one transport keeps its frames. The source (PE 0) calls produce() then deliver() for each
// frame; every other PE calls deliver() then consume(). Each call returns when this PE's part is
// done: the source may reuse its buffers, a receiver has checked the frame.
class FramePath {
 public:
  virtual ~FramePath() = default;
  virtual void produce(std::uint64_t index, std::uint64_t stampNs) = 0;
  virtual void deliver() = 0;
  virtual FrameCheck consume(std::uint64_t index) = 0;
  // How the frames travel, for the report ("GPU buffers, broadcastOnStream").
  virtual std::string detail() const = 0;
};

constexpr int kSource = 0;

// CPU frames (the host backend): frames_cpu.cpp.
std::unique_ptr<FramePath> makeCpuPath(Transport t, const Options& o);
// GPU frames: frames_gpu.cu. Throws std::runtime_error in a build without CUDA.
std::unique_ptr<FramePath> makeGpuPath(Transport t, const Options& o);
// Empty where NCCL can run on these PEs' GPUs, else why not (the same answer on every PE).
std::string ncclRefusal(const Options& o);

// The two ways the CPU and GPU paths share to move a frame that is in place on every PE:
// axon's blocking broadcast, and the source's isend to every other PE with their recv.
void broadcastBlocking(void* frame, std::size_t bytes);
void sendToAll(const void* sourceFrame, void* frame, std::size_t bytes);

struct RunStats {
  double seconds = 0;          // the measured frames, from the source's start to the last check
  double latencyP50Us = 0;     // the worst receiver's median frame latency
  double latencyP99Us = 0;
  double latencyMaxUs = 0;
  std::uint64_t badFrames = 0;  // frames some receiver found wrong, over every receiver
};

// Warm-up frames, then the measured frames back to back, on every PE.
RunStats runFrames(FramePath& path, const Options& o);

std::uint64_t realtimeNs();

}  // namespace axon::examples::frames
