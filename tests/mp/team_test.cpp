// Teams: world, node, split_strided, split by colour, of listed PEs, translation, barriers, destroy
// and slot reuse.
#include <gtest/gtest.h>

#include <axon/axon.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }

TEST(Teams, WorldAndNode) {
  axon::Team world = axon::Team::world(), node = axon::Team::node();
  EXPECT_EQ(world.myPe(), me());
  EXPECT_EQ(world.nPes(), np());
  // The node team holds the PEs of this node (all of them unless the run spans nodes), in order.
  int local = 0;
  for (int pe = 0; pe < np(); ++pe) {
    const bool sameNode = axon::pathTo(pe).rfind("ucx", 0) != 0;
    EXPECT_EQ(world.translate(pe, node), sameNode ? local : -1) << "PE " << pe << ": " << axon::pathTo(pe);
    if (sameNode) EXPECT_EQ(node.worldPe(local++), pe);
    EXPECT_EQ(world.worldPe(pe), pe);
  }
  EXPECT_EQ(node.nPes(), local);
  world.barrier();
  node.sync();
}

TEST(Teams, SplitEvenAndOdd) {
  axon::Team world = axon::Team::world();
  const int evens = (np() + 1) / 2, odds = np() / 2;
  axon::Team even = world.splitStrided(0, 2, evens);
  axon::Team odd = odds > 0 ? world.splitStrided(1, 2, odds) : axon::Team();
  if (me() % 2 == 0) {
    ASSERT_TRUE(even.valid());
    EXPECT_FALSE(odd.valid());
    EXPECT_EQ(even.myPe(), me() / 2);
    EXPECT_EQ(even.nPes(), evens);
    for (int i = 0; i < evens; ++i) {
      EXPECT_EQ(even.worldPe(i), 2 * i);
      EXPECT_EQ(even.translate(i, world), 2 * i);
    }
    // A PE of the world outside the team translates to -1.
    if (np() > 1) EXPECT_EQ(world.translate(1, even), -1);
    // Barriers of the sub-team, many times: the counters must stay in step.
    for (int i = 0; i < 50; ++i) even.barrier();
    even.destroy();
    EXPECT_FALSE(even.valid());
  } else {
    EXPECT_FALSE(even.valid());
    ASSERT_TRUE(odd.valid());
    EXPECT_EQ(odd.myPe(), me() / 2);
    for (int i = 0; i < 50; ++i) odd.sync();
    odd.destroy();
  }
  world.barrier();
}

TEST(Teams, SlotsAreReusedAfterDestroy) {
  axon::Team world = axon::Team::world();
  // More splits than there are slots: only works if destroy frees them and zeroes the counters.
  for (int round = 0; round < 100; ++round) {
    axon::Team all = world.splitStrided(0, 1, np());
    ASSERT_TRUE(all.valid());
    EXPECT_EQ(all.myPe(), me());
    for (int i = 0; i < 3; ++i) all.barrier();
    all.destroy();
  }
}

TEST(Teams, NestedSplitAndTranslate) {
  if (np() < 4) GTEST_SKIP() << "needs 4 PEs";
  axon::Team world = axon::Team::world();
  axon::Team upper = world.splitStrided(np() / 2, 1, np() - np() / 2);
  if (me() >= np() / 2) {
    ASSERT_TRUE(upper.valid());
    axon::Team pair = upper.splitStrided(0, 1, 2);
    if (upper.myPe() < 2) {
      ASSERT_TRUE(pair.valid());
      EXPECT_EQ(pair.worldPe(pair.myPe()), me());
      EXPECT_EQ(pair.translate(1, world), np() / 2 + 1);
      EXPECT_EQ(pair.translate(0, upper), 0);
      pair.barrier();
      pair.destroy();
    } else {
      EXPECT_FALSE(pair.valid());
    }
    upper.destroy();
  }
  world.barrier();
}

