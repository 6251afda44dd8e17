// The collective algorithms of the host paths, written in the flag protocol of protocol.hpp and
// the schedules of schedule.hpp. Each runs one call whose plan every member computed alike, on
// either level of the protocol (shared memory in a node, the network among node leaders).
#pragma once

#include <cstddef>

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
}  // namespace axon::coll
