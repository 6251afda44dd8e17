// The router's decision (transport/route.hpp): which transport each kind of operation takes.
#include <gtest/gtest.h>

#include "transport/route.hpp"

namespace axon {
namespace {

RouteQuery onNode(HeapKind heap, bool mapped) {
  RouteQuery q;
  q.heap = heap;
  q.mapped = mapped;
  return q;
}

TEST(Route, OtherNodesGoToTheNetworkWhateverTheMemory) {
  for (bool gpuOn : {false, true})
    for (bool stream : {false, true})
      for (HeapKind heap : {HeapKind::Host, HeapKind::Gpu}) {
        RouteQuery q;
        q.nodeLocal = false;
        q.networkReaches = true;
        q.gpuOn = gpuOn;
        q.stagedOn = gpuOn;
        q.streamOrdered = stream;
        q.heap = heap;
        q.localOnDevice = gpuOn;
        EXPECT_EQ(chooseRoute(q), Route::Network);
        q.networkReaches = false;
        EXPECT_EQ(chooseRoute(q), Route::Unreachable);
      }
}

TEST(Route, TheHostBackendUsesSharedMemoryOnItsNode) {
  EXPECT_EQ(chooseRoute(onNode(HeapKind::Host, true)), Route::Shm);
  RouteQuery q = onNode(HeapKind::Host, true);
  q.localOnDevice = true;  // cannot happen without the GPU backend; no GPU transport to take
  EXPECT_EQ(chooseRoute(q), Route::Shm);
}

TEST(Route, HostMemoryOnBothSidesStaysOnSharedMemoryWithTheGpuBackend) {
  RouteQuery q = onNode(HeapKind::Host, true);
  q.gpuOn = true;
  q.stagedOn = true;
  EXPECT_EQ(chooseRoute(q), Route::Shm);
}

TEST(Route, GpuMemoryOnEitherSideTakesTheGpuTransports) {
  RouteQuery q = onNode(HeapKind::Gpu, true);
  q.gpuOn = true;
  EXPECT_EQ(chooseRoute(q), Route::CudaIpc);
  q = onNode(HeapKind::Host, true);
  q.gpuOn = true;
  q.localOnDevice = true;  // a device buffer into a peer's host heap: a copy engine
  EXPECT_EQ(chooseRoute(q), Route::CudaIpc);
  q.stagedOn = true;       // the host heap is always mapped: never the staged path
  EXPECT_EQ(chooseRoute(q), Route::CudaIpc);
}

TEST(Route, AnUnmappedGpuHeapTakesTheStagedPathWhenItIsOn) {
  RouteQuery q = onNode(HeapKind::Gpu, false);
  q.gpuOn = true;
  q.stagedOn = true;
  EXPECT_EQ(chooseRoute(q), Route::Staged);
  q.mapped = true;  // a peer this GPU maps, in a job where another pair needs the staged path
  EXPECT_EQ(chooseRoute(q), Route::CudaIpc);
  // Without the staged path an unmapped heap goes to cuda_ipc, which refuses it by name.
  q = onNode(HeapKind::Gpu, false);
  q.gpuOn = true;
  EXPECT_EQ(chooseRoute(q), Route::CudaIpc);
}

TEST(Route, StreamOrderedCallsOnTheNodeAlwaysTakeTheGpuTransports) {
  for (bool mapped : {false, true}) {
    RouteQuery q = onNode(HeapKind::Host, true);
    q.gpuOn = true;
    q.streamOrdered = true;
    EXPECT_EQ(chooseRoute(q), Route::CudaIpc);  // the pinned host heap, by copy engine
    q = onNode(HeapKind::Gpu, mapped);
    q.gpuOn = true;
    q.stagedOn = true;
    q.streamOrdered = true;
    EXPECT_EQ(chooseRoute(q), mapped ? Route::CudaIpc : Route::Staged);
  }
}

TEST(Route, EveryOperationHasExactlyOneHighestTransport) {
  // Over every query, the choice is the first reaching row of the registry, and no query but one
  // to an unreachable node is left without a transport.
  for (int bits = 0; bits < 256; ++bits) {
    RouteQuery q;
    q.nodeLocal = bits & 1;
    q.networkReaches = !q.nodeLocal && (bits & 2);
    q.gpuOn = bits & 4;
    q.stagedOn = q.gpuOn && (bits & 8);
    q.heap = (bits & 16) ? HeapKind::Gpu : HeapKind::Host;
    q.mapped = bits & 32;
    q.localOnDevice = q.gpuOn && (bits & 64);
    q.streamOrdered = q.gpuOn && (bits & 128);
    const Route r = chooseRoute(q);
    EXPECT_EQ(r == Route::Unreachable, !q.nodeLocal && !q.networkReaches) << bits;
    int reaching = 0;
    for (const TransportEntry& entry : kTransports) {
      if (!entry.reaches(q)) continue;
      if (reaching++ == 0) EXPECT_EQ(entry.route, r) << bits;
    }
  }
}

TEST(Route, NamesComeFromTheRegistry) {
  EXPECT_STREQ(routeName(Route::Shm), "shm");
  EXPECT_STREQ(routeName(Route::CudaIpc), "cuda_ipc");
  EXPECT_STREQ(routeName(Route::Staged), "staged");
  EXPECT_STREQ(routeName(Route::Network), "ucx");
  EXPECT_STREQ(routeName(Route::Unreachable), "none");
}

}  // namespace
}  // namespace axon
