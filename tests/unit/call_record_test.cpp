// The call records members compare (coll/protocol.hpp): which records are the same call, the
// records of the team's synchronizations, and how a mismatch names each call.
#include <gtest/gtest.h>

#include <string>

#include "axon/collectives.hpp"
#include "coll/plan.hpp"
#include "coll/protocol.hpp"
#include "coll/workspace_layout.hpp"

namespace axon::coll {
namespace {

CallRecord allreduce(std::uint64_t seq, std::uint64_t count) {
  CallRecord r{};
  r.seq = seq;
  r.collective = static_cast<std::uint32_t>(Collective::Allreduce);
  r.dtype = static_cast<std::uint32_t>(DataType::Int32);
  r.algo = static_cast<std::uint32_t>(Algo::OneShot);
  r.root = -1;
  r.count = count;
  r.chunkBytes = 65536;
  return r;
}

TEST(CallRecord, SameCallComparesEveryArgumentAndTheNumber) {
  EXPECT_TRUE(sameCall(allreduce(3, 8), allreduce(3, 8)));
  EXPECT_FALSE(sameCall(allreduce(3, 8), allreduce(3, 9)));
  EXPECT_FALSE(sameCall(allreduce(3, 8), allreduce(4, 8)));
  CallRecord root = allreduce(3, 8);
  root.collective = static_cast<std::uint32_t>(Collective::Broadcast);
  CallRecord otherRoot = root;
  otherRoot.root = 2;
  EXPECT_FALSE(sameCall(root, otherRoot));
  EXPECT_FALSE(sameCall(root, allreduce(3, 8)));
}

TEST(CallRecord, TeamBarriersAreOneKindFinalizeAndDestroyOthers) {
  CallRecord all = syncRecord("barrier_all"), team = syncRecord("barrier"), sync = syncRecord("sync");
  CallRecord fin = syncRecord("finalize"), destroy = syncRecord("team_destroy");
  for (CallRecord* r : {&all, &team, &sync, &fin, &destroy}) r->seq = 5;
  EXPECT_EQ(all.collective, static_cast<std::uint32_t>(SyncKind::TeamBarrier));
  EXPECT_TRUE(sameCall(all, team));  // barrier_all against Team::barrier: the same synchronization
  EXPECT_TRUE(sameCall(all, sync));
  EXPECT_FALSE(sameCall(all, fin));
  EXPECT_FALSE(sameCall(fin, destroy));
  EXPECT_FALSE(sameCall(destroy, team));
  CallRecord barrier = allreduce(5, 0);
  barrier.collective = static_cast<std::uint32_t>(Collective::Barrier);
  EXPECT_FALSE(sameCall(barrier, team));  // the collective barrier is a collective
  EXPECT_FALSE(sameCall(fin, allreduce(5, 8)));
}

TEST(CallRecord, DescriptionsNameEachCall) {
  EXPECT_EQ(describeCall(syncRecord("barrier_all")), "barrier_all() (the team's barrier)");
  EXPECT_EQ(describeCall(syncRecord("sync_all")), "sync_all() (the team's barrier)");
  EXPECT_EQ(describeCall(syncRecord("barrier")), "Team::barrier() (the team's barrier)");
  EXPECT_EQ(describeCall(syncRecord("sync")), "Team::sync() (the team's barrier)");
  EXPECT_EQ(describeCall(syncRecord("finalize")), "finalize()");
  EXPECT_EQ(describeCall(syncRecord("team_destroy")), "Team::destroy()");
  EXPECT_EQ(describeCall(allreduce(1, 8)), "allreduce(count 8, int32, sum, oneshot, buffer 65536)");
  CallRecord garbage{};
  garbage.collective = 99;
  EXPECT_EQ(describeCall(garbage), "an unknown call (kind 99)");
}

}  // namespace
}  // namespace axon::coll
