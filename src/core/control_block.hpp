// The runtime's own words at the start of every PE's symmetric heap (heap offset 0): barrier
// counters that peers increment. Same layout on every PE, so a peer finds them by offset.
#pragma once

#include <cstdint>

namespace axon {

constexpr int kMaxTeams = 64;        // live teams at once, world and node included
constexpr int kMaxBarrierRounds = 32;  // ceil(log2(PEs)) rounds of the dissemination barrier

struct alignas(64) ControlBlock {
  // barrier[team slot][round]: incremented once per barrier by the PE that signals this one.
  std::uint64_t barrier[kMaxTeams][kMaxBarrierRounds];
};

}  // namespace axon
