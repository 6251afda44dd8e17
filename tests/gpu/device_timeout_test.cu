// A device wait that nobody satisfies must end: past AXON_TIMEOUT the kernel prints the PE, the
// address, the expected and the seen value, and traps. ctest checks the message (the trap makes
// the process fail, as it must). Without a GPU it prints the skip line and exits 77.
#include <axon/axon.hpp>
#include <axon/device/device.hpp>
#include <cuda_runtime.h>

#include <cstdio>

__global__ void waitForever(axon::device::Context ctx, unsigned long long* sig) {
  axon::device::signalWaitUntil(ctx, sig, axon::device::Cmp::Eq, 42ull);
}

int main() {
  axon::init();
  if (!axon::gpuEnabled()) {
    std::printf("skipped: no GPU backend (%s)\n", axon::gpuUnavailableReason());
    axon::finalize();
    return 77;
  }
  auto* sig = static_cast<unsigned long long*>(axon::calloc(1, 8));
  waitForever<<<1, 1>>>(axon::deviceContext(), sig);
  cudaError_t e = cudaDeviceSynchronize();
  std::printf("kernel ended with %s\n", cudaGetErrorName(e));
  std::fflush(stdout);
  // The context is lost after a trap; finalize would fail on it, so leave without it.
  return e == cudaSuccess ? 1 : 2;
}
