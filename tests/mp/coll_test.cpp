// Collectives on the host backend: every collective, type and op, counts that are multiples of
// nothing (and zero), in place, many back-to-back, two teams from two threads, mismatches, bad
// input. Run on 2 to 8 PEs, and again with each algorithm forced (tests/mp/CMakeLists.txt).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <axon/axon.hpp>

#include "coll_reference.hpp"

namespace {

using axon::Collective;
using axon::DataType;
using axon::ReduceOp;
using namespace axon::test;

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }

constexpr DataType kTypes[] = {DataType::Int8,    DataType::Uint8,    DataType::Int32,   DataType::Uint32,
                               DataType::Int64,   DataType::Uint64,   DataType::Float16, DataType::BFloat16,
                               DataType::Float32, DataType::Float64};
constexpr ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max};
// Zero, one, primes, and one past several workspace halves (AXON_COLL_BUFFER is small in some runs).
constexpr std::size_t kCounts[] = {0, 1, 7, 1031, 70001};

std::string where(DataType t, ReduceOp op, std::size_t count, std::size_t i) {
  return std::string(axon::dataTypeName(t)) + " " + axon::reduceOpName(op) + " count " + std::to_string(count) +
         " element " + std::to_string(i);
}

// Counts the mismatching elements of out (n elements from index `first` of the reference).
template <class Expected>
std::size_t wrong(DataType t, const void* out, std::size_t n, const Expected& expected) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!sameValue(t, loadValue(t, out, i), expected(i))) ++bad;
  }
  return bad;
}

void checkAllreduce(const axon::Team& team, DataType t, ReduceOp op, std::size_t count, bool inPlace, std::uint64_t seed) {
  const int n = team.nPes(), mine = team.myPe();
  auto src = inputBuffer(t, op, seed, mine, count);
  std::vector<char> dst(src.size(), 0x5a);
  void* out = inPlace ? src.data() : dst.data();
  axon::allreduce(team, src.data(), out, count, t, op);
  EXPECT_EQ(wrong(t, out, count, [&](std::size_t i) { return reduced(t, op, seed, n, i); }), 0u)
      << "allreduce " << where(t, op, count, 0) << (inPlace ? " in place" : "");
}

TEST(Collectives, AllreduceEveryTypeOpAndCount) {
  axon::Team world = axon::Team::world();
  std::uint64_t seed = 1;
  for (DataType t : kTypes) {
    for (ReduceOp op : kOps) {
      for (std::size_t count : kCounts) checkAllreduce(world, t, op, count, (++seed) % 2 == 0, seed);
    }
  }
}

TEST(Collectives, ReduceToEveryRoot) {
  axon::Team world = axon::Team::world();
  std::uint64_t seed = 100;
  for (DataType t : {DataType::Int32, DataType::Float16, DataType::Uint8, DataType::Float64}) {
    for (ReduceOp op : kOps) {
      for (int root = 0; root < np(); ++root) {
        const std::size_t count = 1 + (seed * 7919) % 5000;
        auto src = inputBuffer(t, op, ++seed, me(), count);
        std::vector<char> dst(src.size(), 0);
        const bool inPlace = root % 2 == 1;
        void* out = inPlace ? src.data() : dst.data();
        axon::reduce(world, src.data(), me() == root ? out : nullptr, count, t, op, root);
        if (me() != root) continue;
        EXPECT_EQ(wrong(t, out, count, [&](std::size_t i) { return reduced(t, op, seed, np(), i); }), 0u)
            << "reduce to root " << root << " " << where(t, op, count, 0);
      }
    }
  }
}

