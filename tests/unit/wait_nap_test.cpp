// How long a wait naps once it has yielded for a while (core/wait.hpp): a sixteenth of the time it
// has been quiet, at most 1 ms, so a wait sees its word at most ~6% late and a long one leaves the
// cores to the threads it waits for.
#include "core/wait.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace axon {
namespace {

using namespace std::chrono_literals;

TEST(WaitNap, ASixteenthOfTheQuietTime) {
  EXPECT_EQ(napAfter(2ms), 125us);  // where the yield phase ends
  EXPECT_EQ(napAfter(3200us), 200us);
  EXPECT_EQ(napAfter(16ms), 1000us);
}

TEST(WaitNap, NeverMoreThanAMillisecond) {
  EXPECT_EQ(napAfter(17ms), 1000us);
  EXPECT_EQ(napAfter(30s), 1000us);
  EXPECT_EQ(napAfter(std::chrono::hours(24)), 1000us);
}

TEST(WaitNap, NothingQuietNothingToSleep) { EXPECT_EQ(napAfter(0us), 0us); }

}  // namespace
}  // namespace axon
