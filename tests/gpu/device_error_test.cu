// Device errors that must stop a kernel with a message, never hang it or corrupt memory. ctest
// checks each message (the trap makes the process fail, as it must). Without a GPU it prints the
// skip line and exits 77.
//
//   device_error_test           a wait nobody satisfies: past AXON_TIMEOUT it prints the PE, the
//                               address, the expected and the seen value (one PE)
//   device_error_test bcast-root N / reduce-root N
//                               a device broadcast / reduce whose root N is outside the team
//                               (through the launcher: a team of one has no GPU workspace)
//   device_error_test proxy-dead-peer
//                               a device put through the host proxy to a PE that has exited
//                               (across emulated nodes): the proxy's UCX operation fails, the host
//                               names the PE, the kernel stops, nothing hangs
#include <axon/axon.hpp>
#include <axon/device/collectives.hpp>
#include <axon/device/device.hpp>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace ad = axon::device;

__global__ void waitForever(ad::Context ctx, unsigned long long* sig) {
  ad::signalWaitUntil(ctx, sig, ad::Cmp::Eq, 42ull);
}

__global__ void putTo(ad::Context ctx, int* dest, const int* src, size_t bytes, int pe) {
  ad::put<ad::Thread>(ctx, dest, src, bytes, pe);
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
  } else if (std::strcmp(mode, "proxy-dead-peer") == 0) {
    // The last PE leaves at once (no finalize); PE 0 then puts to it from a kernel.
    const int victim = axon::nPes() - 1;
    const size_t bytes = 1 << 16;
    auto* buf = static_cast<int*>(axon::calloc(bytes, 1));
    const int other = axon::myPe() == victim ? 0 : victim;  // every PE decides alike
    if (victim == 0 || axon::pathTo(other).rfind("ucx", 0) != 0) {
      std::printf("skipped: PE %d shares this node (run across emulated nodes)\n", victim);
      return 77;
    }
    axon::barrierAll();
    if (axon::myPe() == victim) std::_Exit(0);
    if (axon::myPe() != 0) {
      std::this_thread::sleep_for(std::chrono::seconds(30));  // until the launcher stops the job
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
    putTo<<<1, 1>>>(axon::deviceContext(), buf, buf, bytes, victim);
  } else {
    std::fprintf(stderr, "usage: %s [timeout | bcast-root N | reduce-root N | proxy-dead-peer]\n", argv[0]);
    return 64;
  }
  cudaError_t e = cudaDeviceSynchronize();
  std::printf("kernel ended with %s\n", cudaGetErrorName(e));
  std::fflush(stdout);
  // The context is lost after a trap; finalize would fail on it, so leave without it.
  return e == cudaSuccess ? 1 : 2;
}
