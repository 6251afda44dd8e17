// firstSlurmHost: the host of rank 0 read off a Slurm host list, where ranges are compressed into
// brackets ("gpu[07-09,11]") and entries are separated by commas outside brackets.
#include <gtest/gtest.h>

#include <string>

#include "core/launch_detect.hpp"
#include "expect_error.hpp"

namespace axon {
namespace {

TEST(FirstSlurmHost, PlainHostIsItself) { EXPECT_EQ(firstSlurmHost("node1"), "node1"); }

TEST(FirstSlurmHost, RangeGivesItsFirstValue) { EXPECT_EQ(firstSlurmHost("a[1-3]"), "a1"); }

TEST(FirstSlurmHost, ZeroPaddingIsKept) {
  // Slurm pads every value of "01-03" to two digits; the host is "a01", not "a1".
  EXPECT_EQ(firstSlurmHost("a[01-03],b5"), "a01");
}

TEST(FirstSlurmHost, ListInsideBracketsAndASuffix) {
  EXPECT_EQ(firstSlurmHost("x[7,9]-ib"), "x7-ib");
}

TEST(FirstSlurmHost, CommaInsideBracketsDoesNotEndTheFirstEntry) {
  EXPECT_EQ(firstSlurmHost("gpu[07-09,11],cpu1"), "gpu07");
}

TEST(FirstSlurmHost, PlainHostBeforeARange) { EXPECT_EQ(firstSlurmHost("b5,a[1-2]"), "b5"); }

TEST(FirstSlurmHost, EmptyBracketsAreRejected) {
  std::string msg = test::errorMessageOf([] { firstSlurmHost("a[]"); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(test::contains(msg, "a[]"));
}

}  // namespace
}  // namespace axon
