// The staged path's shared layout: where GPUs cannot map each other's memory (no peer access, or
// AXON_P2P=0), data moves through pinned host memory in chunks. Every PE's host heap holds one
// channel per possible sender; the sender copies chunks from its GPU into the channel's slots
// and the target's proxy thread copies them on into its GPU heap (and the reverse for get).
//
// Each slot carries a request: the sender fills it and publishes `ready = seq`; the proxy does the
// work and publishes `done = seq`. Sequence numbers only grow, slot = seq % kStageSlots, so a
// sender may reuse a slot once `done` has reached the request that last used it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/pipeline_chunk.hpp"

namespace axon::staged {

constexpr int kStageSlots = 4;  // chunks in flight per sender and target (8 measured slower at 1 MiB)

enum class StageOp : std::uint32_t { Put = 1, Get = 2, Signal = 3, Atomic = 4 };

struct alignas(64) StageSlot {
  std::uint64_t ready;    // seq of the request in this slot (sender, release)
  std::uint64_t done;     // seq of the last request completed (proxy, release)
  std::uint64_t offset;   // target's GPU heap offset
  std::uint64_t bytes;    // put/get: chunk bytes; atomic: width
  std::uint64_t operand;  // signal value / atomic operand
  std::uint64_t cond;     // atomic compare value
  std::uint64_t result;   // atomic: old value (proxy)
  std::uint32_t op;       // StageOp
  std::uint32_t sub;      // SignalOp / AtomicOp
  std::int32_t status;    // 0, or an ErrorCode the proxy met (message in `error`)
  char error[60];
};

// Bytes of one channel: slot headers, then kStageSlots data buffers of `chunk` bytes.
inline std::size_t channelBytes(std::size_t chunk) {
  return (sizeof(StageSlot) * kStageSlots + 4095) / 4096 * 4096 + chunk * kStageSlots;
}
inline StageSlot* slotsOf(char* channel) { return reinterpret_cast<StageSlot*>(channel); }
inline char* dataOf(char* channel, std::size_t chunk, int slot) {
  return channel + (sizeof(StageSlot) * kStageSlots + 4095) / 4096 * 4096 + chunk * static_cast<std::size_t>(slot);
}

// How a transfer of `bytes` splits into chunks: small transfers use smaller chunks so that the two
// copies still overlap; never below 64 KiB, never above the channel's chunk.
inline std::size_t pipelineChunk(std::size_t bytes, std::size_t channelChunk) {
  return pipelineChunkBytes(bytes, kStageSlots, 64u << 10, channelChunk);
}

}  // namespace axon::staged
