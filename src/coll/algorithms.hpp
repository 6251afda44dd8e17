// The collective algorithms of the host paths, written in the flag protocol of protocol.hpp and
// the schedules of schedule.hpp. Each runs one call whose plan every member computed alike, on
// either level of the protocol (shared memory in a node, the network among node leaders).
#pragma once

#include <cstddef>
#include <functional>

#include "axon/collectives.hpp"
#include "coll/plan.hpp"
#include "coll/protocol.hpp"

namespace axon::coll {

struct Buffers {
  const char* src;
  char* dst;
  std::size_t count;  // elements (per PE for allgather, reduce_scatter, alltoall)
  DataType type;
  ReduceOp op;
  int root;           // team index, for broadcast and reduce
  std::size_t elem;   // bytes per element
};

void runBarrier(Call& call);
void runBroadcast(Call& call, const Plan& plan, const Buffers& b);
void runReduce(Call& call, const Plan& plan, const Buffers& b);
void runAllreduce(Call& call, const Plan& plan, const Buffers& b);
void runAllgather(Call& call, const Plan& plan, const Buffers& b);
void runReduceScatter(Call& call, const Plan& plan, const Buffers& b);
void runAlltoall(Call& call, const Plan& plan, const Buffers& b);

// The steps the collectives across nodes are built from (coll/hierarchy.cpp), on either level:
//  - gather: member p's count elements land at the root's dst + p * count (only the root's dst
//    is written); plan: an allgather's of `count`;
//  - scatter: block p of the root's src (count elements each) lands at member p's dst; plan: an
//    alltoall's of `count`;
//  - send: member `from`'s count elements land at member `to`'s dst; the other members only
//    count its rounds; plan: an allgather's of `count`.
void runGather(Call& call, const Plan& plan, const Buffers& b);
void runScatter(Call& call, const Plan& plan, const Buffers& b);
void runSend(Call& call, const Plan& plan, const Buffers& b, int from, int to);

// Pairwise exchange, the alltoall of the paths across nodes: in step s = 1 .. n-1 member `me`
// publishes its block for member (me + s) % n to that member alone and reads the block of member
// (me - s) % n, chunk by chunk (`chunkElems` elements a round, at most a half), publishing up to
// depth() - 1 rounds ahead of the one it reads (a half is reused once its reader acked it).
// `blockOf(p)`: the index of member p's block in src and dst (rows of count-element blocks); `carries(p)`: whether this level moves the
// blocks between this member and p (the direct level: only members of other nodes). Every member
// reserves the same chunks * (n - 1) rounds. This member's own block is not copied.
// `meanwhile`, if set, runs once the first rounds are published and before the first is read
// (another level's exchange, while these rounds are on the wire).
struct PairwiseBlocks {
  std::function<std::size_t(int)> blockOf;
  std::function<bool(int)> carries;
  std::function<void()> meanwhile = {};
};
void runPairwise(Call& call, std::size_t chunkElems, const Buffers& b, const PairwiseBlocks& blocks);
}  // namespace axon::coll
