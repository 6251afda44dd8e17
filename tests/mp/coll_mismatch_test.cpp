// Mismatched collective calls, pair by pair: different collectives, roots, counts, types and ops,
// the collective barrier, the team barrier (Team::barrier, Team::sync) and a team's destroy
// against a collective. Every PE's own call must throw CollectiveMismatch naming both calls: none
// returns normally (it might hold wrong data), none waits for AXON_TIMEOUT. Run on 4 PEs, with the
// default algorithms, with ring/chain/two-shot forced through a small workspace, and on 2
// emulated nodes (tests/mp/CMakeLists.txt); world-level calls (barrier_all, finalize) are in
// sync_mismatch_test.cpp, since they end the world's collectives.
#include <gtest/gtest.h>

#include <axon/axon.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace {

using axon::DataType;
using axon::ReduceOp;

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }
// The lower half of the PEs makes one call, the upper half the other.
bool lowerHalf() { return me() < np() / 2; }

// Runs `call` on a fresh team of every PE. Every PE's call must throw CollectiveMismatch (not a
// Timeout: well before AXON_TIMEOUT) whose message contains each of `names`.
void expectMismatch(const char* what, const std::vector<std::string>& names,
                    const std::function<void(const axon::Team&)>& call) {
  axon::Team world = axon::Team::world();
  axon::Team team = world.splitStrided(0, 1, np());
  const auto start = std::chrono::steady_clock::now();
  bool threw = false;
  std::string message;
  try {
    call(team);
  } catch (const axon::Error& e) {
    threw = true;
    message = e.what();
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << what << ": " << message;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(threw) << what << ": PE " << me() << "'s call returned normally";
  EXPECT_LT(seconds, 5.0) << what << ": found only after " << seconds << " s";
  EXPECT_NE(message.find("mismatch"), std::string::npos) << what << ": '" << message << "'";
  for (const std::string& name : names) {
    EXPECT_NE(message.find(name), std::string::npos) << what << ": '" << name << "' is not named in '" << message << "'";
  }
  // The team refuses its next collective, and can still be destroyed.
  if (threw) {
    try {
      axon::barrier(team);
      ADD_FAILURE() << what << ": a collective after the mismatch succeeded";
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
    }
  }
  team.destroy();
  world.barrier();
}

struct Buffers {
  // Big enough for every call below: 2 MiB per PE and per block, so that large calls take many
  // rounds (chain broadcast, two-shot allreduce).
  std::vector<std::int32_t> src = std::vector<std::int32_t>(std::size_t{1} << 19, 1);
  std::vector<std::int32_t> dst = std::vector<std::int32_t>((std::size_t{1} << 19) * 4, 0);
};

TEST(CollMismatch, DifferentCollectives) {
  Buffers b;
  // The case that returned wrong data on half the PEs: allreduce against broadcast from a root
  // that agrees with itself.
  for (int root : {0, np() - 1}) {
    expectMismatch("allreduce against broadcast", {"allreduce(", "broadcast("}, [&](const axon::Team& t) {
      if (lowerHalf()) axon::allreduce(t, b.src.data(), b.dst.data(), 64, DataType::Int32, ReduceOp::Sum);
      else axon::broadcast(t, b.src.data(), b.dst.data(), 64, DataType::Int32, root);
    });
  }
  expectMismatch("allgather against alltoall", {"allgather(", "alltoall("}, [&](const axon::Team& t) {
    if (me() == 0) axon::allgather(t, b.src.data(), b.dst.data(), 16, DataType::Int32);
    else axon::alltoall(t, b.src.data(), b.dst.data(), 16, DataType::Int32);
  });
  // Across nodes alltoall goes straight between the PEs: a count that differs on one half (every
  // PE exchanges data with the other node's, records with the data), and alltoall against allreduce
  // (the direct level on one half, the leaders' on the other; large: many rounds in flight).
  expectMismatch("alltoall counts", {"alltoall(count 16,", "alltoall(count 17,"}, [&](const axon::Team& t) {
    axon::alltoall(t, b.src.data(), b.dst.data(), lowerHalf() ? 16 : 17, DataType::Int32);
  });
  expectMismatch("alltoall against allreduce", {"alltoall(", "allreduce("}, [&](const axon::Team& t) {
    if (lowerHalf()) axon::alltoall(t, b.src.data(), b.dst.data(), 100000, DataType::Int32);
    else axon::allreduce(t, b.src.data(), b.dst.data(), 400000, DataType::Int32, ReduceOp::Sum);
  });
  expectMismatch("reduce against reduce_scatter", {"reduce(", "reduce_scatter("}, [&](const axon::Team& t) {
    if (lowerHalf()) axon::reduce(t, b.src.data(), b.dst.data(), 64, DataType::Int32, ReduceOp::Sum, 0);
    else axon::reduceScatter(t, b.src.data(), b.dst.data(), 16, DataType::Int32, ReduceOp::Sum);
  });
}

TEST(CollMismatch, DifferentRoots) {
  Buffers b;
  const int other = np() / 2;
  const std::string r0 = "root 0", r1 = "root " + std::to_string(other);
  // Each half agrees on its root: the readers of each root get data from it.
  expectMismatch("broadcast roots", {r0, r1}, [&](const axon::Team& t) {
    axon::broadcast(t, b.src.data(), b.dst.data(), 64, DataType::Int32, lowerHalf() ? 0 : other);
  });
  // Large: the pipelined chain (or the leaders' broadcast across nodes), many rounds.
  expectMismatch("large broadcast roots", {r0, r1}, [&](const axon::Team& t) {
    axon::broadcast(t, b.src.data(), b.dst.data(), b.src.size(), DataType::Int32, lowerHalf() ? 0 : other);
  });
  expectMismatch("reduce roots", {r0, r1}, [&](const axon::Team& t) {
    axon::reduce(t, b.src.data(), b.dst.data(), 64, DataType::Int32, ReduceOp::Sum, lowerHalf() ? 0 : other);
  });
  // Every PE its own root: no data flows at all.
  expectMismatch("every PE a root", {"broadcast("}, [&](const axon::Team& t) {
    axon::broadcast(t, b.src.data(), b.dst.data(), 64, DataType::Int32, t.myPe());
  });
}

TEST(CollMismatch, DifferentCountsTypesOps) {
  Buffers b;
  expectMismatch("counts", {"count 100,", "count 101,"}, [&](const axon::Team& t) {
    axon::allreduce(t, b.src.data(), b.dst.data(), lowerHalf() ? 100 : 101, DataType::Int32, ReduceOp::Sum);
  });
  expectMismatch("large counts", {"count 524288,", "count 524287,"}, [&](const axon::Team& t) {
    axon::allreduce(t, b.src.data(), b.dst.data(), b.src.size() - (lowerHalf() ? 0 : 1), DataType::Int32,
                    ReduceOp::Sum);
  });
  expectMismatch("types", {"int32", "float32"}, [&](const axon::Team& t) {
    axon::allreduce(t, b.src.data(), b.dst.data(), 64, lowerHalf() ? DataType::Int32 : DataType::Float32,
                    ReduceOp::Sum);
  });
  expectMismatch("ops", {"sum", "max"}, [&](const axon::Team& t) {
    axon::allreduce(t, b.src.data(), b.dst.data(), 64, DataType::Int32, lowerHalf() ? ReduceOp::Sum : ReduceOp::Max);
  });
  expectMismatch("allgather counts", {"count 8,", "count 9,"}, [&](const axon::Team& t) {
    axon::allgather(t, b.src.data(), b.dst.data(), me() == np() - 1 ? 9 : 8, DataType::Int32);
  });
}

TEST(CollMismatch, BarriersAgainstCollectives) {
  Buffers b;
  expectMismatch("collective barrier against allreduce", {"barrier(", "allreduce("}, [&](const axon::Team& t) {
    if (lowerHalf()) axon::barrier(t);
    else axon::allreduce(t, b.src.data(), b.dst.data(), 8, DataType::Int32, ReduceOp::Sum);
  });
  expectMismatch("Team::barrier against allreduce", {"Team::barrier()", "allreduce("}, [&](const axon::Team& t) {
    if (lowerHalf()) t.barrier();
    else axon::allreduce(t, b.src.data(), b.dst.data(), 8, DataType::Int32, ReduceOp::Sum);
  });
  expectMismatch("Team::sync against broadcast", {"Team::sync()", "broadcast("}, [&](const axon::Team& t) {
    if (me() == np() - 1) t.sync();
    else axon::broadcast(t, b.src.data(), b.dst.data(), 64, DataType::Int32, 0);
  });
  expectMismatch("Team::barrier against the collective barrier", {"Team::barrier()", "barrier(count"},
                 [&](const axon::Team& t) {
                   if (me() == 0) t.barrier();
                   else axon::barrier(t);
                 });
}

TEST(CollMismatch, DestroyAgainstCollective) {
  Buffers b;
  axon::Team world = axon::Team::world();
  axon::Team team = world.splitStrided(0, 1, np());
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    if (lowerHalf()) team.destroy();
    else axon::allgather(team, b.src.data(), b.dst.data(), 4, DataType::Int32);
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
    message = e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_NE(message.find("Team::destroy()"), std::string::npos) << "'" << message << "'";
  EXPECT_NE(message.find("allgather("), std::string::npos) << "'" << message << "'";
  // The destroy that failed left the team; it goes now, on every PE.
  team.destroy();
  world.barrier();
}

TEST(CollMismatch, MatchedCallsAndBarriersStillAgree) {
  // Collectives, team barriers and syncs interleaved alike on every PE: no false mismatch, and the
  // results are right.
  axon::Team world = axon::Team::world();
  axon::Team team = world.splitStrided(0, 1, np());
  const int n = np();
  for (int i = 0; i < 200; ++i) {
    std::vector<std::int64_t> x(1 + i % 7, me() + i), y(x.size(), -1);
    axon::allreduce(team, x.data(), y.data(), x.size(), DataType::Int64, ReduceOp::Sum);
    ASSERT_EQ(y[0], static_cast<std::int64_t>(n) * i + n * (n - 1) / 2) << "call " << i;
    if (i % 3 == 0) team.barrier();
    if (i % 5 == 0) team.sync();
    const int root = i % n;
    std::vector<std::int64_t> z(x.size(), me() == root ? 1000 + i : -1);
    axon::broadcast(team, z.data(), z.data(), z.size(), DataType::Int64, root);
    ASSERT_EQ(z.back(), 1000 + i) << "call " << i;
    if (i % 4 == 0) axon::barrier(team);
    if (i % 6 == 0) world.barrier();
  }
  team.destroy();
  world.barrier();
}

}  // namespace