TEST(Collectives, BroadcastFromEveryRoot) {
  axon::Team world = axon::Team::world();
  for (std::size_t count : {std::size_t{0}, std::size_t{3}, std::size_t{4099}, std::size_t{300001}}) {
    for (int root = 0; root < np(); ++root) {
      const std::uint64_t seed = 7 + count + root;
      auto src = inputBuffer(DataType::Uint32, ReduceOp::Sum, seed, root, count);
      std::vector<char> dst(src.size(), 0);
      const bool inPlace = count % 2 == 1;
      if (inPlace && me() != root) src.assign(src.size(), 0);  // non-roots' data is overwritten
      void* out = inPlace ? src.data() : dst.data();
      axon::broadcast(world, me() == root || inPlace ? src.data() : nullptr, out, count, DataType::Uint32, root);
      EXPECT_EQ(wrong(DataType::Uint32, out, count,
                      [&](std::size_t i) { return inputValue(DataType::Uint32, ReduceOp::Sum, seed, root, i); }),
                0u)
          << "broadcast of " << count << " from root " << root;
    }
  }
}

TEST(Collectives, AllgatherReduceScatterAlltoall) {
  axon::Team world = axon::Team::world();
  const int n = np();
  std::uint64_t seed = 500;
  for (DataType t : kTypes) {
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{13}, std::size_t{40009}}) {
      ++seed;
      const std::size_t e = axon::dataTypeSize(t);
      // allgather, out of place and in place
      auto mine = inputBuffer(t, ReduceOp::Max, seed, me(), count);
      std::vector<char> all(n * count * e + 1, 0);
      axon::allgather(world, mine.data(), all.data(), count, t);
      std::vector<char> inPlace(n * count * e + 1, 0);
      std::memcpy(inPlace.data() + me() * count * e, mine.data(), count * e);
      axon::allgather(world, inPlace.data() + me() * count * e, inPlace.data(), count, t);
      for (const auto* out : {&all, &inPlace}) {
        EXPECT_EQ(wrong(t, out->data(), n * count,
                        [&](std::size_t i) { return inputValue(t, ReduceOp::Max, seed, int(i / count), i % count); }),
                  0u)
            << "allgather " << where(t, ReduceOp::Max, count, 0);
      }
      // reduce_scatter: block b of every PE's input reduces into PE b's output
      for (ReduceOp op : kOps) {
        auto src = inputBuffer(t, op, seed, me(), n * count);
        std::vector<char> dst(count * e + 1, 0);
        const bool inPlaceRs = (seed + static_cast<int>(op)) % 2 == 0;
        void* out = inPlaceRs ? src.data() + me() * count * e : dst.data();
        axon::reduceScatter(world, src.data(), out, count, t, op);
        EXPECT_EQ(wrong(t, out, count,
                        [&](std::size_t i) { return reduced(t, op, seed, n, me() * count + i); }),
                  0u)
            << "reduce_scatter " << where(t, op, count, 0) << (inPlaceRs ? " in place" : "");
      }
      // alltoall: block j of PE i lands as block i on PE j; element (i, j, k) is encoded by seed
      auto src = inputBuffer(t, ReduceOp::Max, seed, me(), n * count);
      std::vector<char> dst(n * count * e + 1, 0);
      axon::alltoall(world, src.data(), dst.data(), count, t);
      EXPECT_EQ(wrong(t, dst.data(), n * count,
                      [&](std::size_t i) {
                        const int from = static_cast<int>(i / count);
                        return inputValue(t, ReduceOp::Max, seed, from, me() * count + i % count);
                      }),
                0u)
          << "alltoall " << where(t, ReduceOp::Max, count, 0);
    }
  }
}

