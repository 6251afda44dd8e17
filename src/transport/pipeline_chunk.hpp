// How a transfer that goes through a few buffers in turn (a pipeline: one chunk is copied while
// the chunks before it are still moving) is cut into chunks. One rule for every such pipeline, so
// that they agree on what a chunk is: about `bytes / parts` (parts chunks give the copies
// something to overlap from the start), rounded up to whole 4 KiB pages, never below `floor` (each
// chunk costs a round of its own) and never above `ceiling` (the size of the buffers; it wins when
// the two cross). Its users: the staged transport's channels (staged/stage_channel.hpp) and the
// staging space's pipelined GPU put (space/client_puts.cpp), each with its own numbers.
#pragma once

#include <cstdint>

namespace axon {

constexpr std::uint64_t pipelineChunkBytes(std::uint64_t bytes, std::uint64_t parts, std::uint64_t floor,
                                           std::uint64_t ceiling) {
  std::uint64_t c = (bytes / parts + 4095) / 4096 * 4096;
  if (c < floor) c = floor;
  return c < ceiling ? c : ceiling;
}

}  // namespace axon