// Colours by parity (interleaved: members alternate nodes when the run spans them), keys in
// reverse: the new team's order is by key. Its collectives and one-sided calls work.
TEST(Teams, SplitByColourAndKey) {
  axon::Team world = axon::Team::world();
  axon::Team t = world.split(me() % 2, np() - me());
  ASSERT_TRUE(t.valid());
  std::vector<int> expected;  // world ranks of my colour, by descending rank
  for (int pe = np() - 1; pe >= 0; --pe) {
    if (pe % 2 == me() % 2) expected.push_back(pe);
  }
  ASSERT_EQ(t.nPes(), static_cast<int>(expected.size()));
  for (int i = 0; i < t.nPes(); ++i) EXPECT_EQ(t.worldPe(i), expected[i]);
  EXPECT_EQ(t.worldPe(t.myPe()), me());
  // The team's collectives: every member's world rank, summed and gathered in team order.
  std::int64_t mine = me(), sum = 0;
  axon::allreduce(t, &mine, &sum, 1, axon::ReduceOp::Sum);
  std::int64_t want = 0;
  for (int pe : expected) want += pe;
  EXPECT_EQ(sum, want);
  std::vector<std::int32_t> ranks(t.nPes(), -1);
  const std::int32_t myRank = me();
  axon::allgather(t, &myRank, ranks.data(), 1, axon::DataType::Int32);
  for (int i = 0; i < t.nPes(); ++i) EXPECT_EQ(ranks[i], expected[i]);
  t.barrier();
  t.destroy();
  // A negative colour joins no team; the others still form theirs.
  axon::Team some = world.split(me() == 0 ? axon::Team::kNoColour : 7);
  EXPECT_EQ(some.valid(), me() != 0);
  if (some.valid()) {
    EXPECT_EQ(some.nPes(), np() - 1);
    EXPECT_EQ(some.worldPe(0), 1);  // equal keys keep the parent's order
    some.destroy();
  }
  world.barrier();
}

// Teams of listed PEs: only the listed PEs call (the others go on to other work), the list's
// order is the team's, the same list twice gives two teams, and overlapping lists coexist.
TEST(Teams, OfWorldPesInvolvesOnlyTheListed) {
  if (np() < 2) GTEST_SKIP() << "needs 2 PEs";
  axon::Team world = axon::Team::world();
  // The odd PEs, in reverse, made twice; PE 0 meanwhile makes a team of itself alone.
  std::vector<int> odd;
  for (int pe = np() - 1; pe >= 0; --pe) {
    if (pe % 2) odd.push_back(pe);
  }
  if (me() % 2) {
    axon::Team a = axon::Team::ofWorldPes(odd), b = axon::Team::ofWorldPes(odd);
    for (axon::Team* t : {&a, &b}) {
      ASSERT_EQ(t->nPes(), static_cast<int>(odd.size()));
      for (int i = 0; i < t->nPes(); ++i) EXPECT_EQ(t->worldPe(i), odd[i]);
      std::int64_t mine = me() + 1, sum = 0;
      axon::allreduce(*t, &mine, &sum, 1, axon::ReduceOp::Sum);
      std::int64_t want = 0;
      for (int pe : odd) want += pe + 1;
      EXPECT_EQ(sum, want);
    }
    b.destroy();
    a.destroy();
  } else if (me() == 0) {
    axon::Team alone = axon::Team::ofWorldPes({0});
    EXPECT_EQ(alone.nPes(), 1);
    alone.barrier();
    alone.destroy();
  }
  // Overlapping lists, made one after the other on the PE they share: {0, 1} then {1, ..., n-1}.
  if (me() <= 1) {
    axon::Team pair = axon::Team::ofWorldPes({0, 1});
    std::int32_t mine = 10 + me(), got[2] = {-1, -1};
    axon::allgather(pair, &mine, got, 1, axon::DataType::Int32);
    EXPECT_EQ(got[0], 10);
    EXPECT_EQ(got[1], 11);
    pair.destroy();
  }
  if (me() >= 1 && np() > 2) {
    std::vector<int> rest;
    for (int pe = 1; pe < np(); ++pe) rest.push_back(pe);
    axon::Team t = axon::Team::ofWorldPes(rest);
    EXPECT_EQ(t.myPe(), me() - 1);
    t.barrier();
    t.destroy();
  }
  world.barrier();
}

