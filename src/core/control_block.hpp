// The runtime's own words at the start of every PE's symmetric heap (heap offset 0): barrier
// counters that peers increment. Same layout on every PE, so a peer finds them by offset.
#pragma once

#include <cstdint>

namespace axon {

constexpr int kMaxTeams = 64;        // live teams at once, world and node included
constexpr int kMaxBarrierRounds = 32;  // ceil(log2(PEs)) rounds of the dissemination barrier

// What this PE's host issued on a team's GPU collectives, for its team barriers to compare across
// members (coll/gpu_call_order.hpp): a barrier on some members against a GPU collective, or a
// different number of GPU collectives before it, on others fails on every member instead of
// hanging until AXON_TIMEOUT. Zeroed with the team's barrier counters when its slot is freed.
struct alignas(64) TeamCallLog {
  std::uint64_t issued;            // GPU collective calls this PE's host issued on the team
  std::uint64_t last[5];           // the last one's record (a device::CollRecord)
  std::uint64_t barrierTarget[2];  // by the barrier's parity: the barrier this PE entered last
  std::uint64_t barrierIssued[2];  // and `issued` when it entered it
};

struct alignas(64) ControlBlock {
  // barrier[team slot][round]: incremented once per barrier by the PE that signals this one.
  std::uint64_t barrier[kMaxTeams][kMaxBarrierRounds];
  // Set by the PE itself once it is through finalize's barrier: a PE whose process is gone but
  // which had set this left on purpose, and peers still finishing the barrier must not call it dead.
  std::uint64_t departed;
  TeamCallLog gpuCalls[kMaxTeams];
};

}  // namespace axon
