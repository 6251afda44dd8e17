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
  // Set by the PE itself once it is through finalize's barrier: a PE whose process is gone but
  // which had set this left on purpose, and peers still finishing the barrier must not call it dead.
  std::uint64_t departed;
};

}  // namespace axon
