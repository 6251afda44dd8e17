// derivedStorePort: every PE of a job computes the store port from the job's identity alone, so it
// must be a pure function (same key, same port, in every process) inside the documented range.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

#include "core/launch_detect.hpp"

namespace axon {
namespace {

constexpr int kLowest = 20000;
constexpr int kPastHighest = 40000;

TEST(DerivedStorePort, StaysInRange) {
  for (int i = 0; i < 5000; ++i) {
    int port = derivedStorePort("job-" + std::to_string(i));
    ASSERT_GE(port, kLowest) << i;
    ASSERT_LT(port, kPastHighest) << i;
  }
  EXPECT_GE(derivedStorePort(""), kLowest);
  EXPECT_LT(derivedStorePort(std::string(10000, '\xff')), kPastHighest);
}

TEST(DerivedStorePort, SameKeySamePort) {
  for (std::string key : {"", "4711.0", "prterun-host-12345@1", "kvs_4242_0"}) {
    EXPECT_EQ(derivedStorePort(key), derivedStorePort(std::string(key))) << key;
  }
}

TEST(DerivedStorePort, NeighbouringStepsOfAJobDiffer) {
  // Steps of one job may run side by side on the same nodes: their stores need distinct ports.
  EXPECT_NE(derivedStorePort("4711.0"), derivedStorePort("4711.1"));
  EXPECT_NE(derivedStorePort("4711.1"), derivedStorePort("4711.2"));
}

// Exposes a library defect: the code says FNV-1a, but its offset basis 1469598103934665603 has
// lost the last digit of 14695981039346656037. Any other implementation of "FNV-1a folded into
// [20000, 40000)" (a launcher script, a second language binding) would pick another port.
// FNV-1a 64 with its high half folded into the low one, reduced into [20000, 40000).
int foldedPort(std::uint64_t h) { return 20000 + static_cast<int>((h ^ (h >> 32)) % 20000); }

TEST(DerivedStorePort, IsFnv1aFoldedIntoTheRange) {
  // The empty key hashes to the FNV-1a 64 offset basis, and "a" to the published test vector
  // 0xaf63dc4c8601ec8c.
  EXPECT_EQ(derivedStorePort(""), foldedPort(14695981039346656037ull));
  EXPECT_EQ(derivedStorePort("a"), foldedPort(0xaf63dc4c8601ec8cull));
}

// Consecutive job ids must spread like a uniform hash: two jobs on one node that collide share a
// store port, so the second rank 0 cannot bind and its other PEs may talk to the first job's store.
// (FNV's low bits alone, `h % 20000`, gave 715 distinct ports of 1000.)
TEST(DerivedStorePort, ConsecutiveJobIdsSpreadLikeAUniformHash) {
  std::set<int> ports;
  for (int i = 0; i < 1000; ++i) ports.insert(derivedStorePort(std::to_string(4000 + i) + ".0"));
  // Below 950 distinct is more than four standard deviations under the uniform expectation.
  EXPECT_GT(ports.size(), 950u);
}

}  // namespace
}  // namespace axon
