// The host-tested math of collectives across nodes: how a team is cut into node parts and
// leaders, where blocks sit in the leaders' packed buffers, the recursive-doubling schedule
// (simulated to the end), the leaders' plans and the network workspace's layout.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "coll/hierarchy_layout.hpp"
#include "coll/net_workspace.hpp"
#include "coll/plan.hpp"
#include "coll/schedule.hpp"

namespace axon::coll {
namespace {

TEST(HierarchyLayout, PartsInTeamOrderLeadersFirst) {
  // Members interleaved over nodes, as a colour split can make them.
  HierarchyLayout l = HierarchyLayout::of({"b", "a", "b", "c", "a", "b"});
  ASSERT_EQ(l.nodes(), 3);
  EXPECT_EQ(l.parts[0], (std::vector<int>{0, 2, 5}));  // node "b" appears first
  EXPECT_EQ(l.parts[1], (std::vector<int>{1, 4}));
  EXPECT_EQ(l.parts[2], (std::vector<int>{3}));
  EXPECT_EQ(l.widest, 3);
  EXPECT_EQ(l.leaderOf(1), 1);
  EXPECT_EQ(l.nodeOf, (std::vector<int>{0, 1, 0, 2, 1, 0}));
  EXPECT_EQ(l.localIndexOf, (std::vector<int>{0, 0, 1, 0, 1, 2}));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(l.member(l.nodeOf[i], l.localIndexOf[i]), i);
    EXPECT_EQ(l.isLeader(i), i == 0 || i == 1 || i == 3);
  }
  HierarchyLayout one = HierarchyLayout::of({"x", "x"});
  EXPECT_EQ(one.nodes(), 1);
  EXPECT_EQ(one.widest, 2);
}

TEST(HierarchyLayout, PackedBlocksAreDistinctAndInRange) {
  const int nodes = 3, widest = 4;
  std::set<std::size_t> seen;
  for (int k = 0; k < nodes; ++k) {
    for (int i = 0; i < widest; ++i) {
      const std::size_t b = packedBlock(k, i, widest);
      EXPECT_LT(b, static_cast<std::size_t>(nodes * widest));
      EXPECT_TRUE(seen.insert(b).second);
    }
  }
  seen.clear();
  for (int k = 0; k < nodes; ++k) {
    for (int from = 0; from < widest; ++from) {
      for (int to = 0; to < widest; ++to) {
        const std::size_t b = packedPairBlock(k, from, to, widest);
        // Part k of the buffer holds exactly the pairs bound for (or coming from) node k.
        EXPECT_EQ(b / (widest * widest), static_cast<std::size_t>(k));
        EXPECT_TRUE(seen.insert(b).second);
      }
    }
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(nodes * widest * widest));
}

// Simulates the doubling schedule on sets of contributions: every member must end with all of
// them, each counted once.
TEST(CollSchedule, RecursiveDoublingReachesEveryMemberOnce) {
  for (int n = 1; n <= 17; ++n) {
    std::vector<std::multiset<int>> have(n);
    for (int i = 0; i < n; ++i) have[i].insert(i);
    const int extra = doublingFolded(n);
    EXPECT_EQ(extra, n - (1 << doublingSteps(n)));
    for (int i = 0; i < 2 * extra; i += 2) {  // fold
      EXPECT_EQ(doublingRank(i, n), -1);
      have[i + 1].insert(have[i].begin(), have[i].end());
    }
    std::set<int> ranks;
    for (int i = 0; i < n; ++i) {
      const int v = doublingRank(i, n);
      if (v < 0) continue;
      EXPECT_EQ(doublingMember(v, n), i);
      ranks.insert(v);
    }
    EXPECT_EQ(ranks.size(), static_cast<std::size_t>(1 << doublingSteps(n)));
    for (int s = 0; s < doublingSteps(n); ++s) {
      auto next = have;
      for (int i = 0; i < n; ++i) {
        const int v = doublingRank(i, n);
        if (v < 0) continue;
        const int partner = doublingMember(v ^ (1 << s), n);
        next[i].insert(have[partner].begin(), have[partner].end());
      }
      have = next;
    }
    for (int i = 0; i < 2 * extra; i += 2) have[i] = have[i + 1];  // unfold
    std::multiset<int> all;
    for (int i = 0; i < n; ++i) all.insert(i);
    for (int i = 0; i < n; ++i) EXPECT_EQ(have[i], all) << "member " << i << " of " << n;
    EXPECT_EQ(doublingRoundsPerChunk(n), doublingSteps(n) + (extra ? 2 : 0));
  }
}

TEST(CollPlan, LeadersDoubleSmallAllreducesAndRingLargeOnes) {
  auto plan = [](Collective c, std::size_t bytes, int leaders, std::optional<Algo> forced = std::nullopt) {
    return makeLeaderPlan({c, bytes, 1, leaders, 256 * 1024, forced});
  };
  Plan small = plan(Collective::Allreduce, 64 * 1024, 3);
  EXPECT_EQ(small.algo, Algo::Doubling);
  EXPECT_NE(small.reason.find("on 3 node leaders"), std::string::npos) << small.reason;
  EXPECT_EQ(small.rounds, static_cast<std::size_t>(doublingRoundsPerChunk(3)));
  EXPECT_EQ(plan(Collective::Allreduce, 64 * 1024 + 1, 2).algo, Algo::Ring);
  Plan large = plan(Collective::Allreduce, 64 * 1024 + 1, 2, Algo::Pipelined);
  EXPECT_EQ(large.algo, Algo::Pipelined);
  // Pieces of a half of the largest segment (32 KiB + 1 of 64 KiB + 1), n - 1 rounds each to
  // reduce-scatter and one to allgather.
  EXPECT_EQ(large.chunks, 1u);
  EXPECT_EQ(large.rounds, 2u);
  Plan three = makeLeaderPlan({Collective::Allreduce, 1000000, 4, 3, 65472, Algo::Pipelined});
  EXPECT_EQ(three.chunks, 21u);  // ceil(333334 / 16368): pieces of 16368 floats
  EXPECT_EQ(three.rounds, 63u);
  EXPECT_EQ(algoFromName("pipelined"), Algo::Pipelined);
  EXPECT_TRUE(algorithmAllowed(Collective::Allreduce, Algo::Pipelined));
  EXPECT_EQ(plan(Collective::Allgather, 128 * 1024, 3).algo, Algo::Ring);  // 384 KiB in all
  EXPECT_EQ(plan(Collective::Allgather, 1024, 3).algo, Algo::OneShot);
  EXPECT_EQ(plan(Collective::Allgather, 1 << 20, 2).algo, Algo::OneShot);
  EXPECT_EQ(plan(Collective::Broadcast, 4 << 20, 4).algo, Algo::Chain);
  EXPECT_NE(plan(Collective::Broadcast, 4 << 20, 4).reason.find("node leaders"), std::string::npos);
  // AXON_ALGO_<COLLECTIVE> wins where the collective allows it.
  Plan forced = plan(Collective::Allreduce, 16, 4, Algo::OneShot);
  EXPECT_EQ(forced.algo, Algo::OneShot);
  EXPECT_NE(forced.reason.find("AXON_ALGO_ALLREDUCE"), std::string::npos) << forced.reason;
  EXPECT_EQ(algoFromName("recursive_doubling"), Algo::Doubling);
  EXPECT_TRUE(algorithmAllowed(Collective::Allreduce, Algo::Doubling));
  EXPECT_FALSE(algorithmAllowed(Collective::Allgather, Algo::Doubling));
}

TEST(CollLayout, NetworkWorkspaceKeepsWritersApart) {
  for (int n : {2, 3, 16}) {
    NetLayout l = netLayout(n, 256 * 1024 + 5);
    EXPECT_EQ(l.abort, 0u);
    EXPECT_GE(l.ready, n * sizeof(AbortRecord));
    EXPECT_EQ(l.ready % 64, 0u);
    EXPECT_EQ(l.ack, l.ready + 64u * n);
    // Each leader's record of its call #s lands in calls[leader][s % 2], its number in called.
    EXPECT_EQ(l.called, l.ack + 64u * n);
    EXPECT_EQ(l.calls, l.called + 64u * n);
    EXPECT_EQ(sizeof(CallRecord), 64u);
    EXPECT_GE(l.inbox, l.calls + 2u * n * sizeof(CallRecord));
    EXPECT_EQ(l.inbox % 4096, 0u);
    EXPECT_GE(l.slotBytes, kSlotHeader + 256 * 1024 + 5);
    // D slots per member: 8, fewer where the inboxes would pass 16 MiB, never below 2.
    EXPECT_EQ(l.depth, netDepth(n, 256 * 1024 + 5));
    EXPECT_EQ(l.depth, n == 16 ? 3u : 8u);
    EXPECT_EQ(l.outbox, l.inbox + l.depth * n * l.slotBytes);
    EXPECT_EQ(l.total, l.outbox + l.depth * l.slotBytes);
  }
  EXPECT_EQ(netDepth(4, netHalfBytes(256 * 1024)), 8u);
  EXPECT_EQ(netDepth(4096, netHalfBytes(256 * 1024)), 2u);
  EXPECT_EQ(netHalfBytes(256 * 1024) + kSlotHeader, kNetRoundMax);  // one round, one message
  EXPECT_EQ(netHalfBytes(4096), 4096u);
}

}  // namespace
}  // namespace axon::coll
