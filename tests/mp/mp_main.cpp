// main() of the multi-process gtest programs: every PE runs every test between init and finalize.
// Run through the launcher: axon run -n N <test program>.
#include <gtest/gtest.h>

#include <axon/axon.hpp>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  axon::init();
  // One full report is enough; the other PEs print failures only.
  if (axon::myPe() != 0) GTEST_FLAG_SET(brief, true);
  int rc = RUN_ALL_TESTS();
  axon::finalize();
  return rc;
}