// 10,000 back-to-back collectives of random kind, size and root (the same sequence on every PE),
// each verified: 2,000 on more than 4 PEs, and AXON_TEST_MIXED_CALLS where it is set (the runs
// with a forced algorithm and a small workspace, whose calls take many rounds each).
TEST(Collectives, TenThousandMixed) {
  axon::Team world = axon::Team::world();
  const int n = np();
  const char* calls = std::getenv("AXON_TEST_MIXED_CALLS");
  const int iterations = calls ? std::atoi(calls) : n <= 4 ? 10000 : 2000;
  ASSERT_GT(iterations, 0) << "AXON_TEST_MIXED_CALLS=" << calls;
  std::mt19937_64 rng(42);
  for (int it = 0; it < iterations; ++it) {
    const auto kind = static_cast<Collective>(rng() % 7);
    const std::size_t count = rng() % 3 == 0 ? rng() % 20000 : rng() % 64;
    const DataType t = kTypes[rng() % 10];
    const ReduceOp op = kOps[rng() % 4];
    const int root = static_cast<int>(rng() % n);
    const std::uint64_t seed = rng();
    const std::size_t e = axon::dataTypeSize(t);
    std::size_t bad = 0;
    switch (kind) {
      case Collective::Barrier: axon::barrier(world); break;
      case Collective::Broadcast: {
        auto src = inputBuffer(t, op, seed, root, count);
        std::vector<char> dst(src.size());
        axon::broadcast(world, src.data(), dst.data(), count, t, root);
        bad = wrong(t, dst.data(), count, [&](std::size_t i) { return inputValue(t, op, seed, root, i); });
        break;
      }
      case Collective::Reduce: {
        auto src = inputBuffer(t, op, seed, me(), count);
        std::vector<char> dst(src.size());
        axon::reduce(world, src.data(), dst.data(), count, t, op, root);
        if (me() == root) bad = wrong(t, dst.data(), count, [&](std::size_t i) { return reduced(t, op, seed, n, i); });
        break;
      }
      case Collective::Allreduce: {
        auto src = inputBuffer(t, op, seed, me(), count);
        axon::allreduce(world, src.data(), src.data(), count, t, op);
        bad = wrong(t, src.data(), count, [&](std::size_t i) { return reduced(t, op, seed, n, i); });
        break;
      }
      case Collective::Allgather: {
        auto src = inputBuffer(t, op, seed, me(), count);
        std::vector<char> dst(n * count * e + 1);
        axon::allgather(world, src.data(), dst.data(), count, t);
        bad = wrong(t, dst.data(), n * count,
                    [&](std::size_t i) { return inputValue(t, op, seed, int(i / count), i % count); });
        break;
      }
      case Collective::ReduceScatter: {
        auto src = inputBuffer(t, op, seed, me(), n * count);
        std::vector<char> dst(count * e + 1);
        axon::reduceScatter(world, src.data(), dst.data(), count, t, op);
        bad = wrong(t, dst.data(), count, [&](std::size_t i) { return reduced(t, op, seed, n, me() * count + i); });
        break;
      }
      case Collective::Alltoall: {
        auto src = inputBuffer(t, op, seed, me(), n * count);
        std::vector<char> dst(n * count * e + 1);
        axon::alltoall(world, src.data(), dst.data(), count, t);
        bad = wrong(t, dst.data(), n * count, [&](std::size_t i) {
          return inputValue(t, op, seed, int(i / count), me() * count + i % count);
        });
        break;
      }
    }
    ASSERT_EQ(bad, 0u) << "iteration " << it << ": " << axon::collectiveName(kind) << " "
                       << where(t, op, count, 0) << " root " << root;
  }
}

// Two teams with the same members, driven from two threads at once: each team's calls are
// ordered, the two teams' are not.
TEST(Collectives, TwoTeamsFromTwoThreads) {
  axon::Team world = axon::Team::world();
  axon::Team a = world.splitStrided(0, 1, np());
  axon::Team b = world.splitStrided(0, 1, np());
  std::atomic<int> failures{0};
  auto drive = [&](const axon::Team& team, std::uint64_t salt) {
    for (int it = 0; it < 300; ++it) {
      const std::size_t count = 1 + (it * 37 + salt) % 3000;
      const std::uint64_t seed = salt * 100000 + it;
      auto src = inputBuffer(DataType::Int64, ReduceOp::Sum, seed, team.myPe(), count);
      std::vector<char> dst(src.size());
      axon::allreduce(team, src.data(), dst.data(), count, DataType::Int64, ReduceOp::Sum);
      failures += static_cast<int>(wrong(DataType::Int64, dst.data(), count, [&](std::size_t i) {
        return reduced(DataType::Int64, ReduceOp::Sum, seed, team.nPes(), i);
      }));
    }
  };
  std::thread ta(drive, std::cref(a), 1), tb(drive, std::cref(b), 2);
  ta.join();
  tb.join();
  EXPECT_EQ(failures.load(), 0);
  a.destroy();
  b.destroy();
}

