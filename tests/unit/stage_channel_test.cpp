// The staged path's layout and chunking math (stage_channel.hpp), host-only.
#include <gtest/gtest.h>

#include <cstdint>

#include "transport/staged/stage_channel.hpp"

namespace axon::staged {
namespace {

TEST(StageChannel, SlotsAndDataDoNotOverlapAndArePageAligned) {
  const std::size_t chunk = 256 * 1024;
  alignas(4096) static char channel[4096 * 2 + 256 * 1024 * kStageSlots];
  ASSERT_LE(channelBytes(chunk), sizeof(channel));
  char* headersEnd = reinterpret_cast<char*>(slotsOf(channel) + kStageSlots);
  for (int s = 0; s < kStageSlots; ++s) {
    char* d = dataOf(channel, chunk, s);
    EXPECT_GE(d, headersEnd);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d) % 4096, 0u) << "slot " << s;
    EXPECT_LE(d + chunk, channel + channelBytes(chunk));
    if (s > 0) {
      EXPECT_EQ(d - dataOf(channel, chunk, s - 1), static_cast<std::ptrdiff_t>(chunk));
    }
  }
  EXPECT_EQ(sizeof(StageSlot) % 64, 0u) << "one slot header per cache line or more";
}

TEST(StageChannel, PipelineChunkSplitsIntoSlotsWithinBounds) {
  const std::size_t max = 1 << 20;
  EXPECT_EQ(pipelineChunk(8, max), 64u * 1024) << "never below 64 KiB";
  EXPECT_EQ(pipelineChunk(1 << 20, max), (1u << 20) / kStageSlots) << "1 MiB: one chunk per slot";
  EXPECT_EQ(pipelineChunk(1u << 30, max), max) << "never above the channel's chunk";
  for (std::size_t bytes : {std::size_t(1), std::size_t(65537), std::size_t(3 << 20) + 5, std::size_t(1) << 33}) {
    std::size_t c = pipelineChunk(bytes, max);
    EXPECT_EQ(c % 4096, 0u) << bytes;
    EXPECT_GE(c, 64u * 1024) << bytes;
    EXPECT_LE(c, max) << bytes;
  }
}

// The rule under it (transport/pipeline_chunk.hpp), which the staging space's pipelined GPU put
// uses with its own numbers (an eighth of the part, 256 KiB to 4 MiB).
TEST(StageChannel, PipelineChunkBytesIsAPageRoundedShareWithinBounds) {
  constexpr std::uint64_t kMin = 256 * 1024, kMax = 4 * 1024 * 1024;
  EXPECT_EQ(pipelineChunkBytes(1 << 20, 8, kMin, kMax), kMin) << "an eighth of 1 MiB is under the floor";
  EXPECT_EQ(pipelineChunkBytes(16 << 20, 8, kMin, kMax), 2u << 20);
  EXPECT_EQ(pipelineChunkBytes((5 << 20) + 1, 8, kMin, kMax), 5u << 17) << "whole pages";
  EXPECT_EQ(pipelineChunkBytes((5 << 20) + 8 * 4096, 8, kMin, kMax), (5u << 17) + 4096);
  EXPECT_EQ(pipelineChunkBytes(1ull << 30, 8, kMin, kMax), kMax);
  EXPECT_EQ(pipelineChunkBytes(1, 4, 64 * 1024, 16 * 1024), 16u * 1024) << "the ceiling wins over the floor";
}

}  // namespace
}  // namespace axon::staged
