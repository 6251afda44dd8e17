// The loop every transport runs, and the two ways of moving a frame that the CPU and GPU paths
// share (axon's blocking broadcast, and isend/irecv).
#include "frames_run.hpp"

#include <axon/axon.hpp>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <stdexcept>

namespace axon::examples::frames {

const char* transportName(Transport t) {
  switch (t) {
    case Transport::Axon: return "axon";
    case Transport::TwoSided: return "twosided";
    case Transport::Nccl: return "nccl";
  }
  return "?";
}

const char* sourceName(Source s) { return s == Source::Host ? "host" : "gpu"; }

std::uint64_t realtimeNs() {
  // The realtime clock, not the steady one: the source stamps a frame and a receiver in another
  // process (or on another node, with synchronized clocks) subtracts the stamp.
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

void broadcastBlocking(void* frame, std::size_t bytes) {
  axon::broadcast(Team::world(), frame, frame, bytes, DataType::Uint8, kSource);
}

void sendToAll(const void* sourceFrame, void* frame, std::size_t bytes) {
  constexpr int kTag = 42;
  if (myPe() == kSource) {
    std::vector<Request> sends;
    for (int pe = 0; pe < nPes(); ++pe)
      if (pe != kSource) sends.push_back(isend(sourceFrame, bytes, pe, kTag));
    waitAll(sends);
    return;
  }
  const Status st = recv(frame, bytes, kSource, kTag);
  if (st.bytes != bytes)
    throw std::runtime_error("PE " + std::to_string(myPe()) + " received " + std::to_string(st.bytes) +
                             " bytes of a frame from PE " + std::to_string(kSource) + ", expected " +
                             std::to_string(bytes));
}

RunStats runFrames(FramePath& path, const Options& o) {
  const bool source = myPe() == kSource;
  const std::size_t words = wordsIn(static_cast<std::size_t>(o.frameBytes));
  std::vector<double> latencyUs;
  latencyUs.reserve(static_cast<std::size_t>(o.frames));
  std::uint64_t bad = 0;
  auto step = [&](std::uint64_t k) {
    if (source) {
      path.produce(k, realtimeNs());
      path.deliver();
      return;
    }
    path.deliver();
    const FrameCheck c = path.consume(k);
    const std::uint64_t done = realtimeNs();
    if (c.index != k || c.wrongWords != 0) {
      // One line for the first bad frame; the count goes to the report.
      if (bad++ == 0)
        std::fprintf(stderr,
                     "[%d] frame_broadcast: frame %" PRIu64 " arrived wrong: its header says frame %" PRIu64
                     ", %" PRIu64 " of %zu words differ from the source's\n",
                     myPe(), k, c.index, c.wrongWords, words);
    } else if (k >= static_cast<std::uint64_t>(o.warmup)) {
      // Signed: a receiver whose clock runs behind the source's shows negative latencies, which
      // say so, rather than wrapping round to years.
      latencyUs.push_back(static_cast<double>(static_cast<std::int64_t>(done - c.stampNs)) / 1e3);
    }
  };
  const auto total = static_cast<std::uint64_t>(o.warmup + o.frames);
  for (std::uint64_t k = 0; k < static_cast<std::uint64_t>(o.warmup); ++k) step(k);
  axon::barrier(Team::world());
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t k = static_cast<std::uint64_t>(o.warmup); k < total; ++k) step(k);
  // Every receiver has checked the last frame once the barrier returns.
  axon::barrier(Team::world());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  RunStats s;
  axon::allreduce(Team::world(), &seconds, &s.seconds, 1, ReduceOp::Max);
  double mine[3] = {percentile(latencyUs, 0.5), percentile(latencyUs, 0.99), percentile(latencyUs, 1.0)};
  double worst[3] = {0, 0, 0};
  axon::allreduce(Team::world(), mine, worst, 3, ReduceOp::Max);
  s.latencyP50Us = worst[0];
  s.latencyP99Us = worst[1];
  s.latencyMaxUs = worst[2];
  axon::allreduce(Team::world(), &bad, &s.badFrames, 1, ReduceOp::Sum);
  return s;
}

}  // namespace axon::examples::frames