// Runs `call` (which differs between PEs) on a fresh team and expects CollectiveMismatch: from
// the call itself, or, on a PE whose part completed before the mismatch was found, from the next
// collective on the team. The team is destroyed after.
template <class F>
void expectMismatch(const char* what, F&& call) {
  axon::Team world = axon::Team::world();
  axon::Team team = world.splitStrided(0, 1, np());
  std::string message;
  try {
    call(team);
    axon::barrier(team);
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << what << ": " << e.what();
    message = e.what();
  }
  EXPECT_NE(message.find("mismatch"), std::string::npos) << what << ": got '" << message << "'";
  // The team refuses further collectives, naming why.
  try {
    axon::barrier(team);
    ADD_FAILURE() << what << ": a collective after the mismatch succeeded";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
  }
  team.destroy();
  world.barrier();
}

TEST(Collectives, MismatchesAreReportedOnEveryPe) {
  std::vector<std::int32_t> buf(4096 * np(), 1), out(4096 * np(), 0);
  expectMismatch("count", [&](const axon::Team& t) {
    axon::allreduce(t, buf.data(), out.data(), me() == 0 ? 100 : 101, DataType::Int32, ReduceOp::Sum);
  });
  expectMismatch("type", [&](const axon::Team& t) {
    axon::allreduce(t, buf.data(), out.data(), 64, me() == np() - 1 ? DataType::Float32 : DataType::Int32,
                    ReduceOp::Sum);
  });
  expectMismatch("op", [&](const axon::Team& t) {
    axon::allreduce(t, buf.data(), out.data(), 64, DataType::Int32, me() == 0 ? ReduceOp::Max : ReduceOp::Sum);
  });
  // Every PE thinks it is the root: no data flows, the acks never come.
  expectMismatch("root", [&](const axon::Team& t) {
    axon::broadcast(t, buf.data(), out.data(), 64, DataType::Int32, t.myPe());
  });
  expectMismatch("collective", [&](const axon::Team& t) {
    if (me() == 0) {
      axon::allgather(t, buf.data(), out.data(), 64, DataType::Int32);
    } else {
      axon::broadcast(t, buf.data(), out.data(), 64, DataType::Int32, 0);
    }
  });
  expectMismatch("barrier against allreduce", [&](const axon::Team& t) {
    if (me() == 0) axon::barrier(t);
    else axon::allreduce(t, buf.data(), out.data(), 8, DataType::Int32, ReduceOp::Sum);
  });
}

