// Device errors that must stop a kernel with a message, never hang it or corrupt memory. ctest
// checks each message (the trap makes the process fail, as it must). Without a GPU it prints the
// skip line and exits 77.
//
//   device_error_test           a wait nobody satisfies: past AXON_TIMEOUT it prints the PE, the
//                               address, the expected and the seen value (one PE)
//   device_error_test bcast-root N / reduce-root N
//                               a device broadcast / reduce whose root N is outside the team
//                               (through the launcher: a team of one has no GPU workspace)
#include <axon/axon.hpp>
#include <axon/device/collectives.hpp>
#include <axon/device/device.hpp>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ad = axon::device;

__global__ void waitForever(ad::Context ctx, unsigned long long* sig) {
  ad::signalWaitUntil(ctx, sig, ad::Cmp::Eq, 42ull);
}

__global__ void broadcastAtRoot(ad::CollHandle h, float* buf, int root) {
  ad::broadcast<ad::Block>(h, buf, buf, 64, root);
}

__global__ void reduceAtRoot(ad::CollHandle h, float* buf, int root) {
  ad::reduce<ad::Block>(h, buf, buf, 64, ad::ReduceOp::Sum, root);
}

int main(int argc, char** argv) {
  axon::init();
  if (!axon::gpuEnabled()) {
    std::printf("skipped: no GPU backend (%s)\n", axon::gpuUnavailableReason());
    axon::finalize();
    return 77;
  }
  const char* mode = argc > 1 ? argv[1] : "timeout";
  if (std::strcmp(mode, "timeout") == 0) {
    auto* sig = static_cast<unsigned long long*>(axon::calloc(1, 8));
    waitForever<<<1, 1>>>(axon::deviceContext(), sig);
  } else if (argc > 2 && (std::strcmp(mode, "bcast-root") == 0 || std::strcmp(mode, "reduce-root") == 0)) {
    const int root = std::atoi(argv[2]);
    auto* buf = static_cast<float*>(axon::calloc(64, sizeof(float)));
    const ad::CollHandle h = axon::deviceCollHandle(axon::Team::world());
    if (mode[0] == 'b') broadcastAtRoot<<<1, 128>>>(h, buf, root);
    else reduceAtRoot<<<1, 128>>>(h, buf, root);
  } else {
    std::fprintf(stderr, "usage: %s [timeout | bcast-root N | reduce-root N]\n", argv[0]);
    return 64;
  }
  cudaError_t e = cudaDeviceSynchronize();
  std::printf("kernel ended with %s\n", cudaGetErrorName(e));
  std::fflush(stdout);
  // The context is lost after a trap; finalize would fail on it, so leave without it.
  return e == cudaSuccess ? 1 : 2;
}