TEST(Teams, OfWorldPesRefusesBadLists) {
  auto codeOf = [](const std::vector<int>& pes) {
    try {
      axon::Team::ofWorldPes(pes);
    } catch (const axon::Error& e) {
      return e.code();
    }
    return axon::ErrorCode::Internal;  // no error: the EXPECTs below fail
  };
  EXPECT_EQ(codeOf({}), axon::ErrorCode::InvalidArgument);
  EXPECT_EQ(codeOf({me(), np()}), axon::ErrorCode::InvalidArgument);
  EXPECT_EQ(codeOf({me(), me()}), axon::ErrorCode::InvalidArgument);
  if (np() > 1) EXPECT_EQ(codeOf({(me() + 1) % np()}), axon::ErrorCode::InvalidArgument);
  axon::Team::world().barrier();
}

TEST(Teams, BadSplitsFailOnEveryPe) {
  axon::Team world = axon::Team::world();
  try {
    world.splitStrided(0, 1, np() + 1);
    FAIL();
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::InvalidArgument) << e.what();
  }
  if (np() > 1) {
    try {
      world.splitStrided(0, 1, me() == 0 ? 1 : 2);
      FAIL();
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
    }
  }
  if (np() > 1) {
    // One PE calls the other split: every PE says so.
    try {
      if (me() == 0) world.split(0);
      else world.splitStrided(0, 1, np());
      FAIL();
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
      EXPECT_NE(std::string(e.what()).find(me() == 0 ? "team_split_strided(0, 1, " : "team_split(colour 0"),
                std::string::npos)
          << e.what();
    }
  }
  axon::Team invalid;
  EXPECT_THROW(invalid.barrier(), axon::Error);
  EXPECT_THROW(world.translate(np(), world), axon::Error);
  EXPECT_THROW(world.destroy(), axon::Error);
  world.barrier();
}

// A team's own timeout bounds its waits (AXON_TIMEOUT is 30 s in these tests): a collective, a
// barrier and a receive that PE 0 never joins end on the others after the team's 0.5 s, naming
// it. PE 0 goes on at once; the world barrier at the end brings every PE together again.
TEST(Teams, OwnTimeoutBoundsTheTeamsWaits) {
  axon::Team world = axon::Team::world();
  axon::Team team = world.splitStrided(0, 1, np());
  axon::Team other = world.splitStrided(0, 1, np());  // for the barrier: a failed call stops a team
  const double axonTimeout = team.timeout();
  EXPECT_GT(axonTimeout, 5.0);
  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    try {
      team.setTimeout(bad);
      FAIL() << bad << " s was taken as a timeout";
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), axon::ErrorCode::InvalidArgument) << e.what();
    }
  }
  team.setTimeout(0.5);
  other.setTimeout(0.5);
  EXPECT_DOUBLE_EQ(team.timeout(), 0.5);
  auto expectTimeout = [&](const char* what, const std::function<void()>& call) {
    const auto start = std::chrono::steady_clock::now();
    try {
      call();
      ADD_FAILURE() << what << " returned although PE 0 never took part";
    } catch (const axon::Error& e) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_EQ(e.code(), axon::ErrorCode::Timeout) << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("the team's timeout"), std::string::npos) << what << ": " << e.what();
      EXPECT_GE(seconds, 0.45) << what;
      EXPECT_LT(seconds, 10.0) << what << ": ended after " << seconds << " s, not the team's 0.5 s";
    }
  };
  if (np() > 1 && me() != 0) {
    std::vector<float> a(4, 1.0f), b(4);
    expectTimeout("allreduce", [&] {
      axon::allreduce(team, a.data(), b.data(), a.size(), axon::DataType::Float32, axon::ReduceOp::Sum);
    });
    expectTimeout("sync", [&] { other.sync(); });
    std::vector<char> buf(8);
    expectTimeout("recv", [&] { axon::recv(buf.data(), buf.size(), 0, 77, team); });
  }
  world.barrier();
  team.setTimeout(0);
  EXPECT_DOUBLE_EQ(team.timeout(), axonTimeout);
  // A team's bound is its own: the world's is still AXON_TIMEOUT.
  EXPECT_DOUBLE_EQ(world.timeout(), axonTimeout);
  world.barrier();
}

}  // namespace
