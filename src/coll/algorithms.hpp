// The collective algorithms of the host-shm path, written in the flag protocol of protocol.hpp
// and the schedules of schedule.hpp. Each runs one call whose plan every member computed alike.
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

}  // namespace axon::coll
