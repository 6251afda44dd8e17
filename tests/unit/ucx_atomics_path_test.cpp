// Which endpoints get their atomics and signals by active message (AXON_UCX_ATOMICS=auto): those
// whose UCX transports do no atomics in hardware.
#include <gtest/gtest.h>

#include "transport/ucx/ucx_am_atomics.hpp"

namespace axon::ucx {
namespace {

TEST(UcxAtomicsPath, RcAndDcDoAtomicsInHardware) {
  EXPECT_TRUE(hardwareAtomics("rc_mlx5"));
  EXPECT_TRUE(hardwareAtomics("dc_mlx5"));
  EXPECT_TRUE(hardwareAtomics("rc_verbs,ud_verbs"));
  EXPECT_TRUE(hardwareAtomics("self,rc_mlx5,cuda_copy"));
}

TEST(UcxAtomicsPath, TcpUdAndUnknownDoNot) {
  EXPECT_FALSE(hardwareAtomics("tcp"));
  EXPECT_FALSE(hardwareAtomics("ud_verbs"));
  EXPECT_FALSE(hardwareAtomics("cma,posix,tcp"));
  EXPECT_FALSE(hardwareAtomics(""));  // UCX before 1.14 cannot tell: active messages are right everywhere
  EXPECT_FALSE(hardwareAtomics("srd"));
}

}  // namespace
}  // namespace axon::ucx
