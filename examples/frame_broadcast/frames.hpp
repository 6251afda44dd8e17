// The frames of the streaming broadcast (reference 002): what a frame holds, how a receiver checks
// it, and the statistics of a run. Host and device code share the word formula.
//
// A frame is a 16-byte header (the frame's number and the time the source took it, in ns of the
// realtime clock) followed by 32-bit words. Word i of frame k is wordOf(k % kPatterns, i): a
// source that only stamps the header of a frame it prepared earlier (a camera writing into a ring
// of buffers) and one that generates the whole frame (a GPU producer) send the same bytes, and a
// receiver that got frame k-1's words, or a frame torn between two, finds every stale word.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__CUDACC__)
#define FRAMES_HOST_DEVICE __host__ __device__
#else
#define FRAMES_HOST_DEVICE
#endif

namespace axon::examples::frames {

constexpr std::size_t kHeaderBytes = 16;
// Payload patterns in rotation: a ring of this many frames at a host source.
constexpr std::uint64_t kPatterns = 4;
// The smallest frame: the header and a few words (sizes are multiples of 16 bytes).
constexpr std::size_t kMinFrameBytes = 64;

struct FrameHeader {
  std::uint64_t index;    // the frame's number, from 0
  std::uint64_t stampNs;  // when the source took it (realtime clock)
};

// Word i of a frame with pattern p: a cheap integer hash, so that neighbouring words, frames and
// patterns all differ.
FRAMES_HOST_DEVICE inline std::uint32_t wordOf(std::uint64_t pattern, std::uint64_t i) {
  std::uint32_t x = static_cast<std::uint32_t>(i) * 0x9E3779B1u + static_cast<std::uint32_t>(pattern + 1) * 0x85EBCA77u;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return x;
}

inline std::size_t wordsIn(std::size_t frameBytes) { return (frameBytes - kHeaderBytes) / 4; }

// Empty when the size is usable, else why not.
inline std::string frameSizeProblem(long bytes) {
  if (bytes < static_cast<long>(kMinFrameBytes))
    return "--frame-bytes must be at least " + std::to_string(kMinFrameBytes) + " bytes";
  if (bytes % 16 != 0) return "--frame-bytes must be a multiple of 16 bytes";
  return {};
}

// What a receiver found in one frame.
struct FrameCheck {
  std::uint64_t index = 0;
  std::uint64_t stampNs = 0;
  std::uint64_t wrongWords = 0;
};

// CPU forms: fill a frame's words, the whole frame, and check one (every word, and its header).
inline void fillWords(void* frame, std::size_t frameBytes, std::uint64_t pattern) {
  auto* words = reinterpret_cast<std::uint32_t*>(static_cast<char*>(frame) + kHeaderBytes);
  const std::size_t n = wordsIn(frameBytes);
  for (std::size_t i = 0; i < n; ++i) words[i] = wordOf(pattern, i);
}

inline void fillFrame(void* frame, std::size_t frameBytes, std::uint64_t index, std::uint64_t stampNs) {
  fillWords(frame, frameBytes, index % kPatterns);
  const FrameHeader h{index, stampNs};
  std::memcpy(frame, &h, sizeof(h));
}

inline FrameCheck checkFrame(const void* frame, std::size_t frameBytes, std::uint64_t expectedIndex) {
  FrameHeader h;
  std::memcpy(&h, frame, sizeof(h));
  FrameCheck c{h.index, h.stampNs, 0};
  const auto* words = reinterpret_cast<const std::uint32_t*>(static_cast<const char*>(frame) + kHeaderBytes);
  const std::size_t n = wordsIn(frameBytes);
  const std::uint64_t pattern = expectedIndex % kPatterns;
  for (std::size_t i = 0; i < n; ++i) c.wrongWords += words[i] != wordOf(pattern, i);
  return c;
}

// Nearest-rank percentile (q in [0, 1]) of samples; 0 for none. Sorts `samples`.
inline double percentile(std::vector<double>& samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  std::size_t rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(samples.size())));
  rank = std::clamp<std::size_t>(rank, 1, samples.size());
  return samples[rank - 1];
}

}  // namespace axon::examples::frames
