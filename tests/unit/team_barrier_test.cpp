// disseminationRounds: a dissemination barrier over n PEs needs ceil(log2(n)) rounds (round r
// signals the PE 2^r ahead). Too few rounds lets a PE leave early; too many overruns the
// control block's per-round counters.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "onesided/team_barrier.hpp"

namespace axon {
namespace {

TEST(DisseminationRounds, IsCeilLog2ForOneTo300) {
  for (int n = 1; n <= 300; ++n) {
    // ceil(log2(n)) is the bit width of n - 1: 1 -> 0, 2 -> 1, 3..4 -> 2, 5..8 -> 3, ...
    const int expected = static_cast<int>(std::bit_width(static_cast<unsigned>(n - 1)));
    EXPECT_EQ(disseminationRounds(n), expected) << "n = " << n;
    // The same by floating point, exact for these small powers of two.
    EXPECT_EQ(disseminationRounds(n), static_cast<int>(std::ceil(std::log2(n)))) << "n = " << n;
  }
}

TEST(DisseminationRounds, EnoughRoundsToReachEveryPe) {
  // After r rounds a PE has heard (transitively) from 2^r PEs, itself included.
  for (int n = 1; n <= 300; ++n) {
    const int rounds = disseminationRounds(n);
    EXPECT_GE(1 << rounds, n) << n;
    if (rounds > 0) {
      EXPECT_LT(1 << (rounds - 1), n) << n;
    }
  }
}

}  // namespace
}  // namespace axon
