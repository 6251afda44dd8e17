// main() of the multi-process GPU test programs. Without a GPU (CI) it says why and exits 77,
// which ctest reports as skipped.
#include <gtest/gtest.h>

#include <axon/axon.hpp>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  // These tests launch kernels while others wait for PEs on other nodes (served by host threads):
  // with CUDA's lazy loading a first launch would deadlock them (axon warns at init; see
  // docs/architecture.md, "The device proxy"). Before any CUDA call, as a program would.
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  ::testing::InitGoogleTest(&argc, argv);
  axon::init();
  if (!axon::gpuEnabled()) {
    if (axon::myPe() == 0) std::printf("skipped: no GPU backend (%s)\n", axon::gpuUnavailableReason());
    axon::finalize();
    return 77;
  }
  if (axon::myPe() != 0) GTEST_FLAG_SET(brief, true);
  int rc = RUN_ALL_TESTS();
  axon::finalize();
  return rc;
}
