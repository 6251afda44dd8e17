// Teardown's failed closes of peers' mappings, one line per peer (src/gpu/close_failures.hpp).
#include "gpu/close_failures.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using axon::gpu::CloseFailures;

const std::string kInvalid = "CUDA_ERROR_INVALID_VALUE (invalid argument)";
const std::string kContext = "CUDA_ERROR_INVALID_CONTEXT (invalid device context)";

TEST(CloseFailures, SuccessesSayNothing) {
  CloseFailures f;
  for (int i = 0; i < 40; ++i) f.add(i % 4, 0, "");
  EXPECT_TRUE(f.lines().empty());
  EXPECT_FALSE(f.driverShutDown());
}

TEST(CloseFailures, ManyFailuresOfOnePeerGiveOneLineWithTheCount) {
  CloseFailures f;
  for (int i = 0; i < 37; ++i) f.add(2, 1, kInvalid);
  f.add(2, 0, "");  // one that closed is not counted
  ASSERT_EQ(f.lines().size(), 1u);
  EXPECT_EQ(f.lines()[0], "37 mappings of PE 2's buffers could not be closed: " + kInvalid);
}

TEST(CloseFailures, OneLinePerPeerInPeOrder) {
  CloseFailures f;
  f.add(3, 1, kInvalid);
  f.add(1, 1, kInvalid);
  f.add(3, 1, kInvalid);
  EXPECT_EQ(f.lines(), (std::vector<std::string>{
                           "1 mapping of PE 1's buffers could not be closed: " + kInvalid,
                           "2 mappings of PE 3's buffers could not be closed: " + kInvalid,
                       }));
}

TEST(CloseFailures, DifferentErrorsOfOnePeerKeepTheFirstAndSaySo) {
  CloseFailures f;
  f.add(0, 201, kContext);
  f.add(0, 1, kInvalid);
  ASSERT_EQ(f.lines().size(), 1u);
  EXPECT_EQ(f.lines()[0], "2 mappings of PE 0's buffers could not be closed: " + kContext + " (and other errors)");
}

TEST(CloseFailures, DriverShutDownIsNoFailureAndIsRemembered) {
  // CUDA_ERROR_DEINITIALIZED (4), what every survivor of a dead peer used to print dozens of times:
  // the process is exiting and the driver has released its mappings itself.
  CloseFailures f;
  EXPECT_EQ(CloseFailures::kDriverShutDown, 4);
  for (int i = 0; i < 37; ++i) f.add(1, CloseFailures::kDriverShutDown, "CUDA error 4");
  EXPECT_TRUE(f.driverShutDown());
  EXPECT_TRUE(f.lines().empty());
  // A real failure of another peer before the shutdown is still reported.
  CloseFailures g;
  g.add(0, 1, kInvalid);
  g.add(1, CloseFailures::kDriverShutDown, "CUDA error 4");
  EXPECT_EQ(g.lines(), (std::vector<std::string>{"1 mapping of PE 0's buffers could not be closed: " + kInvalid}));
}

}  // namespace