TEST(Collectives, BadArguments) {
  axon::Team world = axon::Team::world();
  std::vector<float> buf(64 * np());
  auto code = [](auto&& fn) -> axon::ErrorCode {
    try {
      fn();
    } catch (const axon::Error& e) {
      return e.code();
    }
    return axon::ErrorCode::Internal;
  };
  using axon::ErrorCode;
  EXPECT_EQ(code([&] { axon::broadcast(world, buf.data(), buf.data(), 4, DataType::Float32, np()); }), ErrorCode::InvalidPe);
  EXPECT_EQ(code([&] { axon::reduce(world, buf.data(), buf.data(), 4, DataType::Float32, ReduceOp::Sum, -1); }),
            ErrorCode::InvalidPe);
  EXPECT_EQ(code([&] { axon::allreduce(world, nullptr, buf.data(), 4, DataType::Float32, ReduceOp::Sum); }),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { axon::allreduce(world, buf.data(), buf.data(), 4, static_cast<DataType>(99), ReduceOp::Sum); }),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { axon::allreduce(world, buf.data(), buf.data(), 4, DataType::Float32, static_cast<ReduceOp>(9)); }),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(code([&] { axon::allreduce(world, buf.data(), buf.data() + 1, 4, DataType::Float32, ReduceOp::Sum); }),
            ErrorCode::InvalidArgument);  // partial overlap
  EXPECT_EQ(code([&] { axon::allreduce(world, buf.data(), buf.data(), std::size_t(-1) / 2, DataType::Float32, ReduceOp::Sum); }),
            ErrorCode::InvalidArgument);  // size overflow
  EXPECT_EQ(code([&] { axon::allreduce(axon::Team(), buf.data(), buf.data(), 4, DataType::Float32, ReduceOp::Sum); }),
            ErrorCode::InvalidArgument);  // invalid team
  // A symmetric-heap buffer must hold what the call touches there (8 floats here).
  auto* small = static_cast<float*>(axon::malloc(8 * sizeof(float)));
  EXPECT_EQ(code([&] { axon::allgather(world, buf.data(), small, 8, DataType::Float32); }),
            np() > 1 ? ErrorCode::OutOfBounds : ErrorCode::Internal);  // dst: 8 * nPes floats
  EXPECT_EQ(code([&] { axon::allreduce(world, small, buf.data(), 9, DataType::Float32, ReduceOp::Sum); }),
            ErrorCode::OutOfBounds);  // src: 9 floats
  try {
    axon::broadcast(world, small + 4, small + 4, 5, DataType::Float32, 0);
    ADD_FAILURE() << "no error";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfBounds);
    EXPECT_NE(std::string(e.what()).find(me() == 0 ? "src range of 20 bytes" : "dst range of 20 bytes"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("runs 4 bytes past its allocation"), std::string::npos) << e.what();
  }
  axon::allreduce(world, small, small, 8, DataType::Float32, ReduceOp::Sum);  // fits: no error
  axon::free(small);
  // None of these reached the workspace: the world still works.
  std::vector<float> ones(8, 1.0f);
  axon::allreduce(world, ones.data(), ones.data(), 8, DataType::Float32, ReduceOp::Sum);
  EXPECT_EQ(ones[7], static_cast<float>(np()));
}

TEST(Collectives, ExplainMatchesTheCall) {
  axon::Team world = axon::Team::world();
  auto e = axon::explain(Collective::Allreduce, world, 16, DataType::Float32);
  EXPECT_FALSE(e.algorithm.empty());
  // Members on several nodes: the node's protocol, then the network among node leaders.
  const bool nodes = axon::Team::node().nPes() < np();
  EXPECT_EQ(e.path, np() == 1 ? "local" : nodes ? "hierarchical" : "host-shm");
  EXPECT_NE(axon::toString(e).find("allreduce"), std::string::npos);
  EXPECT_NE(e.reason.find("64 B"), std::string::npos) << e.reason;
  // The host paths run no kernel: no SMs to report.
  EXPECT_EQ(e.blocks, 0);
  EXPECT_EQ(e.sms, 0.0);
  EXPECT_EQ(axon::toString(e).find("block(s)"), std::string::npos) << axon::toString(e);
  EXPECT_EQ(axon::smUseText(e), "no kernel");
  if (nodes) {
    EXPECT_NE(e.reason.find("recursive doubling"), std::string::npos) << e.reason;
    EXPECT_NE(e.reason.find("over ucx"), std::string::npos) << e.reason;
    auto big = axon::explain(Collective::Allreduce, world, 1 << 20, DataType::Float32);
    EXPECT_EQ(big.algorithm, "ring among node leaders") << big.reason;
    // alltoall goes straight between the PEs, not through the leaders.
    auto a2a = axon::explain(Collective::Alltoall, world, 1000, DataType::Float32);
    EXPECT_EQ(a2a.algorithm, "pairwise, direct between PEs") << a2a.reason;
    EXPECT_NE(a2a.reason.find("over ucx"), std::string::npos) << a2a.reason;
    EXPECT_EQ(a2a.rounds, static_cast<std::size_t>(np() - 1));  // 4000 bytes: one chunk
  }
}

}  // namespace
