// The algorithms of the collectives across nodes (coll/hierarchy.hpp), on emulated nodes with one
// and two PEs a node (tests/mp/CMakeLists.txt): the pairwise, direct alltoall and the large
// allreduce among node leaders (ring, and pipelined where AXON_ALGO_ALLREDUCE=pipelined), at
// counts that end inside, on and one past a round's piece (a round of the direct level carries
// 65472 bytes, 16368 four-byte elements; one of the leaders' a 256 KiB AXON_COLL_BUFFER), every
// result against the reference, and every member's bits the same as every other's (a digest of each
// result, allgathered).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <axon/axon.hpp>

#include "coll_reference.hpp"

namespace {

using axon::Collective;
using axon::DataType;
using axon::ReduceOp;
using namespace axon::test;

constexpr std::size_t kPiece = 16368;  // four-byte elements a round of the direct level carries
constexpr std::size_t kHalf = 65536;   // four-byte elements a round among leaders carries
constexpr std::size_t kAllreduceCounts[] = {1, 3, 16384, kHalf - 1, kHalf + 1, 2 * kHalf + 1, 300007};
constexpr std::size_t kAlltoallCounts[] = {0, 1, 5, kPiece - 1, kPiece + 1, 40009};

std::uint64_t digest(const void* data, std::size_t bytes) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Every member's digest of its `bytes` at `data` is the same.
void expectSameBitsEverywhere(const axon::Team& team, const void* data, std::size_t bytes, const std::string& what) {
  const std::uint64_t mine = digest(data, bytes);
  std::vector<std::uint64_t> all(team.nPes(), 0);
  axon::allgather(team, &mine, all.data(), 1, DataType::Uint64);
  for (int p = 0; p < team.nPes(); ++p) EXPECT_EQ(all[p], mine) << what << ": team PE " << p << " got other bits";
}

bool acrossNodes() { return axon::Team::node().nPes() < axon::nPes(); }

TEST(CollectivesAcrossNodes, RunOnSeveralNodes) {
  ASSERT_TRUE(acrossNodes()) << "run with axon run --emulate-nodes";
  axon::Team world = axon::Team::world();
  auto big = axon::explain(Collective::Allreduce, world, kPiece * 4, DataType::Float32);
  EXPECT_EQ(big.path, "hierarchical");
  const char* forced = std::getenv("AXON_ALGO_ALLREDUCE");
  EXPECT_EQ(big.algorithm, std::string(forced ? forced : "ring") + " among node leaders") << big.reason;
  auto a2a = axon::explain(Collective::Alltoall, world, kPiece + 1, DataType::Int32);
  EXPECT_EQ(a2a.algorithm, "pairwise, direct between PEs") << a2a.reason;
  // Two pieces per peer: n - 1 steps each.
  EXPECT_EQ(a2a.rounds, 2u * static_cast<std::size_t>(axon::nPes() - 1)) << a2a.reason;
}

TEST(CollectivesAcrossNodes, LargeAllreduceMatchesTheReference) {
  axon::Team world = axon::Team::world();
  const int n = world.nPes(), me = world.myPe();
  std::uint64_t seed = 9000;
  for (DataType t : {DataType::Int32, DataType::Float32, DataType::Int8, DataType::Float64}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
      for (std::size_t count : kAllreduceCounts) {
        const bool inPlace = (++seed) % 2 == 0;
        auto src = inputBuffer(t, op, seed, me, count);
        std::vector<char> dst(src.size() + 1, 0x5a);
        void* out = inPlace ? src.data() : dst.data();
        axon::allreduce(world, src.data(), out, count, t, op);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < count; ++i) {
          if (!sameValue(t, loadValue(t, out, i), reduced(t, op, seed, n, i))) ++bad;
        }
        const std::string what = std::string("allreduce ") + axon::dataTypeName(t) + " " + axon::reduceOpName(op) +
                                 " count " + std::to_string(count) + (inPlace ? " in place" : "");
        EXPECT_EQ(bad, 0u) << what;
        if (!inPlace) EXPECT_EQ(dst.back(), 0x5a) << what << ": wrote past the end";
        expectSameBitsEverywhere(world, out, count * axon::dataTypeSize(t), what);
      }
    }
  }
}

TEST(CollectivesAcrossNodes, PairwiseAlltoallMatchesTheReference) {
  axon::Team world = axon::Team::world();
  const int n = world.nPes(), me = world.myPe();
  std::uint64_t seed = 7000;
  for (DataType t : {DataType::Int32, DataType::Int8, DataType::Float64}) {
    for (std::size_t count : kAlltoallCounts) {
      ++seed;
      const std::size_t e = axon::dataTypeSize(t);
      auto src = inputBuffer(t, ReduceOp::Max, seed, me, n * count);
      std::vector<char> dst(n * count * e + 1, 0x5a);
      axon::alltoall(world, src.data(), dst.data(), count, t);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n * count; ++i) {
        const int from = static_cast<int>(i / count);
        if (!sameValue(t, loadValue(t, dst.data(), i), inputValue(t, ReduceOp::Max, seed, from, me * count + i % count))) {
          ++bad;
        }
      }
      EXPECT_EQ(bad, 0u) << "alltoall " << axon::dataTypeName(t) << " count " << count;
      EXPECT_EQ(dst.back(), 0x5a) << "alltoall count " << count << ": wrote past the end";
    }
  }
}

// Calls of both new algorithms back to back, and other collectives between them: the rounds in
// flight of one call never meet the next's.
TEST(CollectivesAcrossNodes, BackToBackCallsKeepTheirRounds) {
  axon::Team world = axon::Team::world();
  const int n = world.nPes(), me = world.myPe();
  for (int k = 0; k < 20; ++k) {
    const std::size_t count = kPiece + 7 * static_cast<std::size_t>(k);
    std::vector<std::int32_t> a(count, me + k), sum(count, 0);
    axon::allreduce(world, a.data(), sum.data(), count, DataType::Int32, ReduceOp::Sum);
    EXPECT_EQ(sum[count - 1], n * (n - 1) / 2 + n * k) << "call " << k;
    std::vector<std::int32_t> rows(n * 3), cols(n * 3, -1);
    for (int j = 0; j < n * 3; ++j) rows[j] = me * 1000 + j + k;
    axon::alltoall(world, rows.data(), cols.data(), 3, DataType::Int32);
    for (int j = 0; j < n * 3; ++j) EXPECT_EQ(cols[j], (j / 3) * 1000 + me * 3 + j % 3 + k) << "call " << k;
    if (k % 5 == 0) axon::barrierAll();
  }
}

}  // namespace
