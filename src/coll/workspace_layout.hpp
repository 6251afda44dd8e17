// The layout of one PE's collective workspace: the same on every member of a team, so a member
// finds a peer's words by offset. Pure, tested on the host (tests/unit/coll_math_test.cpp).
//
//   header: this PE's last two calls, the call whose data sits in each half, the confirmed call
//           (hierarchical teams, on the node's leader), the abort record
//   ready[n]: ready[p] = the last round PE p published to this PE   (written by p)
//   ack[n]:   ack[p]   = the last round of this PE's that p consumed (written by p)
//   half 0, half 1: round r's data goes to half r % 2
//
// Flags sit on their own 64-byte lines: each has one writer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace axon::coll {

// What a PE is doing, published so that peers can compare their call with it. `seq` is the
// call's number on the team (1, 2, ...), 0 while the record is being rewritten. `collective` is an
// axon::Collective, or one of the team's synchronizations below (a team barrier, finalize, a
// team's destroy), which take their place in the same sequence so that a barrier against a
// collective is a mismatch too.
struct alignas(64) CallRecord {
  std::uint64_t seq;
  std::uint32_t collective, dtype, op, algo;
  std::int32_t root;
  std::uint32_t reserved;
  std::uint64_t count;
  std::uint64_t chunkBytes;
  std::uint64_t round;  // in a half record: the round whose data the half holds
};

// The record kinds past axon::Collective: a team barrier (Team::barrier, Team::sync, barrier_all,
// sync_all: one kind, `op` says which, for the message), finalize and a team's destroy.
enum class SyncKind : std::uint32_t { TeamBarrier = 16, Finalize = 17, TeamDestroy = 18 };

// One 64-bit flag on its own line.
struct alignas(64) FlagLine {
  std::uint64_t value;
};

// Written into every member's workspace by a PE that found a mismatch: `state` goes 0 -> 1
// (claimed by one writer) -> 2 (text complete).
struct alignas(64) AbortRecord {
  std::uint64_t state;
  std::int32_t pe;
  char text[500];
};

struct WorkspaceHeader {
  // calls[seq % 2]: this PE's record of its call #seq. Two, so that a member still comparing the
  // records of call s finds them while a faster one is in call s + 1 (none can be in s + 2: every
  // member waits for every record of a call before it returns from it).
  CallRecord calls[2];
  CallRecord half[2];
  FlagLine confirmed;  // on a node's leader (hierarchical teams): the last call all leaders agreed on
  AbortRecord abort;
};

constexpr std::size_t kFlagStride = 64;

struct WorkspaceLayout {
  std::size_t ready;   // offset of ready[0]
  std::size_t ack;     // offset of ack[0]
  std::size_t half[2];
  std::size_t halfBytes;
  std::size_t total;
};

constexpr std::size_t alignUp(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

constexpr WorkspaceLayout workspaceLayout(int members, std::size_t halfBytes) {
  WorkspaceLayout l{};
  l.ready = alignUp(sizeof(WorkspaceHeader), kFlagStride);
  l.ack = l.ready + static_cast<std::size_t>(members) * kFlagStride;
  l.half[0] = alignUp(l.ack + static_cast<std::size_t>(members) * kFlagStride, 4096);
  l.halfBytes = alignUp(halfBytes, 4096);
  l.half[1] = l.half[0] + l.halfBytes;
  l.total = l.half[1] + l.halfBytes;
  return l;
}

}  // namespace axon::coll
